"""A client at a fixed pace, for measuring one sandbox while another is flooded.

    python bench/paced.py URL --token T --rate 50 --seconds 5

GETs URL with `Authorization: Bearer T` at `--rate` requests per second for `--seconds`
(each request started on its own schedule, not after the previous answer, so a slow
server shows as latency, not as a slower client), then prints one JSON line: the
achieved rate, p50 and p99 latency in ms, how many answers were not 200, and whether it
ran at a real-time priority.

It asks for a real-time priority (SCHED_FIFO; root or CAP_SYS_NICE) so that the load it
shares a CPU with, wrk flooding the same server, cannot delay it: a client waiting for
the CPU after its answer has arrived measures the scheduler, not the server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time

import aiohttp


async def run(url: str, token: str, rate: float, seconds: float) -> dict[str, float]:
    latencies: list[float] = []
    bad = 0

    async def one(session: aiohttp.ClientSession) -> None:
        nonlocal bad
        began = time.perf_counter()
        async with session.get(url, headers={"Authorization": f"Bearer {token}"}) as response:
            await response.read()
            if response.status != 200:
                bad += 1
        latencies.append((time.perf_counter() - began) * 1000)

    async with aiohttp.ClientSession() as session:
        await one(session)  # a connection open before the clock starts
        latencies.clear()
        tasks = []
        start = time.perf_counter()
        count = int(rate * seconds)
        for index in range(count):
            delay = start + index / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(session)))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - start
    ordered = sorted(latencies)
    return {
        "rate": len(latencies) / elapsed,
        "p50_ms": statistics.median(ordered),
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        "not_200": bad,
    }


def realtime() -> bool:
    """This process at a real-time priority, when the system allows it."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    except (AttributeError, PermissionError, OSError):
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--token", required=True)
    parser.add_argument("--rate", type=float, default=50)
    parser.add_argument("--seconds", type=float, default=5)
    args = parser.parse_args()
    fifo = realtime()
    measured = asyncio.run(run(args.url, args.token, args.rate, args.seconds))
    print(json.dumps(measured | {"realtime": fifo}))


if __name__ == "__main__":
    main()
