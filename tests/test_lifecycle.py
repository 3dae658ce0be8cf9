"""The order lifecycle through HTTP on a manual clock (spec 2.1 and 3;
docs/scenarios.md, docs/control-api.md).

Every test drives virtual time with `advance`; nothing waits on wall time.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from mock_server.clock import iso, parse_iso
from tests.conftest import START_TS, Merchant, login

START_ISO = "2026-01-01T00:00:00.000Z"
CODE_FORMAT = re.compile(r"^[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}$")
TERMINAL = ("completed", "partial", "failed")

STEAM_KEY = {"item_id": 1001}  # key, 20.00, unlimited stock
XBOX_KEY = {"item_id": 1002}  # key, 14.99, unlimited stock
WINDOWS_KEY = {"item_id": 1003}  # key, 24.00, stock 5
RAZER_TOPUP = {"item_id": 2001, "fields": {"razer_id": "razer-42", "region": 2}}  # 1.03
GENSHIN_LOGIN_TOPUP = {  # 14.99, client_code: true
    "item_id": 2002,
    "quantity": 1,
    "fields": {"login_email": "player@example.com", "server": 2},
}
VALORANT_SERVICE = {"item_id": 3001, "fields": {"riot_id": "Player#EUW", "region": 1}}  # 24.99


# -- helpers ------------------------------------------------------------------------------


def body(base: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {**base, **extra}


async def place(
    merchant: Merchant, request: dict[str, Any], scenario: str | None = None
) -> dict[str, Any]:
    headers = {"X-Mock-Scenario": scenario} if scenario else {}
    status, order = await merchant.create(request, **headers)
    assert status == 201, order
    return order


async def detail(merchant: Merchant, order_id: str) -> dict[str, Any]:
    response = await merchant.client.get(f"/_mock/orders/{order_id}")
    assert response.status == 200, await response.text()
    return await response.json()


async def history(merchant: Merchant, order_id: str) -> list[tuple[str, str]]:
    return [(step["status"], step["at"]) for step in (await detail(merchant, order_id))["history"]]


async def mock_orders(merchant: Merchant, query: str = "") -> tuple[int, Any]:
    response = await merchant.client.get(f"/_mock/orders{query}")
    return response.status, await response.json()


async def submit_code(merchant: Merchant, order_id: str, payload: Any) -> tuple[int, Any]:
    return await merchant.call("POST", f"/api/v1/orders/{order_id}/client-code", json=payload)


async def relogin(merchant: Merchant) -> None:
    """A reset forgets issued tokens: exchange the key again."""
    merchant.token = (await login(merchant.client)).token


def at(seconds: float) -> str:
    """The ISO time `seconds` after the fixture's start."""
    return iso(START_TS + seconds)


def elapsed(start: str, end: str) -> float:
    return parse_iso(end) - parse_iso(start)


def write_scenarios(tmp_path: Path, text: str) -> str:
    path = tmp_path / "custom.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


# -- happy path ---------------------------------------------------------------------------


async def test_new_order_is_pending_charged_and_empty(merchant: Merchant) -> None:
    order = await place(merchant, body(STEAM_KEY, quantity=2))
    assert order["status"] == "pending"
    assert order["delivered_quantity"] == 0
    assert order["refund_amount"] == 0
    assert (order["error"], order["error_message"]) == ("", "")
    assert order["codes"] == []
    assert order["completed_at"] is None
    assert order["created_at"] == START_ISO
    assert order["price"] == 40.0
    assert await merchant.balance() == 960.0


async def test_happy_path_order_is_still_pending_just_before_one_second(
    merchant: Merchant,
) -> None:
    order = await place(merchant, STEAM_KEY)
    await merchant.advance(0.999)
    assert (await merchant.order(order["id"]))["status"] == "pending"


async def test_happy_path_order_is_processing_at_one_second(merchant: Merchant) -> None:
    order = await place(merchant, STEAM_KEY)
    await merchant.advance(0.999)
    await merchant.advance(0.001)
    assert (await merchant.order(order["id"]))["status"] == "processing"


async def test_happy_path_order_is_still_processing_just_before_three_seconds(
    merchant: Merchant,
) -> None:
    order = await place(merchant, STEAM_KEY)
    await merchant.advance(2.999)
    current = await merchant.order(order["id"])
    assert current["status"] == "processing"
    assert current["completed_at"] is None
    assert current["codes"] == []


async def test_happy_path_key_order_completes_at_three_seconds_with_one_code_per_unit(
    merchant: Merchant,
) -> None:
    order = await place(merchant, body(STEAM_KEY, quantity=3))
    await merchant.advance(2.999)
    await merchant.advance(0.001)
    done = await merchant.order(order["id"])
    assert done["status"] == "completed"
    assert elapsed(done["created_at"], done["completed_at"]) == 3.0
    assert done["completed_at"] == at(3)
    assert done["delivered_quantity"] == done["quantity"] == 3
    assert len(done["codes"]) == 3
    assert all(CODE_FORMAT.match(code) for code in done["codes"]), done["codes"]
    assert len(set(done["codes"])) == 3
    assert done["refund_amount"] == 0
    assert (done["error"], done["error_message"]) == ("", "")
    assert await merchant.balance() == 940.0


async def test_happy_path_topup_completes_without_codes(merchant: Merchant) -> None:
    order = await place(merchant, body(RAZER_TOPUP, quantity=10.5))
    assert order["fields"] == {"razer_id": "razer-42", "region": "United States"}
    await merchant.advance(3)
    done = await merchant.order(order["id"])
    assert done["status"] == "completed"
    assert done["delivered_quantity"] == done["quantity"] == 10.5
    assert done["codes"] == []
    assert done["completed_at"] == at(3)


async def test_happy_path_service_completes_without_codes(merchant: Merchant) -> None:
    order = await place(merchant, VALORANT_SERVICE)
    await merchant.advance(3)
    done = await merchant.order(order["id"])
    assert done["status"] == "completed"
    assert done["delivered_quantity"] == done["quantity"] == 1
    assert done["codes"] == []


async def test_control_api_history_lists_each_status_with_its_time(merchant: Merchant) -> None:
    order = await place(merchant, STEAM_KEY)
    await merchant.advance(10)
    info = await detail(merchant, order["id"])
    assert info["scenario"] == "happy_path"
    assert info["order"]["status"] == "completed"
    assert info["history"] == [
        {"status": "pending", "at": START_ISO},
        {"status": "processing", "at": at(1)},
        {"status": "completed", "at": at(3)},
    ]
    _, me = await merchant.call("GET", "/api/v1/account/me")
    assert info["account_id"] == me["id"] == order["created_by"]["id"]


async def test_control_api_order_detail_of_unknown_order_is_not_found(merchant: Merchant) -> None:
    response = await merchant.client.get("/_mock/orders/00000000-0000-4000-8000-000000000000")
    assert response.status == 404
    assert (await response.json())["code"] == "not_found"


@pytest.mark.parametrize(
    ("scenario", "request_body"),
    [
        ("happy_path", body(STEAM_KEY, quantity=3)),
        ("out_of_stock_partial", body(STEAM_KEY, quantity=4)),
        ("timeout_partial", body(STEAM_KEY, quantity=3)),
        ("failed_out_of_stock", STEAM_KEY),
        ("failed_invalid_fields", VALORANT_SERVICE),
    ],
)
async def test_terminal_status_never_changes_on_later_advances(
    merchant: Merchant, scenario: str, request_body: dict[str, Any]
) -> None:
    order = await place(merchant, request_body, scenario)
    await merchant.advance(60)
    settled = await merchant.order(order["id"])
    assert settled["status"] in TERMINAL
    steps = await history(merchant, order["id"])
    balance = await merchant.balance()
    await merchant.advance(86_400)
    await merchant.advance(3_600)
    await relogin(merchant)  # a day later the access token (2 h) has expired
    assert await merchant.order(order["id"]) == settled
    assert await history(merchant, order["id"]) == steps
    assert await merchant.balance() == balance


@pytest.mark.parametrize(
    ("scenario", "request_body", "expected_status"),
    [
        ("out_of_stock_partial", body(STEAM_KEY, quantity=4), "partial"),
        ("timeout_partial", body(STEAM_KEY, quantity=3), "partial"),
        ("failed_out_of_stock", STEAM_KEY, "failed"),
        ("failed_invalid_fields", VALORANT_SERVICE, "failed"),
    ],
)
async def test_completed_at_stays_null_on_partial_and_failed(
    merchant: Merchant, scenario: str, request_body: dict[str, Any], expected_status: str
) -> None:
    order = await place(merchant, request_body, scenario)
    await merchant.advance(60)
    settled = await merchant.order(order["id"])
    assert settled["status"] == expected_status
    assert settled["completed_at"] is None


async def test_ten_advances_of_100ms_start_processing_at_one_second(merchant: Merchant) -> None:
    order = await place(merchant, STEAM_KEY)
    for _ in range(10):
        await merchant.advance(0.1)
    clock = await (await merchant.client.get("/_mock/clock")).json()
    assert clock["now"] == at(1)
    assert (await merchant.order(order["id"]))["status"] == "processing"


# -- stock --------------------------------------------------------------------------------


async def test_two_orders_sharing_short_stock_first_completes_second_is_partial(
    merchant: Merchant,
) -> None:
    first = await place(merchant, body(WINDOWS_KEY, quantity=3))
    second = await place(merchant, body(WINDOWS_KEY, quantity=3))
    assert await merchant.balance() == 1000 - 72 - 72
    await merchant.advance(3)

    first = await merchant.order(first["id"])
    assert first["status"] == "completed"
    assert len(first["codes"]) == 3
    assert first["refund_amount"] == 0

    second = await merchant.order(second["id"])
    assert second["status"] == "partial"
    assert second["delivered_quantity"] == 2
    assert len(second["codes"]) == 2
    assert (second["error"], second["error_message"]) == ("", "")
    assert second["refund_amount"] == 24.0
    assert second["completed_at"] is None
    assert set(first["codes"]).isdisjoint(second["codes"])

    assert await merchant.balance() == 1000 - 72 - 72 + 24


async def test_order_for_sold_out_item_is_refused_and_charges_nothing(merchant: Merchant) -> None:
    await place(merchant, body(WINDOWS_KEY, quantity=3))
    await place(merchant, body(WINDOWS_KEY, quantity=3))
    await merchant.advance(3)
    balance = await merchant.balance()

    status, error = await merchant.create(body(WINDOWS_KEY, quantity=1))
    assert status == 400
    assert error["code"] == "validation_error"
    assert error["detail"] == "Item is not available"
    assert await merchant.balance() == balance
    _, listing = await mock_orders(merchant)
    assert len(listing["orders"]) == 2


async def test_key_order_settling_after_stock_ran_out_fails_out_of_stock(
    merchant: Merchant,
) -> None:
    # Stock is taken at settlement: both orders are accepted, only the first gets keys.
    first = await place(merchant, body(WINDOWS_KEY, quantity=5))
    second = await place(merchant, body(WINDOWS_KEY, quantity=1))
    await merchant.advance(3)
    assert (await merchant.order(first["id"]))["status"] == "completed"
    second = await merchant.order(second["id"])
    assert second["status"] == "failed"
    assert second["error"] == "OUT_OF_STOCK"
    assert second["error_message"] != ""
    assert second["delivered_quantity"] == 0
    assert second["codes"] == []
    assert second["refund_amount"] == second["price"] == 24.0
    assert await merchant.balance() == 1000 - 120


# -- built-in scenarios -------------------------------------------------------------------


async def test_out_of_stock_partial_delivers_half_of_four_keys(merchant: Merchant) -> None:
    order = await place(merchant, body(STEAM_KEY, quantity=4), "out_of_stock_partial")
    await merchant.advance(2.999)
    assert (await merchant.order(order["id"]))["status"] == "processing"
    await merchant.advance(0.001)
    settled = await merchant.order(order["id"])
    assert settled["status"] == "partial"
    assert settled["delivered_quantity"] == 2
    assert len(settled["codes"]) == 2
    assert (settled["error"], settled["error_message"]) == ("", "")
    assert settled["refund_amount"] == 40.0
    assert await merchant.balance() == 1000 - 80 + 40


async def test_out_of_stock_partial_of_a_single_key_fails_with_full_refund(
    merchant: Merchant,
) -> None:
    order = await place(merchant, STEAM_KEY, "out_of_stock_partial")
    await merchant.advance(3)
    settled = await merchant.order(order["id"])
    assert settled["status"] == "failed"
    assert settled["error"] == "OUT_OF_STOCK"
    assert settled["error_message"] != ""
    assert settled["refund_amount"] == 20.0
    assert await merchant.balance() == 1000.0


async def test_out_of_stock_partial_of_a_service_fails_with_full_refund(
    merchant: Merchant,
) -> None:
    order = await place(merchant, VALORANT_SERVICE, "out_of_stock_partial")
    await merchant.advance(3)
    settled = await merchant.order(order["id"])
    assert settled["status"] == "failed"
    assert settled["delivered_quantity"] == 0
    assert settled["refund_amount"] == 24.99
    assert settled["error"] == "OUT_OF_STOCK"
    assert await merchant.balance() == 1000.0


async def test_out_of_stock_partial_of_a_decimal_topup_refunds_to_the_cent(
    merchant: Merchant,
) -> None:
    order = await place(merchant, body(RAZER_TOPUP, quantity=10.5), "out_of_stock_partial")
    assert order["price"] == 10.82  # 10.5 x 1.03 = 10.815, half-up
    await merchant.advance(3)
    settled = await merchant.order(order["id"])
    assert settled["status"] == "partial"
    assert settled["delivered_quantity"] == 5.25
    assert settled["codes"] == []
    assert settled["refund_amount"] == 5.41  # 10.82 - round_half_up(5.25 x 1.03 = 5.4075)
    assert await merchant.balance() == 994.59


async def test_timeout_partial_delivers_one_key_with_order_timeout_after_31_seconds(
    merchant: Merchant,
) -> None:
    order = await place(merchant, body(STEAM_KEY, quantity=3), "timeout_partial")
    await merchant.advance(1)
    assert (await merchant.order(order["id"]))["status"] == "processing"
    await merchant.advance(29.999)
    assert (await merchant.order(order["id"]))["status"] == "processing"
    await merchant.advance(0.001)
    settled = await merchant.order(order["id"])
    assert settled["status"] == "partial"
    assert settled["delivered_quantity"] == 1
    assert len(settled["codes"]) == 1
    assert settled["error"] == "ORDER_TIMEOUT"
    assert settled["error_message"] == "The provider did not finish the order in time."
    assert settled["refund_amount"] == 40.0
    assert settled["completed_at"] is None
    assert (await history(merchant, order["id"]))[-1] == ("partial", at(31))
    assert await merchant.balance() == 1000 - 60 + 40


async def test_timeout_partial_of_a_single_key_fails_order_timeout(merchant: Merchant) -> None:
    order = await place(merchant, STEAM_KEY, "timeout_partial")
    await merchant.advance(31)
    settled = await merchant.order(order["id"])
    assert settled["status"] == "failed"
    assert settled["error"] == "ORDER_TIMEOUT"
    assert settled["refund_amount"] == 20.0


async def test_failed_out_of_stock_settles_failed_with_full_refund_at_three_seconds(
    merchant: Merchant,
) -> None:
    order = await place(merchant, body(XBOX_KEY, quantity=2), "failed_out_of_stock")
    assert await merchant.balance() == 970.02
    await merchant.advance(2.999)
    assert (await merchant.order(order["id"]))["status"] == "processing"
    await merchant.advance(0.001)
    settled = await merchant.order(order["id"])
    assert settled["status"] == "failed"
    assert settled["delivered_quantity"] == 0
    assert settled["codes"] == []
    assert settled["refund_amount"] == settled["price"] == 29.98
    assert settled["error"] == "OUT_OF_STOCK"
    assert settled["error_message"] == "The item went out of stock before it could be delivered."
    assert await history(merchant, order["id"]) == [
        ("pending", START_ISO),
        ("processing", at(1)),
        ("failed", at(3)),
    ]
    assert await merchant.balance() == 1000.0


async def test_failed_invalid_fields_fails_straight_from_pending_with_full_refund(
    merchant: Merchant,
) -> None:
    order = await place(merchant, body(RAZER_TOPUP, quantity=20), "failed_invalid_fields")
    await merchant.advance(0.999)
    assert (await merchant.order(order["id"]))["status"] == "pending"
    await merchant.advance(0.001)
    settled = await merchant.order(order["id"])
    assert settled["status"] == "failed"
    assert settled["error"] == "INVALID_FIELDS"
    assert settled["error_message"] == "The provider rejected the submitted fields."
    assert settled["delivered_quantity"] == 0
    assert settled["refund_amount"] == settled["price"] == 20.6
    assert await history(merchant, order["id"]) == [("pending", START_ISO), ("failed", at(1))]
    assert await merchant.balance() == 1000.0


async def test_slow_fulfillment_is_pending_for_30_seconds_and_completes_at_330(
    merchant: Merchant,
) -> None:
    order = await place(merchant, STEAM_KEY, "slow_fulfillment")
    await merchant.advance(29.999)
    assert (await merchant.order(order["id"]))["status"] == "pending"
    await merchant.advance(0.001)
    assert (await merchant.order(order["id"]))["status"] == "processing"
    await merchant.advance(299.999)
    assert (await merchant.order(order["id"]))["status"] == "processing"
    await merchant.advance(0.001)
    done = await merchant.order(order["id"])
    assert done["status"] == "completed"
    assert done["completed_at"] == at(330)
    assert len(done["codes"]) == 1


async def test_price_mismatch_scenario_refuses_the_catalog_price_as_guard(
    merchant: Merchant,
) -> None:
    status, error = await merchant.create(
        body(STEAM_KEY, price=20.0), **{"X-Mock-Scenario": "price_mismatch"}
    )
    assert status == 400
    assert error["code"] == "price_mismatch"
    assert error["actual_price"] == 22.0
    assert await merchant.balance() == 1000.0
    assert (await mock_orders(merchant))[1]["orders"] == []


async def test_price_mismatch_scenario_without_guard_charges_live_price_and_completes(
    merchant: Merchant,
) -> None:
    order = await place(merchant, STEAM_KEY, "price_mismatch")
    assert order["price"] == 22.0
    await merchant.advance(3)
    assert (await merchant.order(order["id"]))["status"] == "completed"
    assert await merchant.balance() == 978.0


@pytest.mark.parametrize("scenario", ["webhook_duplicate", "webhook_dropped"])
async def test_webhook_chaos_scenarios_complete_like_the_happy_path(
    merchant: Merchant, scenario: str
) -> None:
    order = await place(merchant, body(STEAM_KEY, quantity=2), scenario)
    await merchant.advance(3)
    done = await merchant.order(order["id"])
    assert done["status"] == "completed"
    assert done["completed_at"] == at(3)
    assert len(done["codes"]) == 2
    assert (await detail(merchant, order["id"]))["scenario"] == scenario


async def test_unknown_scenario_header_is_refused_listing_known_names(merchant: Merchant) -> None:
    status, error = await merchant.create(STEAM_KEY, **{"X-Mock-Scenario": "no_such_thing"})
    assert status == 400
    assert error["code"] == "validation_error"
    assert "happy_path" in error["detail"]
    assert "timeout_partial" in error["detail"]
    assert await merchant.balance() == 1000.0


@pytest.mark.parametrize(
    ("scenario", "request_body", "expected_balance"),
    [
        ("happy_path", body(XBOX_KEY, quantity=3), 955.03),
        ("out_of_stock_partial", body(XBOX_KEY, quantity=3), 985.01),
        ("timeout_partial", body(XBOX_KEY, quantity=5), 985.01),
        ("failed_out_of_stock", body(XBOX_KEY, quantity=3), 1000.0),
        ("out_of_stock_partial", body(RAZER_TOPUP, quantity=7.77), 996.0),  # 8.00 - 4.00
    ],
)
async def test_refund_credits_the_balance_exactly(
    merchant: Merchant, scenario: str, request_body: dict[str, Any], expected_balance: float
) -> None:
    order = await place(merchant, request_body, scenario)
    await merchant.advance(60)
    settled = await merchant.order(order["id"])
    balance = await merchant.balance()
    assert balance == expected_balance
    assert round((1000 - settled["price"] + settled["refund_amount"]) * 100) == round(balance * 100)


# -- need_client_code ---------------------------------------------------------------------


async def test_need_client_code_order_waits_forever_without_a_code(merchant: Merchant) -> None:
    order = await place(merchant, GENSHIN_LOGIN_TOPUP, "need_client_code")
    await merchant.advance(1.999)
    assert (await merchant.order(order["id"]))["status"] == "processing"
    await merchant.advance(0.001)
    assert (await merchant.order(order["id"]))["status"] == "need_client_code"
    await merchant.advance(3600)
    waiting = await merchant.order(order["id"])
    assert waiting["status"] == "need_client_code"
    assert waiting["completed_at"] is None
    assert waiting["delivered_quantity"] == 0


async def test_client_code_releases_the_order_to_processing_then_it_completes_2s_later(
    merchant: Merchant,
) -> None:
    order = await place(merchant, GENSHIN_LOGIN_TOPUP, "need_client_code")
    await merchant.advance(2)
    await merchant.advance(3600)

    status, released = await submit_code(merchant, order["id"], {"code": "123"})
    assert status == 200, released
    assert released["status"] == "processing"
    assert released["id"] == order["id"]

    await merchant.advance(1.999)
    assert (await merchant.order(order["id"]))["status"] == "processing"
    await merchant.advance(0.001)
    done = await merchant.order(order["id"])
    assert done["status"] == "completed"
    assert done["completed_at"] == at(3604)
    assert done["delivered_quantity"] == 1
    assert done["codes"] == []
    assert await history(merchant, order["id"]) == [
        ("pending", START_ISO),
        ("processing", at(1)),
        ("need_client_code", at(2)),
        ("processing", at(3602)),
        ("completed", at(3604)),
    ]


async def test_client_code_is_accepted_under_the_v1_prefix_too(merchant: Merchant) -> None:
    order = await place(merchant, GENSHIN_LOGIN_TOPUP, "need_client_code")
    await merchant.advance(2)
    status, released = await merchant.call(
        "POST", f"/v1/orders/{order['id']}/client-code", json={"code": "123"}
    )
    assert status == 200, released
    assert released["status"] == "processing"


@pytest.mark.parametrize(
    ("advance", "expected_status"),
    [(0, "pending"), (1, "processing"), (10, "completed")],
)
async def test_client_code_for_an_order_not_waiting_is_refused_and_changes_nothing(
    merchant: Merchant, advance: float, expected_status: str
) -> None:
    order = await place(merchant, STEAM_KEY)
    await merchant.advance(advance)
    before = await merchant.order(order["id"])
    steps = await history(merchant, order["id"])
    assert before["status"] == expected_status

    status, error = await submit_code(merchant, order["id"], {"code": "123"})
    assert status == 400
    assert error["code"] == "validation_error"
    assert await merchant.order(order["id"]) == before
    assert await history(merchant, order["id"]) == steps

    await merchant.advance(10)  # and the script carries on as if nothing happened
    done = await merchant.order(order["id"])
    assert (done["status"], done["completed_at"]) == ("completed", at(3))


async def test_client_code_before_the_order_reaches_need_client_code_is_refused(
    merchant: Merchant,
) -> None:
    order = await place(merchant, GENSHIN_LOGIN_TOPUP, "need_client_code")
    await merchant.advance(1)
    status, error = await submit_code(merchant, order["id"], {"code": "123"})
    assert (status, error["code"]) == (400, "validation_error")
    await merchant.advance(1)
    assert (await merchant.order(order["id"]))["status"] == "need_client_code"


async def test_second_client_code_after_release_is_refused(merchant: Merchant) -> None:
    order = await place(merchant, GENSHIN_LOGIN_TOPUP, "need_client_code")
    await merchant.advance(2)
    assert (await submit_code(merchant, order["id"], {"code": "123"}))[0] == 200
    status, error = await submit_code(merchant, order["id"], {"code": "123"})
    assert (status, error["code"]) == (400, "validation_error")
    await merchant.advance(2)
    assert (await merchant.order(order["id"]))["completed_at"] == at(4)


@pytest.mark.parametrize("payload", [{}, {"code": ""}, {"code": "   "}, {"code": None}, [], "123"])
async def test_client_code_without_a_code_is_refused_and_the_order_keeps_waiting(
    merchant: Merchant, payload: Any
) -> None:
    order = await place(merchant, GENSHIN_LOGIN_TOPUP, "need_client_code")
    await merchant.advance(2)
    status, error = await submit_code(merchant, order["id"], payload)
    assert status == 400
    assert error["code"] == "validation_error"
    await merchant.advance(60)
    assert (await merchant.order(order["id"]))["status"] == "need_client_code"


async def test_client_code_for_an_unknown_order_is_not_found(merchant: Merchant) -> None:
    status, error = await submit_code(
        merchant, "00000000-0000-4000-8000-000000000000", {"code": "123"}
    )
    assert status == 404
    assert error["code"] == "not_found"


async def test_login_topup_item_picks_need_client_code_by_itself(merchant: Merchant) -> None:
    order = await place(merchant, GENSHIN_LOGIN_TOPUP)
    await merchant.advance(60)
    assert (await merchant.order(order["id"]))["status"] == "need_client_code"
    assert (await detail(merchant, order["id"]))["scenario"] == "need_client_code"


async def test_other_topups_follow_the_happy_path_by_default(merchant: Merchant) -> None:
    order = await place(merchant, body(RAZER_TOPUP, quantity=5))
    await merchant.advance(60)
    assert (await merchant.order(order["id"]))["status"] == "completed"
    assert (await detail(merchant, order["id"]))["scenario"] == "happy_path"


EXPECT_CODE_SCENARIO = """\
scenarios:
  - name: login_4242
    description: Waits for the code 4242 only.
    steps:
      - after: 1s
        status: need_client_code
        expect_code: "4242"
      - status: processing
      - after: 2s
        status: completed
"""


async def test_custom_expect_code_refuses_a_wrong_code_and_accepts_the_right_one(
    make_client, tmp_path: Path
) -> None:
    client = await make_client(scenarios=(write_scenarios(tmp_path, EXPECT_CODE_SCENARIO),))
    merchant = await login(client)
    order = await place(merchant, GENSHIN_LOGIN_TOPUP, "login_4242")
    await merchant.advance(1)
    steps = await history(merchant, order["id"])

    status, error = await submit_code(merchant, order["id"], {"code": "1234"})
    assert (status, error["code"]) == (400, "validation_error")
    assert (await merchant.order(order["id"]))["status"] == "need_client_code"
    assert await history(merchant, order["id"]) == steps

    status, released = await submit_code(merchant, order["id"], {"code": "4242"})
    assert status == 200, released
    assert released["status"] == "processing"
    await merchant.advance(2)
    assert (await merchant.order(order["id"]))["status"] == "completed"


MATCH_SCENARIO = """\
scenarios:
  - name: slow_by_reference
    match:
      merchant_order_id: "^slow-"
    steps:
      - after: 10s
        status: processing
      - after: 10s
        status: completed
"""


async def test_custom_scenario_is_selected_by_matching_merchant_order_id(
    make_client, tmp_path: Path
) -> None:
    client = await make_client(scenarios=(write_scenarios(tmp_path, MATCH_SCENARIO),))
    merchant = await login(client)
    slow = await place(merchant, body(STEAM_KEY, merchant_order_id="slow-1"))
    fast = await place(merchant, body(STEAM_KEY, merchant_order_id="fast-slow-1"))
    plain = await place(merchant, STEAM_KEY)
    forced = await place(merchant, body(STEAM_KEY, merchant_order_id="slow-2"), "happy_path")

    assert (await detail(merchant, slow["id"]))["scenario"] == "slow_by_reference"
    for other in (fast, plain, forced):
        assert (await detail(merchant, other["id"]))["scenario"] == "happy_path"

    await merchant.advance(3)
    assert (await merchant.order(slow["id"]))["status"] == "pending"
    assert (await merchant.order(fast["id"]))["status"] == "completed"
    await merchant.advance(17)
    assert (await merchant.order(slow["id"]))["completed_at"] == at(20)


# -- control API: reset and listing ------------------------------------------------------


async def test_reset_restores_balance_stock_orders_and_clock(merchant: Merchant) -> None:
    old = await place(merchant, body(WINDOWS_KEY, quantity=5))
    await merchant.advance(3600)
    assert len((await merchant.order(old["id"]))["codes"]) == 5

    response = await merchant.client.post("/_mock/reset")
    assert response.status == 200, await response.text()

    clock = await (await merchant.client.get("/_mock/clock")).json()
    assert clock["now"] == START_ISO
    assert clock["mode"] == "manual"
    assert (await mock_orders(merchant))[1] == {"orders": [], "total": 0}
    await relogin(merchant)
    assert await merchant.balance() == 1000.0
    status, _ = await merchant.call("GET", f"/api/v1/orders/{old['id']}")
    assert status == 404

    again = await place(merchant, body(WINDOWS_KEY, quantity=5))  # stock back to 5
    assert again["created_at"] == START_ISO
    await merchant.advance(3)
    assert len((await merchant.order(again["id"]))["codes"]) == 5


async def test_reset_cancels_fulfillment_of_orders_in_flight(merchant: Merchant) -> None:
    await place(merchant, STEAM_KEY)
    await merchant.advance(1)
    await merchant.client.post("/_mock/reset")
    await merchant.advance(60)
    assert (await mock_orders(merchant))[1] == {"orders": [], "total": 0}
    await relogin(merchant)
    assert await merchant.balance() == 1000.0


async def test_reset_replays_the_same_ids_and_codes(merchant: Merchant) -> None:
    first = await place(merchant, body(STEAM_KEY, quantity=2))
    await merchant.advance(3)
    first = await merchant.order(first["id"])

    await merchant.client.post("/_mock/reset")
    await relogin(merchant)
    second = await place(merchant, body(STEAM_KEY, quantity=2))
    await merchant.advance(3)
    assert await merchant.order(second["id"]) == first


async def test_reset_with_seed_and_start_time_moves_the_clock_there(merchant: Merchant) -> None:
    response = await merchant.client.post(
        "/_mock/reset", json={"seed": 7, "start_time": "2030-01-01T00:00:00Z"}
    )
    assert response.status == 200, await response.text()
    assert (await response.json())["seed"] == 7

    clock = await (await merchant.client.get("/_mock/clock")).json()
    assert clock["now"] == "2030-01-01T00:00:00.000Z"
    await relogin(merchant)
    order = await place(merchant, STEAM_KEY)
    assert order["created_at"] == "2030-01-01T00:00:00.000Z"
    await merchant.advance(3)
    assert (await merchant.order(order["id"]))["completed_at"] == "2030-01-01T00:00:03.000Z"


async def test_reset_with_a_seed_gives_the_ids_of_a_fresh_start_with_that_seed(
    merchant: Merchant, make_client
) -> None:
    await merchant.client.post("/_mock/reset", json={"seed": 7})
    await relogin(merchant)
    reseeded = await place(merchant, STEAM_KEY)

    fresh = await login(await make_client(seed=7))
    assert fresh.token == merchant.token
    assert await place(fresh, STEAM_KEY) == reseeded


async def test_plain_reset_after_a_start_time_returns_to_the_startup_clock(
    merchant: Merchant,
) -> None:
    await merchant.client.post("/_mock/reset", json={"start_time": "2030-01-01T00:00:00Z"})
    await merchant.client.post("/_mock/reset")
    clock = await (await merchant.client.get("/_mock/clock")).json()
    assert clock["now"] == START_ISO


@pytest.mark.parametrize(
    "payload", [{"seed": "7"}, {"seed": True}, {"start_time": "not a time"}, {"start_time": 5}]
)
async def test_reset_with_a_bad_body_is_refused_and_changes_nothing(
    merchant: Merchant, payload: dict[str, Any]
) -> None:
    order = await place(merchant, STEAM_KEY)
    response = await merchant.client.post("/_mock/reset", json=payload)
    assert response.status == 400
    assert (await response.json())["code"] == "validation_error"
    assert (await merchant.order(order["id"]))["status"] == "pending"


async def test_list_orders_filters_by_status_and_merchant_order_id(merchant: Merchant) -> None:
    done = await place(merchant, body(STEAM_KEY, merchant_order_id="ref-done"))
    await merchant.advance(3)
    failed = await place(
        merchant, body(STEAM_KEY, merchant_order_id="ref-failed"), "failed_out_of_stock"
    )
    waiting = await place(merchant, body(STEAM_KEY, merchant_order_id="ref-wait"))

    async def ids(query: str) -> list[str]:
        status, listing = await mock_orders(merchant, query)
        assert status == 200, listing
        return [order["id"] for order in listing["orders"]]

    assert await ids("") == [done["id"], failed["id"], waiting["id"]]
    assert await ids("?status=completed") == [done["id"]]
    assert await ids("?status=pending") == [failed["id"], waiting["id"]]
    assert await ids("?merchant_order_id=ref-wait") == [waiting["id"]]
    assert await ids("?merchant_order_id=ref-done&status=completed") == [done["id"]]
    assert await ids("?merchant_order_id=ref-done&status=pending") == []
    assert await ids("?merchant_order_id=nope") == []

    await merchant.advance(3)
    assert await ids("?status=failed") == [failed["id"]]
    assert await ids("?status=partial") == []


async def test_list_orders_refuses_an_unknown_status(merchant: Merchant) -> None:
    status, error = await mock_orders(merchant, "?status=shipped")
    assert status == 400
    assert error["code"] == "validation_error"
