"""In-process measurements, each run in its own (pinned) process by `bench.py`:

    python bench/inproc.py rss|advance|webhooks ARGS_JSON

prints one JSON line. They drive the `Sandbox` built by `create_app` directly (no HTTP
in front), through the same `create_order` and `advance` paths the API uses; webhook
attempts are real HTTP posts to a receiver process (`receiver.py`).
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
from typing import Any

#: The order settles at 3 s; webhook attempts at +0, +60, +120, +180 s (4 in all, spec 6).
LIFE_SECONDS = 183.0


def _status_kib(name: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{name} not in /proc/self/status")


def rss_mib() -> float:
    return _status_kib("VmRSS") / 1024


def _settings(accounts: str) -> Any:
    from mock_server.config import Settings

    return Settings(clock="manual", seed=1, accounts=accounts, start_time=1_767_225_600.0)


async def measure_rss(args: dict[str, Any]) -> dict[str, Any]:
    """Hold N orders created through Sandbox.create_order; RSS before and after settling."""
    from mock_server.app import create_app
    from mock_server.edge.jsonio import parse_json

    count = args["orders"]
    gc.collect()
    after_import = rss_mib()
    app = create_app(_settings(args["accounts"]))
    sandbox = app.sandbox
    account = next(iter(sandbox.state.accounts.values()))
    gc.collect()
    idle = rss_mib()
    started = time.perf_counter()
    for index in range(count):
        body = parse_json(b'{"item_id": 1001, "merchant_order_id": "rss-%d"}' % index)
        sandbox.create_order(account, body)
    create_s = time.perf_counter() - started
    gc.collect()
    pending = rss_mib()
    started = time.perf_counter()
    await sandbox.advance(5)
    settle_s = time.perf_counter() - started
    statuses = {o.status for o in sandbox.state.orders.values()}
    gc.collect()
    settled = rss_mib()
    return {
        "orders": len(sandbox.state.orders),
        "statuses": sorted(statuses),
        "after_import_mib": after_import,
        "idle_mib": idle,
        "pending_mib": pending,
        "settled_mib": settled,
        "peak_mib": _status_kib("VmHWM") / 1024,
        "create_s": create_s,
        "settle_s": settle_s,
    }


async def measure_advance(args: dict[str, Any]) -> dict[str, Any]:
    """advance(183 s) through an order's life; every webhook attempt answered 500."""
    from mock_server.app import create_app
    from mock_server.config import load_startup

    settings = _settings(args["accounts"])
    startup = load_startup(settings)
    repeats = args["repeats"]

    async def one_life(app: Any, tag: str) -> tuple[float, list[int | None]]:
        sandbox = app.sandbox
        account = next(iter(sandbox.state.accounts.values()))
        order = sandbox.create_order(account, {"item_id": 1001, "merchant_order_id": tag})
        started = time.perf_counter()
        await sandbox.advance(LIFE_SECONDS)
        elapsed = time.perf_counter() - started
        (delivery,) = sandbox.deliveries(order.id)
        if order.status != "completed" or delivery.status != "failed":
            raise RuntimeError(f"unexpected end: {order.status}, webhook {delivery.status}")
        return elapsed, [a.status_code for a in delivery.attempts]

    fresh: list[float] = []
    first = 0.0
    attempts: list[int | None] = []
    for index in range(repeats + 1):  # a fresh app each time, as a pytest test gets
        app = create_app(settings, startup=startup)
        elapsed, attempts = await one_life(app, f"fresh-{index}")
        await app.sandbox.webhooks.close()
        if index == 0:
            first = elapsed  # pays one-off imports (faker on the first settlement)
        else:
            fresh.append(elapsed)
    app = create_app(settings, startup=startup)
    warm: list[float] = []
    for index in range(repeats + 1):  # one app, one pooled client session
        elapsed, _ = await one_life(app, f"warm-{index}")
        if index:
            warm.append(elapsed)
    await app.sandbox.webhooks.close()
    return {"first_s": first, "fresh_s": fresh, "warm_s": warm, "attempts": attempts}


async def measure_webhooks(args: dict[str, Any]) -> dict[str, Any]:
    """N orders settle at the same instant; time the advance that delivers them all."""
    from mock_server.app import create_app

    app = create_app(_settings(args["accounts"]))
    sandbox = app.sandbox
    account = next(iter(sandbox.state.accounts.values()))
    count = args["orders"]
    rounds: list[dict[str, float]] = []
    for round_index in range(args["rounds"] + 1):  # round 0 warms up connections
        orders = [
            sandbox.create_order(
                account, {"item_id": 1001, "merchant_order_id": f"wh-{round_index}-{i}"}
            )
            for i in range(count)
        ]
        await sandbox.advance(2.999)  # up to just before they all settle at 3 s
        started = time.perf_counter()
        await sandbox.advance(0.002)  # settle all N and deliver N webhooks
        elapsed = time.perf_counter() - started
        delivered = sum(
            1 for o in orders for d in sandbox.deliveries(o.id) if d.status == "delivered"
        )
        if delivered != count:
            raise RuntimeError(f"{delivered} of {count} webhooks delivered")
        if round_index:
            rounds.append({"seconds": elapsed, "per_s": count / elapsed})
    await app.sandbox.webhooks.close()
    return {"orders": count, "rounds": rounds}


INPROC = {"rss": measure_rss, "advance": measure_advance, "webhooks": measure_webhooks}


def main() -> None:
    kind, args = sys.argv[1], json.loads(sys.argv[2])
    print(json.dumps(asyncio.run(INPROC[kind](args))))


if __name__ == "__main__":
    main()
