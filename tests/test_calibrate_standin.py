"""`mock-server calibrate` on recordings of the spec-only production stand-in
(tests/standin), docs/recording.md "Calibrate".

- Outcome classes come from the order's own answers, whatever an event lacks:
  production's events carry only the spec's seven fields (spec 6: no `price`, no
  `error`), and a merchant that relies on webhooks sees an order settle only through its
  event (it creates key orders, never polls them, and lets the webhooks tell it).
- Production's webhook retries (every 3 s, not the spec's 60 s) become the scenarios'
  `webhook: {retry: [...]}`.
- The round trip: with the scenarios and shapes calibrate writes, compare finds nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mock_server.cli import main as cli_main
from mock_server.recording.analysis.reading import read_recording
from mock_server.recording.analysis.traces import classes, traces
from tests.standin import (
    Production,
    ProductionSession,
    merchant_day,
    record_production,
    refuse_first,
)

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


# -- production's retry schedule ---------------------------------------------------------


async def two_orders_one_refused(session: ProductionSession) -> None:
    await session.login()
    for n in range(2):
        await session.order({"item_id": 501, "quantity": 1, "merchant_order_id": f"r-{n}"})
    await session.advance(60)


def test_production_retrying_3_s_apart_is_calibrated_as_the_scenarios_retry(tmp_path, capsys):
    """The stand-in retries every 3 s (the spec says 60 s); the merchant's receiver
    refused the first two attempts of one order."""
    path = tmp_path / "retried.jsonl"
    record_production(
        path,
        two_orders_one_refused,
        Production(key_outcomes={"completed": 1}),
        webhook_answers=refuse_first(2, {"r-0"}),
    )
    scenarios = tmp_path / "calibrated.yaml"
    assert cli_main(["calibrate", str(path), "--out", str(scenarios)]) == 0
    text = scenarios.read_text()
    assert "webhook: {retry: [3s, 3s, 3s]}" in text
    assert "retry 1: 3 s after the attempt before, median of 1" in text
    assert "retry 3: never reached in the recording" in text
    capsys.readouterr()
    assert cli_main(["validate", str(scenarios)]) == 0, capsys.readouterr()


def test_a_recording_without_retries_keeps_the_spec_schedule(tmp_path):
    path = tmp_path / "delivered.jsonl"
    record_production(path, two_orders_one_refused, Production(key_outcomes={"completed": 1}))
    scenarios = tmp_path / "calibrated.yaml"
    assert cli_main(["calibrate", str(path), "--out", str(scenarios)]) == 0
    assert "retry" not in scenarios.read_text()


# -- the round trip: calibrate's scenarios and shapes, then compare -------------------------


@pytest.mark.parametrize("retried", [True, False], ids=["with retries", "without retries"])
def test_calibrated_scenarios_and_shapes_make_compare_clean(tmp_path: Path, capsys, retried):
    """docs/recording.md, "Calibrate the shapes": production differs from the sandbox in
    shapes (a balance as a string, its own fields, a choice echoed as its id, its own
    webhook object, events of the spec's seven fields), timings, outcome mix and retry
    gaps; after `calibrate --out S --shapes-out H`, `compare --scenarios S --shapes H`
    finds nothing and explains every class."""
    path = tmp_path / "production.jsonl"
    answers = refuse_first(2, {"shop-0"}) if retried else None
    record_production(path, merchant_day, Production(event_fields="spec"), webhook_answers=answers)
    scenarios, shapes = tmp_path / "scenarios.yaml", tmp_path / "shapes.yaml"
    assert (
        cli_main(["calibrate", str(path), "--out", str(scenarios), "--shapes-out", str(shapes)])
        == 0
    )
    assert ("retry: [3s, 3s, 3s]" in scenarios.read_text()) is retried
    rules = shapes.read_text()
    assert "balance: decimal_string" in rules and "choice_fields: id" in rules
    capsys.readouterr()
    assert cli_main(["validate", str(scenarios), str(shapes)]) == 0, capsys.readouterr()
    capsys.readouterr()
    code = cli_main(
        ["compare", str(path), "--scenarios", str(scenarios), "--shapes", str(shapes), "--json"]
    )
    report = json.loads(capsys.readouterr().out)
    assert report["findings"] == [], report["findings"][:5]
    assert all(c["explained"] for c in report["classes"]), report["classes"]
    assert code == 0


def test_production_that_calls_the_item_otherwise_is_calibrated_and_compared(tmp_path, capsys):
    """Production's orders say `item_id`, not `item`: compare once inferred its catalog
    from `item` alone, found no item, and every replayed creation was refused. The item
    is the one the order request names (spec 4.3)."""
    from tests.test_compare import key_orders, record

    def renamed(method: str, path: str, answer: Any) -> Any:
        if isinstance(answer, dict) and "item" in answer and "status" in answer:
            answer = {k: v for k, v in answer.items() if k != "item"} | {"item_id": answer["item"]}
        return answer

    path = record(tmp_path, key_orders, rewrite=renamed).write()
    scenarios, shapes = tmp_path / "scenarios.yaml", tmp_path / "shapes.yaml"
    assert (
        cli_main(["calibrate", str(path), "--out", str(scenarios), "--shapes-out", str(shapes)])
        == 0
    )
    assert "item_id: {copy: item}" in shapes.read_text()
    capsys.readouterr()
    code = cli_main(
        ["compare", str(path), "--scenarios", str(scenarios), "--shapes", str(shapes), "--json"]
    )
    report = json.loads(capsys.readouterr().out)
    assert report["findings"] == [], report["findings"][:5]
    assert all(c["explained"] for c in report["classes"]) and code == 0
