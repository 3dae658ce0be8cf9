"""Nodes behind nginx against bare aiohttp apps behind the same nginx (docs/cluster.md;
the spec's sections 9 and 17): one command, on any machine.

    python bench/cluster.py --nodes 1,2,4,8 [--runs 3] [--duration 6] [--warmup 2]
                            [--router-workers W] [--wrk-threads T] [--connections 16]
                            [--access-log on|off] [--no-router-cost] [--no-write]

For each N of `--nodes`, alternating, `--runs` times (medians judged):

* **sandbox**: N nodes started as the CLI starts them (`--clock manual --node-id nI`,
  the access log as shipped unless `--access-log off`), nginx running what
  `mock-server cluster nginx-config` prints (its creation upstream has a `zone`: one
  round robin for all workers) with `worker_processes W`, 4 sandboxes per node created
  through the router (the spread is checked: 4 on each node), one order each; wrk
  `-tT -c(connections x N)` with `cluster_lookup.lua` rotating order lookups over all
  the sandboxes;
* **bare**: N bare aiohttp apps (on uvloop, answering every path with the sandbox's own
  lookup body encoded once, no access log: `--serve-bare`) behind the same printed
  configuration, loaded the same way on the same paths' shape.

Placement: each node, the router and wrk on cores of their own where the machine has
N + W + T cores (nodes from the first core up, wrk on the last T, nginx on the W below);
where it has not, the table says which processes share which cores, and the floors are
shown but not judged. Reported per N: lookups/s and p99 of both, each process's share
of a core (user + system time from /proc over the measured run), the scaling against
the smallest N of each, and the floors: the sandbox's scaling >= 0.95x the bare apps',
its p99 <= 1.5x theirs.

Also, unless `--no-router-cost`: the router's cost on one node (lookup and creation
straight to the node against through nginx, same placement).

Writes the tables to bench/CLUSTER.md unless --no-write.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from report import machine_info

from bench import (
    BENCH,
    NOISY,
    PYTHON,
    RETRIES,
    Client,
    CpuWatch,
    Server,
    WrkRun,
    parse_wrk,
    process_cpu,
)

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
SANDBOXES_PER_NODE = 4
#: The cluster's floors (bench/README.md), for nodes behind the router on cores of their own.
FLOOR_SCALING = 0.95
FLOOR_P99 = 1.5
KINDS = ("sandbox", "bare")


# ---------------------------------------------------------------------------------------
# where each process runs


@dataclass(frozen=True)
class Layout:
    """The cores of each node, of nginx (all its workers) and of wrk."""

    nodes: tuple[int, ...]
    router: tuple[int, ...]
    wrk: tuple[int, ...]
    #: Every process on cores of its own.
    own: bool

    def shared(self) -> list[str]:
        """Each core that more than one process was given, and who shares it."""
        users: dict[int, list[str]] = {}
        for index, cpu in enumerate(self.nodes, 1):
            users.setdefault(cpu, []).append(f"node {index}")
        for cpu in self.router:
            users.setdefault(cpu, []).append("nginx")
        for cpu in self.wrk:
            users.setdefault(cpu, []).append("wrk")
        return [
            f"CPU {cpu}: {', '.join(names)}"
            for cpu, names in sorted(users.items())
            if len(names) > 1
        ]

    def describe(self) -> str:
        return (
            f"nodes on {cpu_list(self.nodes)}, nginx on {cpu_list(self.router)}, "
            f"wrk on {cpu_list(self.wrk)}"
        )


def layout(cpus: list[int], nodes: int, workers: int, threads: int) -> Layout:
    """Cores of their own for N nodes, W nginx workers and T wrk threads where there are
    N + W + T; else the nodes take a core each from the first up (wrapping round when
    they outnumber the cores) and nginx and wrk what is above them, sharing the last
    core when nothing is. Without `taskset` nothing is pinned: nothing has a core of its
    own."""
    if shutil.which("taskset") and len(cpus) >= nodes + workers + threads:
        wrk = cpus[len(cpus) - threads :]
        router = cpus[len(cpus) - threads - workers : len(cpus) - threads]
        return Layout(tuple(cpus[:nodes]), tuple(router), tuple(wrk), True)
    free = cpus[nodes:]
    if len(free) >= 2:
        split = min(len(free) - 1, max(1, len(free) * workers // (workers + threads)))
        router, wrk = free[:split], free[split:]
    else:
        router = wrk = free or cpus[-1:]
    placed = tuple(cpus[index % len(cpus)] for index in range(nodes))
    return Layout(placed, tuple(router), tuple(wrk), False)


def cpu_list(cpus: tuple[int, ...] | list[int]) -> str:
    return ",".join(str(cpu) for cpu in cpus)


def pinned(cpus: tuple[int, ...]) -> list[str]:
    return ["taskset", "-c", cpu_list(cpus)] if shutil.which("taskset") else []


# ---------------------------------------------------------------------------------------
# the processes


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


def start_node(cpus: tuple[int, ...], node_id: str, work: Path, access_log: str) -> Server:
    argv = pinned(cpus) + [PYTHON, "-m", "mock_server", "--clock", "manual", "--port", "0"]
    argv += ["--seed", "1", "--node-id", node_id, "--access-log", access_log]
    return Server(argv, f"node-{node_id}", work)


def start_bare(cpus: tuple[int, ...], node_id: str, work: Path) -> Server:
    argv = pinned(cpus) + [PYTHON, str(BENCH / "cluster.py"), "--serve-bare", str(work / "body")]
    return Server(argv, f"bare-{node_id}", work)


class Router:
    """nginx running the printed configuration for `nodes`, with `workers` worker
    processes, on a free port."""

    def __init__(
        self, cpus: tuple[int, ...], workers: int, nodes: dict[str, Server], work: Path
    ) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        argv = [PYTHON, "-m", "mock_server", "cluster", "nginx-config"]
        argv += ["--listen", f"127.0.0.1:{port}"]
        for node_id, server in nodes.items():
            argv += ["--node", f"{node_id}={server.url.removeprefix('http://')}"]
        text = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        if "zone mock_any_node" not in text or "worker_processes auto;" not in text:
            raise RuntimeError("the printed configuration changed: no zone or worker line")
        text = text.replace("worker_processes auto;", f"worker_processes {workers};")
        prefix = Path(tempfile.mkdtemp(dir=work))
        (prefix / "nginx.conf").write_text(text)
        argv = [NGINX, "-e", "stderr", "-p", str(prefix), "-c", str(prefix / "nginx.conf")]
        self.proc = subprocess.Popen(
            pinned(cpus) + argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("nginx did not listen")

    def pids(self) -> list[int]:
        return [self.proc.pid, *_children(self.proc.pid)]

    def cpu(self) -> float:
        return sum(process_cpu(pid) for pid in self.pids())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


# ---------------------------------------------------------------------------------------
# the load


def run_wrk(
    cpus: tuple[int, ...],
    threads: int,
    connections: int,
    url: str,
    script: str,
    env: dict[str, str],
    seconds: float,
) -> tuple[WrkRun, float]:
    """One wrk run pinned to `cpus`: what it measured, and the CPU seconds it used."""
    argv = pinned(cpus) + ["wrk", f"-t{threads}", f"-c{max(connections, threads)}"]
    argv += [f"-d{max(1, round(seconds))}s", "--latency", "-s", str(BENCH / script), url]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=os.environ | env
    )
    out = proc.stdout.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"wrk failed ({proc.returncode}): {out}")
    return parse_wrk(out), usage.ru_utime + usage.ru_stime


def sandbox_targets(router: Router, node_ids: list[str]) -> list[tuple[str, str]]:
    """4 sandboxes per node created through the router, an order in each: (the order's
    lookup path, a bearer token) per sandbox. Refuses an uneven spread."""
    client = Client(router.url)
    targets, homes = [], Counter()
    for _ in range(SANDBOXES_PER_NODE * len(node_ids)):
        created = client.json("POST", "/_mock/sandboxes", {})
        base = f"/_mock/sandboxes/{created['id']}"
        body = {"api_key": created["api_key"]}
        token = client.json("POST", f"{base}/api/v1/auth/token/client", body)["access_token"]
        order = client.json("POST", f"{base}/api/v1/orders", {"item_id": 1001}, token)
        targets.append((f"{base}/api/v1/orders/{order['id']}", token))
        homes[created["id"].removeprefix("sbx-").rpartition("-")[0]] += 1
    client.close()
    if sorted(homes.values()) != [SANDBOXES_PER_NODE] * len(node_ids):
        raise RuntimeError(f"sandboxes spread unevenly over the nodes: {dict(homes)}")
    return targets


def bare_targets(node_ids: list[str]) -> list[tuple[str, str]]:
    """The same paths' shape for the bare apps: 4 made-up sandbox ids per node, which
    the router sends to that node (a bare app answers any path)."""
    return [
        (f"/_mock/sandboxes/sbx-{node_id}-{index:012x}/api/v1/orders/o-bare", "bare")
        for node_id in node_ids
        for index in range(SANDBOXES_PER_NODE)
    ]


@dataclass
class Measured:
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    #: Share of a core, over the measured run, of each node, nginx (all processes),
    #: wrk, and the machine's other processes.
    node_cores: list[float]
    router_cores: float
    wrk_cores: float
    other_cores: float


@dataclass
class Params:
    workers: int
    threads: int
    connections: int
    duration: float
    warmup: float
    access_log: str
    cpus: list[int] = field(default_factory=list)
    #: Runs done again because other processes were busy meanwhile.
    retried: int = 0


def measure(kind: str, count: int, where: Layout, params: Params, work: Path) -> Measured:
    """One run of `kind` with `count` nodes: fresh processes, a warm-up, a measured run."""
    node_ids = [f"n{index}" for index in range(1, count + 1)]
    nodes: dict[str, Server] = {}
    router = None
    try:
        for node_id, cpu in zip(node_ids, where.nodes, strict=True):
            if kind == "sandbox":
                nodes[node_id] = start_node((cpu,), node_id, work, params.access_log)
            else:
                nodes[node_id] = start_bare((cpu,), node_id, work)
        router = Router(where.router, params.workers, nodes, work)
        made = sandbox_targets(router, node_ids) if kind == "sandbox" else bare_targets(node_ids)
        listing = work / "targets"
        listing.write_text("".join(f"{path} {token}\n" for path, token in made))
        env = {"BENCH_TARGETS": str(listing)}
        load = (where.wrk, params.threads, params.connections * count, router.url)
        run_wrk(*load, "cluster_lookup.lua", env, params.warmup)
        pids = [server.proc.pid for server in nodes.values()] + router.pids()
        watch = CpuWatch(tuple(pids))
        before = [process_cpu(server.proc.pid) for server in nodes.values()]
        router_before = router.cpu()
        started = time.monotonic()
        run, wrk_cpu = run_wrk(*load, "cluster_lookup.lua", env, params.duration)
        wall = time.monotonic() - started
        after = [process_cpu(server.proc.pid) for server in nodes.values()]
        router_cpu = router.cpu() - router_before
        other, _, other_wall = watch.other()
    finally:
        if router is not None:
            router.stop()
        for server in nodes.values():
            server.stop()
    return Measured(
        rps=run.rps,
        p50_ms=run.p50_ms,
        p99_ms=run.p99_ms,
        errors=run.bad_status + run.socket_errors,
        node_cores=[(b - a) / wall for a, b in zip(before, after, strict=True)],
        router_cores=router_cpu / wall,
        wrk_cores=wrk_cpu / wall,
        other_cores=other / other_wall,
    )


def bench_scaling(counts: list[int], params: Params, runs: int, work: Path) -> dict:
    results: dict[int, dict[str, list[Measured]]] = {n: {k: [] for k in KINDS} for n in counts}
    for run in range(runs):
        for count in counts:
            where = layout(params.cpus, count, params.workers, params.threads)
            # Which goes first alternates from run to run, as do the N.
            for kind in KINDS if run % 2 == 0 else KINDS[::-1]:
                for attempt in range(RETRIES + 1):
                    measured = measure(kind, count, where, params, work)
                    if measured.other_cores <= NOISY or attempt == RETRIES:
                        break
                    print(
                        f"  {count} node(s) {kind}: other processes used "
                        f"{measured.other_cores:.2f} of a core: again in 5 s",
                        file=sys.stderr,
                        flush=True,
                    )
                    params.retried += 1
                    time.sleep(5)
                results[count][kind].append(measured)
                print(
                    f"  {count} node(s) {kind:7} run {run + 1}: {measured.rps:9,.0f} lookups/s, "
                    f"p99 {measured.p99_ms:6.2f} ms, nodes "
                    + "+".join(f"{share:.2f}" for share in measured.node_cores)
                    + f", nginx {measured.router_cores:.2f}, wrk {measured.wrk_cores:.2f}, "
                    f"other {measured.other_cores:.2f} cores, errors {measured.errors}",
                    file=sys.stderr,
                    flush=True,
                )
    return results


def bench_router_cost(params: Params, runs: int, work: Path) -> dict:
    """One node: lookup and creation straight to it against through nginx."""
    where = layout(params.cpus, 1, params.workers, params.threads)
    results: dict[str, dict[str, list[WrkRun]]] = {
        config: {"lookup": [], "create": []} for config in ("direct", "router")
    }
    for run in range(runs):
        for config in ("direct", "router"):
            for endpoint, script in (("lookup", "lookup.lua"), ("create", "create.lua")):
                node = start_node(where.nodes, "a", work, params.access_log)
                router = None
                try:
                    if config == "router":
                        router = Router(where.router, params.workers, {"a": node}, work)
                    via = router.url if router else node.url
                    client = Client(via)
                    created = client.json("POST", "/_mock/sandboxes", {})
                    base = f"/_mock/sandboxes/{created['id']}"
                    body = {"api_key": created["api_key"]}
                    path = f"{base}/api/v1/auth/token/client"
                    token = client.json("POST", path, body)["access_token"]
                    order = client.json("POST", f"{base}/api/v1/orders", {"item_id": 1001}, token)
                    client.close()
                    url = f"{via}{base}/api/v1/orders"
                    url += f"/{order['id']}" if endpoint == "lookup" else ""
                    env = {"BENCH_TOKEN": token, "BENCH_PREFIX": f"warm{run}"}
                    load = (where.wrk, params.threads, params.connections, url, script)
                    run_wrk(*load, env, params.warmup)
                    env["BENCH_PREFIX"] = f"run{run}"
                    measured, _ = run_wrk(*load, env, params.duration)
                finally:
                    if router is not None:
                        router.stop()
                    node.stop()
                results[config][endpoint].append(measured)
                print(
                    f"  {endpoint:6} {config:6} run {run + 1}: {measured.rps:8.0f} req/s, "
                    f"p99 {measured.p99_ms:.2f} ms",
                    file=sys.stderr,
                    flush=True,
                )
    return results


def capture_body(params: Params, work: Path) -> None:
    """The sandbox's own lookup answer, for the bare apps to repeat byte for byte."""
    node = start_node(tuple(params.cpus[:1]), "capture", work, "off")
    try:
        client = Client(node.url)
        created = client.json("POST", "/_mock/sandboxes", {})
        base = f"/_mock/sandboxes/{created['id']}"
        body = {"api_key": created["api_key"]}
        token = client.json("POST", f"{base}/api/v1/auth/token/client", body)["access_token"]
        order = client.json("POST", f"{base}/api/v1/orders", {"item_id": 1001}, token)
        status, _, raw = client.call("GET", f"{base}/api/v1/orders/{order['id']}", token=token)
        client.close()
    finally:
        node.stop()
    if status != 200:
        raise RuntimeError(f"the sandbox's lookup answered {status}")
    (work / "body").write_bytes(raw)


# ---------------------------------------------------------------------------------------
# the bare app


def serve_bare(body_path: str) -> None:
    """A bare aiohttp app on uvloop answering every path with `body_path`'s bytes, read
    once, as the sandbox's lookup answers (200, JSON); no access log. Prints `listening
    on http://127.0.0.1:PORT` once it accepts connections."""
    import asyncio

    import uvloop
    from aiohttp import web
    from serving import serve_until_signalled

    body = Path(body_path).read_bytes()

    async def answer(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json", charset="utf-8")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(serve_until_signalled(app, "127.0.0.1", 0))


# ---------------------------------------------------------------------------------------
# the report


def median(values: list[float]) -> float:
    return statistics.median(values)


def render(scaling: dict, cost: dict | None, params: Params, args: argparse.Namespace) -> str:
    counts = sorted(scaling)
    layouts = {n: layout(params.cpus, n, params.workers, params.threads) for n in counts}
    every_own = all(where.own for where in layouts.values())
    note = (
        "each node, nginx and wrk on cores of their own at every N"
        if every_own
        else "**cores shared** at some N (below): the floors are shown, not judged there"
    )
    facts = machine_info(
        note,
        f"wrk -t{params.threads} -c({params.connections} x N) -d{params.duration:g}s "
        f"--latency, `cluster_lookup.lua` over {SANDBOXES_PER_NODE} sandboxes per node, after "
        f"{params.warmup:g} s of warm-up; {args.runs} runs per N and kind, sandbox and bare "
        "alternating, fresh processes each run; medians; a run during which other "
        f"processes used more than {NOISY:.0%} of a core is done again (up to {RETRIES} "
        f"times): {params.retried} were",
    )
    lines = [
        "# Nodes behind nginx, against bare aiohttp apps behind the same nginx",
        "",
        f"Written by `python bench/cluster.py {' '.join(sys.argv[1:])}` (see its docstring).",
        "",
        *[f"- **{key}**: {value}" for key, value in facts],
        f"- **router**: nginx {nginx_version()}, the configuration `mock-server cluster "
        f"nginx-config` prints (creation upstream in a `zone`), `worker_processes "
        f"{params.workers}`, access log off",
        f"- **nodes**: `python -m mock_server --clock manual --node-id nI`, access log "
        f"{params.access_log}; **bare**: `cluster.py --serve-bare`, aiohttp on uvloop "
        "answering every path with the sandbox's lookup body encoded once, no access log",
        "",
        "## Placement",
        "",
        "| N | node CPUs | nginx CPUs | wrk CPUs | cores of their own | shared |",
        "|---|---|---|---|---|---|",
    ]
    for count in counts:
        where = layouts[count]
        lines.append(
            f"| {count} | {cpu_list(where.nodes)} | {cpu_list(where.router)} | "
            f"{cpu_list(where.wrk)} | {'yes' if where.own else '**no**'} | "
            f"{'; '.join(where.shared()) or '—'} |"
        )
    base = counts[0]
    lines += [
        "",
        "## Lookups by number of nodes",
        "",
        f"Scaling: the median rate at N over the median at {base} node(s), for each kind; "
        f"the floors (bench/README.md): sandbox scaling >= {FLOOR_SCALING}x the bare "
        f"apps', sandbox p99 <= {FLOOR_P99}x theirs.",
        "",
        "| N | sandbox lookups/s | p99 | bare lookups/s | p99 | sandbox/bare rate | "
        "sandbox scaling | bare scaling | scaling ratio | p99 ratio | floors |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    rate = {n: {k: median([m.rps for m in scaling[n][k]]) for k in KINDS} for n in counts}
    p99 = {n: {k: median([m.p99_ms for m in scaling[n][k]]) for k in KINDS} for n in counts}
    for count in counts:
        ours, theirs = rate[count]["sandbox"], rate[count]["bare"]
        grow = ours / rate[base]["sandbox"]
        bare_grow = theirs / rate[base]["bare"]
        tail = p99[count]["sandbox"] / p99[count]["bare"]
        met = grow / bare_grow >= FLOOR_SCALING and tail <= FLOOR_P99
        if layouts[count].own:
            verdict = "**PASS**" if met else "**FAIL**"
        else:
            verdict = f"not judged: cores shared ({'met' if met else 'not met'} here)"
        lines.append(
            f"| {count} | {ours:,.0f} | {p99[count]['sandbox']:.2f} ms | {theirs:,.0f} | "
            f"{p99[count]['bare']:.2f} ms | {ours / theirs:.2f}x | {grow:.2f}x | "
            f"{bare_grow:.2f}x | {grow / bare_grow:.2f}x | {tail:.2f}x | {verdict} |"
        )
    if not every_own:
        lines += [
            "",
            "The floors are the spec's for nodes on cores of their own; where cores were shared "
            "they are not judged. A machine with N + W + T cores judges them at every N: 16 "
            "for `--nodes 1,2,4,8` with 4 nginx workers and 4 wrk threads (the defaults on 16 "
            "cores or more).",
        ]
    lines += [
        "",
        "## Where the CPU went (share of a core over the measured run, medians)",
        "",
        "| N | kind | each node | nodes together | nginx | wrk | other processes |",
        "|---|---|---|---|---|---|---|",
    ]
    for count in counts:
        for kind in KINDS:
            runs = scaling[count][kind]
            each = [median([m.node_cores[i] for m in runs]) for i in range(count)]
            lines.append(
                f"| {count} | {kind} | {' + '.join(f'{share:.2f}' for share in each)} | "
                f"{median([sum(m.node_cores) for m in runs]):.2f} | "
                f"{median([m.router_cores for m in runs]):.2f} | "
                f"{median([m.wrk_cores for m in runs]):.2f} | "
                f"{median([m.other_cores for m in runs]):.2f} |"
            )
    lines += ["", "Every run (lookups/s, p99 ms, errors, other processes' share of a core):", ""]
    for count in counts:
        for kind in KINDS:
            runs = ", ".join(
                f"{m.rps:,.0f} ({m.p99_ms:.2f}, {m.errors}, {m.other_cores:.2f})"
                for m in scaling[count][kind]
            )
            lines.append(f"- {count} node(s), {kind}: {runs}")
    if cost is not None:
        lines += render_cost(cost, layouts.get(1) or layout(params.cpus, 1, 1, 1))
    return "\n".join(lines) + "\n"


def render_cost(cost: dict, where: Layout) -> list[str]:
    lines = [
        "",
        "## The router's cost (one node)",
        "",
        f"One sandbox of one node, straight to the node against through nginx; {where.describe()}.",
        "",
        "| endpoint | direct | through nginx | rate | p99 direct | p99 through nginx |",
        "|---|---|---|---|---|---|",
    ]
    for endpoint in ("lookup", "create"):
        direct, routed = cost["direct"][endpoint], cost["router"][endpoint]
        d_rps, r_rps = median([r.rps for r in direct]), median([r.rps for r in routed])
        lines.append(
            f"| {endpoint} | {d_rps:,.0f} req/s | {r_rps:,.0f} req/s | {r_rps / d_rps:.2f}x | "
            f"{median([r.p99_ms for r in direct]):.2f} ms | "
            f"{median([r.p99_ms for r in routed]):.2f} ms |"
        )
    return lines


def nginx_version() -> str:
    done = subprocess.run([NGINX, "-v"], capture_output=True, text=True)
    return done.stderr.strip().rpartition("/")[2]


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="1,2,4,8", help="numbers of nodes, comma-separated")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=float, default=6)
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--connections", type=int, default=16, help="wrk connections per node")
    cores = len(os.sched_getaffinity(0))
    share = max(1, min(4, cores // 4))
    parser.add_argument("--router-workers", type=int, default=share, help="nginx workers")
    parser.add_argument("--wrk-threads", type=int, default=share)
    parser.add_argument("--access-log", choices=("on", "off"), default="on", help="the nodes'")
    parser.add_argument("--no-router-cost", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--serve-bare", metavar="BODY", help=argparse.SUPPRESS)
    return parser


def main() -> int:
    args = arguments().parse_args()
    if args.serve_bare:
        serve_bare(args.serve_bare)
        return 0
    counts = sorted({int(n) for n in args.nodes.split(",")})
    if not counts or counts[0] < 1:
        raise SystemExit("--nodes: numbers of nodes, 1 or more")
    cpus = sorted(os.sched_getaffinity(0))
    params = Params(
        args.router_workers,
        args.wrk_threads,
        args.connections,
        args.duration,
        args.warmup,
        args.access_log,
        cpus,
    )
    for count in counts:
        where = layout(cpus, count, params.workers, params.threads)
        if where.own:
            print(f"{count} node(s): {where.describe()}, each on cores of its own", file=sys.stderr)
        else:
            print(
                f"{count} node(s): {len(cpus)} cores, not the {count} + {params.workers} + "
                f"{params.threads} that nodes, nginx workers and wrk threads need on cores "
                f"of their own: {where.describe()}; shared: {'; '.join(where.shared())}",
                file=sys.stderr,
            )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        capture_body(params, work)
        scaling = bench_scaling(counts, params, args.runs, work)
        cost = None if args.no_router_cost else bench_router_cost(params, args.runs, work)
    table = render(scaling, cost, params, args)
    print(table)
    if not args.no_write:
        (BENCH / "CLUSTER.md").write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
