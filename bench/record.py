"""What `mock-server record` costs a merchant's traffic (docs/recording.md): one command.

    python bench/record.py [--rounds 1000] [--duration 5] [--warmup 2] [--runs 3]
                           [--connections 16] [--no-write]

Production is stood in for by a sandbox server (`--clock manual --seed 1`, one account
with a huge balance), pinned to CPU 0; the recorder (`mock-server record --port 0
--out <tmp>.jsonl`, every redaction rule on, each line written and flushed) runs on
CPU 1. Measured:

* the added latency of an exchange: this script calls as a merchant does, one call at
  a time on one keep-alive connection per side, with a bearer token from the token
  exchange: an order creation (`{"item_id": 1001, "merchant_order_id": <unique>}`)
  then its lookup, once directly to the upstream and once through the recorder, the
  side that goes first alternating round by round, in the same run. Median and p99 of
  each side per call; goal: <= 1 ms more at the median.
* throughput: order lookups, then creations (unique `merchant_order_id`s), with wrk
  (`lookup.lua`, `create.lua`), each run on freshly started processes after a warm-up
  run, three placements taking turns (`CONFIGS`): the upstream directly (wrk on CPU 1);
  through the recorder with CPU 1 to itself (wrk beside the upstream on CPU 0); through
  the recorder beside wrk on CPU 1. Goal: >= 0.5x the upstream's requests/s with each
  side's bottleneck process (the upstream, the recorder) on a core of its own, as on a
  machine with a core for each process; the recorder beside wrk, two processes on one
  of two cores, is reported. Each recorder run ends with SIGTERM: its exit status (0:
  the scan found no secret) and the file's size are checked and reported.

Writes the table to bench/RECORD.md unless --no-write.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import side

from bench import (
    API_KEY,
    PYTHON,
    REPO,
    Client,
    Placement,
    Server,
    WrkParams,
    placement,
    process_cpu,
    run_wrk,
    sandbox_argv,
    write_accounts,
)

GOAL_ADDED_MS = 1.0
GOAL_RATE = 0.5
WARM_ROUNDS = 100


def _record_command() -> list[str]:
    """`mock-server record`, through the CLI once it dispatches it."""
    sys.path.insert(0, str(REPO))
    from mock_server import cli

    if "record" in cli.COMMANDS:
        return [PYTHON, "-m", "mock_server", "record"]
    return [PYTHON, "-m", "mock_server.recording.recorder.record"]


class Recorder:
    """`mock-server record` as a process, until it printed its three ready lines."""

    def __init__(self, pin: Placement, upstream: str, out: Path, work: Path) -> None:
        argv = pin.load + _record_command()
        argv += ["--upstream", upstream, "--out", str(out), "--port", "0"]
        self.out = out
        self.log = open(work / "recorder.log", "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=self.log, text=True, cwd=REPO
        )
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline()
        if not first.startswith("recording on "):
            raise RuntimeError(f"the recorder did not start: {first!r}")
        self.url = first.split()[2]
        self.proc.stdout.readline()
        self.proc.stdout.readline()

    def stop(self) -> tuple[int, str, int]:
        """SIGTERM: (exit status, the summary line, the file's size in bytes)."""
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.stdout is not None
        summary = self.proc.stdout.read().strip()
        status = self.proc.wait(60)
        self.log.close()
        size = self.out.stat().st_size if self.out.exists() else 0
        return status, summary, size


def _token(client: Client) -> str:
    answer = client.json("POST", "/api/v1/auth/token/client", {"api_key": API_KEY})
    return answer["access_token"]


def _timed(client: Client, method: str, path: str, body: object, token: str) -> tuple[float, dict]:
    began = time.perf_counter()
    status, _, raw = client.call(method, path, body, token)
    elapsed = (time.perf_counter() - began) * 1000
    if status >= 400:
        raise RuntimeError(f"{method} {path} answered {status}: {raw[:300]!r}")
    return elapsed, json.loads(raw)


def bench_latency(pin: Placement, work: Path, rounds: int) -> dict[str, dict[str, list[float]]]:
    times: dict[str, dict[str, list[float]]] = {
        side_: {"create": [], "lookup": []} for side_ in ("direct", "recorder")
    }
    accounts = write_accounts(work / "latency.yaml")
    server = Server(sandbox_argv(pin, accounts), "latency-upstream", work)
    recorder = Recorder(pin, server.url, work / "latency.jsonl", work)
    load_cpus = {int(pin.load[-1])} if pin.load else None
    saved = os.sched_getaffinity(0)
    try:
        if load_cpus:
            os.sched_setaffinity(0, load_cpus)  # this client beside the recorder
        clients = {"direct": Client(server.url), "recorder": Client(recorder.url)}
        tokens = {name: _token(client) for name, client in clients.items()}
        for number in range(WARM_ROUNDS + rounds):
            order = ("direct", "recorder") if number % 2 == 0 else ("recorder", "direct")
            for name in order:
                client, token = clients[name], tokens[name]
                body = {"item_id": 1001, "merchant_order_id": f"{name}-{number}"}
                create_ms, created = _timed(client, "POST", "/api/v1/orders", body, token)
                lookup_ms, _ = _timed(client, "GET", f"/api/v1/orders/{created['id']}", None, token)
                if number >= WARM_ROUNDS:
                    times[name]["create"].append(create_ms)
                    times[name]["lookup"].append(lookup_ms)
        for client in clients.values():
            client.close()
    finally:
        os.sched_setaffinity(0, saved)
        status, summary, size = recorder.stop()
        server.stop()
    if status != 0:
        raise RuntimeError(f"the recorder exited {status}: {summary}")
    print(f"  latency: {summary}, {size / 1e6:.1f} MB", file=sys.stderr)
    return times


#: The throughput runs: where wrk runs, and whether through a recorder. The recorder,
#: when there is one, runs on the load CPU.
CONFIGS = {
    # The upstream's own rate: it alone on the server CPU, wrk on the load CPU.
    "direct": ("load", False),
    # The recorder's own rate: it alone on the load CPU; wrk beside the upstream.
    "own core": ("server", True),
    # A two-core machine's worst case: the recorder shares its CPU with wrk.
    "beside wrk": ("load", True),
}


def bench_rates(pin: Placement, params: WrkParams, work: Path) -> dict:
    rates = {config: {"lookup": [], "create": []} for config in CONFIGS}
    #: CPU time per request (user + system, microseconds) during each measured run: of
    #: the upstream alone, of the recorder (beside wrk), and of the upstream behind it.
    cpu = {who: {"lookup": [], "create": []} for who in ("direct", "recorder", "behind")}
    files: list[str] = []
    accounts = write_accounts(work / "rates.yaml")
    for run in range(params.runs):
        for config, (wrk_cpu, recorded) in CONFIGS.items():
            wrk_pin = pin if wrk_cpu == "load" else Placement(pin.server, pin.server, pin.note)
            for endpoint, script in (("lookup", "lookup.lua"), ("create", "create.lua")):
                server = Server(sandbox_argv(pin, accounts), f"rates-{config}", work)
                recorder = None
                if recorded:
                    out = work / f"rates-{run}-{config}-{endpoint}.jsonl"
                    recorder = Recorder(pin, server.url, out, work)
                try:
                    base = recorder.url if recorder else server.url
                    client = Client(base)
                    token = _token(client)
                    order = client.json("POST", "/api/v1/orders", {"item_id": 1001}, token)
                    client.close()
                    url = base + "/api/v1/orders"
                    url += f"/{order['id']}" if endpoint == "lookup" else ""
                    env = {"BENCH_TOKEN": token, "BENCH_PREFIX": f"warm{run}"}
                    run_wrk(wrk_pin, params, url, script, env, params.warmup)
                    env["BENCH_PREFIX"] = f"run{run}"
                    pids = {"upstream": server.proc.pid}
                    if recorder is not None:
                        pids["recorder"] = recorder.proc.pid
                    before = {name: process_cpu(pid) for name, pid in pids.items()}
                    measured = run_wrk(wrk_pin, params, url, script, env, params.duration)
                    spent = {
                        name: (process_cpu(pid) - before[name]) / max(1, measured.requests) * 1e6
                        for name, pid in pids.items()
                    }
                    if recorder is None:
                        cpu["direct"][endpoint].append(spent["upstream"])
                    elif config == "beside wrk":
                        cpu["recorder"][endpoint].append(spent["recorder"])
                        cpu["behind"][endpoint].append(spent["upstream"])
                finally:
                    if recorder is not None:
                        status, summary, size = recorder.stop()
                        if status != 0:
                            raise RuntimeError(f"the recorder exited {status}: {summary}")
                        files.append(f"{summary.split(',')[0]}, {size / 1e6:.1f} MB")
                    server.stop()
                if measured.bad_status or measured.socket_errors:
                    raise RuntimeError(f"{config} {endpoint}: errors in the run: {measured}")
                rates[config][endpoint].append(measured.rps)
                print(
                    f"  {endpoint:6} {config:10} run {run + 1}: {measured.rps:8.0f} req/s",
                    file=sys.stderr,
                )
    return {"rates": rates, "cpu": cpu, "files": files}


def _p99(values: list[float]) -> float:
    return sorted(values)[min(len(values) - 1, int(len(values) * 0.99))]


READING = [
    "Reading it: a recorder's throughput is what it passes with a core to itself, against",
    "what the upstream answers with one: the judged rows. In the recorder's run wrk",
    "shares CPU 0 with the upstream; should those two saturate it first, the row",
    "understates the recorder. Beside wrk, the recorder shares its core with the load",
    "generator, so that row mixes two processes' costs on a two-core machine: reported.",
    "The wrk rates move with how much of each core other work leaves; the CPU rows move",
    "much less. They are the cost: for each exchange the recorder reads a request and",
    "writes an answer (recording/listener.py, an asyncio protocol), writes the request on",
    "and reads the answer (recording/upstream.py), both read by llhttp (httptools, with",
    "the recorder's stricter rules: recording/http1.py, about 3 us a message), and",
    "records it (JSON read, redacted, written: recording/redaction.py, fileformat.py):",
    "twice the socket work of the",
    "upstream sandbox, about a third of the recorder's time in its own Python. aiohttp's",
    "server and client, which did the first two before, cost about 60 us more per lookup",
    "(144 us). Against the provider's environment, tens of milliseconds away, a CI",
    "suite's rate is bound by that distance, not by the recorder.",
]


def render(times: dict, rates: dict, args, pin: Placement) -> str:
    lines = side.header(
        "Recording with `mock-server record`",
        "record.py",
        pin,
        "**recorder**: on the load CPU (beside the latency client; for the rates, alone "
        "or beside wrk); the upstream sandbox on the server CPU (beside wrk when the "
        "recorder has the load CPU to itself)",
        f"**latency**: {args.rounds} rounds after {WARM_ROUNDS} warm-up ones, one call at a "
        "time, direct and through the recorder alternating",
        f"**rates**: wrk, {args.connections} connections, {args.duration:g} s after "
        f"{args.warmup:g} s, {args.runs} runs, fresh processes each run",
        "**machine**: 2 cores, shared with other engineers' test runs: numbers move "
        f"from run to run (load average {rates['load'][0]:.1f} at the start, "
        f"{rates['load'][1]:.1f} at the end)",
    )
    lines += ["| measure | value | goal | verdict |", "|---|---|---|---|"]
    for endpoint, title in (("create", "order creation"), ("lookup", "order lookup")):
        direct, through = times["direct"][endpoint], times["recorder"][endpoint]
        added = statistics.median(through) - statistics.median(direct)
        lines.append(
            f"| {title}, one at a time: direct median {statistics.median(direct):.2f} ms, "
            f"p99 {_p99(direct):.2f} ms; through the recorder median "
            f"{statistics.median(through):.2f} ms, p99 {_p99(through):.2f} ms | "
            f"{added:+.2f} ms at the median, {_p99(through) - _p99(direct):+.2f} ms at "
            f"the p99 | <= {GOAL_ADDED_MS:g} ms at the median | "
            f"{side.verdict(added <= GOAL_ADDED_MS)} |"
        )
    load = rates["rates"]
    what = "{title}, each side's bottleneck on a core of its own: through the recorder vs direct"
    lines += side.ratio_rows(load, "direct", "own core", what, GOAL_RATE)
    for endpoint, title in (("lookup", "order lookup"), ("create", "order creation")):
        ours = statistics.median(load["beside wrk"][endpoint])
        theirs = statistics.median(load["direct"][endpoint])
        lines.append(
            f"| {title}, the recorder sharing its CPU with wrk: {ours:,.0f} vs {theirs:,.0f} "
            f"req/s | {ours / theirs:.2f}x | (reported) | |"
        )
    cpu = rates["cpu"]
    for endpoint, title in (("lookup", "order lookup"), ("create", "order creation")):
        alone = statistics.median(cpu["direct"][endpoint])
        recorder = statistics.median(cpu["recorder"][endpoint])
        behind = statistics.median(cpu["behind"][endpoint])
        lines.append(
            f"| {title}, CPU time per request (user + system, less moved by the other "
            f"load): the upstream alone {alone:.0f} us; through the recorder beside wrk, "
            f"the recorder {recorder:.0f} us and the upstream {behind:.0f} us | the "
            f"recorder's rate with "
            f"a core of its own: about {alone / recorder:.2f}x the upstream's | "
            f"(reported) | |"
        )
    lines += side.every_run(load, tuple(CONFIGS))
    lines += ["", "Recordings of the wrk runs (each scanned on SIGTERM, exit 0):", ""]
    lines += [f"- {entry}" for entry in rates["files"]]
    lines += ["", *READING]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = side.arguments(__doc__)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.set_defaults(runs=3)
    args = parser.parse_args()
    pin = placement()
    params = side.wrk_params(args)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        times = bench_latency(pin, work, args.rounds)
        rates = bench_rates(pin, params, work)
    rates["load"] = (load_before, os.getloadavg()[0])
    side.publish(render(times, rates, args, pin), "RECORD.md", args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
