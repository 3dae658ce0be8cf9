"""The benchmark report: the table against the bars of bench/README.md, the machine,
and every individual run."""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from inproc import LIFE_SECONDS

REPO = Path(__file__).resolve().parent.parent

# The base bars (bench/README.md, "The bars").
BAR_LOOKUP_RATIO = 0.60
BAR_CREATE_RATIO = 0.40
BAR_START_S = 0.5
# RSS holding 100,000 orders created over HTTP: the first bar was 200 MiB; held tighter.
BAR_RSS_HTTP_MIB = 160.0
BAR_RSS_WEBHOOKS_MIB = 250.0
BAR_ADVANCE_MS = 20.0
# The floors, as ratios against the bare apps of the same session: lookup against the
# bare app on uvloop answering pre-encoded bytes (aiohttp's own ceiling), and its p99
# against that app's; creation against the bare app on asyncio that parses the body and
# encodes its answer; start-up against the bare app on asyncio. A change must not break
# them; a server that needs more than one core grows by nodes.
BAR_LOOKUP_VS_CEILING = 0.80
BAR_CREATE_VS_BARE = 0.65
BAR_P99_VS_BARE = 1.3
BAR_START_VS_BARE = 1.5
BARE_TITLES = {"bare": "bare asyncio", "ceiling": "bare uvloop pre-encoded"}


def machine_info(placement: str, http_runs: str) -> list[tuple[str, str]]:
    import aiohttp

    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    wrk = subprocess.run(["wrk", "--version"], capture_output=True, text=True)
    wrk_version = (wrk.stdout or wrk.stderr).splitlines()[0].split(" [")[0]
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    if _git("status", "--porcelain", "--untracked-files=no", "--", "mock_server"):
        commit += " + uncommitted changes under mock_server/"
    return [
        ("date", datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")),
        ("CPU", model),
        ("cores", f"{os.cpu_count()} (usable: {len(os.sched_getaffinity(0))})"),
        ("kernel", f"{platform.system()} {platform.release()}"),
        ("Python", f"{platform.python_version()} ({sys.executable})"),
        ("aiohttp", aiohttp.__version__),
        ("load generator", wrk_version),
        ("code", commit),
        ("placement", placement),
        ("HTTP runs", http_runs),
    ]


def _git(*args: str) -> str:
    with contextlib.suppress(OSError):
        done = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
        if done.returncode == 0:
            return done.stdout.strip()
    return ""


def verdict(ok: bool) -> str:
    return "**PASS**" if ok else "**FAIL**"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


Row = tuple[str, str, str, str, str, str, str, str]


def _bars(checks: list[tuple[str, str, bool]], bars: dict[str, bool]) -> tuple[str, str]:
    """(bar column, result column) for the bars a row is judged on."""
    for key, _, ok in checks:
        bars[key] = ok
    if not checks:
        return "—", "(no bar)"
    return "; ".join(text for _, text, _ in checks), ", ".join(verdict(ok) for *_, ok in checks)


def http_rows(endpoint: Any, bars: dict[str, bool]) -> list[Row]:
    """Requests/s, p50 and p99 of one endpoint, beside both bare rows and the ratios."""
    rows: list[Row] = []
    measures = (("requests/s", "rps"), ("p50 latency", "p50_ms"), ("p99 latency", "p99_ms"))
    for label, attr in measures:
        cells = []
        for target in ("sandbox", "bare", "ceiling"):
            value = endpoint.median(target, attr)
            cells.append(f"{value:,.0f}" if attr == "rps" else f"{value:.2f} ms")
        ratios = [endpoint.ratio_to(name, attr) for name in ("bare", "ceiling")]
        shown = [f"{r:.0%}" if attr == "rps" else f"{r:.2f}×" for r in ratios]
        checks: list[tuple[str, str, bool]] = []
        if attr == "rps" and endpoint.bar is not None:
            checks.append((endpoint.title, f"≥ {endpoint.bar:.0%} of bare asyncio (base)",
                           ratios[0] >= endpoint.bar))  # fmt: skip
        judged = attr == "rps" or (attr == "p99_ms" and endpoint.p99_judged)
        if endpoint.ceiling_bar is not None and judged:
            name, minimum = endpoint.ceiling_bar
            ratio = endpoint.ratio_to(name, attr)
            if attr == "rps":
                text, ok = f"≥ {minimum:.0%} of {BARE_TITLES[name]} (floor)", ratio >= minimum
            else:
                text = f"≤ {BAR_P99_VS_BARE:.1f}× {BARE_TITLES[name]}'s (floor)"
                ok = ratio <= BAR_P99_VS_BARE
            checks.append((f"{endpoint.title} {label} vs {BARE_TITLES[name]}", text, ok))
        bar, result = _bars(checks, bars) if checks or attr == "rps" else ("", "")
        rows.append((f"{endpoint.title}: {label}", cells[0], cells[1], shown[0], cells[2],
                     shown[1], bar, result))  # fmt: skip
    return rows


def other_rows(results: dict[str, Any], bars: dict[str, bool]) -> list[Row]:
    """Memory, advance and webhook rows (absent with `--only http`)."""
    rows: list[Row] = []
    if "memory" not in results:
        return rows
    memory_table, memory_bars = memory_rows(results["memory"])
    rows += [(title, value, "", "", "", "", bar, result)
             for title, value, bar, result in memory_table]  # fmt: skip
    bars |= memory_bars
    rss = results["rss"]
    rows.append(("  for reference, in-process (`Sandbox.create_order`, no HTTP): pending, "
                 "settled", f"{rss['pending_mib']:.0f}, {rss['settled_mib']:.0f} MiB",
                 "", "", "", "", "", ""))  # fmt: skip
    life = results["advance"]
    fresh = statistics.median(life["fresh_s"])
    bars["advance through a life"] = fresh <= BAR_ADVANCE_MS / 1000
    failures = sum(1 for a in life["attempts"] if a != 200)
    rows.append(
        (
            f"`advance({LIFE_SECONDS:g} s)`: whole life, {failures} failed webhook attempts "
            f"(in-process, fresh sandbox, median of {len(life['fresh_s'])})",
            ms(fresh),
            "",
            "",
            "",
            "",
            f"≤ {BAR_ADVANCE_MS:.0f} ms",
            verdict(bars["advance through a life"]),
        )
    )
    blank = ("", "", "", "", "", "")
    rows.append(("  same, one sandbox reused (pooled connection)",
                 ms(statistics.median(life["warm_s"])), *blank))  # fmt: skip
    rows.append(("  same, first in a fresh process (one-off imports)", ms(life["first_s"]),
                 *blank))  # fmt: skip
    over_http = results["advance_http"]
    rows.append(("  same, over HTTP: `POST /_mock/clock/advance` to a server process",
                 ms(statistics.median(over_http["warm_s"])), *blank))  # fmt: skip
    hooks = results["webhooks"]
    per_s = statistics.median(r["per_s"] for r in hooks["rounds"])
    rows.append(
        (
            f"webhook deliveries/s ({hooks['orders']:,} orders settling at once, "
            f"receiver answers 200)",
            f"{per_s:,.0f}/s",
            "",
            "",
            "",
            "",
            "—",
            "(no bar)",
        )
    )
    return rows


def render(results: dict[str, Any], info: list[tuple[str, str]]) -> tuple[str, dict[str, bool]]:
    rows: list[Row] = []
    bars: dict[str, bool] = {}
    for endpoint in results["http"]["endpoints"]:
        rows += http_rows(endpoint, bars)
    start = {name: statistics.median(runs) for name, runs in results["start"].items() if runs}
    start_runs = len(results["start"]["sandbox"])
    start_ratio = start["sandbox"] / start["bare"]
    bar, result = _bars(
        [
            ("process start to first answer", f"≤ {BAR_START_S * 1000:.0f} ms (base)",
             start["sandbox"] <= BAR_START_S),
            ("start vs bare asyncio", f"≤ {BAR_START_VS_BARE:.1f}× bare asyncio (floor)",
             start_ratio <= BAR_START_VS_BARE),
        ],
        bars,
    )  # fmt: skip
    rows.append(
        (
            f"process start → first answered request (median of {start_runs})",
            ms(start["sandbox"]),
            ms(start["bare"]),
            f"{start_ratio:.2f}×",
            ms(start["ceiling"]),
            f"{start['sandbox'] / start['ceiling']:.2f}×",
            bar,
            result,
        )
    )
    rows += other_rows(results, bars)
    header = (
        "measure",
        "sandbox",
        "bare asyncio",
        "ratio",
        "bare uvloop pre-encoded",
        "ratio",
        "bar (base; floor)",
        "result",
    )
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    table = "\n".join(lines)
    passed = sum(bars.values())
    summary = f"{passed} of {len(bars)} bars met" + (
        "" if all(bars.values()) else ": failing: " + ", ".join(k for k, v in bars.items() if not v)
    )
    machine = "\n".join(f"- **{k}**: {v}" for k, v in info)
    details = render_details(results)
    report = (
        "# Benchmark results\n\n"
        "Written by `bash bench/run.sh` (see bench/README.md); bars from bench/README.md "
        "(base, and the floors against the bare apps). Ratios are the sandbox's median over "
        "the bare app's median, measured in the same session: *bare asyncio* parses each request "
        "body and encodes each answer on asyncio's loop; *bare uvloop pre-encoded* answers "
        "bytes encoded once, on uvloop (aiohttp's ceiling).\n\n"
        f"{machine}\n\n{table}\n\n{summary}.\n\n{details}\n"
    )
    return report, bars


def memory_rows(memory: dict[str, Any]) -> tuple[list[tuple[str, str, str, str]], dict[str, bool]]:
    """RSS of the server process holding orders created over HTTP (bench/memory.py):
    (measure, value, bar, result) rows."""
    rows: list[tuple[str, str, str, str]] = []
    bars: dict[str, bool] = {}
    plain, hooks = memory["plain"], memory["webhooks"]
    checks = [
        (plain, "pending_mib", "pending", BAR_RSS_HTTP_MIB),
        (plain, "settled_mib", "settled (no webhook URL)", BAR_RSS_HTTP_MIB),
        (hooks, "settled_mib", "settled, each webhook delivered (receiver answers 200)",
         BAR_RSS_WEBHOOKS_MIB),
    ]  # fmt: skip
    for run, key, label, bar in checks:
        ok = run[key] <= bar
        bars[f"RSS {label}"] = ok
        title = f"RSS holding {run['orders']:,} orders created over HTTP, {label}"
        rows.append((title, f"{run[key]:.0f} MiB", f"≤ {bar:.0f} MiB", verdict(ok)))
    rows.append(("  same with a webhook URL, pending", f"{hooks['pending_mib']:.0f} MiB", "", ""))
    rows.append(("  RSS of the idle sandbox (before any order)", f"{plain['idle_mib']:.0f} MiB",
                 "", ""))  # fmt: skip
    return rows, bars


def memory_details(memory: dict[str, Any]) -> list[str]:
    out = []
    for name, run in memory.items():
        hooks = f", {run['received']:,} webhooks received" if run.get("received") else ""
        out.append(
            f"- {name}: idle {run['idle_mib']:.1f} MiB, {run['orders']:,} pending "
            f"{run['pending_mib']:.1f} MiB, settled {run['settled_mib']:.1f} MiB, peak "
            f"{run['peak_mib']:.1f} MiB; creating them over HTTP took {run['create_s']:.1f} s, "
            f"the settling advance {run['settle_s']:.1f} s (last order {run['status']}, "
            f"webhook {run['webhook']}{hooks})"
        )
    return out


def start_details(start: dict[str, list[float]]) -> list[str]:
    """Each start-up run (s), per app, in the order they were taken."""

    def runs(name: str) -> str:
        return ", ".join(f"{v:.3f}" for v in start[name])

    out = [
        f"- sandbox: {runs('sandbox')}",
        f"- bare app, asyncio: {runs('bare')}",
        f"- bare app, uvloop: {runs('ceiling')}",
        f"- for reference, `python -c 'import aiohttp.web'` to exit: {runs('import')}",
    ]
    if start.get("uncached"):
        out.append(
            "- for reference, the sandbox without the bench's bytecode cache (the environment "
            f"bench.py was started in): {runs('uncached')}"
        )
    return out


def start_table(start: dict[str, list[float]]) -> list[str]:
    """`--only start`: the medians and the floor's ratio, as a small table."""
    median = {name: statistics.median(runs) for name, runs in start.items() if runs}
    ratio = median["sandbox"] / median["bare"]
    runs = [v / b for v, b in zip(start["sandbox"], start["bare"], strict=True)]
    return [
        f"| app (median of {len(start['sandbox'])}) | spawn to first answer | vs bare asyncio |",
        "|---|---|---|",
        *(
            f"| {name} | {ms(median[name])} | {median[name] / median['bare']:.2f}× |"
            for name in ("sandbox", "bare", "ceiling", "uncached")
            if name in median
        ),
        "",
        f"Floor ≤ {BAR_START_VS_BARE:.1f}× bare asyncio: {verdict(ratio <= BAR_START_VS_BARE)} "
        f"({ratio:.2f}×; run by run {min(runs):.2f}–{max(runs):.2f}×).",
    ]


def render_details(results: dict[str, Any]) -> str:
    out = [
        "## Details",
        "",
        "Every measured wrk run: requests/s (p50/p99 ms, non-2xx + socket errors, share of a "
        "core used by other processes meanwhile):",
        "",
    ]
    for endpoint in results["http"]["endpoints"]:
        for target in ("bare", "ceiling", "sandbox"):
            runs = ", ".join(
                f"{r.rps:,.0f} ({r.p50_ms:.2f}/{r.p99_ms:.2f}, {r.bad_status + r.socket_errors}, "
                f"{r.other_load:.0%})"
                for r in endpoint.runs[target]
            )
            out.append(f"- {endpoint.title}, {target}: {runs}")
        if endpoint.retried:
            out.append(f"  ({endpoint.retried} runs repeated: another process was busy)")
    out += ["", "Response parity (sandbox vs bare app):", ""]
    out += [f"- {note}" for note in results["http"]["parity"]]
    out += ["", "Start-up runs (s), spawn to first 200 from `GET /_mock/health`:", ""]
    out += start_details(results["start"])
    if "memory" not in results:
        return "\n".join(out)
    out += ["", "RSS of the server process (VmRSS), orders created over HTTP:", ""]
    out += memory_details(results["memory"])
    rss = results["rss"]
    out += [
        "",
        f"RSS in-process, for reference: after imports {rss['after_import_mib']:.1f} MiB, "
        f"idle sandbox {rss['idle_mib']:.1f} MiB, {rss['orders']:,} pending "
        f"{rss['pending_mib']:.1f} MiB, "
        f"settled {rss['settled_mib']:.1f} MiB (statuses {', '.join(rss['statuses'])}), "
        f"peak {rss['peak_mib']:.1f} MiB; creating them took {rss['create_s']:.1f} s "
        f"({rss['orders'] / rss['create_s']:,.0f} orders/s in-process), settling "
        f"{rss['settle_s']:.1f} s.",
    ]
    life, over_http = results["advance"], results["advance_http"]
    out += [
        "",
        f"advance({LIFE_SECONDS:g} s), status codes of the attempts: {life['attempts']}.",
        "",
        "- fresh sandbox (ms): " + _ms_list(life["fresh_s"]),
        "- one sandbox reused (ms): " + _ms_list(life["warm_s"]),
        f"- first in a fresh process: {life['first_s'] * 1000:.1f} ms",
        "- over HTTP (ms): "
        + _ms_list(over_http["warm_s"])
        + f" (first call in the process: {over_http['first_s'] * 1000:.1f})",
    ]
    hooks = results["webhooks"]
    out += [
        "",
        "Webhook rounds: "
        + ", ".join(f"{r['seconds']:.3f} s = {r['per_s']:,.0f}/s" for r in hooks["rounds"])
        + " (each: settle the orders and deliver one webhook each, 100 at a time).",
    ]
    return "\n".join(out)


def _ms_list(seconds: list[float]) -> str:
    return ", ".join(f"{t * 1000:.1f}" for t in seconds)
