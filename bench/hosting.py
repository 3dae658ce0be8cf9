"""Hosting one server for many merchants (docs/hosting.md): one command.

    python bench/hosting.py [--quota 20000] [--sandboxes 10] [--webhooks 2000]
                            [--duration 5] [--runs 5] [--no-write]

Measures, against servers started as the CLI starts them (placement as in bench.py:
server on CPU 0, wrk and the webhook receiver on CPU 1):

* sizing: created sandboxes, each with one account whose webhook goes to a local
  receiver answering 200, each driven over HTTP to an order quota of `--quota` orders
  (the next order is refused 429) and advanced until every order settled and its webhook
  was delivered. The growth of the second and third sandboxes gives what each further
  full sandbox holds (the first also pays what the process allocates once; a sandbox
  with a few orders is made before any of them); 200 empty sandboxes what one holds
  before any order. docs/hosting.md's formula, first + (N - 1) x each further, is then
  held against the RSS once `--sandboxes` sandboxes are full -- bar: within 10%;
* what the destination rules cost: order lookup and creation with wrk, with
  `--webhook-deny-private --webhook-allow 127.0.0.0/8` against neither, fresh servers
  alternating, medians -- bar: >= 0.95x; and one webhook attempt, `--webhooks` orders
  settling at once and delivered to a receiver named `localhost`, with the rules against
  without -- bar: <= 0.2 ms more per attempt;
* a noisy neighbour: with `--sandbox-rate`, sandbox B's lookups at a steady pace within
  its rate (bench/paced.py, at a real-time priority where allowed), alone and while wrk
  floods sandbox A's creation past its rate and its order quota -- bars: B keeps >= 0.9x
  its rate and <= 1.5x its p99.

Writes the table to bench/HOSTING.md unless --no-write.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import side

from bench import (
    BENCH,
    Client,
    Placement,
    Server,
    WrkParams,
    parse_wrk,
    placement,
    receiver,
    sandbox_argv,
    write_accounts,
)

RULES = ["--webhook-deny-private", "--webhook-allow", "127.0.0.0/8"]
BAR_PREDICTION = 0.10
BAR_RATIO = 0.95
BAR_ATTEMPT_MS = 0.2
EMPTY_SANDBOXES = 200
WARM_UP_ORDERS = 200
#: Sandbox B's lookups per second while A is flooded (within B's rate), and the rate.
PACE = 200
RATE = 500.0
BAR_NEIGHBOUR_RATE = 0.9
BAR_NEIGHBOUR_P99 = 1.5
#: The sandboxes (after the first) whose growth predicts the rest.
CALIBRATION = 3


def rss_mib(pid: int) -> float:
    return side.rss_kib(pid) / 1024


def fill_sandbox(client: Client, hook: str, index: int, quota: int, orders: int = 0) -> None:
    """A created sandbox driven to its order quota (or given `orders` only), every order
    settled and delivered."""
    account = {
        "email": f"load{index}@example.com",
        "api_key": f"ak_load{index}",
        "balance": 10**12,
        "webhook_url": hook,
    }
    sandbox = client.json("POST", "/_mock/sandboxes", {"accounts": {"accounts": [account]}})
    base = "/" + sandbox["base_url"].split("//", 1)[1].split("/", 1)[1]
    token = client.json("POST", f"{base}/api/v1/auth/token/client", {"api_key": account["api_key"]})
    bearer = token["access_token"]
    for _ in range(orders or quota):
        client.json("POST", f"{base}/api/v1/orders", {"item_id": 1001}, bearer)
    status, _, _ = client.call("POST", f"{base}/api/v1/orders", {"item_id": 1001}, bearer)
    if not orders and status != 429:
        raise RuntimeError(f"order {quota + 1} answered {status}, not 429 quota_exceeded")
    client.json("POST", f"{base}/_mock/clock/advance", {"seconds": 600})


def bench_sizing(pin: Placement, work: Path, quota: int, sandboxes: int) -> dict:
    with receiver(pin, 200, work) as hook:
        argv = sandbox_argv(pin, None) + RULES + ["--sandbox-max-orders", str(quota)]
        server = Server(argv + ["--max-sandboxes", "100000"], "hosting-sizing", work)
        try:
            client = Client(server.url)
            client.json("GET", "/_mock/health")
            pid = server.proc.pid
            # What the first orders and deliveries of a process load once (code paths,
            # caches, the receiver's connection pool) is paid before measuring.
            fill_sandbox(client, hook, -1, quota, orders=WARM_UP_ORDERS)
            idle = rss_mib(pid)
            began = time.perf_counter()
            rss = [idle]
            for index in range(sandboxes):
                fill_sandbox(client, hook, index, quota)
                rss.append(rss_mib(pid))
            seconds = time.perf_counter() - began
            full = rss[-1]
            before_empty = rss_mib(pid)
            for _ in range(EMPTY_SANDBOXES):
                client.json("POST", "/_mock/sandboxes", {})
            empty = (rss_mib(pid) - before_empty) / EMPTY_SANDBOXES
            received = Client(hook.removesuffix("/hooks")).json("GET", "/count")["received"]
            received -= WARM_UP_ORDERS + 1
            client.close()
        finally:
            server.stop()
    # Calibrated on the second and third sandboxes (the first also pays what the
    # process allocates once), the prediction for all of them is checked on the last.
    per_sandbox = (rss[CALIBRATION] - rss[1]) / (CALIBRATION - 1)
    per_order_kib = (per_sandbox - empty) * 1024 / quota
    predicted = rss[1] + (sandboxes - 1) * per_sandbox
    return {
        "idle": idle,
        "first": rss[1],
        "rss": rss,
        "full": full,
        "empty_kib": empty * 1024,
        "per_sandbox": per_sandbox,
        "per_order_kib": per_order_kib,
        "predicted": predicted,
        "received": received,
        "seconds": seconds,
    }


def _default_token(client: Client) -> str:
    """A token of the bench account of the server's default sandbox."""
    answer = client.json("POST", "/api/v1/auth/token/client", {"api_key": "ak_bench"})
    return answer["access_token"]


def bench_rules_load(pin: Placement, params: WrkParams, accounts: Path, work: Path) -> dict:
    def target(client: Client, config: str) -> side.Target:
        token = _default_token(client)
        order = client.json("POST", "/api/v1/orders", {"item_id": 1001}, token)
        return "/api/v1/orders", token, order["id"]

    extra = {"without": [], "with": RULES}
    return side.alternate(
        pin,
        params,
        ("without", "with"),
        lambda config: Server(sandbox_argv(pin, accounts) + extra[config], f"rules-{config}", work),
        target,
    )


def bench_attempts(pin: Placement, work: Path, orders: int, runs: int) -> dict:
    """Seconds per webhook attempt, the rules on and off, to a receiver named localhost."""
    times: dict[str, list[float]] = {"without": [], "with": []}
    with receiver(pin, 200, work) as hook:
        named = hook.replace("127.0.0.1", "localhost")
        accounts = write_accounts(work / "hooked.yaml", webhook_url=named)
        for run in range(runs):
            for config, extra in (("without", []), ("with", RULES)):
                server = Server(sandbox_argv(pin, accounts) + extra, f"attempts-{config}", work)
                try:
                    client = Client(server.url)
                    token = _default_token(client)
                    for _ in range(orders):
                        client.json("POST", "/api/v1/orders", {"item_id": 1001}, token)
                    began = time.perf_counter()
                    client.json("POST", "/_mock/clock/advance", {"seconds": 600})
                    times[config].append((time.perf_counter() - began) / orders * 1000)
                    client.close()
                finally:
                    server.stop()
                print(
                    f"  attempts {config:7} rules, run {run + 1}: "
                    f"{times[config][-1]:.3f} ms per settled, delivered order",
                    file=sys.stderr,
                )
    return times


def _sandbox(client: Client, api_key: str) -> tuple[str, str, str]:
    """A created sandbox with one rich account: (base path, bearer token, an order id)."""
    account = {"email": f"{api_key}@example.com", "api_key": api_key, "balance": 10**12}
    sandbox = client.json("POST", "/_mock/sandboxes", {"accounts": {"accounts": [account]}})
    base = "/" + sandbox["base_url"].split("//", 1)[1].split("/", 1)[1]
    token = client.json("POST", f"{base}/api/v1/auth/token/client", {"api_key": api_key})
    bearer = token["access_token"]
    order = client.json("POST", f"{base}/api/v1/orders", {"item_id": 1001}, bearer)
    return base, bearer, order["id"]


def bench_neighbour(pin: Placement, params: WrkParams, work: Path, rate: float) -> dict:
    """Sandbox B's lookups at a steady `PACE` per second (within its rate), alone and
    while a second wrk floods sandbox A's creation past its rate and its quota; fresh
    servers, alternating, medians."""
    results: dict[str, list] = {"quiet": [], "flooded": [], "flood": []}
    argv_extra = ["--sandbox-rate", str(rate), "--sandbox-max-orders", "1000"]
    for run in range(params.runs):
        for config in ("quiet", "flooded"):
            server = Server(sandbox_argv(pin, None) + argv_extra, f"neighbour-{config}", work)
            flood = None
            try:
                client = Client(server.url)
                a_base, a_token, _ = _sandbox(client, "ak_a")
                b_base, b_token, b_order = _sandbox(client, "ak_b")
                client.close()
                if config == "flooded":
                    seconds = params.warmup + params.duration + 2
                    flood = subprocess.Popen(
                        pin.load
                        + ["wrk", "-t1", f"-c{params.connections}", f"-d{round(seconds)}s"]
                        + ["--latency", "-s", str(BENCH / "create.lua")]
                        + [server.url + f"{a_base}/api/v1/orders"],
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        text=True,
                        env=os.environ | {"BENCH_TOKEN": a_token, "BENCH_PREFIX": f"a{run}"},
                    )
                    time.sleep(params.warmup)
                paced = subprocess.run(
                    pin.load
                    + [sys.executable, str(BENCH / "paced.py")]
                    + [server.url + f"{b_base}/api/v1/orders/{b_order}", "--token", b_token]
                    + ["--rate", str(PACE), "--seconds", str(params.duration)],
                    capture_output=True,
                    text=True,
                    check=True,
                    timeout=params.duration + 60,
                )
                measured = json.loads(paced.stdout)
                if flood is not None:
                    out, _ = flood.communicate(timeout=60)
                    results["flood"].append(parse_wrk(out))
            finally:
                if flood is not None and flood.poll() is None:
                    flood.kill()
                server.stop()
            results[config].append(measured)
            print(
                f"  neighbour {config:7} run {run + 1}: {measured['rate']:6.1f} req/s, "
                f"p99 {measured['p99_ms']:.2f} ms, not 200: {measured['not_200']}",
                file=sys.stderr,
            )
    return results


def render(sizing: dict, load: dict, attempts: dict, neighbour: dict, args, pin: Placement) -> str:
    facts = (
        f"**sizing**: {args.sandboxes} sandboxes, an order quota of {args.quota}, every "
        "order settled with its webhook delivered (receiver answering 200)"
    )
    error = sizing["full"] / sizing["predicted"] - 1
    lines = side.header("Hosting one server for many merchants", "hosting.py", pin, facts) + [
        "| measure | value | bar | result |",
        "|---|---|---|---|",
        f"| RSS of the idle server (`--webhook-deny-private`, an allow list) | "
        f"{sizing['idle']:.1f} MiB | | |",
        f"| an empty created sandbox ({EMPTY_SANDBOXES} created) | "
        f"{sizing['empty_kib']:.0f} KiB | | |",
        f"| the first full sandbox, with what the process allocates once ({args.quota} "
        f"orders: {sizing['idle']:.1f} -> {sizing['first']:.1f} MiB) | "
        f"{sizing['first'] - sizing['idle']:.1f} MiB | | |",
        f"| each further full sandbox (sandboxes 2 to {CALIBRATION}) | "
        f"{sizing['per_sandbox']:.2f} MiB | | |",
        f"| one order with its delivered webhook, by that | "
        f"{sizing['per_order_kib']:.2f} KiB | | |",
        f"| {args.sandboxes} full sandboxes ({sizing['seconds']:.0f} s), against first + "
        f"(N - 1) x each further = {sizing['predicted']:.1f} MiB | {sizing['full']:.1f} MiB "
        f"({error:+.1%}; {sizing['received']:,} webhooks received) | within "
        f"{BAR_PREDICTION:.0%} | {side.verdict(abs(error) <= BAR_PREDICTION)} |",
    ]
    what = "{title} with the rules against without"
    lines += side.ratio_rows(load, "without", "with", what, BAR_RATIO)
    extra = statistics.median(attempts["with"]) - statistics.median(attempts["without"])
    lines.append(
        f"| a webhook attempt to `localhost`, with the rules against without "
        f"({args.webhooks} per advance, ms per settled and delivered order: "
        f"{statistics.median(attempts['with']):.3f} vs "
        f"{statistics.median(attempts['without']):.3f}) | {extra:+.3f} ms | <= "
        f"{BAR_ATTEMPT_MS} ms | {side.verdict(extra <= BAR_ATTEMPT_MS)} |"
    )
    quiet_rate = statistics.median(m["rate"] for m in neighbour["quiet"])
    flooded_rate = statistics.median(m["rate"] for m in neighbour["flooded"])
    quiet_p99 = statistics.median(m["p99_ms"] for m in neighbour["quiet"])
    flooded_p99 = statistics.median(m["p99_ms"] for m in neighbour["flooded"])
    flood_rps = statistics.median(run.rps for run in neighbour["flood"])
    rate_ratio, p99_ratio = flooded_rate / quiet_rate, flooded_p99 / quiet_p99
    priority = "real-time" if all(m["realtime"] for m in neighbour["quiet"]) else "ordinary"
    lines += [
        f"| sandbox B's lookups at {PACE}/s while sandbox A's creation is flooded past its "
        f"rate ({RATE:g}/s) and quota by wrk ({flood_rps:,.0f} answers/s to A): rate "
        f"{flooded_rate:.1f} vs {quiet_rate:.1f} alone | {rate_ratio:.2f}x | >= "
        f"{BAR_NEIGHBOUR_RATE}x | {side.verdict(rate_ratio >= BAR_NEIGHBOUR_RATE)} |",
        f"| the same, B's p99 (paced client at {priority} priority): {flooded_p99:.2f} vs "
        f"{quiet_p99:.2f} ms alone | "
        f"{p99_ratio:.2f}x | <= {BAR_NEIGHBOUR_P99}x | "
        f"{side.verdict(p99_ratio <= BAR_NEIGHBOUR_P99)} |",
    ]
    steps = ", ".join(f"{value:.1f}" for value in sizing["rss"])
    lines += ["", f"RSS (MiB) idle, then after each full sandbox: {steps}", "", "Every run:", ""]
    for config in ("without", "with"):
        for endpoint in ("lookup", "create"):
            runs = ", ".join(f"{rps:,.0f}" for rps in load[config][endpoint])
            lines.append(f"- {endpoint}, {config} the rules (req/s): {runs}")
        runs = ", ".join(f"{ms:.3f}" for ms in attempts[config])
        lines.append(f"- webhook attempts, {config} the rules (ms per order): {runs}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = side.arguments(__doc__)
    parser.add_argument("--quota", type=int, default=20000)
    parser.add_argument("--sandboxes", type=int, default=10)
    parser.add_argument("--webhooks", type=int, default=2000)
    args = parser.parse_args()
    pin = placement()
    params = side.wrk_params(args)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        accounts = write_accounts(work / "accounts.yaml")
        sizing = bench_sizing(pin, work, args.quota, args.sandboxes)
        load = bench_rules_load(pin, params, accounts, work)
        attempts = bench_attempts(pin, work, args.webhooks, args.runs)
        neighbour = bench_neighbour(pin, params, work, RATE)
    side.publish(render(sizing, load, attempts, neighbour, args, pin), "HOSTING.md", args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
