"""What the replay sends (docs/recording.md, "What it does"): each recorded request
rewritten for the sandbox: its headers less those the replay may not send as recorded
(connection-level ones, credentials, `X-Mock-Scenario`, the `Content-Encoding` of a
body the recorder decoded), its body with recorded order ids renamed, and `Binding`:
the recording's tokens and order ids bound to the sandbox's by order of appearance.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from .paths import CLIENT_CODE, ORDER, ORDERS, TOKEN
from .reading import Exchange, Message
from .traces import Trace
from .values import as_dict
from .world import Receiver, World, recorded_answers

_NOT_SENT = {
    "authorization",
    "connection",
    "content-encoding",  # the recorder keeps the header, the body it wrote is decoded
    "content-length",
    "cookie",
    "host",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "accept-encoding",
    "x-mock-scenario",
}


def _sendable(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [
        (name, value)
        for name, value in headers
        if not name.startswith(":") and name.lower() not in _NOT_SENT
    ]


def creation_headers(exchange: Exchange, token: str | None) -> list[tuple[str, str]]:
    headers = _sendable(exchange.request.headers)
    if not any(name.lower() == "content-type" for name, _ in headers):
        headers.append(("Content-Type", "application/json"))
    headers.append(("Authorization", f"Bearer {token or 'none'}"))
    return headers


def request_bytes(message: Message, ids: dict[str, str]) -> bytes | None:
    if message.body is not None:
        return json.dumps(_rename(message.body, ids)).encode()
    if message.text is not None:
        text = message.text
        for recorded, mine in ids.items():
            text = text.replace(recorded, mine)
        return text.encode()
    return message.raw


def _rename(value: Any, ids: dict[str, str]) -> Any:
    if not ids:
        return value
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, list):
        return [_rename(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _rename(v, ids) for k, v in value.items()}
    return value


# -- the recording's tokens and order ids, bound to the sandbox's -----------------------------


class Binding:
    """Tokens and order ids of the recording bound to the sandbox's, by order of
    appearance: the recording's token N is the replay's token N."""

    def __init__(self, key_of: dict[str | None, str]) -> None:
        self.key_of = key_of
        self.tokens: dict[str, str] = {}
        self.token_account: dict[str, str | None] = {}
        self.orders: dict[str, str] = {}
        self.failed: set[str] = set()
        self.order_account: dict[str, str | None] = {}

    def names_failed_order(self, exchange: Exchange) -> bool:
        """A request about an order whose creation the sandbox refused: not replayed
        (the refusal is the finding; its lookups would only repeat it)."""
        found = ORDER.match(exchange.path) or CLIENT_CODE.match(exchange.path)
        return bool(found) and found[1] in self.failed

    def path(self, path: str) -> str:
        return "/".join(self.orders.get(part, part) for part in path.split("/"))

    def query(self, query: str) -> str:
        if not query:
            return ""
        parts = re.split(r"([=&;])", query)
        return "?" + "".join(self.orders.get(part, part) for part in parts)

    def body(self, exchange: Exchange) -> bytes | None:
        request = exchange.request
        if TOKEN.match(exchange.path) and isinstance(request.body, dict):
            key = request.body.get("api_key")
            mapped = dict(request.body)
            if isinstance(key, str):
                mapped["api_key"] = self.key_of.get(key) or _unknown_key(key)
            return json.dumps(mapped).encode()
        return request_bytes(request, self.orders)

    async def headers(self, world: World, exchange: Exchange) -> list[tuple[str, str]]:
        headers = _sendable(exchange.request.headers)
        authorization = exchange.request.header("Authorization")
        if authorization is not None:
            scheme, _, token = authorization.partition(" ")
            token = token.strip()
            if scheme.lower() == "bearer" and token:
                mine = self.tokens.get(token)
                if mine is None and exchange.status != 401:
                    # A token whose exchange was not recorded: the fallback account's.
                    mine = await world.token(self.key_of[None])
                    if mine is not None:
                        self.tokens[token] = mine
                        self.token_account[token] = None
                authorization = f"Bearer {mine or 'not-a-token-' + _digest(token)}"
            headers.append(("Authorization", authorization))
        return headers

    def account_of(self, exchange: Exchange) -> str | None:
        token = _bearer(exchange)
        return self.token_account.get(token or "")

    def bind(
        self,
        exchange: Exchange,
        status: int,
        answer: Any,
        receiver: Receiver,
        trace: Trace | None,
    ) -> None:
        recorded = as_dict(exchange.response.body)
        answer = as_dict(answer)
        if TOKEN.match(exchange.path) and exchange.method == "POST":
            theirs, mine = recorded.get("access_token"), answer.get("access_token")
            if isinstance(theirs, str) and isinstance(mine, str):
                self.tokens[theirs] = mine
                key = as_dict(exchange.request.body).get("api_key")
                self.token_account[theirs] = key if key in self.key_of else None
        elif ORDERS.match(exchange.path) and exchange.method == "POST":
            theirs, mine = recorded.get("id"), answer.get("id")
            if exchange.status == 201 and isinstance(theirs, str):
                if status == 201 and isinstance(mine, str):
                    self.orders[theirs] = mine
                    self.order_account[mine] = self.account_of(exchange)
                    if trace is not None:
                        receiver.expect(mine, recorded_answers(trace))
                else:
                    self.failed.add(theirs)


def _unknown_key(key: str) -> str:
    """A key production refused stays one that no account holds."""
    return f"ak_unknown_{_digest(key)}"


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def _bearer(exchange: Exchange) -> str | None:
    scheme, _, token = (exchange.request.header("Authorization") or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None
