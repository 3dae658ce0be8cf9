"""The sandbox's benchmarks (bench/README.md): one command, one table.

    bash bench/run.sh            # installs wrk if missing, then runs this file
    python bench/bench.py [--duration 5] [--runs 5] [--connections 16] [--no-write]

Measures, against the base bars and the floors of bench/README.md:

* requests/s and p50/p99 latency of order lookup, order creation and token exchange,
  with wrk, each also as a ratio against two bare aiohttp apps (`bare_app.py`) answering
  the same JSON, measured in the same run: on asyncio, parsing each body and encoding
  each answer; and aiohttp's ceiling, on uvloop with answers encoded once;
* process start to first answered request (`GET /_mock/health`);
* RSS of a server holding 100,000 orders created over HTTP, before and after they settle,
  without and with a webhook receiver (`memory.py`);
* wall time of `advance` through an order's whole life with failed webhook attempts;
* webhook deliveries per second to a local receiver.

Servers (and the in-process measurements) run on CPU 0, wrk and the webhook receiver
on CPU 1 (`taskset`); on a one-core machine everything runs unpinned and the report
says so. Every Python process it starts reads and writes compiled bytecode in a cache of
its own (`bytecode_cache`), as an installed package does. The table is printed and
written to `bench/RESULTS.md`.

Beside it: `bare_app.py` (the baseline), `receiver.py` (webhook receiver), `memory.py`
(RSS over HTTP), `inproc.py` (measurements that drive the Sandbox object in-process),
`processes.py` (starting servers and receivers, the sandbox's command line and account,
a set-up client: what this file and memory.py share; imported from here by the side
benches too), `report.py` (the table), and the wrk scripts `lookup.lua`, `create.lua`,
`token.lua`.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import memory
from inproc import LIFE_SECONDS
from processes import (
    API_KEY,
    BENCH,
    PYTHON,
    REPO,
    SANDBOX_EXTRA,
    Client,
    Placement,
    Server,
    placement,
    receiver,
    sandbox_argv,
    write_accounts,
)
from report import (
    BAR_CREATE_RATIO,
    BAR_CREATE_VS_BARE,
    BAR_LOOKUP_RATIO,
    BAR_LOOKUP_VS_CEILING,
    BARE_TITLES,
    machine_info,
    memory_details,
    memory_rows,
    render,
    start_details,
    start_table,
)

#: Start-up is timed at least this many times per app (more with `--runs`), after one
#: start of each that is not timed.
START_RUNS = 5
#: Other processes using more than this share of a core make a wrk run count as noisy.
NOISY = 0.05
RETRIES = 3


# ---------------------------------------------------------------------------------------
# wrk


@dataclass(frozen=True)
class WrkParams:
    threads: int
    connections: int
    duration: float
    warmup: float
    runs: int

    def describe(self) -> str:
        return (
            f"wrk -t{self.threads} -c{self.connections} -d{self.duration:g}s --latency; "
            f"{self.runs} runs per server and endpoint, alternating bare/sandbox, each on a "
            f"freshly started server after a {self.warmup:g} s warm-up run; medians"
        )


@dataclass
class WrkRun:
    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    bad_status: int
    socket_errors: int
    other_load: float = 0.0  # share of a core used by other processes during the run


_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}


def parse_wrk(text: str) -> WrkRun:
    def latency(percent: str) -> float:
        match = re.search(rf"^\s*{percent}%\s+([\d.]+)(us|ms|s|m|h)\s*$", text, re.M)
        if not match:
            raise RuntimeError(f"no {percent}% latency in wrk output:\n{text}")
        return float(match.group(1)) * _UNITS_MS[match.group(2)]

    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    requests = re.search(r"(\d+) requests in", text)
    if not rps or not requests:
        raise RuntimeError(f"unexpected wrk output:\n{text}")
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)",
        text,
    )
    return WrkRun(
        rps=float(rps.group(1)),
        p50_ms=latency("50"),
        p99_ms=latency("99"),
        requests=int(requests.group(1)),
        bad_status=int(bad.group(1)) if bad else 0,
        socket_errors=sum(int(g) for g in errors.groups()) if errors else 0,
    )


def run_wrk(
    pin: Placement, params: WrkParams, url: str, script: str, env: dict[str, str], seconds: float
) -> WrkRun:
    argv = pin.load + ["wrk", f"-t{params.threads}", f"-c{params.connections}"]
    argv += [f"-d{max(1, round(seconds))}s", "--latency", "-s", str(BENCH / script), url]
    done = subprocess.run(
        argv, capture_output=True, text=True, env=os.environ | env, timeout=seconds + 60
    )
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stderr}{done.stdout}")
    return parse_wrk(done.stdout)


@dataclass
class Endpoint:
    key: str
    title: str
    script: str
    path: str  # the URL path wrk calls (lookup: the order id is appended)
    bar: float | None  # base bar: minimum ratio of bare aiohttp's requests/s
    #: Floor: (which bare row, minimum ratio of its requests/s).
    ceiling_bar: tuple[str, float] | None = None
    #: Whether the p99 is held to that row too (lookup's is: bench/README.md).
    p99_judged: bool = False
    runs: dict[str, list[WrkRun]] = field(
        default_factory=lambda: {name: [] for name in TARGET_NAMES}
    )
    retried: int = 0  # runs done again because another process was busy

    def median(self, target: str, attr: str) -> float:
        return statistics.median(getattr(run, attr) for run in self.runs[target])

    def ratio_to(self, bare: str, attr: str = "rps") -> float:
        return self.median("sandbox", attr) / self.median(bare, attr)

    @property
    def ratio(self) -> float:
        return self.ratio_to("bare")


#: The bare app on asyncio (parses bodies, encodes per request); the bare app on uvloop
#: with pre-encoded answers (aiohttp's ceiling); the sandbox.
TARGET_NAMES = ("bare", "ceiling", "sandbox")


@dataclass
class Target:
    """One server to load: the sandbox or the bare app, started fresh for each run."""

    name: str
    argv: list[str]
    token: str = ""
    order_id: str = ""

    def start(self, work: Path) -> Server:
        server = Server(self.argv, f"{self.name}-http", work)
        if self.name == "sandbox":  # a token and an order to look up, in this process
            client = Client(server.url)
            body = {"api_key": API_KEY}
            self.token = client.json("POST", "/api/v1/auth/token/client", body)["access_token"]
            body = {"item_id": 1001, "merchant_order_id": "bench-lookup"}
            self.order_id = client.json("POST", "/api/v1/orders", body, self.token)["id"]
            client.close()
        return server


def capture_bodies(pin: Placement, accounts: Path, work: Path) -> tuple[Path, list[str], str, str]:
    """The sandbox's own answers for the bare app to repeat; then check the parity."""
    sandbox = Server(sandbox_argv(pin, accounts), "sandbox-capture", work)
    try:
        client = Client(sandbox.url)
        token = client.json("POST", "/api/v1/auth/token/client", {"api_key": API_KEY})
        bearer = token["access_token"]
        body = {"item_id": 1001, "merchant_order_id": "bench-lookup"}
        order_path = f"/api/v1/orders/{client.json('POST', '/api/v1/orders', body, bearer)['id']}"
        body = {"item_id": 1001, "merchant_order_id": "bench-sample"}
        created = client.json("POST", "/api/v1/orders", body, bearer)
        looked_up = client.json("GET", order_path, token=bearer)
        client.close()
        path = work / "bodies.json"
        bodies = {"order": looked_up, "created": created, "token": token}
        path.write_text(json.dumps(bodies), encoding="utf-8")
        parity = []
        for name in ("bare", "ceiling"):
            bare = Server(bare_argv(pin, path, name), name, work)
            try:
                notes = check_parity(sandbox.url, bare.url, order_path, bearer, f"parity-{name}")
            finally:
                bare.stop()
            parity += [f"{name}: {note}" for note in notes]
        return path, parity, bearer, looked_up["id"]
    finally:
        sandbox.stop()


def bare_argv(pin: Placement, bodies: Path, name: str) -> list[str]:
    """`bare`: asyncio, parse and encode per request; `ceiling`: uvloop, pre-encoded."""
    argv = pin.server + [PYTHON, str(BENCH / "bare_app.py"), str(bodies)]
    return argv + (["--loop", "uvloop", "--pre-encoded"] if name == "ceiling" else [])


def bench_http(pin: Placement, params: WrkParams, work: Path, log: Callable) -> dict[str, Any]:
    """Lookup, creation and token exchange: sandbox vs bare aiohttp, with wrk.

    Each measured run gets fresh server processes (a warm-up run first): one process's
    memory layout can be 15% faster or slower than the next, and the sandbox's state
    (orders, tokens) then grows the same way in every run.
    """
    accounts = write_accounts(work / "accounts-http.yaml")
    bodies, parity, token, order_id = capture_bodies(pin, accounts, work)
    targets = [
        Target("bare", bare_argv(pin, bodies, "bare")),
        Target("ceiling", bare_argv(pin, bodies, "ceiling")),
        Target("sandbox", sandbox_argv(pin, accounts), token, order_id),
    ]
    endpoints = [
        Endpoint("lookup", "order lookup", "lookup.lua", "/api/v1/orders/", BAR_LOOKUP_RATIO,
                 ("ceiling", BAR_LOOKUP_VS_CEILING), p99_judged=True),
        Endpoint("create", "order creation", "create.lua", "/api/v1/orders", BAR_CREATE_RATIO,
                 ("bare", BAR_CREATE_VS_BARE)),
        Endpoint("token", "token exchange", "token.lua", "/api/v1/auth/token/client", None),
    ]  # fmt: skip
    sandbox = targets[-1]
    for endpoint in endpoints:
        for index in range(params.runs):
            for target in targets:
                for attempt in range(RETRIES + 1):
                    server = target.start(work)
                    try:
                        path = endpoint.path
                        if endpoint.key == "lookup":  # (--seed 1: the same id every time)
                            path += sandbox.order_id
                        url = server.url + path
                        env = {"BENCH_TOKEN": sandbox.token, "BENCH_API_KEY": API_KEY}
                        env["BENCH_PREFIX"] = f"warm{index}-{attempt}"
                        run_wrk(pin, params, url, endpoint.script, env, params.warmup)
                        env["BENCH_PREFIX"] = f"run{index}-{attempt}"
                        watch = CpuWatch((server.proc.pid,))
                        run = run_wrk(pin, params, url, endpoint.script, env, params.duration)
                        other, _, wall = watch.other()
                    finally:
                        server.stop()
                    run.other_load = other / wall
                    log(
                        f"  {endpoint.title:15} {target.name:8} run {index + 1}: "
                        f"{run.rps:8.0f} req/s  p50 {run.p50_ms:6.2f} ms  "
                        f"p99 {run.p99_ms:6.2f} ms  bad {run.bad_status + run.socket_errors}"
                        f"  other load {run.other_load:.0%}"
                    )
                    if run.other_load <= NOISY or attempt == RETRIES:
                        break
                    endpoint.retried += 1
                    time.sleep(5)  # another process was busy: wait, then run again
                endpoint.runs[target.name].append(run)
    return {"endpoints": endpoints, "parity": parity}


#: `--only access-log`: per endpoint, the bare app its floor compares with (README.md,
#: "The bars"): lookup against the ceiling, creation against bare asyncio.
ACCESS_LOG_CALLS = (
    ("lookup", "lookup.lua", "/api/v1/orders/", "ceiling"),
    ("create", "create.lua", "/api/v1/orders", "bare"),
)


def bench_access_log(pin: Placement, params: WrkParams, work: Path, log: Callable) -> str:
    """`--only access-log`: order lookup and creation with the sandbox's line per request
    on (as shipped) and off (`--access-log off`), beside the bare app of each one's floor,
    the three alternating, each run on a fresh server after a warm-up run and done again
    when other processes were busy: a table of medians."""
    accounts = write_accounts(work / "accounts-http.yaml")
    bodies, _, token, order_id = capture_bodies(pin, accounts, work)
    targets = {
        "on": Target("sandbox", sandbox_argv(pin, accounts), token, order_id),
        "off": Target("sandbox", sandbox_argv(pin, accounts) + ["--access-log", "off"]),
        "ceiling": Target("ceiling", bare_argv(pin, bodies, "ceiling")),
        "bare": Target("bare", bare_argv(pin, bodies, "bare")),
    }
    runs: dict[str, dict[str, list[WrkRun]]] = {}
    for key, script, path, reference in ACCESS_LOG_CALLS:
        runs[key] = {config: [] for config in ("on", "off", reference)}
        for index in range(params.runs):
            for config in runs[key]:
                target = targets[config]
                for attempt in range(RETRIES + 1):
                    server = target.start(work)
                    try:
                        url = server.url + path + (order_id if key == "lookup" else "")
                        env = {"BENCH_TOKEN": target.token or token}
                        env["BENCH_PREFIX"] = f"warm{index}-{attempt}"
                        run_wrk(pin, params, url, script, env, params.warmup)
                        env["BENCH_PREFIX"] = f"run{index}-{attempt}"
                        watch = CpuWatch((server.proc.pid,))
                        run = run_wrk(pin, params, url, script, env, params.duration)
                        other, _, wall = watch.other()
                    finally:
                        server.stop()
                    run.other_load = other / wall
                    log(
                        f"  {key:6} {config:7} run {index + 1}: {run.rps:8.0f} req/s  "
                        f"p99 {run.p99_ms:6.2f} ms  other load {run.other_load:.0%}"
                    )
                    if run.other_load <= NOISY or attempt == RETRIES:
                        break
                    time.sleep(5)
                runs[key][config].append(run)
    lines = [
        f"The sandbox's access line on (as shipped) against `--access-log off`, beside the "
        f"bare app of each floor; wrk -t{params.threads} -c{params.connections} "
        f"-d{params.duration:g}s --latency, {params.runs} runs per server and endpoint, "
        f"the three alternating, each on a fresh server after a {params.warmup:g} s warm-up "
        "run; medians.",
        "",
        "| endpoint | on: req/s, p99 | off: req/s, p99 | on/off: rate, p99 | reference: req/s, "
        "p99 | on vs reference: rate, p99 | off vs reference: rate, p99 |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, _, _, reference in ACCESS_LOG_CALLS:
        rate = {c: statistics.median(r.rps for r in each) for c, each in runs[key].items()}
        p99 = {c: statistics.median(r.p99_ms for r in each) for c, each in runs[key].items()}

        def versus(a: str, b: str, rate: dict = rate, p99: dict = p99) -> str:
            return f"{rate[a] / rate[b]:.2f}x, {p99[a] / p99[b]:.2f}x"

        lines.append(
            f"| {key} | {rate['on']:,.0f}, {p99['on']:.2f} ms | {rate['off']:,.0f}, "
            f"{p99['off']:.2f} ms | {versus('on', 'off')} | {BARE_TITLES[reference]}: "
            f"{rate[reference]:,.0f}, {p99[reference]:.2f} ms | {versus('on', reference)} | "
            f"{versus('off', reference)} |"
        )
    lines += ["", "Every run: req/s (p99 ms, share of a core used by other processes):", ""]
    for key, each_config in runs.items():
        for config, each in each_config.items():
            listed = ", ".join(f"{r.rps:,.0f} ({r.p99_ms:.2f}, {r.other_load:.0%})" for r in each)
            lines.append(f"- {key}, {config}: {listed}")
    return "\n".join(lines)


def check_parity(
    sandbox_url: str, bare_url: str, order_path: str, token: str, tag: str = "p"
) -> list[str]:
    """Same status, content type and JSON shape from both servers (lookup: same bytes)."""
    notes = []
    calls = [
        ("order lookup", "GET", order_path, None),
        ("order creation", "POST", "/api/v1/orders", {"item_id": 1001, "merchant_order_id": tag}),
        ("token exchange", "POST", "/api/v1/auth/token/client", {"api_key": API_KEY}),
    ]
    sandbox, bare = Client(sandbox_url), Client(bare_url)
    for title, method, path, body in calls:
        s_status, s_headers, s_raw = sandbox.call(method, path, body, token)
        b_status, b_headers, b_raw = bare.call(method, path, body, token)
        same_type = s_headers.get("content-type") == b_headers.get("content-type")
        same_keys = list(json.loads(s_raw)) == list(json.loads(b_raw))
        same_bytes = s_raw == b_raw
        if s_status != b_status or not same_type or not same_keys:
            raise RuntimeError(
                f"{title}: bare app differs from the sandbox: {s_status} {b_status} "
                f"{s_headers.get('content-type')} {b_headers.get('content-type')}"
            )
        what = "identical bytes" if same_bytes else f"same keys, {len(s_raw)}/{len(b_raw)} bytes"
        notes.append(f"{title}: {s_status}, {s_headers.get('content-type')}, {what}")
    sandbox.close()
    bare.close()
    return notes


# ---------------------------------------------------------------------------------------
# start-up


def time_to_first_answer(argv: list[str], env: dict[str, str] | None = None) -> float:
    """Seconds from spawn to the first 200 from GET /_mock/health."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    try:
        line = proc.stdout.readline()
        match = re.search(r"listening on http://([^\s:]+):(\d+)", line)
        if not match:
            raise RuntimeError(f"did not start: {argv}: {line!r}")
        host, port = match.group(1), int(match.group(2))
        while True:
            conn = http.client.HTTPConnection(host, port, timeout=10)
            try:
                conn.request("GET", "/_mock/health")
                if conn.getresponse().status == 200:
                    return time.perf_counter() - started
            except OSError:
                time.sleep(0.001)
            finally:
                conn.close()
    finally:
        proc.terminate()
        proc.wait()


def bench_start(pin: Placement, work: Path, runs: int) -> dict[str, list[float]]:
    """Spawn to first answer, each app in turn, `runs` times (one untimed start of each
    first). For reference, the sandbox also as the environment bench.py was started in
    has it (`uncached`): without the bytecode cache, where that environment has none."""
    bodies = work / "bodies.json"
    if not bodies.exists():
        bodies.write_text(json.dumps({"order": {}, "created": {}, "token": {}}))
    sandbox = pin.server + [PYTHON, "-m", "mock_server", "--port", "0", "--clock", "manual"]
    sandbox += ["--seed", "1", *SANDBOX_EXTRA]
    commands = {
        "sandbox": sandbox,
        "bare": bare_argv(pin, bodies, "bare"),
        "ceiling": bare_argv(pin, bodies, "ceiling"),
    }
    floor = pin.server + [PYTHON, "-c", "import aiohttp.web"]
    result: dict[str, list[float]] = {name: [] for name in commands}
    result["import"] = []
    result["uncached"] = []
    for argv in commands.values():
        time_to_first_answer(argv)
    for _ in range(runs):
        for name, argv in commands.items():
            result[name].append(time_to_first_answer(argv))
        started = time.perf_counter()
        subprocess.run(floor, check=True)
        result["import"].append(time.perf_counter() - started)
        result["uncached"].append(time_to_first_answer(sandbox, CALLER_ENV))
    return result


#: The environment bench.py was started in, before `bytecode_cache` changed it.
CALLER_ENV: dict[str, str] = dict(os.environ)


def bytecode_cache(folder: Path) -> str:
    """Every process started from here on reads and writes compiled bytecode under
    `folder`, as an installed package does (pip compiles a wheel's modules at install; the
    image's are compiled). A checkout run with `PYTHONDONTWRITEBYTECODE` set compiles
    every module of `mock_server` from source at each start, ~60 ms that the bare app
    (two files) does not pay, and start-up measured the compiler (bench/FINDINGS.md
    section 17). Returns what the report says about it."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(folder)
    before = "PYTHONDONTWRITEBYTECODE=1" if CALLER_ENV.get("PYTHONDONTWRITEBYTECODE") else ""
    return (
        "every server and in-process measurement reads compiled bytecode from a cache of "
        "this session (`PYTHONPYCACHEPREFIX`), filled by the first start"
        + (f"; bench.py was started with {before}" if before else "")
    )


# ---------------------------------------------------------------------------------------
# in-process measurements (each in its own pinned process)


def inproc(pin: Placement, kind: str, args: dict[str, Any], timeout: float = 1800) -> Any:
    argv = pin.server + [PYTHON, str(BENCH / "inproc.py"), kind, json.dumps(args)]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"in-process {kind} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def advance_over_http(url: str, repeats: int) -> dict[str, Any]:
    """The same life driven from outside: POST /_mock/clock/advance on a server process."""
    client = Client(url)
    token = client.json("POST", "/api/v1/auth/token/client", {"api_key": API_KEY})["access_token"]
    times = []
    for _ in range(repeats + 1):
        order = client.json("POST", "/api/v1/orders", {"item_id": 1001}, token)
        started = time.perf_counter()
        client.json("POST", "/_mock/clock/advance", {"seconds": LIFE_SECONDS})
        times.append(time.perf_counter() - started)
        webhook = client.json("GET", f"/api/v1/orders/{order['id']}", token=token)["webhook"]
        if webhook["status"] != "failed" or webhook["attempts"] != 4:
            raise RuntimeError(f"unexpected webhook state {webhook}")
    client.close()
    return {"first_s": times[0], "warm_s": times[1:]}


# ---------------------------------------------------------------------------------------
# main


class CpuWatch:
    """CPU time the machine spent on other work while the benchmark ran (noise check).

    Ours is this process, its finished children, and the live processes in `pids`.
    """

    def __init__(self, pids: tuple[int, ...] = ()) -> None:
        self._pids = pids
        self._machine, self._steal = _machine_cpu()
        self._ours = self._our_cpu()
        self._wall = time.monotonic()

    def _our_cpu(self) -> float:
        return _our_cpu() + sum(process_cpu(pid) for pid in self._pids)

    def other(self) -> tuple[float, float, float]:
        """(CPU-seconds of other work, of hypervisor steal, wall seconds) so far."""
        machine, steal = _machine_cpu()
        wall = time.monotonic() - self._wall
        other = max(0.0, machine - self._machine - (self._our_cpu() - self._ours))
        return other, steal - self._steal, wall

    def describe(self) -> str:
        other, steal, wall = self.other()
        note = (
            f"{other:.1f} CPU-s used by other processes during {wall:.0f} s "
            f"({100 * other / wall:.0f}% of one core); hypervisor steal "
            f"{100 * steal / wall:.0f}% of one core"
        )
        if other / wall > NOISY:
            note += " — **the machine was not quiet: numbers are noisier than usual**"
        return note


def process_cpu(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _machine_cpu() -> tuple[float, float]:
    """(user + nice + system, steal) seconds of all CPUs, from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    steal = fields[7] if len(fields) > 7 else 0
    return (fields[0] + fields[1] + fields[2]) / tick, steal / tick


def _our_cpu() -> float:
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in usage)


def measure_memory(pin: Placement, work: Path, orders: int) -> dict[str, Any]:
    return {
        "plain": memory.measure(pin, work, orders, webhooks=False),
        "webhooks": memory.measure(pin, work, orders, webhooks=True),
    }


def memory_only(orders: int) -> int:
    """`--only memory`: the RSS rows alone, printed (2-3 minutes)."""
    with tempfile.TemporaryDirectory(prefix="sandbox-bench-") as tmp:
        results = measure_memory(placement(), Path(tmp), orders)
    rows, bars = memory_rows(results)
    print("| measure | sandbox | bar | result |\n|---|---|---|---|")
    for title, value, bar, result in rows:
        print(f"| {title} | {value} | {bar} | {result} |")
    print()
    print("\n".join(memory_details(results)))
    return 0 if all(bars.values()) else 1


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description="Run the sandbox benchmarks (bench/README.md).")
    parser.add_argument("--duration", type=int, default=5, help="seconds per wrk run")
    parser.add_argument("--warmup", type=int, default=2, help="seconds of warm-up run")
    parser.add_argument(
        "--runs",
        type=int,
        default=5,
        help="measured wrk runs per server and endpoint, and start-ups per app (at least "
        f"{START_RUNS}); the floors are judged on their medians",
    )
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1, help="wrk threads")
    parser.add_argument("--orders", type=int, default=100_000, help="orders held for RSS")
    parser.add_argument("--lives", type=int, default=30, help="repeats of the advance timing")
    parser.add_argument("--webhooks", type=int, default=2000, help="orders per webhook round")
    parser.add_argument("--output", default=str(BENCH / "RESULTS.md"))
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--sandbox-loop",
        choices=["asyncio", "uvloop"],
        help="run every sandbox server with --loop (default: the CLI's own default)",
    )
    parser.add_argument(
        "--only",
        choices=["memory", "http", "access-log", "start"],
        help="run this part alone and print it (no RESULTS.md); http: wrk rows and start-up; "
        "access-log: lookup and creation with the sandbox's access line on and off; "
        "start: process start to first answer",
    )
    opts = parser.parse_args(args)
    if opts.sandbox_loop:
        SANDBOX_EXTRA[:] = ["--loop", opts.sandbox_loop]
    with tempfile.TemporaryDirectory(prefix="sandbox-bytecode-") as cache:
        return run(opts, bytecode_cache(Path(cache)))


def run(opts: argparse.Namespace, bytecode: str) -> int:
    """What `main` was asked for, with the bytecode cache in place (`bytecode`: what the
    report says about it)."""
    if opts.only == "memory":
        return memory_only(opts.orders)
    if not shutil.which("wrk") and opts.only != "start":
        print("wrk not found: run bench/run.sh (installs it) or apt-get install wrk")
        return 2
    pin = placement()
    params = WrkParams(opts.threads, opts.connections, opts.duration, opts.warmup, opts.runs)
    start_runs = max(START_RUNS, opts.runs)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    log(f"placement: {pin.note}")
    if opts.only == "access-log":
        with tempfile.TemporaryDirectory(prefix="sandbox-bench-") as tmp:
            print(bench_access_log(pin, params, Path(tmp), log))
        return 0
    if opts.only == "start":
        with tempfile.TemporaryDirectory(prefix="sandbox-bench-") as tmp:
            start = bench_start(pin, Path(tmp), start_runs)
        print("\n".join([*start_table(start), "", *start_details(start), "", f"- {bytecode}"]))
        return 0
    watch = CpuWatch()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="sandbox-bench-") as tmp:
        work = Path(tmp)
        log("HTTP: lookup, creation, token exchange (wrk) ...")
        results["http"] = bench_http(pin, params, work, log)
        log("process start to first answer ...")
        results["start"] = bench_start(pin, work, start_runs)
        info = machine_info(pin.note, params.describe()) + [("bytecode", bytecode)]
        if opts.only == "http":
            print(render(results, info)[0])
            return 0
        log(f"RSS with {opts.orders:,} orders created over HTTP ...")
        results["memory"] = measure_memory(pin, work, opts.orders)
        log(f"RSS with {opts.orders:,} orders created in-process ...")
        plain = write_accounts(work / "accounts-plain.yaml")
        results["rss"] = inproc(pin, "rss", {"accounts": str(plain), "orders": opts.orders})
        log("advance through a life with failing webhooks ...")
        with receiver(pin, 500, work) as url:
            failing = write_accounts(work / "accounts-500.yaml", url)
            life_args = {"accounts": str(failing), "repeats": opts.lives}
            results["advance"] = inproc(pin, "advance", life_args)
            server = Server(sandbox_argv(pin, failing), "sandbox-advance", work)
            try:
                results["advance_http"] = advance_over_http(server.url, opts.lives)
            finally:
                server.stop()
        log("webhook deliveries per second ...")
        with receiver(pin, 200, work) as url:
            ok = write_accounts(work / "accounts-200.yaml", url)
            hook_args = {"accounts": str(ok), "orders": opts.webhooks, "rounds": 3}
            results["webhooks"] = inproc(pin, "webhooks", hook_args)
    report, bars = render(results, info + [("other load", watch.describe())])
    print(report)
    if not opts.no_write:
        Path(opts.output).write_text(report, encoding="utf-8")
        log(f"written to {opts.output}")
    return 0 if all(bars.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
