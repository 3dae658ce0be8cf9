"""`mock-server compare FILE... [--scenarios PATH]... [--catalog PATH] [--shapes PATH]
[--tolerance F] [--json] [--html PATH]`: what the sandbox would have done with a recorded session's
traffic (docs/recording.md, "Compare").

The files are read (`reading.read_recording`: the recorder's JSON Lines, gzipped or not,
and HAR 1.2), replayed (`replay.run`) and reported: a summary, each outcome class with
the scenarios that explain it (or "no scenario produces this"), the shape findings
`{seq or order, pointer, kind, recorded, sandbox}`, and per unexplained class a
timeline of the recording and the sandbox side by side. `--html PATH` writes the same
report, besides the usual output, as one self-contained page with each class's timeline
drawn (`html_report`; docs/recording.md, "The HTML report").

Several files are several sessions: each is replayed in a sandbox of its own, one after
another (their clocks, tokens and ids never meet), and their orders are pooled into one
set of outcome classes.

Exit status: 0 when no shape differs, every class is explained and every file vouches
for itself (`trust`: its end line, no cut line); 1 otherwise; 2 for a file it cannot
read or in which nothing can be replayed (`file:line: reason` on stderr), bad arguments,
or an `--html` PATH it cannot write. What a recording does not vouch for is in the
report's `warnings` (docs/recording.md, "Can a result be trusted").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from collections.abc import Sequence
from typing import Any

import aiohttp

from ...sourcefile import ConfigError
from .explain import ClassVerdict
from .findings import Finding
from .judge import DEFAULT_TOLERANCE
from .reading import RecordingError
from .replay import Outcome, class_delays, run
from .timelines import NO_SCENARIO, timeline
from .trust import file_warnings, read_replayable, settled, unsettled_warning, untrusted
from .world import ReplayError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mock-server compare",
        description="Replay recorded sessions against a sandbox started here and report "
        "what it would have done differently: answers' shapes (status, error code, "
        "fields, JSON types, enums, echoed fields, money) and orders' lives (which "
        "scenarios explain each outcome class). Exit 0 when nothing differs and every "
        "class is explained, 1 otherwise, 2 for a file it cannot read.",
    )
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="recordings (mock-server record's JSON Lines, .gz or not) or HAR 1.2 files; "
        "each is one session",
    )
    parser.add_argument(
        "--scenarios",
        action="append",
        default=[],
        metavar="PATH",
        help="scenario file or folder added to the built-in set (repeatable)",
    )
    parser.add_argument(
        "--catalog",
        metavar="PATH",
        help="the catalog snapshot to replay against (default: the items the "
        "recordings' order answers show)",
    )
    parser.add_argument(
        "--tolerance",
        type=_tolerance,
        default=DEFAULT_TOLERANCE,
        metavar="F",
        help="how far apart in time a status may be seen, as a share of the gap since "
        "the observation before (at least 1 s); default 0.25",
    )
    parser.add_argument(
        "--shapes",
        metavar="PATH",
        help="replay against a sandbox answering in these shapes (docs/shapes.md), such as "
        "calibrate --shapes-out wrote",
    )
    parser.add_argument("--json", action="store_true", help="one JSON document, for CI")
    parser.add_argument(
        "--html",
        metavar="PATH",
        help="also write the report to PATH as one self-contained HTML page (no external "
        "file or request), each class's timeline drawn; the usual output and the exit "
        "status are unchanged",
    )
    return parser


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
    return value


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:  # --help is 0, a bad flag 2
        return exc.code if isinstance(exc.code, int) else 2
    try:
        recordings = read_replayable(args.files)
    except RecordingError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        outcome = asyncio.run(
            run(recordings, args.scenarios, args.catalog, args.tolerance, args.shapes)
        )
    except ConfigError as exc:
        print("\n".join(exc.problems), file=sys.stderr)
        return 2
    except ReplayError as exc:
        print(f"cannot replay: {exc}", file=sys.stderr)
        return 2
    except (aiohttp.ClientError, OSError) as exc:  # the sandbox it started went away
        print(f"cannot replay: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    document = to_json(outcome)
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print(report(outcome))
    if args.html:
        from .html_report import write_html  # the page's code, only when one is asked for

        try:
            write_html(args.html, outcome, document)
        except OSError as exc:
            print(f"{args.html}: cannot write it ({exc.strerror or exc})", file=sys.stderr)
            return 2
    return document["exit"]


def exit_status(outcome: Outcome) -> int:
    clean = not outcome.findings and all(v.explained for v in outcome.verdicts)
    return 0 if clean and not untrusted(s.recording for s in outcome.sessions) else 1


def unsettled(outcome: Outcome) -> int:
    """Orders the recordings never saw settle: in no class (`explain`)."""
    return sum(1 for s in outcome.sessions for trace in s.traces if not settled(trace))


def warnings(outcome: Outcome) -> list[str]:
    """What the recordings do not vouch for (`trust`), one sentence each."""
    found = [w for s in outcome.sessions for w in file_warnings(s.recording)]
    if (orders := unsettled_warning(unsettled(outcome))) is not None:
        found.append(orders)
    return found


# -- JSON -----------------------------------------------------------------------------------


def to_json(outcome: Outcome) -> dict[str, Any]:
    explained = sum(1 for v in outcome.verdicts if v.explained)
    return {
        "summary": {
            "files": [s.recording.path for s in outcome.sessions],
            "exchanges": outcome.exchanges,
            "replayed": outcome.replayed,
            "skipped": outcome.skipped,
            "webhooks": outcome.webhooks,
            "orders": outcome.orders,
            "unsettled": unsettled(outcome),
            "classes": len(outcome.verdicts),
            "explained": explained,
            "unexplained": len(outcome.verdicts) - explained,
            "shape_findings": len(outcome.findings),
            "tolerance": outcome.tolerance,
            "scenarios": outcome.scenarios,
            "catalog": "given" if outcome.catalog_given else "inferred",
        },
        "classes": [_class_json(v) for v in outcome.verdicts],
        "findings": [f.to_json() for f in outcome.findings],
        "timelines": [timeline(v) for v in outcome.verdicts if not v.explained],
        "warnings": warnings(outcome),
        "exit": exit_status(outcome),
    }


def _class_json(verdict: ClassVerdict) -> dict[str, Any]:
    return {
        "name": verdict.outcome.name,
        "description": verdict.outcome.key.describe(),
        "orders": len(verdict.outcome.traces),
        "played": len(verdict.played),
        "median_delays": [
            {"status": status, "after": round(delay, 3), "samples": samples}
            for status, delay, samples in class_delays(verdict.outcome)
        ],
        "explained": verdict.explained,
        "explained_by": [
            {"scenario": name, "orders": len(ids)} for name, ids in verdict.explains.items()
        ],
        "explained_orders": verdict.explained_orders,
        "sandbox_choice": verdict.own_choice,
        "why_not": verdict.why_not,
    }


# -- text -----------------------------------------------------------------------------------


def report(outcome: Outcome) -> str:
    document = to_json(outcome)
    summary = document["summary"]
    files = len(summary["files"])
    lines = [
        f"compared {files} recording{'s' if files != 1 else ''}: {summary['exchanges']} "
        f"exchanges ({summary['replayed']} replayed, {summary['skipped']} skipped), "
        f"{summary['webhooks']} webhooks, {summary['orders']} orders"
        + (f" ({summary['unsettled']} never seen to settle)" if summary["unsettled"] else ""),
        f"outcome classes: {summary['classes']} ({summary['explained']} explained, "
        f"{summary['unexplained']} unexplained); shape findings: {summary['shape_findings']}",
        f"tolerance: {outcome.tolerance:g} of each gap, at least 1 s; scenarios: "
        f"{', '.join(outcome.scenarios)}",
        *(f"warning: {warning}" for warning in document["warnings"]),
        "",
        "classes",
    ]
    for verdict, entry in zip(outcome.verdicts, document["classes"], strict=True):
        lines += _class_lines(verdict, entry)
    lines += ["", "findings" if outcome.findings else "findings: none"]
    lines += _finding_lines(outcome.findings)
    for entry in document["timelines"]:
        lines += ["", *_timeline_lines(entry)]
    lines += ["", "exit " + str(document["exit"])]
    return "\n".join(lines)


def _class_lines(verdict: ClassVerdict, entry: dict[str, Any]) -> list[str]:
    delays = ", ".join(
        f"{d['status']} +{d['after']:g} s" for d in entry["median_delays"] if d["samples"]
    )
    mark = "explained  " if verdict.explained else "UNEXPLAINED"
    lines = [
        f"  {mark} {entry['name']}: {entry['orders']} order{'s' if entry['orders'] != 1 else ''}"
        f" ({entry['description']}); median {delays or 'no delays seen'}",
    ]
    played = entry["played"]
    if entry["explained_by"]:
        by = ", ".join(
            f"{e['scenario']} ({e['orders']} of {played})" for e in entry["explained_by"]
        )
        lines.append(f"              explained by {by}")
        if not verdict.explained:
            lines.append(
                f"              {entry['explained_orders']} of {played} played orders "
                "explained; the others: " + NO_SCENARIO
            )
    else:
        lines.append(f"              {NO_SCENARIO} ({played} played)")
    if not verdict.explained:
        lines.append(f"              the sandbox's own choice: {verdict.own_choice}")
        for name, why in entry["why_not"].items():
            lines.append(f"              not {name}: {why}")
    return lines


def _finding_lines(findings: list[Finding]) -> list[str]:
    """Findings grouped where they say the same about the same request."""
    groups: dict[tuple[Any, ...], list[Finding]] = {}
    for finding in findings:
        key = (
            finding.request,
            finding.pointer,
            finding.kind,
            json.dumps(finding.recorded, sort_keys=True, default=str),
            json.dumps(finding.sandbox, sort_keys=True, default=str),
        )
        groups.setdefault(key, []).append(finding)
    lines = []
    for group in groups.values():
        first = group[0]
        where = f"seq {first.seq}" if first.seq is not None else f"order {first.order}"
        more = f" (and {len(group) - 1} more)" if len(group) > 1 else ""
        lines.append(
            f"  {where}{more}  {first.request}  {first.pointer or '(answer)'}  {first.kind}: "
            f"recorded {_value(first.recorded)}, sandbox {_value(first.sandbox)}"
        )
    return lines


def _timeline_lines(entry: dict[str, Any]) -> list[str]:
    """The timeline, consecutive rows alike (a poll repeated) folded into one."""
    lines = [
        f"timeline of {entry['class']}: order {entry['order']}, the sandbox under its own "
        f"choice ({entry['sandbox_scenario']})",
        f"  {'time':>15}  {'recording':<36} sandbox",
    ]
    runs: list[tuple[float, float, int, str, str]] = []
    for row in entry["rows"]:
        recording, sandbox = _cell(row["recording"]), _cell(row["sandbox"])
        if runs and runs[-1][3:] == (recording, sandbox):
            first, _, count, _, _ = runs[-1]
            runs[-1] = (first, row["at"], count + 1, recording, sandbox)
        else:
            runs.append((row["at"], row["at"], 1, recording, sandbox))
    for first, last, count, recording, sandbox in runs:
        when = f"{first:.1f} s" if count == 1 else f"{first:.1f}-{last:.1f} s"
        if count > 1:
            recording = f"{recording} x{count}" if recording else recording
            sandbox = f"{sandbox} x{count}" if sandbox else sandbox
        lines.append(f"  {when:>15}  {recording:<36} {sandbox}")
    if entry["why_not"]:
        lines.append(f"  differs: {entry['why_not']}")
    return lines


def _cell(cell: dict[str, Any] | None) -> str:
    return "" if cell is None else f"{cell['status']} ({cell['source']})"


def _value(value: Any) -> str:
    return json.dumps(value, default=str) if not isinstance(value, str) else value
