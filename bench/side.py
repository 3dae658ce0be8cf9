"""What the side benches (sandboxes.py, events.py, state.py) share: the wrk options,
the table's header, a verdict, and where the table goes."""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bench import BENCH, Client, Placement, Server, WrkParams, run_wrk

#: (the path a load goes to, without the order id; its bearer token; an order id).
Target = tuple[str, str, str]


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


def rss_kib(pid: int) -> int:
    """A process's resident memory (VmRSS), KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def alternate(
    pin: Placement,
    params: WrkParams,
    configs: tuple[str, ...],
    start: Callable[[str], Server],
    target: Callable[[Client, str], Target],
) -> dict[str, dict[str, list[float]]]:
    """Order lookup and creation with wrk on a fresh server per run, configuration and
    endpoint, the configurations alternating: requests/s by configuration and endpoint.
    `start(config)` starts the server; `target(client, config)` sets it up and names
    where the load goes (`/api/v1/orders` under a base path, a token, an order id)."""
    results = {config: {"lookup": [], "create": []} for config in configs}
    for run in range(params.runs):
        for config in configs:
            for endpoint, script in (("lookup", "lookup.lua"), ("create", "create.lua")):
                server = start(config)
                try:
                    client = Client(server.url)
                    orders, token, order_id = target(client, config)
                    client.close()
                    url = server.url + orders + (f"/{order_id}" if endpoint == "lookup" else "")
                    env = {"BENCH_TOKEN": token, "BENCH_PREFIX": f"warm{run}"}
                    run_wrk(pin, params, url, script, env, params.warmup)
                    env["BENCH_PREFIX"] = f"run{run}"
                    measured = run_wrk(pin, params, url, script, env, params.duration)
                finally:
                    server.stop()
                results[config][endpoint].append(measured.rps)
                print(
                    f"  {endpoint:6} {config:8} run {run + 1}: {measured.rps:8.0f} req/s",
                    file=sys.stderr,
                )
    return results


def ratio_rows(
    load: dict[str, dict[str, list[float]]], base: str, other: str, what: str, bar: float
) -> list[str]:
    """A table row per endpoint of `alternate`'s results: `other`'s median requests/s
    against `base`'s, held to `bar`; `what` says what is compared ("{title}" is the
    endpoint's name)."""
    rows = []
    for endpoint, title in (("lookup", "order lookup"), ("create", "order creation")):
        ours = statistics.median(load[other][endpoint])
        theirs = statistics.median(load[base][endpoint])
        ratio = ours / theirs
        rows.append(
            f"| {what.format(title=title)}: {ours:,.0f} vs {theirs:,.0f} req/s | "
            f"{ratio:.2f}x | >= {bar}x | {verdict(ratio >= bar)} |"
        )
    return rows


def every_run(load: dict[str, dict[str, list[float]]], configs: tuple[str, ...]) -> list[str]:
    """The lines listing every run's requests/s, by configuration and endpoint."""
    lines = ["", "Every run (req/s):", ""]
    for config in configs:
        for endpoint in ("lookup", "create"):
            runs = ", ".join(f"{rps:,.0f}" for rps in load[config][endpoint])
            lines.append(f"- {endpoint}, {config}: {runs}")
    return lines


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
