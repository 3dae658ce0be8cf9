"""Live dashboards' cost to the merchant API (`GET /_mock/events`, docs/dashboard.md).

    python bench/events.py [--readers 5] [--duration 5] [--runs 5] [--no-write]

Order lookup and order creation with wrk against a server started as the CLI starts
it, once with `--readers` clients reading `GET /_mock/events` (as open dashboards do:
every merchant call is a `journal` event to each of them, every order change an `order`
event) and without: each run starts one server per endpoint and measures it without
readers and with them in ABBA order, so that every comparison is made within one
process; medians over runs of the mean of each pair. Bar: with five readers, >= 0.9x
the rate with none. The readers run in their own process on the load generator's
core. Writes the table to `bench/EVENTS.md` unless `--no-write`.

Beside the rates, the server's own CPU time per request (user + system, from
/proc/PID/stat over the measured run): what the readers cost the server itself, seen
apart from how much of the machine the load generator got. On a shared VM both move
from run to run (neighbours' cache and memory traffic slow the server's own work too).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import side

from bench import (
    PYTHON,
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

BAR = 0.9
READER = """
import socket, sys, threading
from urllib.parse import urlsplit

# Plain sockets and one big buffer: the readers share the load generator's core, and
# must cost it as little as possible (a browser showing the dashboard runs elsewhere).
def read(url):
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port))
    sock.sendall(f"GET {parts.path} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n".encode())
    buffer = bytearray(1 << 20)
    while sock.recv_into(buffer):
        pass

threads = [threading.Thread(target=read, args=(sys.argv[1],), daemon=True)
           for _ in range(int(sys.argv[2]))]
for thread in threads:
    thread.start()
print("reading", flush=True)
for thread in threads:
    thread.join()
"""


def readers(pin: Placement, url: str, count: int) -> subprocess.Popen | None:
    if not count:
        return None
    proc = subprocess.Popen(
        pin.load + [PYTHON, "-c", READER, url + "/_mock/events", str(count)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "reading"
    return proc


def prepare(client: Client) -> tuple[str, str]:
    token = client.json("POST", "/api/v1/auth/token/client", {"api_key": "ak_bench"})
    bearer = token["access_token"]
    order = client.json("POST", "/api/v1/orders", {"item_id": 1001}, bearer)
    return bearer, order["id"]


def bench(pin: Placement, params: WrkParams, accounts: Path, work: Path, count: int):
    """Per run and endpoint, one fresh server measured without readers and with them in
    ABBA order (the order flips every run): a process's memory layout alone moves the
    rate by up to 15% from one server to the next, and the state grows as the runs go."""
    results: dict[int, dict[str, list[float]]] = {
        n: {"lookup": [], "create": []} for n in (0, count)
    }
    cpu: dict[int, dict[str, list[float]]] = {n: {"lookup": [], "create": []} for n in results}
    for run in range(params.runs):
        order = (0, count, count, 0) if run % 2 == 0 else (count, 0, 0, count)
        for endpoint, script in (("lookup", "lookup.lua"), ("create", "create.lua")):
            server = Server(sandbox_argv(pin, accounts), f"events-{endpoint}", work)
            rates: dict[int, list[float]] = {n: [] for n in results}
            costs: dict[int, list[float]] = {n: [] for n in results}
            try:
                client = Client(server.url)
                token, order_id = prepare(client)
                client.close()
                path = "/api/v1/orders" + (f"/{order_id}" if endpoint == "lookup" else "")
                env = {"BENCH_TOKEN": token, "BENCH_PREFIX": f"warm{run}"}
                run_wrk(pin, params, server.url + path, script, env, params.warmup)
                for leg, n in enumerate(order):
                    reading = readers(pin, server.url, n)
                    try:
                        env["BENCH_PREFIX"] = f"run{run}-{leg}"
                        before = process_cpu(server.proc.pid)
                        measured = run_wrk(
                            pin, params, server.url + path, script, env, params.duration
                        )
                        spent = process_cpu(server.proc.pid) - before
                    finally:
                        if reading is not None:
                            reading.kill()
                            reading.wait()
                    rates[n].append(measured.rps)
                    costs[n].append(1e6 * spent / (measured.rps * params.duration))
            finally:
                server.stop()
            for n in results:
                results[n][endpoint].append(statistics.mean(rates[n]))
                cpu[n][endpoint].append(statistics.mean(costs[n]))
            print(
                f"  {endpoint:6} run {run + 1}: "
                + ", ".join(
                    f"{n} readers {results[n][endpoint][-1]:,.0f} req/s "
                    f"({cpu[n][endpoint][-1]:.0f} us CPU/request)"
                    for n in results
                ),
                file=sys.stderr,
            )
    return results, cpu


def render(results: dict, cpu: dict, count: int, pin: Placement) -> str:
    lines = side.header("Live dashboards and the merchant API", "events.py", pin) + [
        "| measure | with readers | none | ratio | bar | result |",
        "|---|---|---|---|---|---|",
    ]
    for endpoint, title in (("lookup", "order lookup"), ("create", "order creation")):
        with_readers = statistics.median(results[count][endpoint])
        alone = statistics.median(results[0][endpoint])
        ratio = with_readers / alone
        lines.append(
            f"| {title}, {count} event-stream readers: req/s | {with_readers:,.0f} | "
            f"{alone:,.0f} | {ratio:.2f}x | >= {BAR}x | {side.verdict(ratio >= BAR)} |"
        )
    for endpoint, title in (("lookup", "order lookup"), ("create", "order creation")):
        with_readers = statistics.median(cpu[count][endpoint])
        alone = statistics.median(cpu[0][endpoint])
        lines.append(
            f"| {title}: server CPU per request, us (capacity ratio: none / with) | "
            f"{with_readers:.0f} | {alone:.0f} | {alone / with_readers:.2f}x | | |"
        )
    lines += ["", "Every run (req/s; server CPU per request, us):", ""]
    for n in (0, count):
        for endpoint in ("lookup", "create"):
            runs = ", ".join(
                f"{rps:,.0f} ({us:.0f})"
                for rps, us in zip(results[n][endpoint], cpu[n][endpoint], strict=True)
            )
            lines.append(f"- {endpoint}, {n} readers: {runs}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = side.arguments(__doc__)
    parser.add_argument("--readers", type=int, default=5)
    args = parser.parse_args()
    pin = placement()
    params = side.wrk_params(args)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        accounts = write_accounts(work / "accounts.yaml")
        results, cpu = bench(pin, params, accounts, work, args.readers)
    side.publish(render(results, cpu, args.readers, pin), "EVENTS.md", args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
