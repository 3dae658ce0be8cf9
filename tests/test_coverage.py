"""Coverage of the contract (docs/control-api.md): `GET /_mock/coverage` counts what a run
exercised, lists what it never did, and the pytest plugin merges it over a session."""

from __future__ import annotations

import pytest

from mock_server.domain.coverage import AREAS, Coverage, merge
from tests.conftest import Merchant

pytest_plugins = ["pytester"]

LOGIN_TOPUP = {"item_id": 2002, "quantity": 1, "fields": {"login_email": "a@b.c", "server": 2}}


async def coverage(client) -> dict:
    response = await client.get("/_mock/coverage")
    assert response.status == 200
    return await response.json()


async def test_a_fresh_sandbox_has_exercised_nothing(client):
    report = await coverage(client)
    assert set(report["exercised"]) == set(AREAS)
    assert all(items == {} for items in report["exercised"].values())
    assert "statuses: completed" in report["never"]
    assert "scenarios: timeout_partial" in report["never"]
    assert "merchant_errors: not_authenticated: expired token" in report["never"]
    assert report["percent"] == 0.0


async def test_statuses_transitions_scenarios_and_settlement_errors_are_counted(merchant):
    await merchant.create({"item_id": 1001})
    await merchant.create(
        {"item_id": 1001, "quantity": 3}, **{"X-Mock-Scenario": "timeout_partial"}
    )
    await merchant.create(
        {"item_id": 1001, "quantity": 4}, **{"X-Mock-Scenario": "out_of_stock_partial"}
    )
    await merchant.advance(60)
    seen = (await coverage(merchant.client))["exercised"]
    assert seen["statuses"] == {"pending": 3, "processing": 3, "completed": 1, "partial": 2}
    assert seen["transitions"] == {
        "pending->processing": 3,
        "processing->completed": 1,
        "processing->partial": 2,
    }
    assert seen["scenarios"] == {"happy_path": 1, "timeout_partial": 1, "out_of_stock_partial": 1}
    assert seen["settlement_errors"] == {
        "partial with error": 1,
        "ORDER_TIMEOUT": 1,
        "partial without error": 1,
    }
    assert seen["prefixes"] == {"/api/v1": 4}  # the token exchange and three orders


async def test_merchant_errors_are_counted_by_cause(merchant: Merchant):
    client = merchant.client
    await merchant.create({"item_id": 999999})
    await merchant.create({"item_id": 1004})  # not in stock
    await merchant.create({"item_id": 1001, "quantity": 11})
    await merchant.create({"item_id": 3001, "fields": {"riot_id": "x", "region": 99}})
    await merchant.create({"item_id": 1001, "merchant_order_id": "dup"})
    await merchant.create({"item_id": 1001, "merchant_order_id": "dup"})
    await client.post("/v1/orders", data=b"{not json", headers=merchant.auth)
    await merchant.create({"item_id": 1001, "price": 1.00})
    accounts = (await (await client.get("/_mock/accounts")).json())["accounts"]
    await client.patch(f"/_mock/accounts/{accounts[0]['id']}", json={"balance": 5})
    await merchant.create({"item_id": 1001})
    await merchant.call("GET", "/api/v1/orders/00000000-0000-4000-8000-000000000000")
    await client.get("/api/v1/account/balance")
    await client.get("/api/v1/account/balance", headers={"Authorization": "Bearer nope"})
    old = merchant.token
    await merchant.advance(7200)
    await client.get("/api/v1/account/balance", headers={"Authorization": f"Bearer {old}"})
    await client.post("/api/v1/auth/token/client", json={"api_key": "ak_wrong"})
    seen = (await coverage(client))["exercised"]["merchant_errors"]
    assert seen == {
        "validation_error: unknown item": 1,
        "validation_error: unavailable item": 1,
        "validation_error: quantity": 1,
        "validation_error: fields": 1,
        "validation_error: duplicate merchant_order_id": 1,
        "validation_error: malformed body": 1,
        "price_mismatch": 1,
        "insufficient_balance": 1,
        "not_found": 1,
        "not_authenticated: missing token": 1,
        "not_authenticated: invalid token": 1,
        "not_authenticated: expired token": 1,
        "token exchange refused": 1,
    }
    assert (await coverage(client))["exercised"]["prefixes"]["/v1"] == 1


async def test_client_codes_and_webhook_outcomes_are_counted(merchant, aiohttp_server):
    from aiohttp import web

    answers = iter([500, 200, 202, 200])

    async def receive(request: web.Request) -> web.Response:
        return web.Response(status=next(answers, 200))

    hooks = web.Application()
    hooks.router.add_post("/hooks", receive)
    server = await aiohttp_server(hooks)
    accounts = await (await merchant.client.get("/_mock/accounts")).json()
    await merchant.client.patch(
        f"/_mock/accounts/{accounts['accounts'][0]['id']}",
        json={"webhook_url": str(server.make_url("/hooks"))},
    )
    _, coded = await merchant.create(LOGIN_TOPUP)
    await merchant.advance(2)
    path = f"/api/v1/orders/{coded['id']}/client-code"
    await merchant.call("POST", path, json={"code": "1"})
    await merchant.advance(2)  # the top-up completes; its webhook: 500, retried 60 s later: 200
    await merchant.advance(60)
    _, second = await merchant.create({"item_id": 1001}, **{"X-Mock-Scenario": "webhook_duplicate"})
    await merchant.advance(3)  # three copies: 202 (not 200!), 200, 200
    await merchant.create({"item_id": 1001}, **{"X-Mock-Scenario": "webhook_dropped"})
    await merchant.advance(3)
    delivery = await (await merchant.client.get(f"/_mock/webhooks?order_id={second['id']}")).json()
    await merchant.client.post(f"/_mock/webhooks/{delivery['deliveries'][0]['id']}/redeliver")
    report = await coverage(merchant.client)
    assert report["exercised"]["client_codes"] == {"accepted": 1}
    outcomes = report["exercised"]["webhook_outcomes"]
    assert outcomes["delivered after retries"] == 1
    assert outcomes["2xx that is not 200"] == 1
    assert outcomes["delivered at the first attempt"] == 2
    assert outcomes["duplicate"] == 1 and outcomes["dropped"] == 1
    assert outcomes["redelivered"] == 1
    assert "webhook_outcomes: retries exhausted" in report["never"]
    assert "client_codes: wrong code" in report["never"]


async def test_a_reset_keeps_coverage_and_coverage_reset_zeroes_it(merchant):
    await merchant.create({"item_id": 1001})
    await merchant.client.post("/_mock/reset", json={})
    assert (await coverage(merchant.client))["exercised"]["statuses"] == {"pending": 1}
    response = await merchant.client.post("/_mock/coverage/reset")
    assert (await response.json())["exercised"]["statuses"] == {}


def test_merging_sums_counts_and_keeps_an_item_never_only_if_no_run_saw_it():
    first, second = Coverage(), Coverage()
    first.count("statuses", "pending")
    second.count("statuses", "pending")
    second.count("scenarios", "mine")
    merged = merge([first.report(["happy_path"]), second.report(["mine", "happy_path"])])
    assert merged["exercised"]["statuses"] == {"pending": 2}
    assert "scenarios: happy_path" in merged["never"]
    assert "scenarios: mine" not in merged["never"]
    assert "statuses: pending" not in merged["never"]


SUITE = """
import requests

def login(server):
    token = requests.post(f"{server.url}/api/v1/auth/token/client",
                          json={"api_key": server.api_key}).json()["access_token"]
    return {"Authorization": f"Bearer {token}"}

def test_happy(mock_server):
    requests.post(f"{mock_server.url}/api/v1/orders", json={"item_id": 1001},
                  headers=login(mock_server))
    mock_server.advance(3)

def test_partial(mock_server):
    requests.post(f"{mock_server.url}/v1/orders", json={"item_id": 1001, "quantity": 2},
                  headers={**login(mock_server), "X-Mock-Scenario": "timeout_partial"})
    mock_server.advance(31)
"""


@pytest.fixture
def suite(pytester):
    pytester.makepyfile(test_suite=SUITE)
    return pytester


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_the_plugin_prints_the_merged_table(suite, workers):
    html = suite.path / "coverage.html"
    result = suite.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        *workers,
        "--mock-server-coverage",
        f"--mock-server-coverage-html={html}",
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*ordering contract coverage*",
            "statuses*4/6*need_client_code, failed",
            "prefixes*2/2*",
            "TOTAL *% of the contract exercised",
        ]
    )
    assert "timeout_partial" in html.read_text()


def test_fail_under_fails_the_run_below_the_threshold(suite):
    low = suite.runpytest_subprocess(
        "-p", "no:cacheprovider", "--mock-server-coverage-fail-under=99"
    )
    assert low.ret == 1
    low.assert_outcomes(passed=2)
    low.stdout.fnmatch_lines(["required 99%: NOT reached: the run fails"])
    ok = suite.runpytest_subprocess("-p", "no:cacheprovider", "--mock-server-coverage-fail-under=5")
    assert ok.ret == 0
