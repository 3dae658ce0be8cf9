"""Outcome classes read from the order's own answers, whatever an event lacks
(docs/recording.md, "Calibrate"): production's events carry only the spec's seven
fields (spec 6: no `price`, no `error`), and a merchant that relies on webhooks sees
an order settle only through its event.

Production is the spec-only stand-in (tests/standin); the merchant creates key orders,
never polls them, and lets the webhooks tell it how they ended.
"""

from __future__ import annotations

from pathlib import Path

from mock_server.cli import main as cli_main
from mock_server.recording.reading import read_recording
from mock_server.recording.traces import classes, traces
from tests.standin import Production, ProductionSession, record_production

#: Every key order fails out of stock, or completes.
MIX = Production(event_fields="spec", key_outcomes={"out_of_stock": 1, "completed": 1})


async def orders_left_to_webhooks(session: ProductionSession) -> None:
    await session.login()
    for n in range(6):
        await session.order({"item_id": 501, "quantity": 2, "merchant_order_id": f"w-{n}"})
    await session.advance(60)  # every order settles and its event is delivered


def test_an_order_seen_to_fail_only_through_its_event_is_classed_by_its_answers(tmp_path):
    path = tmp_path / "events-only.jsonl"
    record_production(path, orders_left_to_webhooks, MIX)
    found = {c.key.final: c.key for c in classes(traces(read_recording(str(path))))}
    failed = found["failed"]
    assert failed.refunded == "all" and failed.delivered == "none"  # its price: its creation
    assert failed.error == "" and not failed.error_shown
    assert found["completed"].refunded == "none" and found["completed"].delivered == "all"


def test_what_calibrate_writes_for_it_validates(tmp_path: Path, capsys):
    path = tmp_path / "events-only.jsonl"
    record_production(path, orders_left_to_webhooks, MIX)
    scenarios = tmp_path / "calibrated.yaml"
    assert cli_main(["calibrate", str(path), "--out", str(scenarios)]) == 0
    text = scenarios.read_text()
    assert "no answer showed these orders' error code" in text
    assert 'error: "OUT_OF_STOCK"' in text
    capsys.readouterr()
    assert cli_main(["validate", str(scenarios)]) == 0, capsys.readouterr()
