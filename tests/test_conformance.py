"""`mock-server conformance` (docs/fidelity.md): the drift check, run against a sandbox that
answers like this one and against one changed to drift in a status code, an error code
and a field type. Every probe must leave the probed service without an order or a
charge."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from aiohttp import ClientSession, web

from mock_server import conformance
from mock_server.config import Settings
from mock_server.testing import SandboxHandle, ServerThread


@pytest.fixture
def service():
    """Another sandbox, standing in for the real service."""
    server = ServerThread(Settings(clock="manual", port=0, seed=9)).start()
    yield server
    server.stop()


def run(capsys, *args: str) -> tuple[int, str]:
    code = conformance.main(list(args))
    return code, capsys.readouterr().out


def test_no_drift_exits_0_and_the_probes_create_and_charge_nothing(service, capsys):
    code, out = run(capsys, "--base-url", service.url, "--api-key", "ak_test_default")
    assert code == 0, out
    assert "0 of 11 probes drifted" in out
    assert "cannot create or charge anything" in out
    probed = SandboxHandle(service.url)
    assert probed.orders() == []
    ledger = probed.control("GET", f"/_mock/accounts/{probed.account_id}/ledger")
    assert [e for e in ledger["entries"] if e["kind"] != "adjustment"] == []
    assert ledger["balance"] == 1000.0
    journal = probed.control("GET", "/_mock/requests")["requests"]
    assert {call["status"] for call in journal if call["path"].endswith("/orders")} == {400}


def drifting_proxy(upstream: str) -> web.Application:
    """The stand-in service, changed: it forwards to `upstream`, but the balance comes
    back as a string and an unknown item gets an error code of its own."""

    async def forward(request: web.Request) -> web.Response:
        headers = {"Content-Type": request.headers.get("Content-Type", "application/json")}
        if "Authorization" in request.headers:
            headers["Authorization"] = request.headers["Authorization"]
        url = upstream + request.path
        async with (
            ClientSession() as session,
            session.request(
                request.method, url, data=await request.read(), headers=headers
            ) as response,
        ):
            status, body = response.status, await response.json(content_type=None)
        if request.path.endswith("/account/balance") and status == 200:
            body["balance"] = str(body["balance"])  # a field type drifts
        if isinstance(body, dict) and "does not exist" in str(body.get("detail")):
            body["code"] = "unknown_item"  # an error code drifts
        return web.json_response(body, status=status)

    app = web.Application()
    app.router.add_route("*", "/{path:.*}", forward)
    return app


async def test_drift_in_status_code_error_code_and_field_type_is_reported(service, aiohttp_server):
    SandboxHandle(service.url).control(
        "POST", "/_mock/faults", {"method": "GET", "path": "/v1/account/me", "status": 503}
    )
    proxy = await aiohttp_server(drifting_proxy(service.url))
    outcomes = await conformance.run(str(proxy.make_url("")), "ak_test_default", None)
    by_name = {outcome.probe.name: outcome.differences for outcome in outcomes}
    assert by_name["account read"][0] == "status: service 503, sandbox 200"
    assert (
        "code: service 'unknown_item', sandbox 'validation_error'"
        in (by_name["order of an unknown item"])
    )
    assert by_name["balance"] == ["type of balance: service string, sandbox number"]
    assert by_name["lookup of an unknown order"] == []
    assert sum(1 for differences in by_name.values() if differences) == 3
    assert SandboxHandle(service.url).orders() == []
    report = conformance.report(outcomes)
    assert "3 of 11 probes drifted" in report
    assert "drift  balance: GET /api/v1/account/balance" in report


def test_json_output_for_ci(service, capsys):
    code, out = run(capsys, "--base-url", service.url, "--api-key", "ak_test_default", "--json")
    assert code == 0
    document = json.loads(out)
    assert document["drifted"] is False
    assert len(document["probes"]) == 11
    assert document["probes"][0] == {
        "probe": "token exchange",
        "request": "POST /api/v1/auth/token/client",
        "service_status": 200,
        "sandbox_status": 200,
        "differences": [],
    }


def test_the_command_line_says_what_it_never_sends():
    result = subprocess.run(
        [sys.executable, "-m", "mock_server", "conformance", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0
    assert "cannot create or charge anything" in " ".join(result.stdout.split())


def test_an_unreachable_service_is_exit_2(capsys):
    code = conformance.main(["--base-url", "http://127.0.0.1:9", "--api-key", "ak_x"])
    assert code == 2
    assert "cannot reach" in capsys.readouterr().err


def test_no_probe_could_create_an_order():
    """Every creation probe lacks what a valid order needs, by construction."""
    item = {"id": 7, "product_type": "key", "max_quantity": 10, "price": 100}
    topup = {"id": 8, "product_type": "topup", "fields": [{"name": "x"}], "min_quantity": 5}
    for probe in conformance.probes(item, topup):
        if probe.method != "POST" or not probe.path.endswith("/orders"):
            continue
        body = probe.body
        assert (
            isinstance(body, bytes)
            or body["item_id"] == conformance.UNKNOWN_ITEM
            or body.get("quantity", 1) > item["max_quantity"]
            or body.get("price") == conformance.IMPOSSIBLE_GUARD
            or (body["item_id"] == topup["id"] and "fields" not in body)
        ), probe
