"""Webhooks through `mock-server listen` (docs/webhooks.md): one command.

    python bench/listen.py [--attempts 300] [--duration 5] [--warmup 2] [--runs 3]
                           [--no-write]

Measures, with the server on CPU 0 and the receiver, the listener and wrk on CPU 1:

* an attempt's time, through a listener against direct to the same receiver, same run:
  `--attempts` orders, one at a time, each settled by an advance of the manual clock,
  and the attempt's own `duration_ms` read back (direct: the POST to the receiver and its
  answer; through the listener: the frame to the listener, its POST to the receiver,
  the receiver's answer and the listener's report) -- goal: <= 5 ms more at the median;
* the merchant API while a listener forwards: order lookups, then creations, with wrk
  (as an account without a webhook URL) while a second account's orders are created at
  50 a second and settle (real clock, x10), each with a webhook forwarded through a
  listener connected for that account, against the same with no listener (nothing
  forwarded) -- bar: >= 0.95x each.

Writes the table to bench/LISTEN.md unless --no-write.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import side

from bench import (
    PYTHON,
    Client,
    Placement,
    Server,
    WrkParams,
    placement,
    receiver,
    run_wrk,
    sandbox_argv,
    write_accounts,
)

#: Orders created a second, by another account, while the merchant API is measured.
PACE = 50
PACED_KEY = "ak_paced"
GOAL_ADDED_MS = 5.0
BAR_RATE = 0.95


class Listener:
    """`mock-server listen` as a process, until it prints `ready`."""

    def __init__(self, pin: Placement, base_url: str, forward_to: str, work: Path) -> None:
        argv = pin.load + [PYTHON, "-m", "mock_server", "listen", "--base-url", base_url]
        argv += ["--forward-to", forward_to]
        self.log = open(work / "listener.log", "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        if line.strip() != "ready":
            raise RuntimeError(f"the listener did not start: {line!r}")
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()  # type: ignore[union-attr]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        self.log.close()


def _token(client: Client) -> str:
    answer = client.json("POST", "/api/v1/auth/token/client", {"api_key": "ak_bench"})
    return answer["access_token"]


def bench_attempts(pin: Placement, work: Path, attempts: int, runs: int) -> dict:
    durations: dict[str, list[float]] = {"direct": [], "listener": []}
    with receiver(pin, 200, work) as hook:
        hooked = write_accounts(work / "hooked.yaml", webhook_url=hook)
        plain = write_accounts(work / "plain.yaml")
        for run in range(runs):
            for config in ("direct", "listener"):
                accounts = hooked if config == "direct" else plain
                server = Server(sandbox_argv(pin, accounts), f"attempts-{config}", work)
                listener = Listener(pin, server.url, hook, work) if config == "listener" else None
                try:
                    client = Client(server.url)
                    token = _token(client)
                    for _ in range(attempts):
                        order = client.json("POST", "/api/v1/orders", {"item_id": 1001}, token)
                        client.json("POST", "/_mock/clock/advance", {"seconds": 5})
                        found = client.json("GET", f"/_mock/webhooks?order_id={order['id']}")
                        (attempt,) = found["deliveries"][0]["attempts"]
                        assert attempt["status_code"] == 200, attempt
                        durations[config].append(attempt["duration_ms"])
                    client.close()
                finally:
                    if listener:
                        listener.stop()
                    server.stop()
                print(
                    f"  attempts {config:8} run {run + 1}: median "
                    f"{statistics.median(durations[config][-attempts:]):.2f} ms",
                    file=sys.stderr,
                )
    return durations


def _create_at_pace(url: str, token: str, stop: threading.Event) -> None:
    client = Client(url)
    began, count = time.perf_counter(), 0
    while not stop.is_set():
        client.json("POST", "/api/v1/orders", {"item_id": 1001}, token)
        count += 1
        delay = began + count / PACE - time.perf_counter()
        if delay > 0:
            stop.wait(delay)
    client.close()


def _two_accounts(path: Path) -> Path:
    """The paced account first (a listener without `--account` listens for it), then
    the account wrk calls as, which has no webhook URL: its own orders send nothing."""
    lines = ["accounts:"]
    for email, key in (("paced@example.com", PACED_KEY), ("bench@example.com", "ak_bench")):
        lines += [
            f"  - email: {email}",
            f"    api_key: {key}",
            "    balance: 1000000000000",
            "    webhook_secret: whsec_bench",
        ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def bench_rates(pin: Placement, params: WrkParams, work: Path) -> dict:
    rates = {config: {"lookup": [], "create": []} for config in ("none", "listener")}
    forwarded: list[int] = []
    accounts = _two_accounts(work / "two.yaml")
    with receiver(pin, 200, work) as hook:
        for run in range(params.runs):
            for config in ("none", "listener"):
                for endpoint, script in (("lookup", "lookup.lua"), ("create", "create.lua")):
                    argv = sandbox_argv(pin, accounts)
                    argv[argv.index("manual")] = "real"
                    server = Server(argv + ["--time-scale", "10"], f"rates-{config}", work)
                    listener = (
                        Listener(pin, server.url, hook, work) if config == "listener" else None
                    )
                    stop = threading.Event()
                    try:
                        client = Client(server.url)
                        token = _token(client)
                        paced = client.json(
                            "POST", "/api/v1/auth/token/client", {"api_key": PACED_KEY}
                        )["access_token"]
                        order = client.json("POST", "/api/v1/orders", {"item_id": 1001}, token)
                        client.close()
                        creator = threading.Thread(
                            target=_create_at_pace, args=(server.url, paced, stop), daemon=True
                        )
                        creator.start()
                        url = f"{server.url}/api/v1/orders"
                        url += f"/{order['id']}" if endpoint == "lookup" else ""
                        env = {"BENCH_TOKEN": token, "BENCH_PREFIX": f"warm{run}"}
                        run_wrk(pin, params, url, script, env, params.warmup)
                        env["BENCH_PREFIX"] = f"run{run}"
                        measured = run_wrk(pin, params, url, script, env, params.duration)
                        stop.set()
                        creator.join()
                        if listener:
                            check = Client(server.url)
                            hooks = check.json("GET", "/_mock/webhooks")["deliveries"]
                            check.close()
                            forwarded.append(
                                sum(1 for d in hooks for a in d["attempts"] if a.get("via"))
                            )
                    finally:
                        stop.set()
                        if listener:
                            listener.stop()
                        server.stop()
                    rates[config][endpoint].append(measured.rps)
                    print(
                        f"  {endpoint:6} {config:8} run {run + 1}: {measured.rps:8.0f} req/s",
                        file=sys.stderr,
                    )
    return {"rates": rates, "forwarded": forwarded}


def render(durations: dict, rates: dict, args, pin: Placement) -> str:
    lines = side.header(
        "Webhooks through `mock-server listen`",
        "listen.py",
        pin,
        f"**attempts**: {args.attempts} a run, one at a time, {args.runs} runs",
        f"**rates**: wrk, {args.connections} connections, {args.duration:g} s after "
        f"{args.warmup:g} s, while another account's {PACE} orders/s are created and settle "
        "(real clock x10)",
    )
    direct, listened = durations["direct"], durations["listener"]

    def p99(values: list[float]) -> float:
        return sorted(values)[int(len(values) * 0.99)]

    added = statistics.median(listened) - statistics.median(direct)
    lines += [
        "| measure | value | goal or bar | verdict |",
        "|---|---|---|---|",
        f"| an attempt, direct: median {statistics.median(direct):.2f} ms, p99 "
        f"{p99(direct):.2f} ms; through the listener: median "
        f"{statistics.median(listened):.2f} ms, p99 {p99(listened):.2f} ms | "
        f"+{added:.2f} ms at the median | <= {GOAL_ADDED_MS} ms | "
        f"{side.verdict(added <= GOAL_ADDED_MS)} |",
    ]
    load = rates["rates"]
    forwarded = statistics.median(rates["forwarded"])
    what = "{title} while a listener forwards " + f"({forwarded:,.0f} attempts in a run) vs none"
    lines += side.ratio_rows(load, "none", "listener", what, BAR_RATE)
    lines += side.every_run(load, ("none", "listener"))
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = side.arguments(__doc__)
    parser.add_argument("--attempts", type=int, default=300)
    parser.set_defaults(runs=3)
    args = parser.parse_args()
    pin = placement()
    params = side.wrk_params(args)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        durations = bench_attempts(pin, work, args.attempts, args.runs)
        rates = bench_rates(pin, params, work)
    side.publish(render(durations, rates, args, pin), "LISTEN.md", args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
