"""The listener wire from the sandbox's side (docs/webhooks.md, "The wire"): a stream
opened on `GET /_mock/listen` gets the account's attempts instead of its webhook URL,
`POST /_mock/listen/reports` decides each once, and a listener that goes away loses
nothing. The `mock-server listen` process itself is tests/test_listen.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from conftest import login

from mock_server.domain.listeners import GONE, Listeners


class Stream:
    """An open `GET /_mock/listen`, read frame by frame."""

    def __init__(self, response: Any) -> None:
        self.response = response

    async def frame(self) -> tuple[str, dict[str, Any]]:
        name = data = None
        while True:
            line = (await asyncio.wait_for(self.response.content.readline(), 10)).decode()
            if line.startswith("event: "):
                name = line[7:].strip()
            elif line.startswith("data: "):
                data = json.loads(line[6:])
            elif line == "\n" and name is not None:
                return name, data

    def close(self) -> None:
        self.response.close()


async def _listen(client: Any, query: str = "") -> tuple[Stream, dict[str, Any]]:
    response = await client.get("/_mock/listen" + query)
    assert response.status == 200, await response.text()
    assert response.headers["Content-Type"].startswith("text/event-stream")
    stream = Stream(response)
    name, ready = await stream.frame()
    assert name == "ready"
    return stream, ready


async def _report(client: Any, **body: Any) -> Any:
    return await client.post("/_mock/listen/reports", json=body)


async def _settle_one(client: Any) -> tuple[str, asyncio.Task]:
    """An order placed; the advance that settles it runs as a task (it waits for the
    attempt's outcome, which the test reports)."""
    merchant = await login(client)
    status, order = await merchant.create({"item_id": 1001})
    assert status == 201
    return order["id"], asyncio.create_task(merchant.advance(5))


async def _deliveries(client: Any, order_id: str) -> list[dict[str, Any]]:
    response = await client.get(f"/_mock/webhooks?order_id={order_id}")
    return (await response.json())["deliveries"]


async def test_an_account_without_a_url_gets_its_attempts_through_a_listener(client):
    stream, ready = await _listen(client)
    account = (await (await client.get("/_mock/accounts")).json())["accounts"][0]
    assert ready["account_id"] == account["id"]
    assert ready["webhook_secret"] == account["webhook_secret"]
    assert ready["report_path"] == "/_mock/listen/reports" and ready["timeout_seconds"] == 10
    order_id, advance = await _settle_one(client)
    name, attempt = await stream.frame()
    assert name == "attempt"
    assert attempt["order_id"] == order_id and attempt["order_status"] == "completed"
    assert attempt["attempt"] == 1
    event = json.loads(attempt["body"])
    assert event["order_id"] == order_id and event["status"] == "completed"
    assert attempt["headers"]["Content-Type"] == "application/json"
    accepted = await _report(client, attempt_id=attempt["attempt_id"], status_code=200)
    assert accepted.status == 200
    assert await accepted.json() == {"attempt_id": attempt["attempt_id"], "accepted": True}
    await advance
    (delivery,) = await _deliveries(client, order_id)
    assert delivery["status"] == "delivered" and delivery["url"] == "listener"
    assert delivery["attempts"][0]["via"] == "listener"
    assert delivery["attempts"][0]["status_code"] == 200
    # Decided once: the same report again changes nothing.
    again = await _report(client, attempt_id=attempt["attempt_id"], status_code=500)
    assert again.status == 409 and (await again.json())["code"] == "already_decided"
    stream.close()


async def test_the_receivers_answer_decides_and_retries_follow_the_clock(client):
    stream, _ = await _listen(client)
    order_id, advance = await _settle_one(client)
    _, first = await stream.frame()
    await _report(client, attempt_id=first["attempt_id"], status_code=302)
    await advance
    (delivery,) = await _deliveries(client, order_id)
    assert delivery["status"] == "retrying"
    assert delivery["attempts"][0]["status_code"] == 302  # strict 200, as a direct attempt
    merchant = await login(client)
    retry = asyncio.create_task(merchant.advance(60))
    _, second = await stream.frame()
    assert second["attempt"] == 2 and second["delivery_id"] == delivery["id"]
    await _report(client, attempt_id=second["attempt_id"], error="ClientConnectorError: refused")
    await retry
    (delivery,) = await _deliveries(client, order_id)
    assert [a["error"] for a in delivery["attempts"]] == [None, "ClientConnectorError: refused"]
    stream.close()


async def test_a_listener_that_goes_away_mid_attempt_loses_nothing(client):
    stream, _ = await _listen(client)
    order_id, advance = await _settle_one(client)
    _, attempt = await stream.frame()
    stream.close()  # gone before it reported
    await advance
    (delivery,) = await _deliveries(client, order_id)
    assert delivery["status"] == "retrying"
    assert delivery["attempts"][0]["error"] == GONE
    late = await _report(client, attempt_id=attempt["attempt_id"], status_code=200)
    assert late.status == 409
    # No listener and no URL: the retry fails as it would without one.
    await (await login(client)).advance(60)
    (delivery,) = await _deliveries(client, order_id)
    assert delivery["attempts"][1]["error"] == "no webhook URL configured"
    assert "via" not in delivery["attempts"][1]


async def test_two_listeners_take_turns_and_each_attempt_goes_to_one(client):
    first, _ = await _listen(client)
    second, _ = await _listen(client)
    merchant = await login(client)
    for _ in range(4):
        status, _ = await merchant.create({"item_id": 1001})
        assert status == 201
    advance = asyncio.create_task(merchant.advance(5))
    got: dict[str, list[str]] = {"first": [], "second": []}

    async def answer(name: str, stream: Stream) -> None:
        for _ in range(2):
            _, attempt = await stream.frame()
            got[name].append(attempt["order_id"])
            await _report(client, attempt_id=attempt["attempt_id"], status_code=200)

    await asyncio.gather(answer("first", first), answer("second", second))
    await advance
    assert len(set(got["first"] + got["second"])) == 4
    first.close()
    second.close()


async def test_a_report_for_another_sandboxs_attempt_is_not_found(client):
    stream, _ = await _listen(client)
    order_id, advance = await _settle_one(client)
    _, attempt = await stream.frame()
    created = await (await client.post("/_mock/sandboxes", json={})).json()
    base = f"/_mock/sandboxes/{created['id']}"
    stolen = await client.post(
        base + "/_mock/listen/reports",
        json={"attempt_id": attempt["attempt_id"], "status_code": 200},
    )
    assert stolen.status == 404 and (await stolen.json())["code"] == "not_found"
    await _report(client, attempt_id=attempt["attempt_id"], status_code=200)
    await advance
    stream.close()


async def test_bad_reports_and_unknown_accounts_are_4xx(client):
    for body in (
        {},
        {"attempt_id": "att_x"},
        {"attempt_id": "att_x", "status_code": 200, "error": "both"},
        {"attempt_id": "att_x", "status_code": "200"},
        {"attempt_id": "att_x", "status_code": 42},
        {"attempt_id": "att_x", "error": ""},
        {"attempt_id": 7, "status_code": 200},
    ):
        response = await _report(client, **body)
        assert response.status == 400, body
        assert (await response.json())["code"] == "validation_error"
    unknown = await _report(client, attempt_id="att_nothing", status_code=200)
    assert unknown.status == 404
    missing = await client.get("/_mock/listen?account=nobody")
    assert missing.status == 404 and (await missing.json())["code"] == "not_found"


async def test_the_stream_needs_the_admin_token_where_one_is_set(make_client):
    client = await make_client(admin_token="s3cret")
    refused = await client.get("/_mock/listen")
    assert refused.status == 401
    allowed = await client.get("/_mock/listen", headers={"Authorization": "Bearer s3cret"})
    assert allowed.status == 200
    allowed.close()


async def test_no_report_within_the_timeout_is_a_failed_attempt():
    listeners = Listeners()
    listener = listeners.connect("acc")
    outcome = await listeners.forward("acc", {"order_id": "o"}, timeout=0.01)
    assert outcome == (None, "no report from the listener within 0.01 s")
    name, frame = await listener.next_frame(1)
    assert name == "attempt"
    # The late report is told so.
    try:
        listeners.report(frame["attempt_id"], 200, None)
    except Exception as refused:  # noqa: BLE001 - the ApiError's status is what counts
        assert getattr(refused, "status", None) == 409
    else:
        raise AssertionError("a late report was accepted")
