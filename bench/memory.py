"""RSS of a sandbox server holding orders created as a client creates them
(bench/README.md, "What is measured, and how").

    bash bench/run.sh --only memory [--orders 100000]      # this part only, 2-3 minutes
    python bench/memory.py create URL TOKEN COUNT PREFIX    # the client alone

The server runs as the CLI runs it (`sandbox_argv`: manual clock, seed 1, one account
with a huge balance). A client process (pinned beside wrk) exchanges nothing but the
one bearer token it is given and creates COUNT orders over HTTP, 16 requests in flight,
each with its own `merchant_order_id`. VmRSS of the server, from /proc/PID/status:
idle (started, one token issued), with every order pending, and after one
`POST /_mock/clock/advance` has settled them all. Two configurations: an account without
a webhook URL, and one whose URL points at `receiver.py` answering 200 (the advance
returns once every webhook was delivered; the receiver's count is checked).
"""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from processes import (
    API_KEY,
    BENCH,
    PYTHON,
    Client,
    Placement,
    Server,
    receiver,
    sandbox_argv,
    write_accounts,
)

IN_FLIGHT = 16
#: Fulfillment of the default scenario ends at 3 s of virtual time; this settles all.
SETTLE_SECONDS = 5
#: Time for the server to flush its access log and finish answering before a reading.
QUIET_SECONDS = 0.5


def status_kib(pid: int, name: str) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{name} not in /proc/{pid}/status")


def rss_mib(pid: int) -> float:
    time.sleep(QUIET_SECONDS)
    return status_kib(pid, "VmRSS") / 1024


def measure(pin: Placement, work: Path, orders: int, *, webhooks: bool) -> dict[str, Any]:
    """One configuration: a fresh server, `orders` created over HTTP, then settled."""
    name = "memory-webhooks" if webhooks else "memory-plain"
    if not webhooks:
        return _measure(pin, work, name, orders, None)
    with receiver(pin, 200, work) as url:
        return _measure(pin, work, name, orders, url)


def _measure(
    pin: Placement, work: Path, name: str, orders: int, hook_url: str | None
) -> dict[str, Any]:
    accounts = write_accounts(work / f"accounts-{name}.yaml", hook_url)
    server = Server(sandbox_argv(pin, accounts), name, work)
    pid = server.proc.pid
    try:
        client = Client(server.url)
        token = client.json("POST", "/api/v1/auth/token/client", {"api_key": API_KEY})
        bearer = token["access_token"]
        idle = rss_mib(pid)
        started = time.perf_counter()
        argv = pin.load + [PYTHON, str(BENCH / "memory.py"), "create", server.url, bearer]
        subprocess.run(argv + [str(orders), name], check=True, timeout=1800)
        create_s = time.perf_counter() - started
        pending = rss_mib(pid)
        started = time.perf_counter()
        client.json("POST", "/_mock/clock/advance", {"seconds": SETTLE_SECONDS})
        settle_s = time.perf_counter() - started
        settled = rss_mib(pid)
        result = {
            "orders": orders,
            "webhooks": hook_url is not None,
            "idle_mib": idle,
            "pending_mib": pending,
            "settled_mib": settled,
            "peak_mib": status_kib(pid, "VmHWM") / 1024,
            "create_s": create_s,
            "settle_s": settle_s,
        }
        # The last order shows how they all ended (one scenario, one settling advance).
        (last,) = client.json("GET", "/_mock/orders?merchant_order_id=last")["orders"]
        result["status"] = last["status"]
        result["webhook"] = (last["webhook"] or {}).get("status")
        if hook_url is not None:
            result["received"] = _received(hook_url)
            if result["received"] != orders:
                raise RuntimeError(f"{result['received']} of {orders} webhooks received")
        client.close()
        return result
    finally:
        server.stop()


def _received(hook_url: str) -> int:
    count_client = Client(hook_url.removesuffix("/hooks"))
    try:
        return count_client.json("GET", "/count")["received"]
    finally:
        count_client.close()


# ---------------------------------------------------------------------------------------
# the client process


async def create_orders(url: str, token: str, count: int, prefix: str) -> None:
    """`count` orders, IN_FLIGHT at a time; the last one's reference is `last`."""
    import aiohttp

    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    numbers = itertools.count()

    async def worker(session: aiohttp.ClientSession) -> None:
        while (index := next(numbers)) < count:
            ref = "last" if index == count - 1 else f"{prefix}-{index}"
            body = b'{"item_id": 1001, "merchant_order_id": "%s"}' % ref.encode()
            async with session.post(f"{url}/api/v1/orders", data=body) as response:
                if response.status != 201:
                    raise RuntimeError(f"order {index}: {response.status} {await response.text()}")
                await response.read()

    connector = aiohttp.TCPConnector(limit=IN_FLIGHT)
    async with aiohttp.ClientSession(headers=headers, connector=connector) as session:
        await asyncio.gather(*(worker(session) for _ in range(IN_FLIGHT)))


def main() -> None:
    if len(sys.argv) == 6 and sys.argv[1] == "create":
        _, _, url, token, count, prefix = sys.argv
        asyncio.run(create_orders(url, token, int(count), prefix))
        return
    raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
