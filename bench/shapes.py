"""What production's shapes (docs/shapes.md) cost the merchant API: one command.

    python bench/shapes.py [--runs 2] [--duration 6] [--warmup 2] [--no-write]

Order lookup and order creation with wrk, as clients use the API: a bearer token from
the token exchange, a `merchant_order_id` on every creation ([create.lua](create.lua)),
the account's webhook URL a receiver ([receiver.py](receiver.py), answering 200), and
a real clock running 10 times faster (`--clock real --time-scale 10`), so that each
created order settles and its event is delivered (and shaped) within the measured run.
The lookup is of an order already completed, whose webhook was delivered, so its
`webhook` object is shaped too.

The server is started as the CLI starts it, with `--shapes bench/shapes.yaml`: ten
rules over `token`, `balance`, `order`, `order.webhook` and `event` (add const, copy,
uuid and now; values; as decimal_string; drop). Each run starts one server per
endpoint and measures it with the shapes and without (`PUT /_mock/shapes` with an empty
mapping, which leaves every byte as a server without `--shapes` sends it), so that each
comparison is made within one process (a process's memory layout alone moves the rate by
up to 15% from one server to the next). Each configuration is measured in two legs of
half the duration, in mirrored order (run 1: none, shapes, shapes, none; run 2: shapes,
none, none, shapes): a creation leg leaves its orders in the process, and each later
leg runs ~2% slower than the one before, which one leg each in a fixed order would
charge to whichever configuration came second. Before measuring, the harness checks that the shapes
apply (the token's `expires_in`, the order's `item_id`, its webhook's `url` and
`DELIVERED`, a refusal's `request_id`, the event's `sent_at`) and that without them they
do not. The order's rules make the same value each time (as `calibrate` writes for
fields production echoes), so a lookup's shaped answer is kept while the order stays as
it is; a `uuid` rule on the order would draw anew for every answer (bench/SHAPES.md).
Bar: with the shapes, >= 0.9x the rate without.

Beside the rates, the server's own CPU time per request (user + system, /proc/PID/stat
over each measured leg): what shaping costs the server itself, apart from how much of
the shared machine the load generator got. Writes `bench/SHAPES.md` unless `--no-write`,
keeping what the file holds after its `NOTES` line (where the time goes, and
`compare --shapes`, measured by `bench/compare.py`).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import side
import yaml
from report import machine_info

from bench import (
    BENCH,
    PYTHON,
    Client,
    Placement,
    Server,
    WrkParams,
    placement,
    process_cpu,
    receiver,
    run_wrk,
    write_accounts,
)

BAR = 0.9
SHAPES_FILE = BENCH / "shapes.yaml"
#: Virtual time runs this much faster than wall time: an order settles (3 virtual
#: seconds) and its event is sent 0.3 s after its creation, within the measured leg.
TIME_SCALE = 10
CONFIGS = ("none", "shapes")
#: SHAPES.md's line after which its hand-written notes begin; a run keeps them.
NOTES = "<!-- notes: kept by bench/shapes.py -->"


def server_argv(pin: Placement, accounts: Path) -> list[str]:
    argv = pin.server + [PYTHON, "-m", "mock_server", "--port", "0", "--seed", "1"]
    argv += ["--clock", "real", "--time-scale", str(TIME_SCALE)]
    return argv + ["--accounts", str(accounts), "--shapes", str(SHAPES_FILE)]


def set_shapes(client: Client, config: str) -> None:
    rules = yaml.safe_load(SHAPES_FILE.read_text())["shapes"] if config == "shapes" else {}
    client.json("PUT", "/_mock/shapes", {"shapes": rules})


def prepare(client: Client) -> tuple[str, str]:
    """A bearer token and a completed order whose event was delivered; checks that the
    shapes apply to each kind the bench meets, and that without them nothing changes."""
    token = client.json("POST", "/api/v1/auth/token/client", {"api_key": "ak_bench"})
    assert token["expires_in"] == 7200, token
    bearer = token["access_token"]
    created = client.json(
        "POST", "/api/v1/orders", {"item_id": 1001, "merchant_order_id": "bench-prepare"}, bearer
    )
    assert created["item_id"] == 1001 and "source" not in created, created
    order_id = created["id"]
    deadline = time.monotonic() + 10
    while True:
        order = client.json("GET", f"/api/v1/orders/{order_id}", None, bearer)
        if (order.get("webhook") or {}).get("status") == "DELIVERED":
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"the order's event was not delivered: {order}")
        time.sleep(0.1)
    assert order["webhook"]["url"].endswith("/hooks"), order
    status, _, raw = client.call("GET", "/api/v1/orders/not-an-order", None, bearer)
    missing = json.loads(raw)
    assert status == 404 and len(missing["request_id"]) == 36, missing
    balance = client.json("GET", "/api/v1/account/balance", None, bearer)
    assert isinstance(balance["balance"], str) and balance["currency"] == "EUR", balance
    deliveries = client.json("GET", f"/_mock/webhooks?order_id={order_id}")["deliveries"]
    event = json.loads(deliveries[0]["body"])
    assert "sent_at" in event and "item_name" not in event, event
    set_shapes(client, "none")
    plain = client.json("GET", f"/api/v1/orders/{order_id}", None, bearer)
    assert "item_id" not in plain and plain["webhook"]["status"] == "delivered", plain
    return bearer, order_id


def bench(pin: Placement, params: WrkParams, accounts: Path, work: Path):
    """Requests/s and server CPU per request (us), by configuration and endpoint; each
    run's value per configuration is its one leg in that run's process."""
    results = {c: {"lookup": [], "create": []} for c in CONFIGS}
    cpu = {c: {"lookup": [], "create": []} for c in CONFIGS}
    for run in range(params.runs):
        order = CONFIGS if run % 2 == 0 else CONFIGS[::-1]
        legs = order + order[::-1]
        for endpoint, script in (("lookup", "lookup.lua"), ("create", "create.lua")):
            server = Server(server_argv(pin, accounts), f"shapes-{endpoint}", work)
            try:
                client = Client(server.url)
                token, order_id = prepare(client)
                path = "/api/v1/orders" + (f"/{order_id}" if endpoint == "lookup" else "")
                env = {"BENCH_TOKEN": token, "BENCH_PREFIX": f"warm{run}"}
                run_wrk(pin, params, server.url + path, script, env, params.warmup)
                rates: dict[str, list[float]] = {c: [] for c in CONFIGS}
                spent = dict.fromkeys(CONFIGS, 0.0)
                requests = dict.fromkeys(CONFIGS, 0)
                for leg, config in enumerate(legs):
                    set_shapes(client, config)
                    time.sleep(1)  # the previous leg's last events are sent
                    env["BENCH_PREFIX"] = f"run{run}-{leg}"
                    before = process_cpu(server.proc.pid)
                    measured = run_wrk(
                        pin, params, server.url + path, script, env, params.duration / 2
                    )
                    spent[config] += process_cpu(server.proc.pid) - before
                    if measured.bad_status or measured.socket_errors:
                        raise RuntimeError(
                            f"{endpoint} {config}: {measured.bad_status} non-2xx answers, "
                            f"{measured.socket_errors} socket errors"
                        )
                    rates[config].append(measured.rps)
                    requests[config] += measured.requests
                for config in CONFIGS:
                    results[config][endpoint].append(statistics.mean(rates[config]))
                    cpu[config][endpoint].append(1e6 * spent[config] / requests[config])
                client.close()
            finally:
                server.stop()
            print(
                f"  {endpoint:6} run {run + 1}: "
                + ", ".join(
                    f"{c} {results[c][endpoint][-1]:,.0f} req/s "
                    f"({cpu[c][endpoint][-1]:.0f} us CPU/request)"
                    for c in CONFIGS
                ),
                file=sys.stderr,
            )
    return results, cpu


def describe(params: WrkParams) -> str:
    return (
        f"wrk -t{params.threads} -c{params.connections}, legs of "
        f"{max(1, round(params.duration / 2))} s; "
        f"{params.runs} runs, each a fresh server per endpoint after a {params.warmup:g} s "
        "warm-up run, measured without and with the shapes in two legs each of half the "
        "duration, in mirrored order (none, shapes, shapes, none; then shapes first)"
    )


def render(results: dict, cpu: dict, pin: Placement, params: WrkParams) -> str:
    lines = side.header(
        "Production's shapes and the merchant API",
        "shapes.py",
        pin,
        *(
            f"**{name}**: {value}"
            for name, value in machine_info(pin.note, describe(params))
            if name not in ("date", "placement")
        ),
        f"**shapes**: [shapes.yaml](shapes.yaml), 10 rules; the server started with "
        f"`--clock real --time-scale {TIME_SCALE} --shapes bench/shapes.yaml`, the "
        "account's webhook URL a receiver answering 200",
    )
    lines += [
        "| measure | with shapes | none | ratio | bar | result |",
        "|---|---|---|---|---|---|",
    ]
    for endpoint, title in (("lookup", "order lookup"), ("create", "order creation")):
        ratios = [
            s / n
            for s, n in zip(results["shapes"][endpoint], results["none"][endpoint], strict=True)
        ]
        shaped = statistics.median(results["shapes"][endpoint])
        plain = statistics.median(results["none"][endpoint])
        ratio = statistics.median(ratios)
        spread = f" ({min(ratios):.2f}-{max(ratios):.2f})" if len(ratios) > 1 else ""
        lines.append(
            f"| {title}: req/s; ratio the median of each run's own{spread} | {shaped:,.0f} | "
            f"{plain:,.0f} | {ratio:.2f}x | >= {BAR}x | {side.verdict(ratio >= BAR)} |"
        )
    for endpoint, title in (("lookup", "order lookup"), ("create", "order creation")):
        shaped = statistics.median(cpu["shapes"][endpoint])
        plain = statistics.median(cpu["none"][endpoint])
        lines.append(
            f"| {title}: server CPU per request, us (capacity ratio: none / with) | "
            f"{shaped:.0f} | {plain:.0f} | {plain / shaped:.2f}x | | |"
        )
    lines += ["", "Every run (req/s; server CPU per request, us):", ""]
    for config in CONFIGS:
        for endpoint in ("lookup", "create"):
            runs = ", ".join(
                f"{rps:,.0f} ({us:.0f})"
                for rps, us in zip(results[config][endpoint], cpu[config][endpoint], strict=True)
            )
            lines.append(f"- {endpoint}, {config}: {runs}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = side.arguments(__doc__)
    parser.set_defaults(runs=2, duration=6)
    args = parser.parse_args()
    pin = placement()
    params = side.wrk_params(args)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with receiver(pin, 200, work) as hooks:
            accounts = write_accounts(work / "accounts.yaml", hooks)
            results, cpu = bench(pin, params, accounts, work)
    table = render(results, cpu, pin, params)
    written = BENCH / "SHAPES.md"
    kept = written.read_text(encoding="utf-8") if written.exists() else ""
    if NOTES in kept:
        table += "\n" + NOTES + kept.split(NOTES, 1)[1]
    side.publish(table, "SHAPES.md", args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
