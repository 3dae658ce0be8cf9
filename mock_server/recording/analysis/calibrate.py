"""`mock-server calibrate FILE... [--out PATH]`: scenarios that behave like a recording
(docs/recording.md, "Calibrate").

One scenario per outcome class (`traces.classes`), named from it
(`recorded_partial_order_timeout`): its steps are the statuses the class's orders went
through, each delayed by the median of the delays observed (a comment gives the sample
count and range, and warns where one sample decides), its terminal step ends as the
class ended (error code, a delivered share, duplicated events), and its `weight` is the
number of recorded orders in the class, so a sandbox loading the file draws each
outcome as often as production showed it (docs/scenarios.md, "Weighted selection").

Where classes belong to some kinds of order only (a login top-up's client-code orders,
say), every class is split by kind (product type, or item when types do not explain
the split), each part a scenario with a `match` on the items of its kind the recording
showed (`item_id`, one or a list: never a whole product type) and the count of that
kind as its weight: for each kind of order, outcomes occur as often as they did.

Exit status: 0; 1 when a file has no end line or a cut last line (`trust`: the
scenarios are written all the same, a `warning:` line on stderr says why); 2 for a file
it cannot read or with nothing to replay, no order created, or an output it cannot
write.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .calibrate_shapes import CalibrateError, calibrate_shapes
from .reading import RecordingError
from .retries import RetrySchedule, observed_retries
from .traces import TERMINAL, OutcomeClass, Trace, classes, traces
from .trust import file_warnings, read_replayable, unsettled_warning, untrusted

Kind = Callable[[Trace], Any]


@dataclass
class Calibrated:
    """One scenario of the output, before it is written."""

    name: str
    key_text: str
    traces: list[Trace]
    outcome: OutcomeClass
    match: dict[str, Any] | None


def calibrate(all_traces: list[Trace]) -> tuple[list[Calibrated], list[OutcomeClass]]:
    """The scenarios to write, and the classes no scenario can play (never settled)."""
    found = classes(all_traces)
    playable = [c for c in found if c.key.final in TERMINAL]
    unplayable = [c for c in found if c.key.final not in TERMINAL]
    kind_name, kind = _partition(playable, all_traces)
    calibrated = []
    for outcome in playable:
        if kind is None:
            calibrated.append(
                Calibrated(outcome.name, outcome.key.describe(), outcome.traces, outcome, None)
            )
            continue
        by_kind: dict[Any, list[Trace]] = {}
        for trace in outcome.traces:
            by_kind.setdefault(kind(trace), []).append(trace)
        for value, members in sorted(by_kind.items(), key=lambda item: str(item[0])):
            calibrated.append(
                Calibrated(
                    f"{outcome.name}_{_slug(value)}",
                    f"{outcome.key.describe()}; {kind_name} {value}",
                    members,
                    OutcomeClass(outcome.key, members),
                    {"item_id": _item_ids(value, kind, all_traces)},
                )
            )
    return calibrated, unplayable


def _partition(found: list[OutcomeClass], all_traces: list[Trace]) -> tuple[str, Kind | None]:
    """How to split classes by kind of order: not at all when every class spans every
    item; by product type when a class's items are exactly those of its types; else by
    item."""
    items = {t.item_id for t in all_traces}
    if all(c.items() == items for c in found):
        return "", None
    items_of_type: dict[Any, set[Any]] = {}
    for trace in all_traces:
        items_of_type.setdefault(trace.product_type, set()).add(trace.item_id)
    if all(c.items() == set().union(*(items_of_type[t] for t in c.product_types())) for c in found):
        return "product_type", lambda trace: trace.product_type
    return "item_id", lambda trace: trace.item_id


def _item_ids(value: Any, kind: Kind, all_traces: list[Trace]) -> Any:
    """The items a kind of order is, as a match names them: never a whole product type
    (a sandbox's other items of that type, which the recording never showed, would
    follow a script production never played for them), one id or a list."""
    items = sorted({t.item_id for t in all_traces if kind(t) == value}, key=str)
    return items[0] if len(items) == 1 else items


def _slug(value: Any) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in str(value)).lower()


# -- writing ----------------------------------------------------------------------------------


def render(
    paths: Sequence[str], calibrated: list[Calibrated], unplayable: list[OutcomeClass], total: int
) -> str:
    """The scenario file, YAML with comments (every string a JSON string, which YAML reads
    as it is)."""
    lines = [
        "# Scenarios calibrated from a recording by `mock-server calibrate`",
        f"# ({', '.join(paths)}): {total} orders in {len(calibrated)} scenarios.",
        "# Each weight is a count of recorded orders: weights are relative",
        '# (docs/scenarios.md, "Weighted selection"). Load with --scenarios.',
    ]
    for outcome in unplayable:
        lines.append(
            f"# Not calibrated: {outcome.name}, {len(outcome.traces)} orders never seen to "
            f"settle ({outcome.key.describe()}): a scenario ends in a terminal status."
        )
    retries = observed_retries(t for scenario in calibrated for t in scenario.traces)
    if retries is not None:
        lines.append("# Production retried its webhooks after an answer other than 200:")
        lines += [f"#   {line}" for line in retries.describe()]
        lines.append("# Every scenario's terminal step follows that schedule (webhook: retry).")
    lines.append("scenarios:")
    unshown = _unshown_error(calibrated)
    for scenario in calibrated:
        lines += _scenario(scenario, unshown, retries)
    return "\n".join(lines) + "\n"


#: A failed step's error when the recording showed none of any failed order (spec 7.4
#: lists it first).
UNSHOWN_ERROR = "OUT_OF_STOCK"


def _unshown_error(calibrated: list[Calibrated]) -> str:
    """The code a failed step gets when its orders' answers never showed their error
    (only their events did, which carry none: spec 6): the one the recording's other
    failed orders showed most, else `UNSHOWN_ERROR`. A failed step needs a code."""
    counts: dict[str, int] = {}
    for scenario in calibrated:
        key = scenario.outcome.key
        if key.final == "failed" and key.error:
            counts[key.error] = counts.get(key.error, 0) + len(scenario.traces)
    return max(sorted(counts), key=counts.__getitem__) if counts else UNSHOWN_ERROR


def _scenario(
    scenario: Calibrated,
    unshown_error: str = UNSHOWN_ERROR,
    retries: RetrySchedule | None = None,
) -> list[str]:
    count = len(scenario.traces)
    lines = [
        f"  # {scenario.key_text}: {count} recorded order{'s' if count != 1 else ''}",
        f"  - name: {json.dumps(scenario.name)}",
        f"    description: {json.dumps(f'Recorded: {scenario.key_text}')}",
        f"    weight: {count}",
    ]
    if scenario.match:
        ((key, value),) = scenario.match.items()
        lines.append(f"    match: {{{key}: {json.dumps(value)}}}")
    lines.append("    steps:")
    key = scenario.outcome.key
    after_code = False
    for status, samples in scenario.outcome.delays():
        if after_code and status == "processing":
            continue  # the code itself moves the order to processing
        lines.append(f"      # {_samples(status, samples, after_code)}")
        if len(samples) == 1:
            lines.append("      # warning: one sample decides this delay")
        delay = statistics.median(samples) if samples else 0.0
        lines.append(f"      - after: {_duration(delay)}")
        lines.append(f"        status: {status}")
        if status in TERMINAL:
            if status == "failed" and not key.error:
                lines.append(
                    "        # warning: no answer showed these orders' error code (only "
                    "their events,"
                )
                lines.append(f"        # which carry none): {unshown_error} stands in for it")
            error = key.error or (unshown_error if status == "failed" else "")
            lines += _terminal(scenario.traces, error, key.duplicates, status, retries)
        after_code = status == "need_client_code" or (after_code and status == "processing")
    return lines


def _samples(status: str, samples: list[float], after_code: bool) -> str:
    since = "the client code" if after_code else "the previous status"
    if not samples:
        return f"{status}: no delay observed"
    low, high = min(samples), max(samples)
    return (
        f"{status} {statistics.median(samples):.3g} s after {since}: median of "
        f"{len(samples)} (range {low:.3g}-{high:.3g} s)"
    )


def _terminal(
    members: list[Trace],
    error: str,
    duplicates: int,
    status: str,
    retries: RetrySchedule | None = None,
) -> list[str]:
    lines = []
    if status == "partial":
        shares = []
        for trace in members:
            order = trace.final_order()
            quantity, delivered = order.get("quantity"), order.get("delivered_quantity")
            numbers = isinstance(quantity, int | float) and isinstance(delivered, int | float)
            if numbers and quantity:
                shares.append(100 * delivered / quantity)
        share = round(statistics.median(shares)) if shares else 50
        lines.append(f'        deliver: "{min(99, max(1, share))}%"')
    if error:
        lines.append(f"        error: {json.dumps(error)}")
    webhook = [f"duplicate: {duplicates}"] if duplicates else []
    if retries is not None:
        webhook.append(f"retry: [{', '.join(_duration(gap) for gap in retries.gaps)}]")
    if webhook:
        lines.append(f"        webhook: {{{', '.join(webhook)}}}")
    return lines


def _duration(seconds: float) -> str:
    """Seconds as the scenario files write them, to the millisecond."""
    milliseconds = round(seconds * 1000)
    if milliseconds % 1000 == 0:
        return f"{milliseconds // 1000}s"
    return f"{milliseconds}ms"


# -- the command ------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="mock-server calibrate",
        description="Scenarios that behave like a recording: one per outcome class, with "
        "the median observed delays and a weight equal to the class's count "
        "(docs/recording.md).",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="recordings or HAR files")
    parser.add_argument("--out", metavar="PATH", help="write the scenario file here (else stdout)")
    parser.add_argument(
        "--shapes-out",
        metavar="PATH",
        help="also replay the recording against a sandbox running these scenarios and write "
        "here the shapes file that makes its answers and events production's "
        "(docs/shapes.md)",
    )
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        recordings = read_replayable(args.files)
    except RecordingError as exc:
        print(exc, file=sys.stderr)
        return 2
    all_traces = [trace for recording in recordings for trace in traces(recording)]
    if not all_traces:
        print(
            f"{args.files[0]}:1: no order was created in it (no 201 to POST .../orders): "
            "nothing to calibrate",
            file=sys.stderr,
        )
        return 2
    calibrated, unplayable = calibrate(all_traces)
    warnings = [w for recording in recordings for w in file_warnings(recording)]
    warnings += filter(None, [unsettled_warning(sum(len(c.traces) for c in unplayable))])
    for warning in warnings:  # stderr: stdout may hold the scenarios
        print(f"warning: {warning}", file=sys.stderr)
    text = render(args.files, calibrated, unplayable, len(all_traces))
    shapes = None
    if args.shapes_out:
        try:
            shapes, rules = calibrate_shapes(args.files, recordings, text)
        except CalibrateError as exc:
            print(exc, file=sys.stderr)
            return 2
    if args.out:
        if not _write(args.out, text):
            return 2
        print(f"{args.out}: {len(calibrated)} scenarios from {len(all_traces)} orders")
    else:
        sys.stdout.write(text)
    if args.shapes_out and shapes is not None:
        if not _write(args.shapes_out, shapes):
            return 2
        where = sys.stdout if args.out else sys.stderr  # stdout may hold the scenarios
        print(f"{args.shapes_out}: {rules} shape rules", file=where)
    return 1 if untrusted(recordings) else 0


def _write(path: str, text: str) -> bool:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"{path}: cannot write it ({exc.strerror or exc})", file=sys.stderr)
        return False
    return True
