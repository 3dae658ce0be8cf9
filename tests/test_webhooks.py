"""Signed order-result webhooks: delivery, signature, retries on the manual clock, chaos."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json

import pytest
from aiohttp import web

from mock_server.webhooks import sign, verify
from tests.conftest import login

SECRET = "whsec_test_default"


class Receiver:
    """A real HTTP endpoint on 127.0.0.1 that records deliveries and answers scripted
    statuses (200 once the script runs out)."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.statuses: list[int] = []
        self.hang = False

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.events.append({"headers": dict(request.headers), "body": body})
        if self.hang:
            await asyncio.sleep(3600)
        status = self.statuses.pop(0) if self.statuses else 200
        return web.Response(status=status, text="ok")


@pytest.fixture
async def receiver(aiohttp_server):
    recorder = Receiver()
    app = web.Application()
    app.router.add_post("/hooks", recorder.handle)
    server = await aiohttp_server(app, host="127.0.0.1", port=0)
    recorder.url = str(server.make_url("/hooks"))
    return recorder


@pytest.fixture
async def hooked(make_client, receiver):
    client = await make_client(webhook_url=receiver.url)
    return await login(client)


async def _settle(merchant, body=None, **headers):
    status, order = await merchant.create(
        body or {"item_id": 1001, "merchant_order_id": "m-1"}, **headers
    )
    assert status == 201, order
    return order


async def _deliveries(merchant, order_id):
    response = await merchant.client.get(f"/_mock/webhooks?order_id={order_id}")
    return (await response.json())["deliveries"]


# -- signing helpers -----------------------------------------------------------------------


def test_sign_is_hmac_sha256_of_raw_body():
    body = b'{"order_id":"x"}'
    expected = hmac.new(b"whsec_k", body, hashlib.sha256).hexdigest()
    assert sign("whsec_k", body) == f"sha256={expected}"


@pytest.mark.parametrize("form", ["prefixed", "bare", "upper"])
def test_verify_accepts_either_header_form(form):
    body = b'{"a":1}'
    value = sign("whsec_k", body)
    header = {"prefixed": value, "bare": value[7:], "upper": value.upper()}[form]
    assert verify("whsec_k", body, header)


def test_verify_rejects_other_body_secret_or_missing_header():
    value = sign("whsec_k", b"{}")
    assert not verify("whsec_k", b"{ }", value)
    assert not verify("whsec_other", b"{}", value)
    assert not verify("whsec_k", b"{}", None)
    assert not verify("whsec_k", b"{}", "sha256=zz")


# -- delivery ------------------------------------------------------------------------------


async def test_terminal_order_is_posted_signed_to_the_webhook_url(hooked, receiver):
    order = await _settle(hooked)
    assert order["webhook"]["status"] == "pending"
    await hooked.advance(2.9)
    assert receiver.events == []
    await hooked.advance(0.1)
    assert len(receiver.events) == 1
    event = receiver.events[0]
    expected = "sha256=" + hmac.new(SECRET.encode(), event["body"], hashlib.sha256).hexdigest()
    assert event["headers"]["X-Webhook-Signature"] == expected
    assert event["headers"]["X-Signature"] == expected
    assert event["headers"]["Content-Type"] == "application/json"
    payload = json.loads(event["body"])
    assert payload["order_id"] == order["id"]
    assert payload["status"] == "completed"
    assert payload["merchant_order_id"] == "m-1"
    assert payload["quantity"] == 1 and payload["delivered_quantity"] == 1
    assert len(payload["codes"]) == 1
    assert payload["refund_amount"] == 0.0
    assert payload["error"] == "" and payload["error_message"] == ""
    after = await hooked.order(order["id"])
    assert after["webhook"] == {
        "status": "delivered",
        "attempts": 1,
        "last_status_code": 200,
        "last_attempt_at": "2026-01-01T00:00:03.000Z",
        "next_attempt_at": None,
    }


async def test_no_webhook_url_means_webhook_null_and_nothing_sent(merchant):
    status, order = await merchant.create({"item_id": 1001})
    await merchant.advance(5)
    assert (await merchant.order(order["id"]))["webhook"] is None
    assert await _deliveries(merchant, order["id"]) == []


async def test_partial_and_failed_events_carry_refund_and_error(hooked, receiver):
    partial = await _settle(
        hooked, {"item_id": 1001, "quantity": 4}, **{"X-Mock-Scenario": "timeout_partial"}
    )
    failed = await _settle(hooked, {"item_id": 1001}, **{"X-Mock-Scenario": "failed_out_of_stock"})
    await hooked.advance(40)
    payloads = {json.loads(e["body"])["order_id"]: json.loads(e["body"]) for e in receiver.events}
    assert payloads[partial["id"]]["status"] == "partial"
    assert payloads[partial["id"]]["refund_amount"] == 60.0
    assert payloads[partial["id"]]["error"] == "ORDER_TIMEOUT"
    assert payloads[failed["id"]]["status"] == "failed"
    assert payloads[failed["id"]]["error"] == "OUT_OF_STOCK"
    assert payloads[failed["id"]]["codes"] == []


@pytest.mark.parametrize("status", [201, 204, 202, 301, 404, 500, 503])
async def test_only_200_is_success(hooked, receiver, status):
    receiver.statuses = [status]
    order = await _settle(hooked)
    await hooked.advance(3)
    webhook = (await hooked.order(order["id"]))["webhook"]
    assert webhook["status"] == "retrying"
    assert webhook["last_status_code"] == status
    assert webhook["next_attempt_at"] == "2026-01-01T00:01:03.000Z"


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_a_redirect_is_a_failed_attempt_and_never_followed(
    make_client, aiohttp_server, status
):
    """Spec 6: only 200 is success. A receiver's redirect is its answer: recorded with
    its status, retried, and the place it points to is never contacted."""
    followed = []

    async def moved(request: web.Request) -> web.Response:
        await request.read()
        location = str(request.url.with_path("/elsewhere"))
        return web.Response(status=status, headers={"Location": location})

    async def elsewhere(request: web.Request) -> web.Response:
        followed.append(request.method)
        return web.Response(status=200)

    app = web.Application()
    app.router.add_post("/hooks", moved)
    app.router.add_route("*", "/elsewhere", elsewhere)
    server = await aiohttp_server(app, host="127.0.0.1", port=0)
    merchant = await login(await make_client(webhook_url=str(server.make_url("/hooks"))))
    order = await _settle(merchant)
    await merchant.advance(3)
    (delivery,) = await _deliveries(merchant, order["id"])
    assert delivery["status"] == "retrying"
    assert [a["status_code"] for a in delivery["attempts"]] == [status]
    assert followed == []


async def test_retries_are_60_seconds_apart_on_the_virtual_clock(hooked, receiver):
    receiver.statuses = [500, 500, 500, 500]
    order = await _settle(hooked)
    await hooked.advance(3)
    assert len(receiver.events) == 1
    for retry in range(1, 4):
        await hooked.advance(59)
        assert len(receiver.events) == retry, "nothing before 60 s"
        await hooked.advance(1)
        assert len(receiver.events) == retry + 1, "the retry at exactly 60 s"
    await hooked.advance(3600)
    assert len(receiver.events) == 4, "one attempt and 3 retries, no more"
    webhook = (await hooked.order(order["id"]))["webhook"]
    assert webhook["status"] == "failed"
    assert webhook["attempts"] == 4
    assert webhook["next_attempt_at"] is None
    (delivery,) = await _deliveries(hooked, order["id"])
    assert [a["at"] for a in delivery["attempts"]] == [
        "2026-01-01T00:00:03.000Z",
        "2026-01-01T00:01:03.000Z",
        "2026-01-01T00:02:03.000Z",
        "2026-01-01T00:03:03.000Z",
    ]
    assert [a["status_code"] for a in delivery["attempts"]] == [500] * 4


async def test_receiver_that_recovers_ends_delivered_after_three_attempts(hooked, receiver):
    receiver.statuses = [503, 500]
    order = await _settle(hooked)
    await hooked.advance(3 + 120)
    webhook = (await hooked.order(order["id"]))["webhook"]
    assert webhook["status"] == "delivered"
    assert webhook["attempts"] == 3
    bodies = {e["body"] for e in receiver.events}
    assert len(bodies) == 1, "every retry sends the same bytes"


async def test_one_long_advance_runs_every_attempt_in_order(hooked, receiver):
    receiver.statuses = [500, 500, 500]
    order = await _settle(hooked)
    await hooked.advance(1000)
    webhook = (await hooked.order(order["id"]))["webhook"]
    assert webhook["status"] == "delivered" and webhook["attempts"] == 4
    assert webhook["last_attempt_at"] == "2026-01-01T00:03:03.000Z"


async def test_connection_refused_is_a_failed_attempt(make_client, unused_tcp_port):
    merchant = await login(await make_client(webhook_url=f"http://127.0.0.1:{unused_tcp_port}/x"))
    order = await _settle(merchant)
    await merchant.advance(3)
    (delivery,) = await _deliveries(merchant, order["id"])
    assert delivery["status"] == "retrying"
    assert delivery["attempts"][0]["status_code"] is None
    assert delivery["attempts"][0]["error"]


async def test_hanging_receiver_does_not_block_the_merchant_api(hooked, receiver, monkeypatch):
    monkeypatch.setattr("mock_server.webhooks.ATTEMPT_TIMEOUT", 0.2)
    receiver.hang = True
    order = await _settle(hooked)
    advance = asyncio.create_task(hooked.advance(3))
    while not receiver.events:
        await asyncio.sleep(0.01)
    assert await hooked.balance() == 980.0, "the merchant API answers while the advance waits"
    await advance
    (delivery,) = await _deliveries(hooked, order["id"])
    assert delivery["attempts"][0]["status_code"] is None
    assert "no complete answer" in delivery["attempts"][0]["error"]


# -- chaos ---------------------------------------------------------------------------------


async def test_duplicate_sends_identical_copies(hooked, receiver):
    order = await _settle(hooked, **{"X-Mock-Scenario": "webhook_duplicate"})
    await hooked.advance(3)
    assert len(receiver.events) == 3
    assert len({e["body"] for e in receiver.events}) == 1
    assert len({e["headers"]["X-Webhook-Signature"] for e in receiver.events}) == 1
    assert json.loads(receiver.events[0]["body"])["order_id"] == order["id"]
    listed = await _deliveries(hooked, order["id"])  # the event, then its copies, in order
    assert [d["copy"] for d in listed] == [0, 1, 2]
    assert {d["order_id"] for d in listed} == {order["id"]}


async def test_dropped_event_never_arrives_but_order_reads_terminal(hooked, receiver):
    order = await _settle(hooked, **{"X-Mock-Scenario": "webhook_dropped"})
    await hooked.advance(600)
    assert receiver.events == []
    assert (await hooked.order(order["id"]))["status"] == "completed"
    (delivery,) = await _deliveries(hooked, order["id"])
    assert delivery["status"] == "dropped"


async def test_scripted_delay_postpones_the_first_attempt(make_client, receiver, tmp_path):
    path = tmp_path / "late.yaml"
    path.write_text(
        "name: late_hook\nsteps:\n  - after: 1s\n    status: completed\n"
        "    webhook:\n      delay: 30s\n"
    )
    merchant = await login(await make_client(webhook_url=receiver.url, scenarios=(str(path),)))
    await _settle(merchant, **{"X-Mock-Scenario": "late_hook"})
    await merchant.advance(30.9)
    assert receiver.events == []
    await merchant.advance(0.1)
    assert len(receiver.events) == 1


@pytest.mark.parametrize(
    ("retry", "gaps"), [("[3s, 3s, 3s]", [3, 3, 3]), ("[1s, 10s]", [1, 10]), ("[]", [])]
)
async def test_a_scenario_retry_schedule_sets_the_gaps_and_the_number_of_retries(
    make_client, receiver, tmp_path, retry, gaps
):
    path = tmp_path / "quick.yaml"
    path.write_text(
        "name: quick_retries\nsteps:\n  - after: 1s\n    status: completed\n"
        f"    webhook:\n      retry: {retry}\n"
    )
    merchant = await login(await make_client(webhook_url=receiver.url, scenarios=(str(path),)))
    receiver.statuses = [500] * 10
    order = await _settle(merchant, **{"X-Mock-Scenario": "quick_retries"})
    await merchant.advance(1)
    assert len(receiver.events) == 1
    for number, gap in enumerate(gaps, start=2):
        (delivery,) = await _deliveries(merchant, order["id"])
        assert delivery["status"] == "retrying"
        await merchant.advance(gap - 0.5)
        assert len(receiver.events) == number - 1, "nothing before the gap"
        await merchant.advance(0.5)
        assert len(receiver.events) == number, f"retry {number - 1} after {gap} s"
    await merchant.advance(3600)
    assert len(receiver.events) == 1 + len(gaps), "as many retries as gaps, no more"
    (delivery,) = await _deliveries(merchant, order["id"])
    assert delivery["status"] == "failed" and delivery["next_attempt_at"] is None


async def test_a_retry_schedule_of_more_than_three_gaps_is_refused(client):
    refused = await client.post(
        "/_mock/scenarios",
        json={
            "name": "too_many",
            "steps": [{"after": "1s", "status": "completed", "webhook": {"retry": ["1s"] * 4}}],
        },
    )
    assert refused.status == 400
    assert "at most 3 durations" in (await refused.json())["detail"]


# -- control -------------------------------------------------------------------------------


async def test_redeliver_sends_again_now(hooked, receiver):
    order = await _settle(hooked)
    await hooked.advance(3)
    (delivery,) = await _deliveries(hooked, order["id"])
    response = await hooked.client.post(f"/_mock/webhooks/{delivery['id']}/redeliver")
    assert response.status == 200
    assert len(receiver.events) == 2
    assert receiver.events[0]["body"] == receiver.events[1]["body"]
    assert len((await response.json())["attempts"]) == 2


async def test_changed_secret_applies_to_later_attempts(hooked, receiver):
    receiver.statuses = [500]
    order = await _settle(hooked)
    await hooked.advance(3)
    account_id = order["created_by"]["id"]
    await hooked.client.patch(
        f"/_mock/accounts/{account_id}", json={"webhook_secret": "whsec_rotated"}
    )
    await hooked.advance(60)
    first, second = receiver.events
    assert verify(SECRET, first["body"], first["headers"]["X-Webhook-Signature"])
    assert verify("whsec_rotated", second["body"], second["headers"]["X-Webhook-Signature"])


async def test_signature_headers_are_configurable_per_account(hooked, receiver):
    order = await _settle(hooked)
    await hooked.client.patch(
        f"/_mock/accounts/{order['created_by']['id']}", json={"signature_headers": ["X-Signature"]}
    )
    await hooked.advance(3)
    headers = receiver.events[0]["headers"]
    assert "X-Signature" in headers and "X-Webhook-Signature" not in headers


async def test_order_detail_lists_deliveries(hooked, receiver):
    order = await _settle(hooked)
    await hooked.advance(3)
    detail = await (await hooked.client.get(f"/_mock/orders/{order['id']}")).json()
    (delivery,) = detail["deliveries"]
    assert delivery["status"] == "delivered"
    assert delivery["url"] == receiver.url
    assert json.loads(delivery["body"])["order_id"] == order["id"]


async def test_failed_redelivery_keeps_the_planned_retry_and_does_not_count(hooked, receiver):
    receiver.statuses = [500, 500]
    order = await _settle(hooked)
    await hooked.advance(3)
    (delivery,) = await _deliveries(hooked, order["id"])
    response = await hooked.client.post(f"/_mock/webhooks/{delivery['id']}/redeliver")
    manual = await response.json()
    assert manual["status"] == "retrying"
    assert manual["next_attempt_at"] == "2026-01-01T00:01:03.000Z"
    assert [a["manual"] for a in manual["attempts"]] == [False, True]
    await hooked.advance(60)
    webhook = (await hooked.order(order["id"]))["webhook"]
    assert webhook["status"] == "delivered"
    assert webhook["attempts"] == 3


async def test_successful_redelivery_cancels_the_planned_retry(hooked, receiver):
    receiver.statuses = [500]
    order = await _settle(hooked)
    await hooked.advance(3)
    (delivery,) = await _deliveries(hooked, order["id"])
    await hooked.client.post(f"/_mock/webhooks/{delivery['id']}/redeliver")
    await hooked.advance(600)
    assert len(receiver.events) == 2
    (after,) = await _deliveries(hooked, order["id"])
    assert after["status"] == "delivered"
