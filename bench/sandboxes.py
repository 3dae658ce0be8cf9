"""Sandboxes at scale (docs/control-api.md, "Sandboxes"): one command.

    python bench/sandboxes.py [--others 1000] [--duration 5] [--runs 5] [--no-write]

Measures, against a server started as the CLI starts it (`--max-sandboxes` raised so
the others fit):

* creating a sandbox from the startup state: `POST /_mock/sandboxes` over HTTP, median
  of 200 (client-side wall time, HTTP included) -- bar: <= 2 ms;
* what an empty sandbox holds: the server's RSS growth over `--others` creations,
  divided by their number -- bar: <= 100 KB;
* order lookup and creation with wrk, in one sandbox through its `base_url`, on a
  server holding `--others` other live sandboxes with a few orders each, against the
  same on a server holding none; fresh servers for every run, alternating, medians --
  bar: >= 0.95x.

Placement as in bench.py (server on CPU 0, wrk on CPU 1). Writes the table to
`bench/SANDBOXES.md` unless `--no-write`.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import side

from bench import (
    Client,
    Placement,
    Server,
    WrkParams,
    placement,
    sandbox_argv,
    write_accounts,
)

BAR_CREATE_MS = 2.0
BAR_EMPTY_KB = 100.0
BAR_RATIO = 0.95
ORDERS_PER_OTHER = 3


def start(pin: Placement, accounts: Path, work: Path, name: str) -> Server:
    return Server(sandbox_argv(pin, accounts) + ["--max-sandboxes", "100000"], name, work)


def populate(client: Client, count: int) -> None:
    """`count` sandboxes, each with a few orders, as CI jobs leave them."""
    for _ in range(count):
        sandbox = client.json("POST", "/_mock/sandboxes", {})
        base = sandbox["base_url"].split("//", 1)[1].split("/", 1)[1]
        token = client.json(
            "POST", f"/{base}/api/v1/auth/token/client", {"api_key": sandbox["api_key"]}
        )["access_token"]
        for _ in range(ORDERS_PER_OTHER):
            client.json("POST", f"/{base}/api/v1/orders", {"item_id": 1001}, token)


def target_sandbox(client: Client) -> tuple[str, str, str]:
    """(base path, token, order id) of the sandbox the load goes to."""
    body = {
        "accounts": {
            "accounts": [{"email": "load@example.com", "api_key": "ak_load", "balance": 10**12}]
        }
    }
    sandbox = client.json("POST", "/_mock/sandboxes", body)
    base = "/" + sandbox["base_url"].split("//", 1)[1].split("/", 1)[1]
    token = client.json("POST", f"{base}/api/v1/auth/token/client", {"api_key": "ak_load"})
    bearer = token["access_token"]
    order = client.json("POST", f"{base}/api/v1/orders", {"item_id": 1001}, bearer)
    return base, bearer, order["id"]


def bench_creation(pin: Placement, accounts: Path, work: Path, others: int) -> dict:
    server = start(pin, accounts, work, "sandbox-create")
    try:
        client = Client(server.url)
        client.json("GET", "/_mock/health")
        for _ in range(20):  # warm-up
            client.json("POST", "/_mock/sandboxes", {})
        times = []
        for _ in range(200):
            began = time.perf_counter()
            client.json("POST", "/_mock/sandboxes", {})
            times.append((time.perf_counter() - began) * 1000)
        before = side.rss_kib(server.proc.pid)
        for _ in range(others):
            client.json("POST", "/_mock/sandboxes", {})
        after = side.rss_kib(server.proc.pid)
        client.close()
    finally:
        server.stop()
    return {
        "create_ms": statistics.median(times),
        "create_p90_ms": statistics.quantiles(times, n=10)[-1],
        "empty_kb": (after - before) / others,
        "rss_before": before / 1024,
        "rss_after": after / 1024,
    }


def bench_load(pin: Placement, params: WrkParams, accounts: Path, work: Path, others: int):
    def target(client: Client, config: str) -> side.Target:
        populate(client, others if config == "others" else 0)
        base, token, order_id = target_sandbox(client)
        return f"{base}/api/v1/orders", token, order_id

    return side.alternate(
        pin,
        params,
        ("none", "others"),
        lambda config: start(pin, accounts, work, f"sandbox-{config}"),
        target,
    )


def render(creation: dict, load: dict, others: int, pin: Placement) -> str:
    facts = f"**other sandboxes**: {others}, {ORDERS_PER_OTHER} orders each"
    lines = side.header("Sandboxes at scale", "sandboxes.py", pin, facts) + [
        "| measure | value | bar | result |",
        "|---|---|---|---|",
        f"| create a sandbox over HTTP, median of 200 | {creation['create_ms']:.2f} ms "
        f"(p90 {creation['create_p90_ms']:.2f}) | <= {BAR_CREATE_MS:g} ms | "
        f"{side.verdict(creation['create_ms'] <= BAR_CREATE_MS)} |",
        f"| RSS per empty sandbox ({others} created: {creation['rss_before']:.0f} -> "
        f"{creation['rss_after']:.0f} MiB) | {creation['empty_kb']:.0f} KB | "
        f"<= {BAR_EMPTY_KB:g} KB | {side.verdict(creation['empty_kb'] <= BAR_EMPTY_KB)} |",
    ]
    what = "{title} in one sandbox (base URL), " + f"{others} others vs none"
    lines += side.ratio_rows(load, "none", "others", what, BAR_RATIO)
    lines += side.every_run(load, ("none", "others"))
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = side.arguments(__doc__)
    parser.add_argument("--others", type=int, default=1000)
    args = parser.parse_args()
    pin = placement()
    params = side.wrk_params(args)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        accounts = write_accounts(work / "accounts.yaml")
        creation = bench_creation(pin, accounts, work, args.others)
        load = bench_load(pin, params, accounts, work, args.others)
    side.publish(render(creation, load, args.others, pin), "SANDBOXES.md", args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
