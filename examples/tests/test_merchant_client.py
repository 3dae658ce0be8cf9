"""The example merchant client against the sandbox, one test per built-in scenario.

Written only with the pytest plugin's public surface: the `mock_server` and
`webhook_receiver` fixtures (and their handles' methods). The clock is manual: the
client's retry backoff goes to a recorder instead of `time.sleep`, and its polling
moves the sandbox's clock (`poll=mock_server.advance`), so nothing waits on wall time.

Run: `pytest -q examples` from the project root; against a running sandbox started
with `--clock manual`: `pytest -q examples --mock-server-url http://127.0.0.1:8080`.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests
from requests.adapters import HTTPAdapter

from examples.merchant_client import (
    ApiError,
    AuthenticationFailed,
    OrderingClient,
    OrderOutcomeUnknown,
    OutcomeTimeout,
    PriceMismatch,
    handle_webhook,
    order_id_for,
    signature_is_valid,
)

LOGIN_TOPUP_FIELDS = {"login_email": "player@example.com", "server": 2}  # item 2002
BOOST_FIELDS = {"riot_id": "Player#EUW", "region": 1}  # item 3001


@pytest.fixture
def sleeps() -> list[float]:
    """The backoff delays the client asked for, in order (instead of sleeping)."""
    return []


@pytest.fixture
def client(mock_server: Any, sleeps: list[float]) -> OrderingClient:
    return OrderingClient(mock_server.url, mock_server.api_key, sleep=sleeps.append)


def balance(client: OrderingClient) -> float:
    return client.balance()["balance"]


def receive_all(webhook_receiver: Any, secret: str, seen: dict, processed: list) -> list[int]:
    """Feed every recorded delivery, as received, to the merchant's handler."""
    return [
        handle_webhook(event.body, event.headers, secret, seen, on_event=processed.append)
        for event in webhook_receiver.events
    ]


def journal(mock_server: Any, method: str, path: str) -> list[int]:
    """Statuses of the merchant calls the sandbox answered, oldest first."""
    calls = mock_server.control("GET", "/_mock/requests")["requests"]
    return [c["status"] for c in reversed(calls) if (c["method"], c["path"]) == (method, path)]


# -- one test per built-in scenario ---------------------------------------------------------


def test_happy_path_completes_and_its_webhook_is_processed_once(
    mock_server, webhook_receiver, client
):
    mock_server.use_scenario("happy_path")
    order = client.place_order(1001, 2, merchant_order_id="shop-1", expected_price="40.00")
    assert (order["status"], order["price"], order["merchant_order_id"]) == (
        "pending",
        40.0,
        "shop-1",
    )
    assert balance(client) == 960.0  # charged at creation

    done = client.wait_for_outcome(order["id"], poll=mock_server.advance, interval=1)

    assert done["status"] == "completed"
    assert done["delivered_quantity"] == 2 and len(done["codes"]) == 2
    assert done["completed_at"] is not None
    delivery = mock_server.wait_for_webhook(order["id"], status="completed")
    assert delivery["status"] == "delivered"  # the receiver answered 200
    seen: dict = {}
    processed: list = []
    assert receive_all(webhook_receiver, mock_server.webhook_secret, seen, processed) == [200]
    assert [e["order_id"] for e in processed] == [order["id"]]
    assert seen[order["id"]]["codes"] == done["codes"]
    assert order_id_for(seen, "shop-1") == order["id"]


def test_out_of_stock_partial_delivers_half_and_refunds_the_rest(mock_server, client):
    mock_server.use_scenario("out_of_stock_partial")
    order = client.place_order(1001, 4, merchant_order_id="shop-2", expected_price=80)

    done = client.wait_for_outcome(order["id"], poll=mock_server.advance)

    assert done["status"] == "partial"
    assert (done["delivered_quantity"], len(done["codes"])) == (2, 2)
    assert done["refund_amount"] == 40.0 and done["error"] == ""
    assert done["completed_at"] is None  # terminal all the same: decide on status
    assert balance(client) == 960.0


def test_timeout_partial_reports_order_timeout(mock_server):
    # The scenario header rides on the merchant's own session, untouched by the client.
    session = requests.Session()
    session.headers["X-Mock-Scenario"] = "timeout_partial"
    client = OrderingClient(mock_server.url, mock_server.api_key, session, sleep=pytest.fail)
    order = client.place_order(1001, 3, merchant_order_id="shop-3", expected_price="60.00")

    done = client.wait_for_outcome(order["id"], poll=mock_server.advance, interval=5)

    assert (done["status"], done["error"]) == ("partial", "ORDER_TIMEOUT")
    assert (done["delivered_quantity"], done["refund_amount"]) == (1, 40.0)
    assert done["error_message"]
    assert mock_server.now() == "2026-01-01T00:00:35.000Z"  # settled at 31 s


def test_need_client_code_stops_polling_until_the_code_is_submitted(
    mock_server, webhook_receiver, client
):
    mock_server.use_scenario("need_client_code")
    order = client.place_order(
        2002, 1, LOGIN_TOPUP_FIELDS, merchant_order_id="shop-4", expected_price="14.99"
    )

    paused = client.wait_for_outcome(order["id"], poll=mock_server.advance, interval=1)
    assert paused["status"] == "need_client_code"
    mock_server.advance(3600)  # it never leaves on its own
    assert client.get_order(order["id"])["status"] == "need_client_code"
    assert webhook_receiver.events == []  # not terminal: no webhook

    released = client.submit_client_code(order["id"], "482913")
    assert released["status"] == "processing"
    done = client.wait_for_outcome(order["id"], poll=mock_server.advance, interval=1)

    assert done["status"] == "completed"
    assert done["fields"] == {"login_email": "player@example.com", "server": "Europe"}
    assert [e.json["status"] for e in webhook_receiver.events] == ["completed"]


def test_failed_out_of_stock_refunds_everything(mock_server, client):
    mock_server.use_scenario("failed_out_of_stock")
    order = client.place_order(1001, 2, merchant_order_id="shop-5", expected_price="40.00")

    done = client.wait_for_outcome(order["id"], poll=mock_server.advance)

    assert (done["status"], done["error"]) == ("failed", "OUT_OF_STOCK")
    assert (done["delivered_quantity"], done["codes"], done["refund_amount"]) == (0, [], 40.0)
    assert balance(client) == 1000.0


def test_failed_invalid_fields_refunds_the_service(mock_server, client):
    mock_server.use_scenario("failed_invalid_fields")
    order = client.place_order(
        3001, fields=BOOST_FIELDS, merchant_order_id="shop-6", expected_price="24.99"
    )

    done = client.wait_for_outcome(order["id"], poll=mock_server.advance)

    assert (done["status"], done["error"]) == ("failed", "INVALID_FIELDS")
    assert done["refund_amount"] == 24.99 and done["error_message"]
    assert balance(client) == 1000.0


def test_price_mismatch_charges_nothing_until_the_merchant_accepts_the_price(mock_server, client):
    mock_server.use_scenario("price_mismatch")
    with pytest.raises(PriceMismatch) as refused:
        client.place_order(1001, 2, merchant_order_id="shop-7", expected_price="40.00")
    assert refused.value.actual_price == 44.0
    assert balance(client) == 1000.0 and mock_server.orders() == []

    # The merchant decides to pay the live price: the same reference is still free.
    order = client.place_order(
        1001, 2, merchant_order_id="shop-7", expected_price=refused.value.actual_price
    )
    done = client.wait_for_outcome(order["id"], poll=mock_server.advance)
    assert (done["status"], done["price"]) == ("completed", 44.0)


def test_slow_fulfillment_is_polled_to_the_end(mock_server, client):
    mock_server.use_scenario("slow_fulfillment")
    order = client.place_order(1001, merchant_order_id="shop-8", expected_price="20.00")

    done = client.wait_for_outcome(order["id"], poll=mock_server.advance, interval=30)

    assert done["status"] == "completed"
    assert mock_server.now() == "2026-01-01T00:05:30.000Z"  # 330 s
    history = [h["status"] for h in mock_server.order(order["id"])["history"]]
    assert history == ["pending", "processing", "completed"]


def test_polling_gives_up_after_its_timeout(mock_server, client):
    mock_server.use_scenario("slow_fulfillment")
    order = client.place_order(1001, merchant_order_id="shop-9")

    with pytest.raises(OutcomeTimeout) as gave_up:
        client.wait_for_outcome(order["id"], poll=mock_server.advance, interval=30, timeout=60)

    assert (gave_up.value.status, gave_up.value.waited) == ("processing", 60)


def test_webhook_duplicate_is_processed_once(mock_server, webhook_receiver, client):
    mock_server.use_scenario("webhook_duplicate")
    order = client.place_order(1001, merchant_order_id="shop-10")
    mock_server.advance(3)

    copies = webhook_receiver.events
    assert len(copies) == 3 and len({e.body for e in copies}) == 1  # identical bytes
    seen: dict = {}
    processed: list = []
    assert receive_all(webhook_receiver, mock_server.webhook_secret, seen, processed) == [200] * 3
    assert [e["order_id"] for e in processed] == [order["id"]]


def test_webhook_dropped_is_covered_by_polling(mock_server, webhook_receiver, client):
    mock_server.use_scenario("webhook_dropped")
    order = client.place_order(1001, merchant_order_id="shop-11")
    mock_server.advance(600)

    assert webhook_receiver.events == []
    assert [d["status"] for d in mock_server.webhooks(order["id"])] == ["dropped"]
    done = client.wait_for_outcome(order["id"], poll=mock_server.advance)
    assert done["status"] == "completed" and len(done["codes"]) == 1


# -- tokens ---------------------------------------------------------------------------------


def test_an_expired_token_is_exchanged_again_once(mock_server, client):
    assert balance(client) == 1000.0
    mock_server.advance(7200)  # tokens live 2 h of virtual time

    assert balance(client) == 1000.0

    assert journal(mock_server, "POST", "/api/v1/auth/token/client") == [200, 200]
    assert journal(mock_server, "GET", "/api/v1/account/balance") == [200, 401, 200]


def test_the_token_is_cached_between_calls(mock_server, client):
    for _ in range(3):
        balance(client)
    assert journal(mock_server, "POST", "/api/v1/auth/token/client") == [200]


def test_a_wrong_api_key_is_an_authentication_failure(mock_server):
    client = OrderingClient(mock_server.url, "ak_not_a_key", sleep=pytest.fail)
    with pytest.raises(AuthenticationFailed):
        client.balance()


# -- retries and idempotency ------------------------------------------------------------------


def test_a_5xx_after_commit_is_retried_and_resolved_to_the_one_order(mock_server, client, sleeps):
    # The service creates and charges the order, then answers 503 anyway.
    mock_server.control(
        "POST",
        "/_mock/faults",
        {"method": "POST", "path": "/*/orders", "status": 503, "times": 1, "after_commit": True},
    )

    order = client.place_order(1001, merchant_order_id="shop-20", expected_price="20.00")

    assert order["merchant_order_id"] == "shop-20" and order["status"] == "pending"
    assert sleeps == [0.5]
    assert journal(mock_server, "POST", "/api/v1/orders") == [503, 400]
    assert [o["id"] for o in mock_server.orders(merchant_order_id="shop-20")] == [order["id"]]
    assert balance(client) == 980.0  # charged once
    assert client.known_order_id("shop-20") == order["id"]


class LoseFirstOrderAnswer(HTTPAdapter):
    """Transport that delivers the first order creation, then loses its answer."""

    lost = False

    def send(self, request, *args, **kwargs):
        response = super().send(request, *args, **kwargs)
        if request.method == "POST" and request.path_url.endswith("/orders") and not self.lost:
            self.lost = True
            raise requests.ConnectionError("connection reset by peer (simulated)")
        return response


def test_a_lost_answer_is_retried_and_resolved_to_the_one_order(mock_server, sleeps):
    session = requests.Session()
    session.mount("http://", LoseFirstOrderAnswer())
    client = OrderingClient(mock_server.url, mock_server.api_key, session, sleep=sleeps.append)

    order = client.place_order(1001, merchant_order_id="shop-27")

    assert sleeps == [0.5]
    assert journal(mock_server, "POST", "/api/v1/orders") == [201, 400]
    assert [o["id"] for o in mock_server.orders(merchant_order_id="shop-27")] == [order["id"]]


def test_5xx_before_commit_are_retried_with_backoff(mock_server, client, sleeps):
    mock_server.control(
        "POST", "/_mock/faults", {"method": "POST", "path": "/*/orders", "status": 502, "times": 2}
    )

    order = client.place_order(1001, merchant_order_id="shop-21")

    assert sleeps == [0.5, 1.0]
    assert journal(mock_server, "POST", "/api/v1/orders") == [502, 502, 201]
    assert len(mock_server.orders(merchant_order_id="shop-21")) == 1
    assert order["id"] == mock_server.orders(merchant_order_id="shop-21")[0]["id"]


def test_when_every_attempt_fails_the_outcome_is_unknown_until_the_webhook_tells(
    mock_server, webhook_receiver, client, sleeps
):
    # Every attempt commits (the first creates the order, the others are refused as
    # duplicates) and every answer is a 503: the client never learns the order id.
    mock_server.control(
        "POST",
        "/_mock/faults",
        {"method": "POST", "path": "/*/orders", "status": 503, "after_commit": True},
    )
    with pytest.raises(OrderOutcomeUnknown) as unknown:
        client.place_order(1001, merchant_order_id="shop-22")
    assert unknown.value.merchant_order_id == "shop-22"
    assert sleeps == [0.5, 1.0, 2.0]
    assert len(mock_server.orders(merchant_order_id="shop-22")) == 1  # it does exist

    # The webhook correlates the merchant's reference with the order id.
    mock_server.advance(3)
    seen: dict = {}
    receive_all(webhook_receiver, mock_server.webhook_secret, seen, [])
    order_id = order_id_for(seen, "shop-22")
    assert client.get_order(order_id)["status"] == "completed"


def test_placing_the_same_reference_again_returns_the_order_without_a_second_create(
    mock_server, client
):
    first = client.place_order(1001, merchant_order_id="shop-23")
    again = client.place_order(1001, merchant_order_id="shop-23")

    assert again["id"] == first["id"]
    assert journal(mock_server, "POST", "/api/v1/orders") == [201]


def test_a_reference_used_before_is_an_error_when_no_attempt_failed(mock_server, client):
    client.place_order(1001, merchant_order_id="shop-24")
    other = OrderingClient(mock_server.url, mock_server.api_key, sleep=pytest.fail)

    with pytest.raises(ApiError) as refused:
        other.place_order(1001, merchant_order_id="shop-24")

    assert (refused.value.status, refused.value.code) == (400, "validation_error")
    assert not isinstance(refused.value, OrderOutcomeUnknown)


def test_order_lookups_are_retried_on_5xx(mock_server, client, sleeps):
    order = client.place_order(1001, merchant_order_id="shop-25")
    mock_server.control(
        "POST",
        "/_mock/faults",
        {"method": "GET", "path": "/api/v1/orders/*", "status": 503, "times": 2},
    )

    assert client.get_order(order["id"])["id"] == order["id"]
    assert sleeps == [0.5, 1.0]


def test_a_price_guard_with_more_than_two_decimals_is_refused_before_sending(mock_server, client):
    with pytest.raises(ValueError, match="2 decimals"):
        client.place_order(1001, merchant_order_id="shop-26", expected_price="20.001")
    assert journal(mock_server, "POST", "/api/v1/orders") == []


# -- the webhook receiver -----------------------------------------------------------------------


def test_retried_deliveries_carry_the_same_bytes_and_are_processed_once(
    mock_server, webhook_receiver, client
):
    webhook_receiver.respond_with(500)  # the merchant's endpoint is down at first
    order = client.place_order(1001, merchant_order_id="shop-30")
    mock_server.advance(3)
    webhook_receiver.respond_with(200)
    mock_server.advance(60)  # the retry, 60 s later

    delivery = mock_server.wait_for_webhook(order["id"], status="completed")
    assert delivery["status"] == "delivered"
    assert [a["status_code"] for a in delivery["attempts"]] == [500, 200]
    first, retry = webhook_receiver.events
    assert first.body == retry.body
    seen: dict = {}
    processed: list = []
    assert receive_all(webhook_receiver, mock_server.webhook_secret, seen, processed) == [200, 200]
    assert len(processed) == 1


def test_the_signature_is_checked_on_the_raw_body(mock_server, webhook_receiver, client):
    client.place_order(1001, merchant_order_id="shop-31")
    mock_server.advance(3)
    (event,) = webhook_receiver.events
    secret = mock_server.webhook_secret
    headers = event.headers

    assert event.verified  # the plugin's own check agrees
    assert handle_webhook(event.body, headers, "whsec_wrong", {}) == 401
    assert handle_webhook(event.body + b" ", headers, secret, {}) == 401  # not the bytes signed
    assert handle_webhook(event.body, {}, secret, {}) == 401
    only_x_signature = {"X-Signature": headers["X-Signature"]}
    assert handle_webhook(event.body, only_x_signature, secret, {}) == 200
    lower_case_names = {k.lower(): v for k, v in headers.items()}
    assert handle_webhook(event.body, lower_case_names, secret, {}) == 200


def test_our_hmac_agrees_with_the_sandboxs_verify(mock_server, webhook_receiver, client):
    from mock_server.webhooks import sign, verify  # the sandbox's helpers, for tests

    client.place_order(1001, merchant_order_id="shop-32")
    mock_server.advance(3)
    (event,) = webhook_receiver.events
    header = event.headers["X-Webhook-Signature"]
    secret = mock_server.webhook_secret

    assert header == sign(secret, event.body)
    assert signature_is_valid(secret, event.body, header) is verify(secret, event.body, header)
    assert signature_is_valid("whsec_x", event.body, header) is verify(
        "whsec_x", event.body, header
    )


def test_a_failing_handler_answers_500_and_the_retry_is_processed(
    mock_server, webhook_receiver, client
):
    client.place_order(1001, merchant_order_id="shop-33")
    mock_server.advance(3)
    (event,) = webhook_receiver.events
    seen: dict = {}

    def broken(_event: dict) -> None:
        raise RuntimeError("database down")

    secret = mock_server.webhook_secret
    assert handle_webhook(event.body, event.headers, secret, seen, on_event=broken) == 500
    assert seen == {}  # not recorded: the retry will be processed
    assert handle_webhook(event.body, event.headers, secret, seen) == 200
    assert list(seen) == [event.json["order_id"]]
