"""Scenario files written the way docs/scenarios.md writes them load everywhere.

Two forms people write from those docs: `deliver` on a terminal step that agrees with its
status (`completed: all`, `failed: 0%`), and a step straight after `need_client_code`
that is not an explicit `processing` (the code itself moves the order to processing).
Each must load from a file at start-up, through `mock-server validate` and through
`POST /_mock/scenarios`, and play on the manual clock exactly as the explicit form does.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mock_server.app import create_app
from mock_server.clock import parse_iso
from mock_server.config import Settings, load_startup
from tests.conftest import BASE_SETTINGS, login

DESIGN_FORMS = """\
scenarios:
  - name: code_then_completed
    description: Straight on after the code, as docs/scenarios.md writes it.
    steps:
      - after: 1s
        status: processing
      - after: 1s
        status: need_client_code
        expect_code: "4242"
      - after: 2s
        status: completed
        deliver: all
  - name: code_then_processing_then_completed
    description: The same script with the explicit processing step.
    steps:
      - after: 1s
        status: processing
      - after: 1s
        status: need_client_code
        expect_code: "4242"
      - status: processing
      - after: 2s
        status: completed
        deliver: 100%
  - name: fails_delivering_nothing
    steps:
      - after: 1s
        status: failed
        error: OUT_OF_STOCK
        deliver: 0
  - name: fails_delivering_zero_percent
    steps:
      - after: 1s
        status: failed
        error: OUT_OF_STOCK
        deliver: 0%
"""
CONTRADICTION = """\
scenarios:
  - name: completes_half
    steps:
      - status: completed
        deliver: 50%
"""
GENSHIN_LOGIN_TOPUP = {
    "item_id": 2002,
    "quantity": 1,
    "fields": {"login_email": "player@example.com", "server": 2},
}


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def validate(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mock_server", "validate", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )


def test_design_forms_load_at_startup(tmp_path):
    path = write(tmp_path, "forms.yaml", DESIGN_FORMS)
    startup = load_startup(Settings(scenarios=(str(path),), seed=1))
    names = {scenario.name for scenario in startup.scenarios}
    assert {"code_then_completed", "fails_delivering_nothing"} <= names


def test_validate_accepts_the_design_forms(tmp_path):
    path = write(tmp_path, "forms.yaml", DESIGN_FORMS)
    result = validate(path)
    assert result.returncode == 0, result.stderr
    assert f"{path}: ok" in result.stdout


def test_validate_refuses_a_deliver_that_contradicts_its_status(tmp_path):
    path = write(tmp_path, "bad.yaml", CONTRADICTION)
    result = validate(path)
    assert result.returncode == 1
    assert re.search(rf"^{re.escape(str(path))}:5: .*'deliver'.*50%", result.stderr, re.M)
    assert "Traceback" not in result.stderr


@pytest.fixture
async def merchant(make_client, tmp_path):
    path = write(tmp_path, "forms.yaml", DESIGN_FORMS)
    settings = Settings(**{**BASE_SETTINGS.__dict__, "scenarios": (str(path),)})
    return await login(await make_client(create_app(settings)))


async def _history_after_code(merchant, scenario: str) -> list[tuple[str, float]]:
    """Place a login top-up with `scenario`, send the code 100 s later, settle it; the
    history as (status, seconds since creation)."""
    status, order = await merchant.create(GENSHIN_LOGIN_TOPUP, **{"X-Mock-Scenario": scenario})
    assert status == 201, order
    await merchant.advance(100)
    assert (await merchant.order(order["id"]))["status"] == "need_client_code"
    status, wrong = await merchant.call(
        "POST", f"/api/v1/orders/{order['id']}/client-code", json={"code": "0000"}
    )
    assert (status, wrong["code"]) == (400, "validation_error")
    status, released = await merchant.call(
        "POST", f"/api/v1/orders/{order['id']}/client-code", json={"code": "4242"}
    )
    assert (status, released["status"]) == (200, "processing")
    await merchant.advance(1.999)
    assert (await merchant.order(order["id"]))["status"] == "processing"
    await merchant.advance(0.001)
    done = await merchant.order(order["id"])
    assert (done["status"], done["delivered_quantity"]) == ("completed", 1)
    response = await merchant.client.get(f"/_mock/orders/{order['id']}")
    steps = (await response.json())["history"]
    created = parse_iso(steps[0]["at"])
    return [(step["status"], parse_iso(step["at"]) - created) for step in steps]


async def test_straight_on_after_the_code_plays_like_the_explicit_processing_step(merchant):
    expected = [
        ("pending", 0),
        ("processing", 1),
        ("need_client_code", 2),
        ("processing", 100),  # exactly one processing, when the code arrives
        ("completed", 102),
    ]
    assert await _history_after_code(merchant, "code_then_completed") == expected
    assert await _history_after_code(merchant, "code_then_processing_then_completed") == expected


@pytest.mark.parametrize("scenario", ["fails_delivering_nothing", "fails_delivering_zero_percent"])
async def test_failed_step_with_deliver_zero_refunds_everything(merchant, scenario):
    status, order = await merchant.create({"item_id": 1001}, **{"X-Mock-Scenario": scenario})
    assert status == 201, order
    await merchant.advance(1)
    failed = await merchant.order(order["id"])
    assert (failed["status"], failed["delivered_quantity"]) == ("failed", 0)
    assert failed["refund_amount"] == failed["price"]
    assert await merchant.balance() == 1000.0


async def test_control_api_loads_the_design_forms_and_refuses_a_contradiction(client):
    response = await client.post(
        "/_mock/scenarios",
        data=textwrap.dedent(DESIGN_FORMS),
        headers={"Content-Type": "application/yaml"},
    )
    assert response.status == 201, await response.text()
    assert (await response.json())["loaded"][0] == "code_then_completed"

    response = await client.post(
        "/_mock/scenarios", data=CONTRADICTION, headers={"Content-Type": "application/yaml"}
    )
    body = await response.json()
    assert (response.status, body["code"]) == (400, "validation_error")
    assert ":5:" in body["detail"] and "deliver" in body["detail"], body
    listed = await (await client.get("/_mock/scenarios")).json()
    assert "completes_half" not in {s["name"] for s in listed["scenarios"]}
