"""Where the time goes: sample the sandbox server with py-spy while wrk loads one
endpoint, then print the functions by inclusive and by self share of the samples.

    python bench/profile.py lookup|create|token [--seconds 10] [--top 40]
    python bench/profile.py gc [--orders 100000]
    python bench/profile.py memory [--orders 20000]
    python bench/profile.py whatif [--seconds 5]

`py-spy` must be installed (`pip install py-spy`); the server runs on CPU 0, wrk and
py-spy on CPU 1, as in bench.py. `gc` creates orders in-process through
`Sandbox.create_order` and reports the garbage collector's pauses as the heap grows
(the source of creation's p99 under load). `memory` traces allocations (tracemalloc)
while orders are created and then settled, and prints bytes per order by source line.
`whatif` measures lookup and creation (wrk, medians of 3) on the sandbox as shipped and
with candidate changes applied from outside the code, to size them before making them:
no access log, `iso()` memoised, the collector frozen after start-up with a larger
first-generation threshold; and the bare app for scale.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench import API_KEY, BENCH, PYTHON, Client, Server, placement, sandbox_argv, write_accounts

SCRIPTS = {
    "lookup": ("lookup.lua", None),
    "create": ("create.lua", "/api/v1/orders"),
    "token": ("token.lua", "/api/v1/auth/token/client"),
}
_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^():]+?)(?::\d+)?\)$")


def profile_endpoint(kind: str, seconds: int, top: int, rate: int) -> None:
    py_spy = shutil.which("py-spy") or str(Path(PYTHON).with_name("py-spy"))
    if not Path(py_spy).exists():
        raise SystemExit("py-spy not found: pip install py-spy")
    pin = placement()
    with tempfile.TemporaryDirectory(prefix="sandbox-profile-") as tmp:
        work = Path(tmp)
        server = Server(sandbox_argv(pin, write_accounts(work / "accounts.yaml")), "sandbox", work)
        try:
            client = Client(server.url)
            token = client.json("POST", "/api/v1/auth/token/client", {"api_key": API_KEY})
            bearer = token["access_token"]
            order = client.json("POST", "/api/v1/orders", {"item_id": 1001}, bearer)
            client.close()
            script, path = SCRIPTS[kind]
            url = server.url + (path or f"/api/v1/orders/{order['id']}")
            env = os.environ | {"BENCH_TOKEN": bearer, "BENCH_API_KEY": API_KEY}
            env["BENCH_PREFIX"] = "profile"
            wrk_argv = pin.load + ["wrk", "-t1", "-c16", f"-d{seconds + 4}s", "--latency"]
            wrk = subprocess.Popen(
                wrk_argv + ["-s", str(BENCH / script), url],
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
            time.sleep(2)
            raw = work / "profile.raw"
            subprocess.run(
                pin.load
                + [py_spy, "record", "--pid", str(server.proc.pid), "--duration", str(seconds)]
                + ["--rate", str(rate), "--format", "raw", "-o", str(raw)],
                check=True,
                capture_output=True,
            )
            out, _ = wrk.communicate()
            rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
            print(f"{kind}: {rps.group(1) if rps else '?'} req/s while sampled (py-spy pauses it)")
            summarize(raw.read_text(), top)
        finally:
            server.stop()


def _frame_key(frame: str) -> str:
    match = _FRAME.match(frame)
    if not match:
        return frame
    file = match.group("file")
    for marker in ("site-packages/", "python3.11/"):
        file = file.split(marker)[-1]
    return f"{match.group('func')} ({file})"


def summarize(raw: str, top: int) -> None:
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        frames = [_frame_key(f) for f in stack.split(";")]
        total += count
        own[frames[-1]] += count
        for key in set(frames):
            inclusive[key] += count
    print(f"\n{total} samples (busy time only)\n\ninclusive share:")
    for key, count in inclusive.most_common(top):
        print(f"  {100 * count / total:5.1f}%  {key}")
    print("\nself share:")
    for key, count in own.most_common(top):
        print(f"  {100 * count / total:5.1f}%  {key}")


async def gc_pauses(orders: int, accounts: str) -> dict[str, Any]:
    from mock_server.app import create_app
    from mock_server.config import Settings
    from mock_server.edge.jsonio import parse_json

    pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
    started: list[float] = []

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            pauses[info["generation"]].append(time.perf_counter() - started.pop())

    app = create_app(Settings(clock="manual", seed=1, accounts=accounts))
    sandbox = app.sandbox
    account = next(iter(sandbox.state.accounts.values()))
    gc.collect()
    gc.callbacks.append(callback)
    begin = time.perf_counter()
    for index in range(orders):
        body = parse_json(b'{"item_id": 1001, "merchant_order_id": "gc-%d"}' % index)
        sandbox.create_order(account, body)
    elapsed = time.perf_counter() - begin
    gc.callbacks.remove(callback)
    return {
        "orders": orders,
        "seconds": elapsed,
        "objects_tracked": len(gc.get_objects()),
        "pauses": {
            str(gen): {
                "count": len(values),
                "total_ms": round(sum(values) * 1000, 1),
                "max_ms": round(max(values, default=0) * 1000, 1),
            }
            for gen, values in pauses.items()
        },
    }


async def memory_sites(orders: int, accounts: str, top: int) -> None:
    import tracemalloc

    from mock_server.app import create_app
    from mock_server.config import Settings
    from mock_server.edge.jsonio import parse_json

    app = create_app(Settings(clock="manual", seed=1, accounts=accounts))
    sandbox = app.sandbox
    account = next(iter(sandbox.state.accounts.values()))
    sandbox.create_order(account, {"item_id": 1001})  # one-off caches before tracing
    await sandbox.advance(5)
    gc.collect()
    tracemalloc.start(1)
    empty = tracemalloc.take_snapshot()
    for index in range(orders):
        body = parse_json(b'{"item_id": 1001, "merchant_order_id": "mem-%d"}' % index)
        sandbox.create_order(account, body)
    gc.collect()
    pending = tracemalloc.take_snapshot()
    await sandbox.advance(5)
    gc.collect()
    settled = tracemalloc.take_snapshot()
    for title, before, after in (
        ("creating (pending orders)", empty, pending),
        ("settling (pending -> completed)", pending, settled),
    ):
        diffs = after.compare_to(before, "lineno")
        total = sum(d.size_diff for d in diffs)
        print(f"\n{title}: {total / orders:,.0f} bytes per order (traced Python heap)")
        for diff in diffs[:top]:
            if abs(diff.size_diff) / orders < 8:
                break
            frame = diff.traceback[0]
            where = frame.filename.split("site-packages/")[-1].split("python3.11/")[-1]
            where = where.split("/main/")[-1]
            line = _source_line(frame.filename, frame.lineno)
            print(f"  {diff.size_diff / orders:7.0f} B  {where}:{frame.lineno}  {line}")


def _source_line(filename: str, lineno: int) -> str:
    import linecache

    return linecache.getline(filename, lineno).strip()[:70]


WHATIF = {
    "as shipped": (),
    "no access log": ("nolog",),
    "+ iso() memoised": ("nolog", "iso"),
    "+ gc.freeze(), threshold 50,000": ("nolog", "iso", "gc"),
}


def whatif(seconds: int) -> None:
    from bench import CpuWatch, Endpoint, WrkParams, run_wrk

    pin = placement()
    params = WrkParams(1, 16, seconds, 2, 3)
    with tempfile.TemporaryDirectory(prefix="sandbox-whatif-") as tmp:
        work = Path(tmp)
        accounts = write_accounts(work / "accounts.yaml")
        serve_args = ["--clock", "manual", "--port", "0", "--seed", "1", "--accounts"]
        serve_args.append(str(accounts))
        rows = []
        order_doc: dict[str, Any] = {}
        bearer = ""
        for name, tweaks in [*WHATIF.items(), ("bare aiohttp", None)]:
            if tweaks is None:
                bodies = {"order": order_doc, "created": order_doc, "token": {}}
                (work / "bodies.json").write_text(json.dumps(bodies))
                argv = [PYTHON, str(BENCH / "bare_app.py"), str(work / "bodies.json")]
            else:
                argv = [PYTHON, str(Path(__file__).resolve()), "_serve", ",".join(tweaks)]
                argv += serve_args
            server = Server(pin.server + argv, "whatif", work)
            watch = CpuWatch((server.proc.pid,))
            try:
                if tweaks is not None:
                    client = Client(server.url)
                    body = {"api_key": API_KEY}
                    token = client.json("POST", "/api/v1/auth/token/client", body)
                    bearer = token["access_token"]
                    order_doc = client.json("POST", "/api/v1/orders", {"item_id": 1001}, bearer)
                    client.close()
                env = {"BENCH_TOKEN": bearer}
                lookup_path = f"/api/v1/orders/{order_doc['id']}"
                lookup = Endpoint("lookup", "", "lookup.lua", lookup_path, None)
                create = Endpoint("create", "", "create.lua", "/api/v1/orders", None)
                for endpoint in (lookup, create):
                    url = server.url + endpoint.path
                    run_wrk(pin, params, url, endpoint.script, env | {"BENCH_PREFIX": "w"}, 2)
                    for index in range(params.runs):
                        run_env = env | {"BENCH_PREFIX": f"r{index}"}
                        run = run_wrk(pin, params, url, endpoint.script, run_env, seconds)
                        endpoint.runs["sandbox"].append(run)
                rows.append(
                    (
                        name,
                        lookup.median("sandbox", "rps"),
                        create.median("sandbox", "rps"),
                        create.median("sandbox", "p99_ms"),
                    )
                )
                other, _, wall = watch.other()
                print(f"{name:34} lookup {rows[-1][1]:7.0f}/s  create {rows[-1][2]:7.0f}/s  "
                      f"create p99 {rows[-1][3]:6.1f} ms  (other load {other / wall:.0%})",
                      flush=True)  # fmt: skip
            finally:
                server.stop()
        bare = rows[-1]
        print("\nas a share of bare aiohttp: " + "; ".join(
            f"{name}: lookup {lk / bare[1]:.0%}, create {cr / bare[2]:.0%}"
            for name, lk, cr, _ in rows[:-1]
        ))  # fmt: skip


def serve_with_tweaks(tweaks: set[str], argv: list[str]) -> None:
    """`mock-server` as cli.serve runs it, with the what-if tweaks applied from outside."""
    import functools
    import signal

    import mock_server.domain.orders
    from mock_server.app import create_app
    from mock_server.cli import parse_settings
    from mock_server.config import load_startup
    from mock_server.logs import AccessLog, configure_logging
    from mock_server.serving import Serving

    if "iso" in tweaks:  # every created_at/completed_at string computed once per value
        orders_module = mock_server.domain.orders
        orders_module.iso = functools.lru_cache(maxsize=4096)(orders_module.iso)

    async def serve() -> None:
        settings = parse_settings(argv)
        configure_logging()
        app = create_app(settings, startup=load_startup(settings))
        log: dict[str, Any] = {"access_log_class": AccessLog, "access_log_format": "text"}
        if "nolog" in tweaks:
            log = {"access_log": None}
        serving = Serving(app, settings.host, settings.port, **log)
        await serving.start()
        if "gc" in tweaks:
            gc.collect()
            gc.freeze()
            gc.set_threshold(50_000, 50, 1000)
        print(f"listening on {serving.url}", flush=True)
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        await stop.wait()
        await serving.stop()

    asyncio.run(serve())


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "_serve":
        serve_with_tweaks(set(sys.argv[2].split(",")), sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=[*SCRIPTS, "gc", "memory", "whatif"])
    parser.add_argument("--seconds", type=int, help="sampling (10) or wrk run (5) seconds")
    parser.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--orders", type=int, default=100_000)
    args = parser.parse_args()
    if args.kind in ("gc", "memory"):
        with tempfile.TemporaryDirectory() as tmp:
            accounts = str(write_accounts(Path(tmp) / "accounts.yaml"))
            if args.kind == "gc":
                print(json.dumps(asyncio.run(gc_pauses(args.orders, accounts)), indent=2))
            else:
                asyncio.run(memory_sites(min(args.orders, 20_000), accounts, args.top))
        return
    if args.kind == "whatif":
        whatif(args.seconds or 5)
        return
    profile_endpoint(args.kind, args.seconds or 10, args.top, args.rate)


if __name__ == "__main__":
    sys.exit(main())
