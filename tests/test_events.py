"""The live event stream, `GET /_mock/events` (docs/control-api.md), read as a tool reads it.

Every event comes from a call the test makes on the manual clock; reads are bounded by
a timeout, never a sleep.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp import web

from mock_server.domain.events import EventHub
from mock_server.edge.jsonio import dumps
from tests.conftest import login


async def next_event(stream) -> tuple[str, Any]:
    """The next `event:`/`data:` frame, skipping keep-alive comments."""
    while True:
        raw = await asyncio.wait_for(stream.content.readuntil(b"\n\n"), 5)
        lines = raw.decode().strip().splitlines()
        if all(line.startswith(":") for line in lines):
            continue
        fields = dict(line.split(": ", 1) for line in lines)
        return fields["event"], json.loads(fields["data"])


async def events_until(stream, name: str, **match: Any) -> list[tuple[str, Any]]:
    """Every event read, up to and including the first `name` whose data has `match`."""
    seen = []
    while True:
        event = await next_event(stream)
        seen.append(event)
        if event[0] == name and all(event[1].get(k) == v for k, v in match.items()):
            return seen


@pytest.fixture
async def stream(client):
    response = await client.get("/_mock/events")
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/event-stream")
    yield response
    response.close()


async def test_the_stream_starts_with_ready_and_the_clock(client, stream):
    assert await next_event(stream) == ("ready", {"now": "2026-01-01T00:00:00.000Z"})


async def test_an_order_is_streamed_from_creation_to_its_webhook(client, stream, aiohttp_server):
    async def ok(request: web.Request) -> web.Response:
        return web.Response()

    hooks = web.Application()
    hooks.router.add_post("/hooks", ok)
    receiver = await aiohttp_server(hooks)
    merchant = await login(client)
    accounts = await (await client.get("/_mock/accounts")).json()
    account_id = accounts["accounts"][0]["id"]
    await client.patch(
        f"/_mock/accounts/{account_id}", json={"webhook_url": str(receiver.make_url("/hooks"))}
    )
    await next_event(stream)  # ready
    _, order = await merchant.create({"item_id": 1001, "merchant_order_id": "live-1"})
    created = await events_until(stream, "order")
    assert created[-1][1]["order"]["status"] == "pending"
    assert created[-1][1]["account_id"] == account_id
    assert [name for name, _ in created] == ["journal", "order"]  # the token, then the order

    await merchant.advance(3)
    seen = await events_until(stream, "clock")
    statuses = [data["order"]["status"] for name, data in seen if name == "order"]
    assert statuses[:2] == ["processing", "completed"]
    assert seen[-1] == ("clock", {"now": "2026-01-01T00:00:03.000Z"})
    deliveries = [data for name, data in seen if name == "delivery"]
    assert [d["status"] for d in deliveries] == ["pending", "delivered"]
    assert deliveries[-1]["attempts"][0]["status_code"] == 200
    last_order = [data["order"] for name, data in seen if name == "order"][-1]
    assert last_order["webhook"]["status"] == "delivered"


async def test_merchant_calls_are_streamed_as_journal_entries(client, stream):
    await next_event(stream)
    merchant = await login(client)
    await merchant.call("GET", "/v1/orders/nope")
    name, entry = await next_event(stream)  # the token exchange
    assert (name, entry["path"], entry["status"]) == ("journal", "/api/v1/auth/token/client", 200)
    name, entry = await next_event(stream)
    assert (name, entry["method"], entry["path"], entry["status"]) == (
        "journal",
        "GET",
        "/v1/orders/nope",
        404,
    )
    await client.get("/_mock/orders")  # control calls are not merchant calls
    await client.post("/_mock/reset", json={})
    assert await next_event(stream) == ("reset", {})


async def test_each_sandbox_streams_its_own_events(client):
    created = await (await client.post("/_mock/sandboxes", json={})).json()
    base = "/_mock/sandboxes/" + created["id"]
    own = await client.get(f"{base}/_mock/events")
    default = await client.get("/_mock/events")
    await next_event(own), await next_event(default)
    await client.post(f"{base}/_mock/clock/advance", json={"seconds": 1})
    await client.post("/_mock/clock/advance", json={"seconds": 7})
    assert await next_event(own) == ("clock", {"now": "2026-01-01T00:00:01.000Z"})
    assert await next_event(default) == ("clock", {"now": "2026-01-01T00:00:07.000Z"})
    await client.delete(f"/_mock/sandboxes/{created['id']}")
    assert await asyncio.wait_for(own.content.read(), 5) == b""  # its stream ended
    own.close(), default.close()


async def test_a_journal_event_is_the_entry_the_journal_shows(client, stream):
    await next_event(stream)
    merchant = await login(client)
    body = '{"item_id": 1001, "merchant_order_id": "caf\u00e9 \\"quoted\\" \u2603"}'
    response = await client.post(
        "/api/v1/orders",
        data=body.encode(),
        headers={**merchant.auth, "Content-Type": "application/json"},
    )
    assert response.status == 201, await response.text()
    streamed = [data for name, data in await events_until(stream, "journal", status=201)]
    shown = (await (await client.get("/_mock/requests?limit=1")).json())["requests"][0]
    assert streamed[-1] == shown
    assert shown["body"] == body


async def test_a_reader_that_falls_behind_gets_overflow_and_is_let_go(client):
    sandbox = client.app.sandboxes.default.sandbox
    sandbox.events = EventHub(dumps, limit=5)
    stream = await client.get("/_mock/events")
    await next_event(stream)
    merchant = await login(client)
    for _ in range(4):
        await merchant.create({"item_id": 1001})
    # One advance moves four orders twice, synchronously: more than 5 frames at once.
    await merchant.advance(3)
    names = []
    while not names or names[-1] != "overflow":
        names.append((await next_event(stream))[0])
    assert "clock" not in names
    assert await asyncio.wait_for(stream.content.read(), 5) == b""
    assert not sandbox.events.active
    assert await merchant.balance() == 920.0  # the merchant API never noticed


async def test_a_stalled_reader_never_holds_the_merchant_api(client):
    reader, writer = await asyncio.open_connection(client.host, client.port)
    writer.write(b"GET /_mock/events HTTP/1.1\r\nHost: x\r\n\r\n")  # then never read
    await writer.drain()
    merchant = await login(client)
    _, order = await merchant.create({"item_id": 1001})
    for _ in range(1000):  # 1,000 journal events the stalled reader never takes
        assert (await merchant.order(order["id"]))["id"] == order["id"]
    writer.close()


def test_the_hub_drops_a_full_reader_and_keeps_the_others():
    hub = EventHub(dumps, limit=2)
    slow, fast = hub.subscribe(), hub.subscribe()
    hub.publish("clock", {"now": "a"})
    assert fast.take().startswith(b"event: clock")  # fast drains; slow does not
    hub.publish("clock", {"now": "b"})
    fast.take()
    hub.publish("clock", {"now": "c"})
    assert slow.overflowed and not fast.overflowed
    assert hub.active
    hub.close()
    assert fast.closed and not hub.active


def test_readers_at_their_own_pace_each_get_every_frame_once_in_order():
    hub = EventHub(dumps, limit=3)
    early = hub.subscribe()
    hub.publish("clock", {"now": "1"})
    late = hub.subscribe()  # sees only what comes after it
    seen: dict[str, bytes] = {"early": early.take(), "late": b""}
    for now in "2345":
        hub.publish("clock", {"now": now})
        seen["early"] += early.take()
        if now in "35":
            seen["late"] += late.take()
    assert seen["early"] == b"".join(hub.frame("clock", {"now": n}) for n in "12345")
    assert seen["late"] == b"".join(hub.frame("clock", {"now": n}) for n in "2345")
    assert not (early.overflowed or late.overflowed)
    assert early.take() == late.take() == b""
