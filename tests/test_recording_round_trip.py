"""The round trip of docs/recording.md: production recorded, `calibrate` of the recording,
`mock-server validate` of what it wrote, and `compare --scenarios` of it explaining every
class of the recording it came from.

Production is a stand-in that behaves unlike the built-in scenarios: its key orders
take 8 s, a quarter of them time out at 40 s with one unit of two delivered (a weighted
draw of its own), and its login top-ups complete 5 s after their client code. The
session is recorded by tests/test_compare.py's `Session` (the stand-in's virtual clock
gives the times: nothing waits on wall time).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from mock_server.cli import main as cli_main
from tests.test_compare import Session, classes_by_name, compare_json, record

PRODUCTION = """\
scenarios:
  - name: production_key
    weight: 3
    match: {product_type: key}
    steps:
      - after: 2s
        status: processing
      - after: 6s
        status: completed
  - name: production_timeout
    weight: 1
    match: {product_type: key}
    steps:
      - after: 2s
        status: processing
      - after: 38s
        status: partial
        deliver: 1
        error: ORDER_TIMEOUT
  - name: production_login
    match: {item_id: 2002}
    steps:
      - after: 1s
        status: need_client_code
      - after: 5s
        status: completed
"""
LOGIN = {"item_id": 2002, "quantity": 1, "fields": {"login_email": "p@example.com", "server": 2}}


async def production_traffic(session: Session) -> None:
    """Sixteen key orders and two login top-ups, polled every second; each top-up's code
    sent 3 s after it was seen waiting."""
    await session.login()
    keys = [
        await session.order({"item_id": 1001, "quantity": 2, "merchant_order_id": f"k-{n}"})
        for n in range(16)
    ]
    logins = [await session.order({**LOGIN, "merchant_order_id": f"l-{n}"}) for n in range(2)]
    await session.poll([*keys, *logins], every=1.0, until=60)
    await session.advance(3)
    for login in logins:
        await session.call("POST", f"/v1/orders/{login['id']}/client-code", {"code": "123456"})
    await session.poll(logins, every=1.0, until=20)
    await session.advance(1)
    await session.call("GET", "/api/v1/account/balance")


def test_calibrated_scenarios_explain_every_class_of_their_recording(tmp_path: Path, capsys):
    production = tmp_path / "production.yaml"
    production.write_text(PRODUCTION)
    recording = record(tmp_path, production_traffic, scenario_files=(str(production),))
    path = recording.write("production.jsonl.gz")

    # The built-in scenarios do not behave like this production.
    code, before = compare_json(str(path))
    assert code == 1
    assert not all(c["explained"] for c in before["classes"])

    calibrated = tmp_path / "calibrated.yaml"
    assert cli_main(["calibrate", str(path), "--out", str(calibrated)]) == 0
    assert cli_main(["validate", str(calibrated)]) == 0
    capsys.readouterr()
    scenarios = {s["name"]: s for s in yaml.safe_load(calibrated.read_text())["scenarios"]}
    weights = {name: s["weight"] for name, s in scenarios.items()}
    # Each kind of order has its own scenarios, weighted by what production did.
    assert sum(w for n, w in weights.items() if n.endswith("_key")) == 16
    assert sum(w for n, w in weights.items() if n.endswith("_topup")) == 2
    assert any(n.startswith("recorded_partial_order_timeout") for n in weights)

    code, after = compare_json(str(path), "--scenarios", str(calibrated))
    found = classes_by_name(after)
    assert all(c["explained"] for c in found.values()), {
        name: c["why_not"] for name, c in found.items() if not c["explained"]
    }
    for name, outcome in found.items():
        # Explained by the scenario calibrated from that very class.
        assert any(e["scenario"].startswith(name) for e in outcome["explained_by"]), outcome
    assert after["findings"] == []
    assert code == 0
