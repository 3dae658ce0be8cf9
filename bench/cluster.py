"""A cluster behind nginx (docs/cluster.md): one command.

    python bench/cluster.py [--duration 5] [--warmup 2] [--runs 3] [--connections 16]
                            [--no-write]

Measures, over HTTP with wrk, nodes started as the CLI starts them and nginx running
what `mock-server cluster nginx-config` prints:

* the router's cost: order lookup and creation on one sandbox of one node (pinned to
  CPU 0), straight to the node against through nginx (nginx and wrk pinned to CPU 1),
  a fresh node and router per run, alternating, medians: rates and p99s, reported;
* two nodes against one: two sandboxes' lookups loaded at once by two wrk processes
  through nginx, both sandboxes on one node (CPU 0) against one on each of two nodes
  (CPU 0 and CPU 1); nginx and wrk unpinned, since on this two-core machine the router
  and the load must share the nodes' cores. Reported: each sandbox's rate, the CPU
  each process used (share of a core), and each node's CPU time per lookup, from which
  docs/cluster.md's capacity arithmetic is argued.

Writes the table to bench/CLUSTER.md unless --no-write.
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import side

from bench import (
    BENCH,
    PYTHON,
    Client,
    Placement,
    Server,
    WrkParams,
    parse_wrk,
    placement,
    run_wrk,
)

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def cpu_seconds(pid: int) -> float:
    """User + system CPU a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append(int(entry.name))
    return found


def start_node(pin: list[str], node_id: str, work: Path) -> Server:
    argv = pin + [PYTHON, "-m", "mock_server", "--clock", "manual", "--port", "0"]
    argv += ["--seed", "1", "--node-id", node_id]
    return Server(argv, f"node-{node_id}", work)


class Router:
    """nginx running the printed configuration for `nodes`, on a free port."""

    def __init__(self, pin: list[str], nodes: dict[str, Server], work: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        argv = [PYTHON, "-m", "mock_server", "cluster", "nginx-config"]
        argv += ["--listen", f"127.0.0.1:{port}"]
        for node_id, server in nodes.items():
            argv += ["--node", f"{node_id}={server.url.removeprefix('http://')}"]
        text = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        # Measured, not logged: an access line per request is the operator's choice.
        text = text.replace("access_log /dev/stdout;", "access_log off;")
        prefix = Path(tempfile.mkdtemp(dir=work))
        (prefix / "nginx.conf").write_text(text)
        self.proc = subprocess.Popen(
            pin + [NGINX, "-p", str(prefix), "-c", str(prefix / "nginx.conf")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nginx did not listen")

    def cpu(self) -> float:
        return sum(cpu_seconds(pid) for pid in [self.proc.pid, *_children(self.proc.pid)])

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def sandbox_on(node: Server, via: str) -> tuple[str, str, str]:
    """A sandbox created on `node`, used through `via` (the node or the router): (its
    orders path, a bearer token, an order id)."""
    direct = Client(node.url)
    created = direct.json("POST", "/_mock/sandboxes", {})
    direct.close()
    base = f"/_mock/sandboxes/{created['id']}"
    client = Client(via)
    token = client.json("POST", f"{base}/api/v1/auth/token/client", {"api_key": created["api_key"]})
    bearer = token["access_token"]
    order = client.json("POST", f"{base}/api/v1/orders", {"item_id": 1001}, bearer)
    client.close()
    return f"{base}/api/v1/orders", bearer, order["id"]


def bench_router_cost(pin: Placement, params: WrkParams, work: Path) -> dict:
    results: dict[str, dict[str, list]] = {
        config: {"lookup": [], "create": []} for config in ("direct", "router")
    }
    for run in range(params.runs):
        for config in ("direct", "router"):
            for endpoint, script in (("lookup", "lookup.lua"), ("create", "create.lua")):
                node = start_node(pin.server, "a", work)
                router = Router(pin.load, {"a": node}, work) if config == "router" else None
                try:
                    via = router.url if router else node.url
                    orders, token, order_id = sandbox_on(node, via)
                    url = via + orders + (f"/{order_id}" if endpoint == "lookup" else "")
                    env = {"BENCH_TOKEN": token, "BENCH_PREFIX": f"warm{run}"}
                    run_wrk(pin, params, url, script, env, params.warmup)
                    env["BENCH_PREFIX"] = f"run{run}"
                    measured = run_wrk(pin, params, url, script, env, params.duration)
                finally:
                    if router:
                        router.stop()
                    node.stop()
                results[config][endpoint].append(measured)
                print(
                    f"  {endpoint:6} {config:6} run {run + 1}: {measured.rps:8.0f} req/s, "
                    f"p99 {measured.p99_ms:.2f} ms",
                    file=sys.stderr,
                )
    return results


def _two_loads(urls: list[str], tokens: list[str], params: WrkParams, seconds: float) -> list:
    """wrk on each URL at once (unpinned); (rate, CPU share of a core) per wrk."""
    procs = []
    for url, token in zip(urls, tokens, strict=True):
        argv = ["wrk", "-t1", f"-c{params.connections // 2 or 1}", f"-d{round(seconds)}s"]
        argv += ["--latency", "-s", str(BENCH / "lookup.lua"), url]
        procs.append(
            subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=os.environ | {"BENCH_TOKEN": token},
            )
        )
    measured = []
    for proc in procs:
        out = proc.stdout.read()  # type: ignore[union-attr]
        _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = 0
        measured.append((parse_wrk(out).rps, (usage.ru_utime + usage.ru_stime) / seconds))
    return measured


def bench_spread(pin: Placement, params: WrkParams, work: Path) -> dict:
    cpus = sorted(os.sched_getaffinity(0))
    results: dict[str, list[dict]] = {"one node": [], "two nodes": []}
    for run in range(params.runs):
        for config in ("one node", "two nodes"):
            nodes = {"a": start_node(["taskset", "-c", str(cpus[0])], "a", work)}
            if config == "two nodes":
                nodes["b"] = start_node(["taskset", "-c", str(cpus[-1])], "b", work)
            router = Router([], nodes, work)
            try:
                homes = [nodes["a"], nodes.get("b", nodes["a"])]
                made = [sandbox_on(home, router.url) for home in homes]
                urls = [f"{router.url}{orders}/{order_id}" for orders, _, order_id in made]
                tokens = [token for _, token, _ in made]
                _two_loads(urls, tokens, params, params.warmup)
                before = {k: cpu_seconds(n.proc.pid) for k, n in nodes.items()}
                router_before = router.cpu()
                loads = _two_loads(urls, tokens, params, params.duration)
                node_cpu = {k: cpu_seconds(n.proc.pid) - before[k] for k, n in nodes.items()}
                router_cpu = router.cpu() - router_before
            finally:
                router.stop()
                for node in nodes.values():
                    node.stop()
            served = sum(rate for rate, _ in loads) * params.duration
            measured = {
                "rates": [rate for rate, _ in loads],
                "wrk_cores": [share for _, share in loads],
                "node_cores": {k: v / params.duration for k, v in node_cpu.items()},
                "router_cores": router_cpu / params.duration,
                "node_us_per_lookup": sum(node_cpu.values()) / served * 1e6,
                "router_us_per_lookup": router_cpu / served * 1e6,
            }
            results[config].append(measured)
            print(
                f"  {config:9} run {run + 1}: sandboxes "
                + ", ".join(f"{r:,.0f}" for r in measured["rates"])
                + f" req/s; node µs/lookup {measured['node_us_per_lookup']:.0f}, "
                f"router µs/lookup {measured['router_us_per_lookup']:.0f}",
                file=sys.stderr,
            )
    return results


def render(cost: dict, spread: dict, args, pin: Placement) -> str:
    lines = side.header(
        "A cluster behind nginx",
        "cluster.py",
        pin,
        f"**wrk**: {args.connections} connections ({args.connections // 2} per sandbox in "
        f"the two-sandbox runs), {args.duration:g} s after {args.warmup:g} s of warm-up, "
        f"{args.runs} runs, medians",
        f"**cores**: {os.cpu_count()}; nginx {nginx_version()}, `worker_processes auto`",
    )
    lines += [
        "## The router's cost (one node)",
        "",
        "| endpoint | direct | through nginx | rate | p99 direct | p99 through nginx |",
        "|---|---|---|---|---|---|",
    ]
    for endpoint in ("lookup", "create"):
        direct = cost["direct"][endpoint]
        routed = cost["router"][endpoint]
        d_rps = statistics.median(r.rps for r in direct)
        r_rps = statistics.median(r.rps for r in routed)
        d_p99 = statistics.median(r.p99_ms for r in direct)
        r_p99 = statistics.median(r.p99_ms for r in routed)
        lines.append(
            f"| {endpoint} | {d_rps:,.0f} req/s | {r_rps:,.0f} req/s | {r_rps / d_rps:.2f}x | "
            f"{d_p99:.2f} ms | {r_p99:.2f} ms |"
        )
    lines += [
        "",
        "## Two sandboxes loaded at once: one node against two",
        "",
        "| | sandbox 1 | sandbox 2 | together | node CPU (cores) | nginx CPU | wrk CPU | "
        "node µs per lookup | nginx µs per lookup |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for config in ("one node", "two nodes"):
        runs = spread[config]

        def med(key: str, runs: list[dict] = runs) -> float:
            return statistics.median(run[key] for run in runs)

        rates = [statistics.median(run["rates"][i] for run in runs) for i in range(2)]
        cores = {
            node: statistics.median(run["node_cores"][node] for run in runs)
            for node in runs[0]["node_cores"]
        }
        wrk = statistics.median(sum(run["wrk_cores"]) for run in runs)
        lines.append(
            f"| {config} | {rates[0]:,.0f} req/s | {rates[1]:,.0f} req/s | "
            f"{sum(rates):,.0f} req/s | "
            + " + ".join(f"{v:.2f}" for v in cores.values())
            + f" | {med('router_cores'):.2f} | {wrk:.2f} | {med('node_us_per_lookup'):.0f} | "
            f"{med('router_us_per_lookup'):.0f} |"
        )
    one = statistics.median(sum(run["rates"]) for run in spread["one node"])
    two = statistics.median(sum(run["rates"]) for run in spread["two nodes"])
    lines += [
        "",
        f"Two nodes against one, both sandboxes together: {two / one:.2f}x on "
        f"{os.cpu_count()} cores shared by the nodes, nginx and wrk.",
    ]
    return "\n".join(lines) + "\n"


def nginx_version() -> str:
    done = subprocess.run([NGINX, "-v"], capture_output=True, text=True)
    return done.stderr.strip().rpartition("/")[2]


def main() -> int:
    parser = side.arguments(__doc__)
    parser.set_defaults(runs=3)
    args = parser.parse_args()
    pin = placement()
    params = side.wrk_params(args)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cost = bench_router_cost(pin, params, work)
        spread = bench_spread(pin, params, work)
    side.publish(render(cost, spread, args, pin), "CLUSTER.md", args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
