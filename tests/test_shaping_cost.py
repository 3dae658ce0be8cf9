"""What production's shapes cost a merchant answer (docs/shapes.md; bench/SHAPES.md):
an answer of a kind no rule shapes is never parsed, and the same bytes answered again
(an order looked up again and again) are parsed once but shaped each time."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from aiohttp import web
from conftest import BASE_SETTINGS

from mock_server.app import create_app
from mock_server.domain.deliveries import Delivery
from mock_server.domain.sandbox import Sandbox
from mock_server.edge.jsonio import json_response
from mock_server.merchant import shaping

ORDER = {"id": "o-1", "item": 1001, "status": "pending", "price": 20.0, "webhook": None}


class CountingJson:
    """orjson as `shaping` uses it, counting the bodies it parses."""

    JSONDecodeError = orjson.JSONDecodeError

    def __init__(self) -> None:
        self.parsed = 0

    def loads(self, raw: bytes) -> Any:
        self.parsed += 1
        return orjson.loads(raw)


@pytest.fixture
def parses(monkeypatch) -> CountingJson:
    counting = CountingJson()
    monkeypatch.setattr(shaping, "orjson", counting)
    return counting


def sandbox_with(shapes: dict[str, Any]) -> Sandbox:
    sandbox = create_app(BASE_SETTINGS).sandbox
    sandbox.set_shapes(shapes)
    return sandbox


def test_an_answer_no_rule_shapes_is_left_unread(parses):
    sandbox = sandbox_with({"balance": {"as": {"balance": "decimal_string"}}})
    response = json_response(ORDER)
    sent = response.body
    assert shaping.shaped(sandbox, "/api/v1/orders/o-1", response).body is sent
    assert parses.parsed == 0


def test_the_same_bytes_are_parsed_once_and_shaped_for_each_answer(parses):
    sandbox = sandbox_with({"order": {"add": {"request_id": "uuid", "item_id": {"copy": "item"}}}})
    raw = json_response(ORDER).body
    answers = [
        orjson.loads(shaping.shaped(sandbox, "/v1/orders/o-1", json_response(ORDER)).body),
        orjson.loads(shaping.shaped(sandbox, "/v1/orders/o-1", _answer(raw)).body),
        orjson.loads(shaping.shaped(sandbox, "/v1/orders/o-1", _answer(raw)).body),
    ]
    assert [a["item_id"] for a in answers] == [1001, 1001, 1001]
    assert len({a["request_id"] for a in answers}) == 3  # each answer draws its own
    assert parses.parsed == 2  # the first answer's bytes, then `raw` once


def test_a_refusal_outside_the_spec_s_envelope_is_left_as_it_is(parses):
    sandbox = sandbox_with({"error": {"add": {"request_id": "uuid"}}})
    response = json_response({"detail": "no such thing"}, 404)
    sent = response.body
    assert shaping.shaped(sandbox, "/api/v1/orders/nope", response).body is sent
    enveloped = shaping.shaped(
        sandbox, "/api/v1/orders/nope", json_response({"detail": "x", "code": "not_found"}, 404)
    )
    assert len(orjson.loads(enveloped.body)["request_id"]) == 36


def _answer(raw: bytes) -> web.Response:
    """An answer with these very bytes, as `OrderRenderings` gives an order read again."""
    return web.Response(body=raw, content_type="application/json")


def test_a_file_that_shapes_events_alone_leaves_every_answer_unlooked_at(parses, monkeypatch):
    sandbox = sandbox_with({"event": {"add": {"sent_at": "now"}}})
    looked_at: list[str] = []
    monkeypatch.setattr(shaping, "answer_kind", lambda path, *_: looked_at.append(path))
    response = json_response(ORDER)
    sent = response.body
    assert shaping.shaped(sandbox, "/api/v1/orders/o-1", response).body is sent
    assert looked_at == [] and parses.parsed == 0


async def test_an_order_read_again_is_shaped_once_while_its_bytes_and_facts_stay(
    make_client, monkeypatch
):
    """Rules that make the same value each time: the shaped answer is kept and sent
    again; a change of what a rule reads (the webhook URL it copies) shapes anew."""
    from conftest import login

    shaped: list[bytes] = []
    encode = shaping.dumps
    monkeypatch.setattr(shaping, "dumps", lambda data: shaped.append(encode(data)) or shaped[-1])
    client = await make_client(webhook_url="http://127.0.0.1:9/hooks")
    client.app.sandbox.set_shapes(
        {
            "order": {"add": {"item_id": {"copy": "item"}}},
            "order.webhook": {"add": {"url": {"copy": "delivery.url"}}},
        }
    )
    merchant = await login(client)
    status, order = await merchant.create({"item_id": 1001})
    assert len(shaped) == 1
    first = await merchant.order(order["id"])
    second = await merchant.order(order["id"])
    assert first == second and first["item_id"] == 1001
    assert len(shaped) == 2  # the creation, then the first lookup: the second was kept
    account = (await (await client.get("/_mock/accounts")).json())["accounts"][0]
    patched = await client.patch(
        f"/_mock/accounts/{account['id']}", json={"webhook_url": "http://127.0.0.1:8/other"}
    )
    assert patched.status == 200
    third = await merchant.order(order["id"])
    assert third["webhook"]["url"] == "http://127.0.0.1:8/other"
    assert len(shaped) == 3


async def test_a_created_order_is_shaped_from_its_mapping_not_parsed_back(make_client, parses):
    """A created order's answer carries the mapping it was just encoded from
    (`jsonio.RenderedResponse`): it is shaped without being parsed, and shapes as the
    same order's bytes parsed back would."""
    from conftest import login

    client = await make_client(webhook_url="http://127.0.0.1:9/hooks")
    rules = {
        "order": {"add": {"item_id": {"copy": "item"}}, "drop": ["source"]},
        "order.webhook": {"add": {"url": {"copy": "delivery.url"}}},
    }
    client.app.sandbox.set_shapes(rules)
    merchant = await login(client)
    status, created = await merchant.create({"item_id": 1001})
    assert status == 201 and parses.parsed == 0
    assert created["item_id"] == 1001 and "source" not in created
    assert created["webhook"]["url"] == "http://127.0.0.1:9/hooks"
    sandbox = client.app.sandbox
    order = sandbox.state.orders[created["id"]]
    read_back = shaping.shaped(
        sandbox, "/api/v1/orders", web.Response(body=orjson.dumps(order.to_json()), status=201)
    )
    assert parses.parsed == 1 and orjson.loads(read_back.body) == created


async def test_a_kept_shaped_event_holds_only_its_own_bytes():
    """Each delivery keeps the event it sent when shapes made it; orjson's result holds
    a 4 KiB buffer, so what is kept is copied to its own size."""
    import tracemalloc

    from mock_server.edge.jsonio import parse_json

    sandbox = sandbox_with({"event": {"add": {"sent_at": "now"}}})
    account = next(iter(sandbox.state.accounts.values()))
    sandbox.patch_account(account.id, {"balance": 100_000})
    orders = [
        sandbox.create_order(
            account, parse_json(b'{"item_id": 1001, "merchant_order_id": "k-%d"}' % i)
        )
        for i in range(200)
    ]
    deliveries = [Delivery(f"d-{i}", order) for i, order in enumerate(orders)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        sent = [sandbox.event_body(delivery, "http://127.0.0.1:9/hooks") for delivery in deliveries]
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert all(delivery.sent is body for delivery, body in zip(deliveries, sent, strict=True))
    assert b'"sent_at"' in sent[0]
    assert kept < 2 * sum(len(body) for body in sent) + 200 * 200  # not 200 x 4 KiB
