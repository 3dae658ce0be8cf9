"""The real clock (`--clock real`, the CLI default): virtual time follows wall time,
`--time-scale` times faster, and due work runs by itself. The one place tests wait on
wall time, by necessity; a large time scale keeps each wait to milliseconds."""

from __future__ import annotations

import asyncio
import time

from mock_server.clock import RealClock
from mock_server.scheduler import Scheduler
from tests.conftest import login

SCALE = 2000.0  # an order's 3-second happy path takes 1.5 ms


async def _until(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not await predicate():
        assert time.monotonic() < deadline, "the real clock did not get there"
        await asyncio.sleep(0.005)


async def test_orders_settle_by_themselves_under_a_real_clock(make_client):
    merchant = await login(await make_client(clock="real", time_scale=SCALE, start_time=None))
    status, order = await merchant.create({"item_id": 1001, "quantity": 2})
    assert status == 201

    async def completed() -> bool:
        return (await merchant.order(order["id"]))["status"] == "completed"

    await _until(completed)
    settled = await merchant.order(order["id"])
    assert len(settled["codes"]) == 2
    clock = await (await merchant.client.get("/_mock/clock")).json()
    assert clock["mode"] == "real" and clock["time_scale"] == SCALE


async def test_advance_jumps_a_real_clock_forward_and_runs_what_falls_due(make_client):
    merchant = await login(await make_client(clock="real", time_scale=1.0, start_time=None))
    _, order = await merchant.create({"item_id": 1001}, **{"X-Mock-Scenario": "slow_fulfillment"})
    await merchant.advance(400)  # 330 s of fulfillment, no waiting
    assert (await merchant.order(order["id"]))["status"] == "completed"


async def test_a_job_scheduled_while_the_loop_sleeps_wakes_it(make_client):
    merchant = await login(await make_client(clock="real", time_scale=SCALE, start_time=None))
    await asyncio.sleep(0.05)  # the scheduler loop is idle, waiting for work
    _, order = await merchant.create({"item_id": 1001})

    async def completed() -> bool:
        return (await merchant.order(order["id"]))["status"] == "completed"

    await _until(completed)


async def test_only_a_job_due_first_wakes_the_sleeping_loop(monkeypatch):
    """A job due after the first one leaves the loop asleep (it wakes for the first
    anyway); one due before it wakes the loop, which then runs it on time."""
    clock = RealClock(time.time(), time_scale=1.0)
    scheduler = Scheduler(clock)
    turns = 0
    run_due = scheduler.run_due

    async def counted() -> None:
        nonlocal turns
        turns += 1
        await run_due()

    monkeypatch.setattr(scheduler, "run_due", counted)
    ran: list[str] = []
    loop = asyncio.create_task(scheduler.run_forever())
    try:
        scheduler.call_later(3600, ran.append, "an hour on", owner="a")
        for _ in range(5):
            await asyncio.sleep(0)
        asleep = turns
        for minutes in range(1, 200):
            scheduler.call_later(3600 + minutes * 60, ran.append, "later", owner="a")
        for _ in range(5):
            await asyncio.sleep(0)
        assert turns == asleep
        scheduler.call_later(0, ran.append, "now", owner="a")

        async def ran_now() -> bool:
            return ran == ["now"]

        await _until(ran_now)
        assert turns == asleep + 1
    finally:
        loop.cancel()
