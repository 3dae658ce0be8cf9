"""Why an order got its scenario (docs/control-api.md): `scenario_reason` on every order, and
`POST /_mock/scenarios/explain` for a request not yet sent, with near misses."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Merchant

TIMEOUTS = {
    "scenarios": [
        {
            "name": "timeouts",
            "match": {"merchant_order_id": "^timeout-", "product_type": "key"},
            "steps": [{"after": "30s", "status": "failed", "error": "ORDER_TIMEOUT"}],
        },
        {
            "name": "big_keys",
            "match": {"quantity_min": 5},
            "steps": [{"status": "completed"}],
        },
    ]
}


async def reason_of(merchant: Merchant, order_id: str) -> dict[str, str]:
    detail = await (await merchant.client.get(f"/_mock/orders/{order_id}")).json()
    return detail["scenario_reason"]


async def place(merchant: Merchant, body: dict[str, Any], **headers: str) -> str:
    status, order = await merchant.create(body, **headers)
    assert status == 201, order
    return order["id"]


@pytest.fixture
async def scripted(merchant: Merchant) -> Merchant:
    response = await merchant.client.post("/_mock/scenarios", json=TIMEOUTS)
    assert response.status == 201
    return merchant


async def test_each_rule_names_itself(scripted: Merchant):
    merchant = scripted
    by_header = await place(merchant, {"item_id": 1001}, **{"X-Mock-Scenario": "timeout_partial"})
    assert await reason_of(merchant, by_header) == {
        "source": "header",
        "detail": "X-Mock-Scenario: timeout_partial",
    }
    await merchant.client.post("/_mock/scenarios/next", json={"scenario": "failed_out_of_stock"})
    queued = await place(merchant, {"item_id": 1001})
    reason = await reason_of(merchant, queued)
    assert reason["source"] == "queue"
    assert "'failed_out_of_stock' for any account" in reason["detail"]
    matched = await place(merchant, {"item_id": 1001, "merchant_order_id": "timeout-7"})
    assert await reason_of(merchant, matched) == {
        "source": "match",
        "detail": "'timeouts' matches: merchant_order_id ~ '^timeout-', product_type = key",
    }
    login_topup = {
        "item_id": 2002,
        "quantity": 1,
        "fields": {"login_email": "player@example.com", "server": 2},
    }
    coded = await place(merchant, login_topup)
    assert await reason_of(merchant, coded) == {
        "source": "client_code",
        "detail": "item 2002 is marked client_code",
    }
    default = await place(merchant, {"item_id": 1001, "merchant_order_id": "plain-1"})
    assert (await reason_of(merchant, default))["source"] == "default"


async def test_explain_names_the_choice_and_the_first_key_each_near_miss_failed(scripted):
    merchant = scripted
    response = await merchant.client.post(
        "/_mock/scenarios/explain",
        json={"body": {"item_id": 1001, "merchant_order_id": "tmo-1", "quantity": 2}},
    )
    assert response.status == 200
    assert await response.json() == {
        "scenario": "happy_path",
        "reason": {
            "source": "default",
            "detail": "no header, queue entry, match rule or client-code item applied",
        },
        "near_misses": [
            {
                "scenario": "timeouts",
                "key": "merchant_order_id",
                "why": "merchant_order_id 'tmo-1' does not match '^timeout-'",
            },
            {"scenario": "big_keys", "key": "quantity_min", "why": "quantity 2 is below 5"},
        ],
        "candidates": [],  # no weighted scenario: nothing would be drawn
    }


async def test_explain_reads_the_header_and_the_queue_without_using_them(scripted):
    merchant = scripted
    await merchant.client.post("/_mock/scenarios/next", json={"scenario": "failed_out_of_stock"})
    ask = {"body": {"item_id": 1001}}
    for _ in range(2):  # the queue entry stays
        explained = await (await merchant.client.post("/_mock/scenarios/explain", json=ask)).json()
        assert (explained["scenario"], explained["reason"]["source"]) == (
            "failed_out_of_stock",
            "queue",
        )
    ask["headers"] = {"x-mock-scenario": "slow_fulfillment"}
    explained = await (await merchant.client.post("/_mock/scenarios/explain", json=ask)).json()
    assert explained["reason"] == {
        "source": "header",
        "detail": "X-Mock-Scenario: slow_fulfillment",
    }
    assert (await merchant.client.get("/_mock/orders")).status == 200
    assert (await (await merchant.client.get("/_mock/orders")).json())["total"] == 0


@pytest.mark.parametrize(
    ("ask", "status"),
    [
        ({"body": {"item_id": 999999}}, 400),  # the order itself would be refused
        ({"body": {"item_id": 1001}, "headers": {"X-Mock-Scenario": "nope"}}, 400),
        ({"body": {"item_id": 1001}, "account_id": "nobody"}, 404),
        ({"item_id": 1001}, 400),  # not wrapped in "body"
        ({"body": [1]}, 400),
    ],
)
async def test_explain_refuses_what_creation_would_refuse(merchant, ask, status):
    response = await merchant.client.post("/_mock/scenarios/explain", json=ask)
    assert response.status == status
    assert (await response.json())["code"] in ("validation_error", "not_found")
