"""`mock-server calibrate` (docs/recording.md, "Calibrate"): a recording's outcome classes
become scenarios with the median observed delays and weights equal to the classes'
counts, which `mock-server validate` accepts.

The recordings here are written by hand in the recorder's format (docs/recording.md,
"The file"), so that every delay, count and kind of order is known exactly; the round
trip through a real recorder and `compare` is in tests/test_recording_round_trip.py.
"""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from mock_server.cli import main as cli_main
from mock_server.domain.scenarios import parse_scenarios
from mock_server.recording.recorder.fileformat import end_line_of

START = datetime(2026, 3, 1, tzinfo=UTC)
KEY_ORDER = {"item": 1001, "item_product_type": "key", "quantity": 2, "price": 40.0}
LOGIN_TOPUP = {"item": 2002, "item_product_type": "topup", "quantity": 1, "price": 14.99}


class Session:
    """A recording written event by event: a token exchange, then orders observed by
    polls, client codes and webhooks at chosen times (seconds after the start)."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = [
            {
                "format": "ordering-sandbox-recording",
                "version": 1,
                "upstream": "https://orders.example.com",
                "started_at": _iso(0),
                "redaction": ["token", "api_key", "code", "email"],
            }
        ]
        self.seq = 0
        self.exchange(
            0,
            "POST",
            "/api/v1/auth/token/client",
            200,
            {"api_key": "<api_key:k1>"},
            {"access_token": "<token:t1>", "token_type": "Bearer"},
        )

    def exchange(
        self,
        at: float,
        method: str,
        path: str,
        status: int,
        request: Any = None,
        response: Any = None,
    ) -> None:
        self.seq += 1
        event: dict[str, Any] = {
            "seq": self.seq,
            "at": _iso(at),
            "kind": "exchange",
            "request": {
                "method": method,
                "path": path,
                "query": "",
                "headers": [["Authorization", "Bearer <token:t1>"]],
            },
            "response": {"status": status, "headers": [["Content-Type", "application/json"]]},
            "ms": 2.0,
        }
        if request is not None:
            event["request"]["body"] = request
        if response is not None:
            event["response"]["body"] = response
        self.lines.append(event)

    def webhook(self, at: float, order: dict[str, Any], answered: int = 200) -> None:
        self.seq += 1
        body = {"order_id": order["id"], **{k: v for k, v in order.items() if k != "id"}}
        self.lines.append(
            {
                "seq": self.seq,
                "at": _iso(at),
                "kind": "webhook",
                "headers": [["X-Signature", "<signature:s>"]],
                "body": body,
                "answered": answered,
                "signature_valid": True,
            }
        )

    def order(
        self,
        at: float,
        number: int,
        kind: dict[str, Any],
        life: list[tuple[float, str, str]],
        *,
        ends: dict[str, Any],
    ) -> None:
        """An order created at `at` whose `life` is (delay since creation, how it was
        seen: poll | webhook | code, status); it ends with the fields `ends`."""
        order = {
            "id": f"order-{number}",
            **kind,
            "delivered_quantity": 0,
            "refund_amount": 0,
            "status": "pending",
            "error": "",
            "codes": [],
        }
        self.exchange(
            at,
            "POST",
            "/api/v1/orders",
            201,
            {"item_id": kind["item"], "merchant_order_id": f"m-{number}"},
            order,
        )
        for delay, seen, status in life:
            view = {
                **order,
                "status": status,
                **(ends if status in ("completed", "partial", "failed") else {}),
            }
            if seen == "poll":
                self.exchange(at + delay, "GET", f"/api/v1/orders/{order['id']}", 200, None, view)
            elif seen == "code":
                self.exchange(
                    at + delay,
                    "POST",
                    f"/v1/orders/{order['id']}/client-code",
                    200,
                    {"code": "<client_code:c>"},
                    view,
                )
            else:
                self.webhook(at + delay, view)

    def write(self, path: Path) -> Path:
        lines = [*self.lines, end_line_of(self.lines[1:])]
        text = "".join(json.dumps(line) + "\n" for line in lines)
        if path.suffix == ".gz":
            path.write_bytes(gzip.compress(text.encode()))
        else:
            path.write_text(text)
        return path


def _iso(seconds: float) -> str:
    return (
        (START + timedelta(seconds=seconds))
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


COMPLETED = {"delivered_quantity": 2, "refund_amount": 0, "codes": ["<code:a>", "<code:b>"]}
TIMED_OUT = {
    "delivered_quantity": 1,
    "refund_amount": 20.0,
    "error": "ORDER_TIMEOUT",
    "codes": ["<code:a>"],
}


def calibrated(tmp_path: Path, session: Session, capsys) -> tuple[str, dict[str, Any]]:
    recording = session.write(tmp_path / "session.jsonl")
    out = tmp_path / "calibrated.yaml"
    assert cli_main(["calibrate", str(recording), "--out", str(out)]) == 0
    capsys.readouterr()
    text = out.read_text()
    by_name = {s["name"]: s for s in yaml.safe_load(text)["scenarios"]}
    return text, by_name


def test_one_scenario_per_class_with_median_delays_and_counts_as_weights(tmp_path, capsys):
    session = Session()
    # Nine orders complete: processing seen by a poll 1 s after creation, the webhook
    # at 4, 5 or 6 s (median 5); three time out partially at 30 s.
    for number in range(9):
        session.order(
            number * 100,
            number,
            KEY_ORDER,
            [(1, "poll", "processing"), (4 + number % 3, "webhook", "completed")],
            ends=COMPLETED,
        )
    for number in range(9, 12):
        session.order(
            number * 100,
            number,
            KEY_ORDER,
            [(2, "poll", "processing"), (30, "webhook", "partial")],
            ends=TIMED_OUT,
        )
    text, scenarios = calibrated(tmp_path, session, capsys)

    assert set(scenarios) == {"recorded_completed", "recorded_partial_order_timeout"}
    completed = scenarios["recorded_completed"]
    assert completed["weight"] == 9 and "match" not in completed
    # processing: seen by a poll at 1 s after creation at 0: the middle, 0.5 s; the
    # webhook's arrival is exact: 5 s after creation, 4.5 s after processing.
    assert completed["steps"] == [
        {"after": "500ms", "status": "processing"},
        {"after": "4500ms", "status": "completed"},
    ]
    timed_out = scenarios["recorded_partial_order_timeout"]
    assert timed_out["weight"] == 3
    assert timed_out["steps"][-1] == {
        "after": "29s",
        "status": "partial",
        "deliver": "50%",
        "error": "ORDER_TIMEOUT",
    }
    assert "completed 4.5 s after the previous status: median of 9 (range 3.5-5.5 s)" in text
    assert "warning" not in text
    # What calibrate writes is what the loader (and `mock-server validate`) accepts.
    loaded = parse_scenarios(yaml.safe_load(text), "calibrated.yaml")
    assert [s.weight for s in loaded] == [9, 3]
    assert cli_main(["validate", str(tmp_path / "calibrated.yaml")]) == 0


def test_a_class_of_one_kind_of_order_gets_a_match_and_one_sample_a_warning(tmp_path, capsys):
    session = Session()
    for number in range(4):
        session.order(
            number * 100,
            number,
            KEY_ORDER,
            [(1, "poll", "processing"), (3, "webhook", "completed")],
            ends=COMPLETED,
        )
    # A login top-up waits for a code, which the merchant sends 20 s later; it completes
    # 2 s after the code.
    session.order(
        1000,
        4,
        LOGIN_TOPUP,
        [(1, "poll", "need_client_code"), (20, "code", "processing"), (22, "webhook", "completed")],
        ends={"delivered_quantity": 1},
    )
    text, scenarios = calibrated(tmp_path, session, capsys)

    # The classes differ by product type: each is split by it, with its own count, and
    # matches the items of that type the recording showed, never the whole type.
    assert set(scenarios) == {"recorded_completed_key", "recorded_completed_client_code_topup"}
    assert scenarios["recorded_completed_key"]["match"] == {"item_id": 1001}
    assert scenarios["recorded_completed_key"]["weight"] == 4
    topup = scenarios["recorded_completed_client_code_topup"]
    assert topup["match"] == {"item_id": 2002} and topup["weight"] == 1
    # The code's own move to processing is not a step; the delay after it is.
    assert [(s["status"], s["after"]) for s in topup["steps"]] == [
        ("need_client_code", "500ms"),
        ("completed", "2s"),
    ]
    assert "completed 2 s after the client code" in text
    assert text.count("warning: one sample decides this delay") == 2
    assert cli_main(["validate", str(tmp_path / "calibrated.yaml")]) == 0


def test_duplicated_events_and_orders_that_never_settled(tmp_path, capsys):
    session = Session()
    for number in range(2):
        order_life = [
            (1, "poll", "processing"),
            (3, "webhook", "completed"),
            (3.1, "webhook", "completed"),
        ]
        session.order(number * 100, number, KEY_ORDER, order_life, ends=COMPLETED)
    session.order(500, 2, KEY_ORDER, [(1, "poll", "processing")], ends={})
    text, scenarios = calibrated(tmp_path, session, capsys)
    assert scenarios["recorded_completed_duplicate"]["steps"][-1]["webhook"] == {"duplicate": 1}
    assert "Not calibrated: recorded_processing, 1 orders never seen to settle" in text


def test_gzip_and_har_files_are_read_and_bad_input_is_file_line_reason(tmp_path, capsys):
    session = Session()
    session.order(0, 1, KEY_ORDER, [(3, "webhook", "completed")], ends=COMPLETED)
    recording = session.write(tmp_path / "session.jsonl.gz")
    assert cli_main(["calibrate", str(recording)]) == 0
    assert "recorded_completed" in capsys.readouterr().out

    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(session.lines[0]) + "\n{not json\n" + json.dumps({}) + "\n")
    assert cli_main(["calibrate", str(broken)]) == 2
    assert capsys.readouterr().err.startswith(f"{broken}:2: not JSON")

    headless = tmp_path / "headless.jsonl"
    headless.write_text(json.dumps({"seq": 1}) + "\n")
    assert cli_main(["calibrate", str(headless)]) == 2
    assert f"{headless}:1: not a recording" in capsys.readouterr().err

    empty = Session().write(tmp_path / "no-orders.jsonl")
    assert cli_main(["calibrate", str(empty)]) == 2
    assert "no order was created in it" in capsys.readouterr().err

    assert cli_main(["calibrate", str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl:1: cannot read it" in capsys.readouterr().err


def test_a_recorder_killed_mid_line_loses_only_that_line(tmp_path, capsys):
    session = Session()
    session.order(0, 1, KEY_ORDER, [(3, "webhook", "completed")], ends=COMPLETED)
    path = session.write(tmp_path / "killed.jsonl")
    whole = path.read_text().splitlines(keepends=True)[:-1]  # a killed recorder: no end line
    path.write_text("".join(whole) + '{"seq": 99, "at": "2026-')  # cut short
    # The scenarios are written all the same; the exit status and stderr say they come
    # from a file that vouches for nothing (docs/recording.md, "Can a result be trusted").
    assert cli_main(["calibrate", str(path)]) == 1
    out, err = capsys.readouterr()
    assert "recorded_completed" in out
    assert f"warning: {path}:{len(whole) + 1}: the last line is cut in the middle" in err
    assert f"warning: {path}: no end line" in err and "never scanned for secrets" in err


async def test_a_calibrated_client_code_class_leaves_other_top_ups_alone(
    tmp_path, capsys, make_client
):
    """A login top-up's client-code class was once matched on its whole product type:
    loaded into a sandbox, every other top-up (one with no client code) then waited for
    a code forever. The match names the recorded item; item 2001 completes."""
    from conftest import login

    session = Session()
    session.order(
        0, 0, KEY_ORDER, [(1, "poll", "processing"), (3, "webhook", "completed")], ends=COMPLETED
    )
    session.order(
        100,
        1,
        LOGIN_TOPUP,
        [(1, "poll", "need_client_code"), (20, "code", "processing"), (22, "webhook", "completed")],
        ends={"delivered_quantity": 1},
    )
    calibrated(tmp_path, session, capsys)
    merchant = await login(await make_client(scenarios=(str(tmp_path / "calibrated.yaml"),)))
    body = {"item_id": 2001, "quantity": 5, "fields": {"razer_id": "r-1", "region": 1}}
    status, order = await merchant.create(body)
    assert status == 201, order
    await merchant.advance(600)
    assert (await merchant.order(order["id"]))["status"] == "completed"
