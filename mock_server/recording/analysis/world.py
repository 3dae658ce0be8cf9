"""The sandbox server the replay starts and drives over HTTP (docs/recording.md, "What
it does"), as any client would: through the merchant API and the documented control API
(docs/control-api.md), never reaching into a `Sandbox`.

* `Server`: one sandbox server (manual clock, seeded, 127.0.0.1 on a free port), the
  webhook receiver, and one HTTP client.
* `World`: a sandbox of its own (`POST /_mock/sandboxes`) for a session or a class's
  plays, whose clock the replay advances; `world_account` is one of its accounts.
* `Receiver`: the merchant's webhook receiver, answering each delivery as the recording
  says production's receiver did (`recorded_answers`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp
from aiohttp import web

from .traces import Trace
from .values import iso, parse

SEED = 1
#: Major units: no recorded order is refused for want of money.
BALANCE = 1_000_000_000


class ReplayError(Exception):
    """The replay cannot go on (the sandbox refused its setup)."""


class Receiver:
    """The merchant's webhook receiver as the recording says it behaved: each attempt
    for an order is answered with the next code production's receiver gave (the
    recorded `answered`, in order), 200 beyond them. What it receives is kept."""

    def __init__(self) -> None:
        self.answers: dict[str, list[int]] = {}
        self.received: dict[str, list[Any]] = {}
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/hooks/{tag}", self._deliver)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}/hooks"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def expect(self, order_id: str, answers: list[int]) -> None:
        self.answers[order_id] = list(answers)

    def forget(self, order_ids: Iterable[str]) -> None:
        for order_id in order_ids:
            self.answers.pop(order_id, None)
            self.received.pop(order_id, None)

    async def _deliver(self, request: web.Request) -> web.Response:
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        order_id = str(body.get("order_id")) if isinstance(body, dict) else ""
        seen = self.received.setdefault(order_id, [])
        seen.append(body)
        answers = self.answers.get(order_id, [])
        status = answers[len(seen) - 1] if len(seen) <= len(answers) else 200
        return web.Response(status=status if 100 <= status <= 599 else 200)


def recorded_answers(trace: Trace) -> list[int]:
    return [w.answered if w.answered is not None else 200 for w in trace.webhooks]


class Server:
    """The sandbox server compare drives, the receiver, and one HTTP client."""

    def __init__(
        self, scenarios: list[str], catalog: str | None, shapes: str | None = None
    ) -> None:
        self.scenario_paths = scenarios
        self.catalog_path = catalog
        self.shapes_path = shapes
        self.receiver = Receiver()
        self.url = ""
        self._serving: Any = None
        self.http: aiohttp.ClientSession | None = None
        self._worlds = 0

    async def start(self) -> None:
        """Start it all; a bad `--scenarios`, `--catalog` or `--shapes` file raises
        `ConfigError`. Every world inherits the server's shapes (docs/shapes.md)."""
        from ...app import create_app
        from ...config import Settings, load_startup
        from ...serving import Serving

        big = 10**9
        settings = Settings(
            host="127.0.0.1",
            port=0,
            clock="manual",
            seed=SEED,
            catalog=self.catalog_path,
            scenarios=tuple(self.scenario_paths),
            shapes=self.shapes_path,
            journal_size=10,
            max_sandboxes=big,
            sandbox_max_orders=big,
            sandbox_max_accounts=big,
            sandbox_max_tokens=big,
            sandbox_max_catalog=big,
        )
        startup = load_startup(settings)
        self._serving = Serving(create_app(settings, startup=startup), "127.0.0.1", 0)
        await self._serving.start()
        self.url = self._serving.url
        await self.receiver.start()
        self.http = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, force_close=False),
            timeout=aiohttp.ClientTimeout(total=120),
        )

    async def stop(self) -> None:
        if self.http is not None:
            await self.http.close()
        await self.receiver.stop()
        if self._serving is not None:
            await self._serving.stop()

    async def call(
        self,
        method: str,
        url: str,
        *,
        body: Any = None,
        data: bytes | None = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> tuple[int, Any]:
        """One request; the answer's body as JSON, else text (None when empty)."""
        assert self.http is not None
        sent: list[tuple[str, str]] = list(headers or [])
        if body is not None:
            data = json.dumps(body).encode()
            if not any(name.lower() == "content-type" for name, _ in sent):
                sent.append(("Content-Type", "application/json"))
        async with self.http.request(
            method, url, data=data, headers=sent, allow_redirects=False
        ) as response:
            raw = await response.read()
            return response.status, parse(raw)

    async def scenarios(self) -> list[dict[str, Any]]:
        status, answer = await self.call("GET", self.url + "/_mock/scenarios")
        if status != 200:
            raise ReplayError(f"GET /_mock/scenarios answered {status}: {answer}")
        return list(answer["scenarios"])

    async def world(
        self, start: float, accounts: list[dict[str, Any]], catalog: list[dict[str, Any]] | None
    ) -> World:
        self._worlds += 1
        body: dict[str, Any] = {
            "seed": SEED,
            "clock": "manual",
            "start_time": iso(start),
            "accounts": {"accounts": accounts},
        }
        if catalog is not None:
            body["catalog"] = catalog
        status, answer = await self.call("POST", self.url + "/_mock/sandboxes", body=body)
        if status != 201:
            raise ReplayError(f"the sandbox refused the replay's setup ({status}): {answer}")
        return World(self, answer["id"], answer["base_url"])

    def key(self, kind: str, *parts: Any) -> str:
        """An API key unique on this server: `ak_<kind>_<world>_<parts>`."""
        return "_".join(["ak", kind, str(self._worlds), *map(str, parts)])


@dataclass
class World:
    server: Server
    id: str
    base_url: str
    now: float = 0.0  # seconds since the world's start

    async def advance_to(self, when: float) -> None:
        if when > self.now + 1e-7:
            seconds = round(when - self.now, 6)
            status, answer = await self.server.call(
                "POST", self.base_url + "/_mock/clock/advance", body={"seconds": seconds}
            )
            if status != 200:
                raise ReplayError(f"POST /_mock/clock/advance answered {status}: {answer}")
            self.now = when

    async def token(self, api_key: str) -> str | None:
        status, answer = await self.server.call(
            "POST", self.base_url + "/api/v1/auth/token/client", body={"api_key": api_key}
        )
        return answer.get("access_token") if status == 200 and isinstance(answer, dict) else None

    async def inspect(self, order_id: str) -> dict[str, Any]:
        """`GET /_mock/orders/{id}`: the order, its scenario, history and deliveries."""
        status, answer = await self.server.call(
            "GET", self.base_url + "/_mock/orders/" + quote(order_id, safe="")
        )
        return answer if status == 200 and isinstance(answer, dict) else {}

    async def account_with_key(self, api_key: str) -> dict[str, Any] | None:
        """`GET /_mock/accounts`: the account holding `api_key`, or None."""
        status, answer = await self.server.call("GET", self.base_url + "/_mock/accounts")
        accounts = answer.get("accounts") if status == 200 and isinstance(answer, dict) else None
        return next((a for a in accounts or [] if api_key in a.get("api_keys", [])), None)

    async def change_account(self, account_id: str, change: dict[str, Any]) -> None:
        """`PATCH /_mock/accounts/{id}`."""
        path = "/_mock/accounts/" + quote(account_id, safe="")
        status, answer = await self.server.call("PATCH", self.base_url + path, body=change)
        if status != 200:
            raise ReplayError(f"PATCH {path} answered {status}: {answer}")

    async def catalog_item(self, item_id: int) -> dict[str, Any] | None:
        """`GET /_mock/catalog`: the item, or None where the catalog has no such item."""
        status, answer = await self.server.call("GET", self.base_url + "/_mock/catalog")
        items = answer.get("items") if status == 200 and isinstance(answer, dict) else None
        return next((i for i in items or [] if i.get("id") == item_id), None)

    async def change_item(self, item_id: int, change: dict[str, Any]) -> None:
        """`PATCH /_mock/catalog/items/{id}`."""
        path = f"/_mock/catalog/items/{item_id}"
        status, answer = await self.server.call("PATCH", self.base_url + path, body=change)
        if status != 200:
            raise ReplayError(f"PATCH {path} answered {status}: {answer}")

    async def close(self) -> None:
        await self.server.call("DELETE", self.server.url + "/_mock/sandboxes/" + self.id)


def world_account(name: str, api_key: str, webhook_url: str | bool | None) -> dict[str, Any]:
    account: dict[str, Any] = {
        "email": f"{name}@replay.example.com",
        "api_key": api_key,
        "balance": BALANCE,
    }
    if isinstance(webhook_url, str) and webhook_url:
        account["webhook_url"] = f"{webhook_url}/{name}"
    return account
