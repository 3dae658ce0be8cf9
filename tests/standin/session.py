"""A merchant's session with the production stand-in, written as a recording.

`ProductionSession` starts the stand-in (`production.StandIn`) and a webhook receiver,
both on 127.0.0.1 port 0, points the account's webhook URL at the receiver, and drives a
merchant's traffic over HTTP. Every exchange and every webhook delivery is kept as the
recorder keeps it (docs/recording.md, "The file"); `write` writes them in the recorder's
format: the header line, then one line per event, `at` the stand-in's virtual clock,
redacted by the recorder's own `Redactor` (the writer of a recording may use
mock_server; the stand-in server does not).

    session = record_production(tmp_path / "production.jsonl", merchant_day)
    # or, inside a loop:
    async with ProductionSession(Production(event_fields="extra")) as session:
        await merchant_day(session)
    session.write(path)
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import hmac
import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from mock_server.recording.recorder.fileformat import end_line_of
from mock_server.recording.recorder.redaction import Redactor

from .production import TERMINAL, Production, StandIn

#: What the receiver answers a delivery: `(event body, attempt number) -> HTTP status`.
Answers = Callable[[dict[str, Any], int], int]
UPSTREAM = "https://api.merchant-shop-provider.example"


def wall_iso(ts: float) -> str:
    """The recorder's own `at` format: ISO 8601 UTC with milliseconds."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def refuse_first(attempts: int, merchant_order_ids: set[str], status: int = 500) -> Answers:
    """A receiver that answers `status` to the first `attempts` deliveries of the orders
    with these merchant_order_ids, 200 to everything else."""

    def answer(body: dict[str, Any], attempt: int) -> int:
        mine = body.get("merchant_order_id") in merchant_order_ids
        return status if mine and attempt <= attempts else 200

    return answer


class ProductionSession:
    """A merchant's session with the stand-in, recorded event by event (`events`)."""

    def __init__(
        self,
        options: Production | None = None,
        *,
        webhook_answers: Answers | None = None,
        webhooks: bool = True,
        upstream: str = UPSTREAM,
    ) -> None:
        self.options = options or Production()
        self.webhook_answers = webhook_answers or (lambda body, attempt: 200)
        self.with_webhooks = webhooks
        self.upstream = upstream
        self.events: list[dict[str, Any]] = []
        self.deliveries: dict[str, int] = {}
        self.token = ""
        self.started_at = self.options.start

    # -- running --------------------------------------------------------------------------

    async def __aenter__(self) -> ProductionSession:
        receiver = web.Application()
        receiver.router.add_post("/hooks", self._hook)
        self.receiver = web.AppRunner(receiver, access_log=None)
        await self.receiver.setup()
        await web.TCPSite(self.receiver, "127.0.0.1", 0).start()
        host, port = self.receiver.addresses[0][:2]
        hook = f"http://{host}:{port}/hooks" if self.with_webhooks else None
        self.standin = StandIn(replace(self.options, webhook_url=hook))
        self.url = await self.standin.start()
        self.http = aiohttp.ClientSession()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.close()
        await self.standin.stop()
        await self.receiver.cleanup()

    @property
    def now(self) -> float:
        return self.standin.now

    async def advance(self, seconds: float) -> None:
        """Production's time passes (nothing is recorded but the webhooks it sends)."""
        await self.standin.advance(seconds)

    async def _hook(self, request: web.Request) -> web.Response:
        raw = await request.read()
        body = json.loads(raw)
        attempt = self.deliveries.get(body["order_id"], 0) + 1
        self.deliveries[body["order_id"]] = attempt
        answered = self.webhook_answers(body, attempt)
        signature = request.headers.get("X-Webhook-Signature", "")
        key = self.options.webhook_secret.encode()
        expected = "sha256=" + hmac.new(key, raw, hashlib.sha256).hexdigest()
        self.events.append(
            {
                "kind": "webhook",
                "at": self.standin.now,  # the clock stands at the attempt while it runs
                "headers": [[k, v] for k, v in request.headers.items()],
                "body": body,
                "answered": answered,
                "signature_valid": hmac.compare_digest(signature, expected),
            }
        )
        return web.Response(status=answered)

    async def call(
        self, method: str, path: str, body: Any = None, *, token: str | None = None
    ) -> tuple[int, Any]:
        headers = {"Accept": "application/json", "User-Agent": "merchant-shop-client/2.4"}
        token = self.token if token is None else token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if body is not None:
            headers["Content-Type"] = "application/json"
        path, _, query = path.partition("?")
        at = self.now
        data = json.dumps(body).encode() if body is not None else None
        url = self.url + path + (f"?{query}" if query else "")
        async with self.http.request(method, url, data=data, headers=headers) as response:
            status = response.status
            raw = await response.read()
            answer_headers = [[k, v] for k, v in response.headers.items()]
        request: dict[str, Any] = {
            "method": method,
            "path": path,
            "query": query,
            "headers": [[k, v] for k, v in headers.items()],
        }
        if body is not None:
            request["body"] = body
        answer: dict[str, Any] = {"status": status, "headers": answer_headers}
        parsed: Any
        try:
            parsed = json.loads(raw)
            answer["body"] = parsed
        except ValueError:
            parsed = raw.decode("utf-8", errors="replace")
            if raw:
                answer["body_text"] = parsed
        self.events.append(
            {"kind": "exchange", "at": at, "request": request, "response": answer, "ms": 2.0}
        )
        return status, parsed

    async def login(self, api_key: str | None = None) -> str:
        key = self.options.api_keys[0] if api_key is None else api_key
        status, answer = await self.call(
            "POST", "/api/v1/auth/token/client", {"api_key": key}, token=""
        )
        assert status == 200, answer
        self.token = answer["access_token"]
        return self.token

    async def order(self, body: dict[str, Any], prefix: str = "/api/v1") -> dict[str, Any]:
        status, answer = await self.call("POST", f"{prefix}/orders", body)
        assert status == 201, answer
        return answer

    async def client_code(self, order_id: str, code: str = "483920") -> tuple[int, Any]:
        return await self.call("POST", f"/v1/orders/{order_id}/client-code", {"code": code})

    async def poll(
        self,
        orders: list[dict[str, Any]],
        *,
        every: float,
        until: float,
        prefix: str = "/api/v1",
    ) -> dict[str, dict[str, Any]]:
        """Poll each order every `every` virtual seconds until it is terminal or waits
        for a client code, for at most `until` seconds; the last answer of each."""
        last = {o["id"]: o for o in orders}
        waiting = set(last)
        elapsed = 0.0
        while waiting and elapsed < until:
            await self.advance(every)
            elapsed += every
            for order_id in sorted(waiting):
                _, answer = await self.call("GET", f"{prefix}/orders/{order_id}")
                last[order_id] = answer
                if answer["status"] in TERMINAL or answer["status"] == "need_client_code":
                    waiting.discard(order_id)
        return last

    # -- writing ---------------------------------------------------------------------------

    def lines(self, *, redact: bool = True) -> list[dict[str, Any]]:
        redactor = Redactor()  # the recorder's own rules: the same secret, the same placeholder
        self.redactor = redactor
        header = {
            "format": "ordering-sandbox-recording",
            "version": 1,
            "upstream": self.upstream,
            "started_at": wall_iso(self.started_at),
            "redaction": redactor.names if redact else [],
        }
        lines: list[dict[str, Any]] = [header]
        for seq, event in enumerate(self.events, start=1):
            line = json.loads(json.dumps(event))
            line = {"seq": seq, **line, "at": wall_iso(event["at"])}
            lines.append(redactor.redact(line) if redact else line)
        lines.append(end_line_of(lines[1:]))
        return lines

    def write(self, path: str | Path, *, redact: bool = True) -> Path:
        """The session as a recording file (gzipped when the name ends in `.gz`)."""
        path = Path(path)
        text = "".join(json.dumps(line) + "\n" for line in self.lines(redact=redact))
        if path.name.endswith(".gz"):
            path.write_bytes(gzip.compress(text.encode()))
        else:
            path.write_text(text)
        return path


# -- a merchant's day ---------------------------------------------------------------------------

KEY_ORDERS = (  # (item, quantity): ten orders, so the default mix shows each key outcome
    (501, 2),
    (502, 2),
    (501, 3),
    (501, 1),
    (502, 4),
    (501, 2),
    (502, 1),
    (501, 2),
    (502, 3),
    (501, 2),
)
TOPUP = {"item_id": 601, "quantity": 5, "fields": {"razer_id": "rz-7731", "region": 2}}
LOGIN_TOPUP = {
    "item_id": 602,
    "quantity": 1,
    "fields": {"login_email": "p@player.example", "server": 1},
}
SERVICE = {"item_id": 701, "fields": {"summoner": "Faker#KR1", "region": 3}}


async def merchant_day(session: ProductionSession, *, every: float = 2.0) -> None:
    """A token, the balance and account; ten key orders, a top-up, a service and a
    login top-up; refusals (a bad key, an unknown and an out-of-stock item, a price
    guard, a reused merchant_order_id, a quantity out of range, an unknown order, a bad
    token); polling every `every` s until each order settles or waits for its code; the
    code; time for the webhook retries; the balance again. Orders placed on both
    prefixes."""
    await session.call(
        "POST", "/api/v1/auth/token/client", {"api_key": "ak_revoked_0000"}, token=""
    )
    await session.login()
    await session.call("GET", "/api/v1/account/balance")
    await session.call("GET", "/v1/account/me")
    orders = [
        await session.order(
            {"item_id": item, "quantity": quantity, "merchant_order_id": f"shop-{n}"},
            prefix="/api/v1" if n % 2 == 0 else "/v1",
        )
        for n, (item, quantity) in enumerate(KEY_ORDERS)
    ]
    orders.append(await session.order({**TOPUP, "merchant_order_id": "shop-topup"}))
    orders.append(await session.order({**SERVICE, "merchant_order_id": "shop-service"}))
    login = await session.order({**LOGIN_TOPUP, "merchant_order_id": "shop-login"})
    await session.call("POST", "/api/v1/orders", {"item_id": 999999, "quantity": 1})
    await session.call("POST", "/api/v1/orders", {"item_id": 503, "quantity": 1})
    await session.call("POST", "/api/v1/orders", {"item_id": 501, "quantity": 1, "price": 1.0})
    await session.call(
        "POST", "/api/v1/orders", {"item_id": 501, "quantity": 1, "merchant_order_id": "shop-0"}
    )
    await session.call("POST", "/api/v1/orders", {"item_id": 502, "quantity": 50})
    await session.call("GET", "/api/v1/orders/00000000-0000-4000-8000-000000000000")
    await session.call("GET", "/api/v1/account/balance", token="pt_not_a_token")
    await session.poll([*orders, login], every=every, until=60)
    await session.advance(2)
    await session.client_code(login["id"])
    await session.poll([login], every=1.0, until=20, prefix="/v1")
    await session.advance(3 * session.options.retry_every * (session.options.max_retries + 1))
    await session.call("GET", "/api/v1/account/balance")


def record_production(
    path: str | Path,
    script: Callable[[ProductionSession], Awaitable[None]] = merchant_day,
    options: Production | None = None,
    **session_options: Any,
) -> ProductionSession:
    """Run `script` in a session of its own (its own event loop) and write the file."""

    async def go() -> ProductionSession:
        async with ProductionSession(options, **session_options) as session:
            await script(session)
        return session

    session = asyncio.run(go())
    session.write(path)
    return session
