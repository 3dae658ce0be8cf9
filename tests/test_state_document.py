"""The portable state document, `GET / PUT /_mock/state` (docs/state.md).

A state saved in one sandbox and loaded into a fresh one must be the same state: the
same answers now, and the same future when both are driven alike (pending steps and
webhook retries resume at their virtual due times). A bad document changes nothing.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from aiohttp import web

from tests.conftest import Merchant, login

LOGIN_TOPUP = {"item_id": 2002, "quantity": 1, "fields": {"login_email": "a@b.c", "server": 2}}
RAZER = {"item_id": 2001, "quantity": 12.5, "fields": {"razer_id": "r-1", "region": 2}}


async def state_of(client) -> dict[str, Any]:
    response = await client.get("/_mock/state")
    assert response.status == 200
    return await response.json()


async def put_state(client, document: Any) -> tuple[int, Any]:
    response = await client.put("/_mock/state", json=document)
    return response.status, await response.json()


def without_durations(document: dict[str, Any]) -> dict[str, Any]:
    """Attempts' durations are wall time, the one thing two runs never share."""
    document = copy.deepcopy(document)
    for delivery in document["deliveries"]:
        for attempt in delivery["attempts"]:
            attempt[3] = 0
    return document


async def busy_sandbox(merchant: Merchant, hook_url: str) -> dict[str, str]:
    """Orders in every kind of state, a failing webhook mid-retries, a loaded scenario,
    a queue entry, a fault, a stock change and a plant change."""
    client = merchant.client
    accounts = (await (await client.get("/_mock/accounts")).json())["accounts"]
    await client.patch(f"/_mock/accounts/{accounts[0]['id']}", json={"webhook_url": hook_url})
    await client.post(
        "/_mock/scenarios",
        json={
            "name": "slow_fail",
            "steps": [{"after": "90s", "status": "failed", "error": "OUT_OF_STOCK"}],
        },
    )
    ids = {}
    ids["done"] = (await merchant.create({"item_id": 1003, "quantity": 2}))[1]["id"]
    ids["coded"] = (await merchant.create(LOGIN_TOPUP, **{"X-Mock-Scenario": "need_client_code"}))[
        1
    ]["id"]
    await merchant.advance(5)  # done completes (webhook fails: 500), coded waits for a code
    ids["topup"] = (await merchant.create(RAZER, **{"X-Mock-Scenario": "timeout_partial"}))[1]["id"]
    ids["slow"] = (
        await merchant.create(
            {"item_id": 1001, "merchant_order_id": "m-1"}, **{"X-Mock-Scenario": "slow_fail"}
        )
    )[1]["id"]
    await client.post("/_mock/scenarios/next", json={"scenario": "failed_out_of_stock", "count": 2})
    await client.post(
        "/_mock/faults", json={"path": "/api/v1/account/balance", "status": 503, "times": 2}
    )
    await client.put("/v3/plant", json={"id": 4, "status": "sold"})
    await merchant.advance(1)
    return ids


@pytest.fixture
async def receiver(aiohttp_server):
    async def failing(request: web.Request) -> web.Response:
        return web.Response(status=500)

    app = web.Application()
    app.router.add_post("/hooks", failing)
    server = await aiohttp_server(app)
    return str(server.make_url("/hooks"))


async def test_a_saved_state_loads_into_a_fresh_sandbox_as_the_same_state(make_client, receiver):
    original = await login(await make_client())
    ids = await busy_sandbox(original, receiver)
    saved = await state_of(original.client)
    assert saved["format"] == 1

    copy_client = await make_client(seed=777)  # another seed: the document brings its own
    status, answer = await put_state(copy_client, saved)
    assert status == 200, answer
    assert answer["seed"] == 42
    assert await state_of(copy_client) == saved
    for order_id in ids.values():
        here = await (await original.client.get(f"/_mock/orders/{order_id}")).json()
        there = await (await copy_client.get(f"/_mock/orders/{order_id}")).json()
        assert there == here

    # The same future: pending steps and retries resume, codes and ids continue alike.
    twin = Merchant(copy_client, original.token)  # unexpired tokens come along
    for merchant in (original, twin):
        await merchant.call(
            "POST", f"/api/v1/orders/{ids['coded']}/client-code", json={"code": "1"}
        )
        await merchant.create({"item_id": 1001})  # the queue's failed_out_of_stock
        await merchant.advance(400)
        assert (await merchant.call("GET", "/api/v1/account/balance"))[0] == 503  # the fault
    final_here, final_there = await state_of(original.client), await state_of(copy_client)
    assert without_durations(final_there) == without_durations(final_here)
    statuses = {o["id"]: o["status"] for o in final_here["orders"]}
    assert statuses[ids["slow"]] == "failed" and statuses[ids["topup"]] == "partial"
    attempts = [len(d["attempts"]) for d in final_here["deliveries"]]
    assert 4 in attempts  # a webhook retried to exhaustion across the copy


async def test_the_copy_knows_its_merchant_order_ids_tokens_and_ledger(make_client, receiver):
    original = await login(await make_client())
    await busy_sandbox(original, receiver)
    copy_client = await make_client()
    await put_state(copy_client, await state_of(original.client))
    twin = Merchant(copy_client, original.token)
    status, error = await twin.create({"item_id": 1001, "merchant_order_id": "m-1"})
    assert (status, error["code"]) == (400, "validation_error")
    accounts = (await (await copy_client.get("/_mock/accounts")).json())["accounts"]
    path = f"/_mock/accounts/{accounts[0]['id']}/ledger"
    ledger = await (await copy_client.get(path)).json()
    assert ledger == await (await original.client.get(path)).json()
    assert ledger["conserved"] is True
    assert [e["kind"] for e in ledger["entries"]] == ["charge"] * 4  # nothing settled to refund yet


def broken(document: dict[str, Any], path: list[Any], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    target = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return changed


@pytest.mark.parametrize(
    ("path", "value", "needle"),
    [
        (["format"], 2, "newer"),
        (["clock", "mode"], "sundial", "clock.mode"),
        (["orders", 0, "status"], "shipped", "orders[0].status"),
        (["orders", 0, "scenario"], "nowhere", "not loaded"),
        (["orders", 0, "account_id"], "nobody", "no account"),
        (["accounts", 0, "balance"], "lots", "accounts[0].balance"),
        (["catalog", 0, "product_type"], "gadget", "catalog"),
        (["deliveries", 0, "order_id"], "gone", "no order"),
        (["queue", 0, "scenario"], "nope", "queue: scenario 'nope' is not loaded"),
        (["scenarios_loaded", 0], {"name": "x", "steps": [{"status": "pending"}]}, "pending"),
    ],
)
async def test_a_bad_document_is_refused_and_changes_nothing(
    make_client, receiver, path, value, needle
):
    merchant = await login(await make_client())
    await busy_sandbox(merchant, receiver)
    before = await state_of(merchant.client)
    status, error = await put_state(merchant.client, broken(before, path, value))
    assert (status, error["code"]) == (400, "validation_error")
    assert needle in error["detail"], error
    assert await state_of(merchant.client) == before


async def test_a_document_that_is_not_one_is_refused(client):
    for document in ([], {"format": "1"}, {"seed": 1}):
        status, error = await put_state(client, document)
        assert status == 400 and "format" in error["detail"]


def test_validate_checks_a_saved_state_document(tmp_path):
    import json as jsonlib
    import subprocess
    import sys

    from mock_server.config import Settings, load_startup
    from mock_server.domain.sandbox import Sandbox

    document = Sandbox(load_startup(Settings(clock="manual", seed=1))).dump_state()
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(jsonlib.dumps(document))
    bad.write_text(jsonlib.dumps(broken(document, ["clock", "mode"], "sundial")))
    command = [sys.executable, "-m", "mock_server", "validate"]
    ok = subprocess.run([*command, str(good)], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "ok (state)" in ok.stdout
    refused = subprocess.run([*command, str(bad)], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1
    assert f"{bad}: state.clock.mode" in refused.stderr
