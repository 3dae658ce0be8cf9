"""`mock-server compare` on a large recording (docs/recording.md, "Compare"): one command.

    python bench/compare.py [--orders 1000] [--exchanges 10000] [--runs 3]
                            [--shapes bench/shapes.yaml] [--recording PATH] [--no-write]

A synthetic recording of `--exchanges` exchanges and `--orders` orders is made by
driving an in-process sandbox (manual clock) as production's stand-in, as
tests/test_compare.py does, every exchange and webhook written in the recorder's format
with secrets as placeholders: two API keys, an order every 2 s, each order created under
the scenario its place in a fixed mix gives (happy_path 70%, timeout_partial 15%,
failed_out_of_stock 10%, a login top-up released by its client code 5%) and looked up
8 times (a client code counting as one), balance and account reads and token exchanges
filling the rest; the account's webhooks are recorded, answered 200 (every 25th order's
first attempt 500, so production retried). The recording is left in a temporary
folder, its path printed (`--recording` reuses one).

The `--shapes` case (docs/shapes.md), unless `--shapes ''`: a second recording of the
same traffic, its stand-in answering and sending events in production's shapes
(`--shapes`, by default [shapes.yaml](shapes.yaml): ten rules over `token`, `balance`,
`order`, `order.webhook` and `event`), then `compare FILE --shapes PATH --json` of it,
as a user replays a recording with the shapes `calibrate --shapes-out` wrote. The two
cases alternate run by run (plain, shaped; then shaped, plain).

Then `compare FILE --json` runs in a child process pinned to CPU 0 (`taskset -c 0`
where it exists), `--runs` times per case: wall time from spawn to exit, and the
child's peak RSS (`ru_maxrss`). Bars, for each case: under 30 s and 300 MiB. The child
must exit 0 (no finding, every class explained: the recording is of the sandbox itself,
in the same shapes). Writes `bench/COMPARE.md` unless `--no-write`.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import hashlib
import heapq
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from mock_server.app import create_app
from mock_server.clock import parse_iso
from mock_server.config import Settings
from mock_server.serving import Serving

HERE = Path(__file__).resolve().parent
SHAPES = HERE / "shapes.yaml"
BAR_SECONDS = 30.0
BAR_MIB = 300.0
START = parse_iso("2026-03-01T10:00:00Z")
#: (scenario, item request, lookups after creation in seconds, client code at)
MIX: list[tuple[str, dict[str, Any], list[float], float | None]] = [
    *[("happy_path", {"item_id": 1001, "quantity": 2}, [0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4], None)]
    * 14,
    *[("timeout_partial", {"item_id": 1002, "quantity": 3}, [1, 5, 10, 15, 20, 25, 30, 32], None)]
    * 3,
    *[
        (
            "failed_out_of_stock",
            {"item_id": 2001, "quantity": 5, "fields": {"razer_id": "rz-1", "region": 2}},
            [0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4],
            None,
        )
    ]
    * 2,
    (
        "need_client_code",
        {"item_id": 2002, "quantity": 1, "fields": {"login_email": "p@example.com", "server": 1}},
        [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5],
        3.0,
    ),
]


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _hide(kind: str, value: str) -> str:
    return f"<{kind}:{hashlib.sha256(value.encode()).hexdigest()[:10]}>"


class Recorder:
    """The stand-in, a merchant client of it, and the recording of both."""

    def __init__(self, out: Path, shapes: Path | None = None) -> None:
        self.out = out
        self.shapes = shapes
        self.seq = 0
        self.now = START
        self.lines: list[str] = []
        self.exchanges = 0
        self.attempts: dict[str, int] = {}

    async def __aenter__(self) -> Recorder:
        shapes = str(self.shapes) if self.shapes else None
        settings = Settings(clock="manual", seed=11, start_time=START, shapes=shapes)
        self.serving = Serving(create_app(settings), "127.0.0.1", 0, access_log=None)
        await self.serving.start()
        self.url = self.serving.url
        self.http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        app = web.Application()
        app.router.add_post("/hooks", self._hook)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        host, port = self.runner.addresses[0][:2]
        default = (await self.control("GET", "/_mock/accounts"))["accounts"][0]
        await self.control(
            "PATCH",
            f"/_mock/accounts/{default['id']}",
            {"webhook_url": f"http://{host}:{port}/hooks", "balance": 10**9},
        )
        await self.control(
            "POST",
            "/_mock/accounts",
            {
                "email": "second@example.com",
                "api_key": "ak_second",
                "balance": 10**9,
                "webhook_url": f"http://{host}:{port}/hooks",
            },
        )
        self.lines.append(
            json.dumps(
                {
                    "format": "ordering-sandbox-recording",
                    "version": 1,
                    "upstream": "https://orders.example.com",
                    "started_at": _iso(START),
                    "redaction": ["token", "api_key", "client_code", "code", "email"],
                }
            )
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.close()
        await self.runner.cleanup()
        await self.serving.stop()

    async def control(self, method: str, path: str, body: Any = None) -> Any:
        async with self.http.request(method, self.url + path, json=body) as response:
            assert response.status < 300, await response.text()
            return await response.json()

    async def advance_to(self, when: float) -> None:
        if when > self.now:
            await self.control(
                "POST", "/_mock/clock/advance", {"seconds": round(when - self.now, 6)}
            )
            self.now = when

    async def _hook(self, request: web.Request) -> web.Response:
        body = json.loads(await request.read())
        async with self.http.get(self.url + "/_mock/clock") as response:
            at = parse_iso((await response.json())["now"])
        attempt = self.attempts[body["order_id"]] = self.attempts.get(body["order_id"], 0) + 1
        refused = int(hashlib.sha256(body["order_id"].encode()).hexdigest(), 16) % 25 == 0
        answered = 500 if attempt == 1 and refused else 200
        body["codes"] = [_hide("code", c) for c in body.get("codes", [])]
        self.seq += 1
        self.lines.append(
            json.dumps(
                {
                    "seq": self.seq,
                    "at": _iso(at),
                    "kind": "webhook",
                    "headers": [
                        ["Content-Type", "application/json"],
                        ["X-Signature", _hide("signature", request.headers.get("X-Signature", ""))],
                    ],
                    "body": body,
                    "answered": answered,
                    "signature_valid": True,
                }
            )
        )
        return web.Response(status=answered)

    async def call(self, method: str, path: str, body: Any = None, token: str = "") -> Any:
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        async with self.http.request(method, self.url + path, data=data, headers=headers) as r:
            status, answer = r.status, json.loads(await r.read())
        self.seq += 1
        self.exchanges += 1
        request: dict[str, Any] = {
            "method": method,
            "path": path,
            "query": "",
            "headers": [
                [k, v if k != "Authorization" else f"Bearer {_hide('token', token)}"]
                for k, v in headers.items()
            ],
        }
        if body is not None:
            request["body"] = _redacted(body)
        self.lines.append(
            json.dumps(
                {
                    "seq": self.seq,
                    "at": _iso(self.now),
                    "kind": "exchange",
                    "request": request,
                    "response": {
                        "status": status,
                        "headers": [["Content-Type", "application/json"]],
                        "body": _redacted(answer),
                    },
                    "ms": 1.0,
                }
            )
        )
        return answer

    def write(self, orders: int) -> None:
        """The recording, finished as the recorder finishes one: its `end` line last
        (docs/recording.md, "The file"), so compare judges it whole."""
        webhooks = sum(self.attempts.values())
        end = {"kind": "end", "exchanges": self.exchanges, "orders": orders}
        end |= {"webhooks": webhooks, "scanned": True, "warnings": []}
        lines = [*self.lines, json.dumps(end)]
        self.out.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))


def _redacted(value: Any) -> Any:
    if isinstance(value, dict):
        found = {}
        for key, inner in value.items():
            if key == "api_key":
                found[key] = _hide("api_key", inner)
            elif key == "access_token":
                found[key] = _hide("token", inner)
            elif key == "code":
                found[key] = _hide("client_code", str(inner))
            elif key == "codes" and isinstance(inner, list):
                found[key] = [_hide("code", c) for c in inner]
            elif key == "email" or key == "login_email":
                found[key] = _hide("email", inner)
            else:
                found[key] = _redacted(inner)
        return found
    if isinstance(value, list):
        return [_redacted(inner) for inner in value]
    return value


async def make_recording(
    path: Path, orders: int, exchanges: int, shapes: Path | None = None
) -> tuple[int, int]:
    """Drive the stand-in (answering in `shapes`' shapes, if given); returns (exchanges,
    orders) recorded."""
    async with Recorder(path, shapes) as recorder:
        keys = ["ak_test_default", "ak_second"]
        tokens = [
            (await recorder.call("POST", "/api/v1/auth/token/client", {"api_key": k}))[
                "access_token"
            ]
            for k in keys
        ]
        # (time, tiebreak, action, order number, argument)
        agenda: list[tuple[float, int, str, int, Any]] = []
        counter = 0
        for number in range(orders):
            scenario, request, lookups, code_at = MIX[number % len(MIX)]
            created = START + 1 + 2 * number
            agenda.append((created, counter, "create", number, None))
            counter += 1
            for after in lookups:
                agenda.append((created + after, counter, "lookup", number, None))
                counter += 1
            if code_at is not None:
                agenda.append((created + code_at, counter, "code", number, None))
                counter += 1
        planned = len(agenda) + len(keys)
        filler = max(0, exchanges - planned)
        span = 2 * orders
        for index in range(filler):
            kind = ("balance", "me", "token")[index % 3]
            agenda.append(
                (START + 1.25 + span * index / max(1, filler), counter, kind, index, None)
            )
            counter += 1
        heapq.heapify(agenda)
        ids: dict[int, str] = {}
        while agenda:
            when, _, action, number, _ = heapq.heappop(agenda)
            await recorder.advance_to(when)
            token = tokens[number % 2]
            if action == "create":
                scenario, request, _, _ = MIX[number % len(MIX)]
                await recorder.control("POST", "/_mock/scenarios/next", {"scenario": scenario})
                body = {**request, "merchant_order_id": f"bench-{number}"}
                answer = await recorder.call("POST", "/api/v1/orders", body, token)
                ids[number] = answer["id"]
            elif action == "lookup":
                await recorder.call("GET", f"/api/v1/orders/{ids[number]}", None, token)
            elif action == "code":
                await recorder.call(
                    "POST", f"/v1/orders/{ids[number]}/client-code", {"code": "4711"}, token
                )
            elif action == "balance":
                await recorder.call("GET", "/api/v1/account/balance", None, tokens[number % 2])
            elif action == "me":
                await recorder.call("GET", "/v1/account/me", None, tokens[number % 2])
            else:
                key = keys[number % 2]
                answer = await recorder.call("POST", "/api/v1/auth/token/client", {"api_key": key})
                tokens[number % 2] = answer["access_token"]
        await recorder.advance_to(recorder.now + 200)  # the last retries come in
        recorder.write(len(ids))
        return recorder.exchanges, len(ids)


def measure(recording: Path, out: Path, shapes: Path | None = None) -> tuple[float, float, int]:
    """One `compare --json` (with `--shapes`, if given) in a child process: wall seconds,
    peak RSS in MiB, exit."""
    options = [str(recording), "--json"] + (["--shapes", str(shapes)] if shapes else [])
    code = (
        "import sys; from mock_server.recording.analysis.compare import main; "
        f"sys.exit(main({options!r}))"
    )
    argv = [sys.executable, "-c", code]
    if shutil.which("taskset") and (os.cpu_count() or 1) > 1:
        argv = ["taskset", "-c", "0", *argv]
    started = time.perf_counter()
    with out.open("w") as sink:
        pid = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(pid.pid, 0)
    seconds = time.perf_counter() - started
    return seconds, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--orders", type=int, default=1000)
    parser.add_argument("--exchanges", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--shapes",
        default=str(SHAPES),
        help="the shapes file of the --shapes case ('' leaves the case out)",
    )
    parser.add_argument("--recording", type=Path, help="reuse this recording")
    parser.add_argument(
        "--shaped-recording", type=Path, help="reuse this recording for the --shapes case"
    )
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-compare-"))
    shapes = Path(args.shapes) if args.shapes else None
    cases = [Case("compare", None, args.recording or work / "recording.jsonl.gz")]
    if shapes is not None:
        recording = args.shaped_recording or work / "shaped.jsonl.gz"
        cases.append(Case("compare --shapes", shapes, recording))
    for case in cases:
        if case.recording.exists() and case.recording in (args.recording, args.shaped_recording):
            continue
        started = time.perf_counter()
        made, orders = asyncio.run(
            make_recording(case.recording, args.orders, args.exchanges, case.shapes)
        )
        size = case.recording.stat().st_size / 1024
        print(
            f"recording {case.recording}{' (shaped)' if case.shapes else ''}: {made} "
            f"exchanges, {orders} orders, {size:.0f} KiB gzipped, made in "
            f"{time.perf_counter() - started:.1f} s",
            flush=True,
        )
    for run in range(args.runs):
        for case in cases if run % 2 == 0 else cases[::-1]:
            out = work / f"report-{len(case.runs)}{'-shaped' if case.shapes else ''}.json"
            seconds, mib, code = measure(case.recording, out, case.shapes)
            report = json.loads(out.read_text()) if out.stat().st_size else {}
            case.runs.append((seconds, mib, code, report))
            print(
                f"run {run + 1}, {case.name}: {seconds:.2f} s, {mib:.0f} MiB, exit {code}",
                flush=True,
            )
    table = render(cases)
    print(table)
    if not args.no_write:
        (HERE / "COMPARE.md").write_text(table)
    return 0 if all(case.ok for case in cases) else 1


@dataclass
class Case:
    """One way of running compare: its name, the shapes it replays with, the recording,
    and each run's (seconds, MiB, exit status, report)."""

    name: str
    shapes: Path | None
    recording: Path
    runs: list[tuple[float, float, int, dict]] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return statistics.median(r[0] for r in self.runs)

    @property
    def mib(self) -> float:
        return max(r[1] for r in self.runs)

    @property
    def ok(self) -> bool:
        clean = all(r[2] == 0 for r in self.runs)
        return clean and self.seconds <= BAR_SECONDS and self.mib <= BAR_MIB


def render(cases: list[Case]) -> str:
    pinned = shutil.which("taskset") and (os.cpu_count() or 1) > 1
    cpu = _cpu()
    summary = cases[0].runs[-1][3].get("summary", {})
    lines = [
        "# `mock-server compare` on a large recording",
        "",
        "Written by `python bench/compare.py` (see its docstring).",
        "",
        f"- **date**: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"- **machine**: {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"aiohttp {aiohttp.__version__}",
        f"- **placement**: {'compare pinned to CPU 0 (taskset)' if pinned else 'unpinned'}",
        f"- **recording**: {summary.get('exchanges')} exchanges, {summary.get('orders')} "
        f"orders, {summary.get('webhooks')} webhooks, {summary.get('classes')} outcome "
        f"classes ({cases[0].recording.stat().st_size / 1024:.0f} KiB gzipped)",
    ]
    for case in cases[1:]:
        lines.append(
            f"- **`{case.name}`**: the same traffic recorded from a stand-in answering in "
            f"the shapes of `{_shown(case.shapes)}` "
            f"({case.recording.stat().st_size / 1024:.0f} KiB gzipped), replayed with them"
        )
    lines += ["", "| case | measure | value | bar | result |", "|---|---|---|---|---|"]
    for case in cases:
        runs = case.runs
        lines += [
            _row(
                f"`{case.name}`",
                f"wall time, spawn to exit (median of {len(runs)})",
                f"{case.seconds:.1f} s",
                f"< {BAR_SECONDS:.0f} s",
                case.seconds <= BAR_SECONDS,
            ),
            _row(
                f"`{case.name}`",
                f"peak RSS (`ru_maxrss`, highest of {len(runs)})",
                f"{case.mib:.0f} MiB",
                f"< {BAR_MIB:.0f} MiB",
                case.mib <= BAR_MIB,
            ),
            _row(
                f"`{case.name}`",
                "exit status (0: every class explained, no finding)",
                ", ".join(str(r[2]) for r in runs),
                "0",
                all(r[2] == 0 for r in runs),
            ),
        ]
    lines.append("")
    for case in cases:
        every = ", ".join(f"{r[0]:.2f} s / {r[1]:.0f} MiB" for r in case.runs)
        lines.append(f"Every run of `{case.name}`: {every}  ")
    lines.append("")
    return "\n".join(lines)


def _shown(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        return str(path.resolve().relative_to(HERE.parent))
    except ValueError:
        return str(path)


def _row(case: str, measure: str, value: str, bar: str, passed: bool) -> str:
    return f"| {case} | {measure} | {value} | {bar} | **{'PASS' if passed else 'FAIL'}** |"


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    sys.exit(main())
