"""What the side benches (sandboxes.py, events.py, state.py) share: the wrk options,
the table's header, a verdict, and where the table goes."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from bench import BENCH, Placement, WrkParams


def arguments(doc: str) -> argparse.ArgumentParser:
    """A parser with the wrk options every side bench takes; add your own."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=5)
    parser.add_argument("--warmup", type=float, default=2)
    # Five runs: each side bench's bar is a ratio of two medians within 5-10%, and on a
    # shared two-core VM a single run of either side moves by more than that.
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--no-write", action="store_true")
    return parser


def wrk_params(args: argparse.Namespace) -> WrkParams:
    return WrkParams(1, args.connections, args.duration, args.warmup, args.runs)


def header(title: str, script: str, pin: Placement, *facts: str) -> list[str]:
    lines = [
        f"# {title}",
        "",
        f"Written by `python bench/{script}` (see its docstring).",
        "",
        f"- **date**: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"- **placement**: {pin.note}",
    ]
    return lines + [f"- {fact}" for fact in facts] + [""]


def verdict(ok: bool) -> str:
    return "**PASS**" if ok else "**FAIL**"


def publish(table: str, name: str, args: argparse.Namespace) -> None:
    """Print the table, and write it to bench/NAME unless --no-write."""
    print(table)
    if not args.no_write:
        (BENCH / name).write_text(table, encoding="utf-8")
