"""A green `compare` can be trusted (docs/recording.md, "Can a result be trusted"): a
file without its end line, a last line cut in the middle, orders never seen to settle
and a recording with nothing to replay are said, never passed over; refusals that
depend on state the recording shows only through them are replayed with that state
set; an unexplained class's timeline and reasons name the orders they are about.

Recordings are made by tests/test_compare.py's `Session`: a real sandbox server on a
manual clock stands in for production, every exchange written in the recorder's format.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from mock_server.cli import main as cli_main
from mock_server.recording.analysis.reading import read_recording
from tests.test_compare import (
    Session,
    browser_har,
    classes_by_name,
    compare_json,
    key_orders,
    record,
    run_compare,
)

SLOW_COMPLETION = """\
scenarios:
  - name: slow_completion
    description: Completes after 30 s, where happy_path takes 3 s.
    steps:
      - after: 1s
        status: processing
      - after: 29s
        status: completed
"""


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


async def one_order(session: Session) -> None:
    """One key order, polled until it settles."""
    await session.login()
    order = await session.order({"item_id": 1001, "quantity": 1, "merchant_order_id": "o-1"})
    await session.poll([order], every=1.0, until=10)


# -- item 1: finished and unfinished files -----------------------------------------------------


def test_a_file_without_its_end_line_is_exit_1_with_a_warning(tmp_path: Path) -> None:
    session = record(tmp_path, one_order)
    finished = session.write("finished.jsonl")
    code, document = compare_json(str(finished))
    assert code == 0 and document["warnings"] == []

    lines = session.lines()
    assert lines[-1]["kind"] == "end"
    killed = _write(tmp_path / "killed.jsonl", lines[:-1])
    code, document = compare_json(str(killed))
    assert code == 1 and document["exit"] == 1
    assert document["findings"] == [] and all(c["explained"] for c in document["classes"])
    (warning,) = document["warnings"]
    assert warning.startswith(f"{killed}: no end line")
    assert "never scanned for secrets" in warning and "may end early" in warning

    code, text, _ = run_compare(str(killed))
    assert code == 1 and f"warning: {killed}: no end line" in text


def test_a_last_line_cut_in_the_middle_is_named(tmp_path: Path) -> None:
    """`head -c` of a gzipped recording: what it holds is read, and the cut line is
    named as `file:line: reason` instead of being dropped silently."""
    session = record(tmp_path, one_order)
    whole = session.write("whole.jsonl.gz").read_bytes()
    text = gzip.decompress(whole).decode()
    number = text.count("\n") - 1  # the line before the end line: an exchange
    keep = text[: text.rindex("\n", 0, len(text) - 1)]  # cut into the end line's
    keep = keep[: keep.rindex("\n") + 20]  # ...and 20 bytes into the last exchange
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(keep.encode())[:-8])  # no gzip trailer either
    recording = read_recording(str(cut))
    assert recording.cut_line == number and recording.end is None
    code, document = compare_json(str(cut))
    assert code == 1
    assert document["warnings"][0].startswith(f"{cut}:{number}: the last line is cut in the middle")
    assert document["warnings"][1].startswith(f"{cut}: no end line")


def test_a_line_after_the_end_line_is_refused(tmp_path: Path) -> None:
    lines = record(tmp_path, one_order).lines()
    joined = _write(tmp_path / "joined.jsonl", [*lines, lines[1]])
    code, _, err = run_compare(str(joined))
    assert code == 2
    assert err.startswith(f"{joined}:{len(lines) + 1}: a line after the end line")


def test_orders_never_seen_to_settle_form_no_class(tmp_path: Path) -> None:
    """Every scenario passes through `pending`: an order the recording left pending
    would make a class that all of them "explain"."""

    async def left_pending(session: Session) -> None:
        await one_order(session)
        await session.order({"item_id": 1001, "quantity": 1, "merchant_order_id": "o-2"})

    path = record(tmp_path, left_pending).write()
    code, document = compare_json(str(path))
    summary = document["summary"]
    assert summary["orders"] == 2 and summary["unsettled"] == 1
    assert set(classes_by_name(document)) == {"recorded_completed"}
    assert document["warnings"] == [
        "1 order was never seen to settle (the recording ended first, or a client code "
        "never came): they form no outcome class and explain nothing"
    ]
    assert code == 0  # a warning; the settled order and every answer still compare

    code, text, _ = run_compare(str(path))
    assert "2 orders (1 never seen to settle)" in text


def test_nothing_to_replay_is_exit_2(tmp_path: Path) -> None:
    session = record(tmp_path, one_order)
    lines = session.lines()
    for line in lines[1:-1]:
        if line["kind"] == "exchange":
            line["response"] = {
                "status": 502,
                "body": {"detail": "cannot be reached", "code": "upstream_unavailable"},
            }
    down = _write(tmp_path / "down.jsonl", lines)
    code, out, err = run_compare(str(down))
    assert code == 2 and out == ""
    assert err.startswith(f"{down}:1: nothing to replay: every answer (")
    assert "recorder's own 502 upstream_unavailable" in err
    assert cli_main(["calibrate", str(down)]) == 2


def test_a_har_file_has_no_end_line_and_is_not_warned_about(tmp_path: Path) -> None:
    session = record(tmp_path, one_order, webhooks=False)
    path = tmp_path / "devtools.har"
    path.write_text(json.dumps(browser_har(session)))
    code, document = compare_json(str(path))
    assert code == 0 and document["warnings"] == []


# -- item 2: refusals replayed as production made them ----------------------------------------


async def refused_for_state(session: Session) -> None:
    """Production refuses one order for want of balance and one for want of stock;
    both are then sold, so the replay's catalog and balance would allow them."""
    await session.login()
    await session.call("GET", "/api/v1/account/balance")
    (account,) = (await session._control("GET", "/_mock/accounts"))["accounts"]
    path = f"/_mock/accounts/{account['id']}"
    await session._control("PATCH", path, {"balance": 1})
    status, answer = await session.call("POST", "/api/v1/orders", {"item_id": 1001, "quantity": 1})
    assert (status, answer["code"]) == (400, "insufficient_balance")
    await session._control("PATCH", path, {"balance": account["balance"]})
    await session._control("PATCH", "/_mock/catalog/items/1002", {"in_stock": False})
    status, answer = await session.call("POST", "/api/v1/orders", {"item_id": 1002, "quantity": 1})
    assert (status, answer["detail"]) == (400, "Item is not available")
    await session._control("PATCH", "/_mock/catalog/items/1002", {"in_stock": True})
    orders = [
        await session.order({"item_id": 1001, "quantity": 1, "merchant_order_id": "s-1"}),
        await session.order({"item_id": 1002, "quantity": 1, "merchant_order_id": "s-2"}),
    ]
    await session.poll(orders, every=1.0, until=10)
    await session.call("GET", "/api/v1/account/balance")


def test_refusals_for_balance_and_stock_are_no_drift(tmp_path: Path) -> None:
    path = record(tmp_path, refused_for_state).write()
    code, document = compare_json(str(path))
    assert document["findings"] == [], document["findings"]
    summary = document["summary"]
    assert summary["skipped"] == 0 and summary["orders"] == 2
    assert code == 0


# -- an unexplained class names its orders -------------------------------------------------


def test_the_timeline_and_the_reasons_name_an_order_no_scenario_explains(tmp_path: Path) -> None:
    """One order completes in 3 s (happy_path explains it), the other in 30 s (nothing
    does): the class is unexplained, and what the report shows of it is the slow one."""
    slow = tmp_path / "slow.yaml"
    slow.write_text(SLOW_COMPLETION)
    made: list[dict[str, Any]] = []

    async def fast_and_slow(session: Session) -> None:
        await session.login()
        made.append(await session.order({"item_id": 1001, "quantity": 1}))
        await session._control(
            "POST", "/_mock/scenarios/next", {"scenario": "slow_completion", "count": 1}
        )
        made.append(await session.order({"item_id": 1001, "quantity": 1}))
        await session.poll(made, every=2.0, until=60)

    path = record(tmp_path, fast_and_slow, scenario_files=(str(slow),)).write()
    code, document = compare_json(str(path))
    fast, slow_order = (order["id"] for order in made)
    completed = classes_by_name(document)["recorded_completed"]
    assert not completed["explained"] and code == 1
    assert completed["explained_by"] == [{"scenario": "happy_path", "orders": 1}]
    (timeline,) = document["timelines"]
    assert timeline["order"] == slow_order
    assert completed["why_not"]["happy_path"].endswith(f"(order {slow_order})")
    assert all(why.endswith(")") and "(order " in why for why in completed["why_not"].values())
    assert fast not in json.dumps(completed["why_not"])


def test_key_orders_still_compare_clean(tmp_path: Path) -> None:
    """The end line a finished file carries changes nothing else of a clean compare."""
    code, document = compare_json(str(record(tmp_path, key_orders).write()))
    assert code == 0 and document["warnings"] == [] and document["summary"]["unsettled"] == 0
