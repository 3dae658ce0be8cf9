"""The cost of `--state` and of HTTPS (docs/state.md; `--tls` in the README).

    python bench/state.py [--orders 100000] [--duration 5] [--runs 5] [--no-write]

Against servers started as the CLI starts them, fresh for every run, alternating:

* order creation and lookup with wrk, with `--state FILE` and without -- bars: creation
  >= 0.5x, lookup >= 0.95x;
* restart of a server whose state file holds `--orders` settled orders, from spawn to
  the first answered request -- bar: <= 3 s;
* order lookup over HTTPS (`--tls self-signed`, keep-alive) and over plain HTTP -- bar:
  >= 0.7x.

Writes the table to `bench/STATE.md` unless `--no-write`.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import side

from bench import (
    Client,
    Placement,
    Server,
    WrkParams,
    placement,
    process_cpu,
    run_wrk,
    sandbox_argv,
    time_to_first_answer,
    write_accounts,
)

BARS = {"create": 0.5, "lookup": 0.95, "restart_s": 3.0, "https": 0.7}


def prepare(url: str) -> tuple[str, str]:
    """A token and an order id to look up, over plain HTTP or HTTPS (unverified)."""

    async def run() -> tuple[str, str]:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as session:
            async with session.post(
                url + "/api/v1/auth/token/client", json={"api_key": "ak_bench"}
            ) as response:
                token = (await response.json())["access_token"]
            headers = {"Authorization": f"Bearer {token}"}
            async with session.post(
                url + "/api/v1/orders", json={"item_id": 1001}, headers=headers
            ) as response:
                return token, (await response.json())["id"]

    return asyncio.run(run())


def wrk_once(pin: Placement, params: WrkParams, argv: list[str], work: Path, endpoint: str):
    server = Server(argv, f"state-{endpoint}", work)
    try:
        token, order_id = prepare(server.url)
        path = "/api/v1/orders" + (f"/{order_id}" if endpoint != "create" else "")
        script = "create.lua" if endpoint == "create" else "lookup.lua"
        env = {"BENCH_TOKEN": token, "BENCH_PREFIX": f"warm-{time.monotonic_ns()}"}
        run_wrk(pin, params, server.url + path, script, env, params.warmup)
        env["BENCH_PREFIX"] = f"run-{time.monotonic_ns()}"
        before = process_cpu(server.proc.pid)
        rps = run_wrk(pin, params, server.url + path, script, env, params.duration).rps
        spent = process_cpu(server.proc.pid) - before
        return rps, 1e6 * spent / (rps * params.duration)
    finally:
        server.stop()


def fill(url: str, orders: int) -> None:
    """`orders` orders over HTTP, 16 at a time, then settle them all."""

    async def run() -> None:
        async with aiohttp.ClientSession() as session:
            async with session.post(
                url + "/api/v1/auth/token/client", json={"api_key": "ak_bench"}
            ) as response:
                headers = {"Authorization": f"Bearer {(await response.json())['access_token']}"}
            counter = iter(range(orders))

            async def worker() -> None:
                for index in counter:
                    body = {"item_id": 1001, "merchant_order_id": f"fill-{index}"}
                    async with session.post(
                        url + "/api/v1/orders", json=body, headers=headers
                    ) as response:
                        assert response.status == 201, await response.text()

            await asyncio.gather(*(worker() for _ in range(16)))
            async with session.post(url + "/_mock/clock/advance", json={"seconds": 5}):
                pass

    asyncio.run(run())


def main() -> int:
    parser = side.arguments(__doc__)
    parser.add_argument("--orders", type=int, default=100_000)
    args = parser.parse_args()
    pin = placement()
    params = side.wrk_params(args)
    rows: dict[str, dict[str, list[float]]] = {}
    cpu: dict[str, dict[str, list[float]]] = {}  # server CPU per request, us
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        accounts = write_accounts(work / "accounts.yaml")
        plain = sandbox_argv(pin, accounts)
        for run in range(params.runs):
            for endpoint in ("create", "lookup"):
                state = ["--state", str(work / f"{endpoint}-{run}.db")]
                for name, argv in (("without", plain), ("with --state", plain + state)):
                    rps, us = wrk_once(pin, params, argv, work, endpoint)
                    rows.setdefault(endpoint, {}).setdefault(name, []).append(rps)
                    cpu.setdefault(endpoint, {}).setdefault(name, []).append(us)
                    print(f"  {endpoint} {name} run {run + 1}: {rps:,.0f} req/s", file=sys.stderr)
            https = plain + ["--tls", "self-signed", "--tls-ca-out", str(work / "ca.pem")]
            for name, argv in (("http", plain), ("https", https)):
                rps, us = wrk_once(pin, params, argv, work, "lookup")
                rows.setdefault("https", {}).setdefault(name, []).append(rps)
                cpu.setdefault("https", {}).setdefault(name, []).append(us)
                print(f"  lookup over {name} run {run + 1}: {rps:,.0f} req/s", file=sys.stderr)
        big = work / "big.db"
        server = Server(plain + ["--state", str(big)], "state-fill", work)
        began = time.monotonic()
        try:
            fill(server.url, args.orders)
        finally:
            server.stop()
        filled = time.monotonic() - began
        restarts = [time_to_first_answer(plain + ["--state", str(big)]) for _ in range(3)]
        size = big.stat().st_size / 2**20
        client = Server(plain + ["--state", str(big)], "state-check", work)
        try:
            total = Client(client.url).json("GET", "/_mock/orders?limit=0")["total"]
        finally:
            client.stop()
    table = render(rows, cpu, restarts, args.orders, total, filled, size, pin)
    side.publish(table, "STATE.md", args)
    return 0


def render(rows, cpu, restarts, orders, total, filled, size, pin) -> str:
    lines = side.header("State file and HTTPS", "state.py", pin) + [
        "| measure | value | reference | ratio | bar | result |",
        "|---|---|---|---|---|---|",
    ]
    for endpoint, title in (("create", "order creation"), ("lookup", "order lookup")):
        with_state = statistics.median(rows[endpoint]["with --state"])
        without = statistics.median(rows[endpoint]["without"])
        ratio = with_state / without
        bar = BARS[endpoint]
        lines.append(
            f"| {title} with `--state`, req/s | {with_state:,.0f} | {without:,.0f} without | "
            f"{ratio:.2f}x | >= {bar}x | {side.verdict(ratio >= bar)} |"
        )
    restart = statistics.median(restarts)
    lines.append(
        f"| restart with {total:,} orders in the file ({size:.0f} MiB) to first answer | "
        f"{restart:.2f} s | | | <= {BARS['restart_s']:g} s | "
        f"{side.verdict(restart <= BARS['restart_s'] and total == orders)} |"
    )
    https = statistics.median(rows["https"]["https"])
    http = statistics.median(rows["https"]["http"])
    ratio = https / http
    lines.append(
        f"| order lookup over HTTPS (keep-alive), req/s | {https:,.0f} | {http:,.0f} over HTTP "
        f"| {ratio:.2f}x | >= {BARS['https']}x | {side.verdict(ratio >= BARS['https'])} |"
    )
    for key, title, names in (
        ("create", "order creation", ("with --state", "without")),
        ("lookup", "order lookup", ("with --state", "without")),
        ("https", "order lookup", ("https", "http")),
    ):
        used, reference = (statistics.median(cpu[key][name]) for name in names)
        lines.append(
            f"| {title} {names[0]}: server CPU per request, us (capacity ratio: "
            f"{names[1]} / {names[0]}) | {used:.0f} | {reference:.0f} {names[1]} | "
            f"{reference / used:.2f}x | | |"
        )
    lines += [
        "",
        "Server CPU per request is user + system time of the server process over the "
        "measured run (/proc/PID/stat): what a feature costs the server itself, apart from "
        "how much of the machine the load generator got. On a shared VM both move from run "
        "to run.",
        "",
        f"Filling the file took {filled:.0f} s ({orders:,} orders over HTTP, 16 at a time, "
        f"then one advance). Restarts (s): {', '.join(f'{r:.2f}' for r in restarts)}.",
        "",
        "Every run (req/s; server CPU per request, us):",
        "",
    ]
    for key, named in rows.items():
        for name, values in named.items():
            runs = zip(values, cpu[key][name], strict=True)
            lines.append(f"- {key}, {name}: {', '.join(f'{v:,.0f} ({us:.0f})' for v, us in runs)}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
