"""Shared fixtures: an in-process sandbox on a manual clock, and a logged-in client."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import replace
from functools import partialmethod
from typing import Any

import aiohttp
import pytest

from mock_server.app import App, create_app
from mock_server.clock import parse_iso
from mock_server.config import Settings
from mock_server.serving import Serving

START = "2026-01-01T00:00:00Z"
START_TS = parse_iso(START)
BASE_SETTINGS = Settings(clock="manual", seed=42, start_time=START_TS)
#: The order's fields, in the order of spec section 2.1.
SPEC_ORDER_FIELDS = (
    "id",
    "item",
    "item_name",
    "item_product_type",
    "quantity",
    "delivered_quantity",
    "price",
    "refund_amount",
    "fields",
    "status",
    "error",
    "error_message",
    "codes",
    "merchant_order_id",
    "source",
    "created_by",
    "created_at",
    "completed_at",
    "webhook",
)
#: The built-in scenarios docs/scenarios.md lists, in its order.
BUILTIN_SCENARIOS = (
    "happy_path",
    "out_of_stock_partial",
    "timeout_partial",
    "need_client_code",
    "failed_out_of_stock",
    "failed_invalid_fields",
    "price_mismatch",
    "slow_fulfillment",
    "webhook_duplicate",
    "webhook_dropped",
)


class Merchant:
    """A test client logged in as one account, with helpers for the common calls."""

    def __init__(self, client: Any, token: str) -> None:
        self.client = client
        self.token = token

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    async def call(
        self, method: str, path: str, *, json: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        response = await self.client.request(
            method, path, json=json, headers={**self.auth, **(headers or {})}
        )
        return response.status, await response.json()

    async def create(self, body: dict[str, Any], **headers: str) -> tuple[int, Any]:
        return await self.call("POST", "/api/v1/orders", json=body, headers=headers)

    async def order(self, order_id: str) -> dict[str, Any]:
        status, body = await self.call("GET", f"/api/v1/orders/{order_id}")
        assert status == 200, body
        return body

    async def balance(self) -> float:
        status, body = await self.call("GET", "/api/v1/account/balance")
        assert status == 200, body
        return body["balance"]

    async def advance(self, seconds: float) -> None:
        response = await self.client.post("/_mock/clock/advance", json={"seconds": seconds})
        assert response.status == 200, await response.text()


async def login(client: Any, api_key: str = "ak_test_default") -> Merchant:
    response = await client.post("/api/v1/auth/token/client", json={"api_key": api_key})
    assert response.status == 200, await response.text()
    return Merchant(client, (await response.json())["access_token"])


class Client:
    """A client of one app, served as every server serves it (`serving.Serving`, on
    127.0.0.1 and a free port): aiohttp's session on its URL, paths relative to it."""

    def __init__(self, app: App, serving: Serving, session: aiohttp.ClientSession) -> None:
        self.app = app
        self.serving = serving
        self.session = session

    @property
    def host(self) -> str:
        return self.serving.url.rpartition(":")[0].removeprefix("http://")

    @property
    def port(self) -> int:
        return int(self.serving.url.rpartition(":")[2])

    def request(self, method: str, path: str, **options: Any) -> Any:
        return self.session.request(method, path, **options)

    get = partialmethod(request, "GET")
    head = partialmethod(request, "HEAD")
    options = partialmethod(request, "OPTIONS")
    post = partialmethod(request, "POST")
    put = partialmethod(request, "PUT")
    patch = partialmethod(request, "PATCH")
    delete = partialmethod(request, "DELETE")


@pytest.fixture
async def make_client() -> AsyncIterator[Any]:
    """Serve an app (`create_app` on the tests' settings with `overrides`, or the `app`
    given) and return a client of it; everything stops when the test ends."""
    clients: list[Client] = []

    async def make(app: App | None = None, **overrides: Any) -> Client:
        app = app or create_app(replace(BASE_SETTINGS, **overrides))
        serving = Serving(app, "127.0.0.1", 0, access_log=None)
        await serving.start()
        client = Client(app, serving, aiohttp.ClientSession(base_url=serving.url))
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.session.close()
        await client.serving.stop()


@pytest.fixture
async def client(make_client):
    return await make_client()


@pytest.fixture
async def merchant(client) -> Merchant:
    return await login(client)


def pytest_collection_finish(session) -> None:
    """The image's tests need an image built by a real engine (tests/container_engine.py):
    start it now, so that it builds while the other tests run."""
    from tests import container_engine

    # Under xdist every worker collects every test, but only the one that runs
    # test_image.py (a whole file runs on one worker) needs the image: it builds it when
    # the file's first test asks, and removes it at its session's end.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if any(item.path.name == "test_image.py" for item in session.items):
        container_engine.start_preparing(container_engine.IMAGE_TAG)


def pytest_sessionfinish(session) -> None:
    from tests import container_engine

    container_engine.clean_up()


#: What the image's tests noted about the engine and the base, as their reports carry
#: it (under xdist they ran in a worker, whose own output is not shown).
IMAGE_NOTE = "container image"
_image_notes: list[str] = []


def pytest_runtest_logreport(report) -> None:
    for name, value in report.user_properties:
        if name == IMAGE_NOTE and value not in _image_notes:
            _image_notes.append(value)


def pytest_terminal_summary(terminalreporter) -> None:
    """Which engine and base image the image's tests used (tests/container_engine.py)."""
    from tests.container_engine import NOTES

    notes = list(dict.fromkeys([*NOTES, *_image_notes]))
    if notes:
        terminalreporter.write_sep("-", IMAGE_NOTE)
        for note in notes:
            terminalreporter.write_line(note)
