"""Virtual time and the timer heap, tested without a server (docs/control-api.md, "Clock")."""

from __future__ import annotations

import asyncio
import math
import random
import re

import pytest

from mock_server import clock as clock_module
from mock_server.clock import (
    ClockError,
    ManualClock,
    RealClock,
    iso,
    make_clock,
    parse_iso,
    quantize,
)
from mock_server.scheduler import Scheduler

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z
ISO_FORMAT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


class FakeMonotonic:
    """Stands in for `time.monotonic` so real-clock tests never wait on wall time."""

    def __init__(self, value: float = 500.0) -> None:
        self.value = value

    def __call__(self) -> float:
        return self.value


@pytest.fixture
def wall(monkeypatch: pytest.MonkeyPatch) -> FakeMonotonic:
    fake = FakeMonotonic()
    monkeypatch.setattr(clock_module.time, "monotonic", fake)
    return fake


def make_scheduler(start: float = START) -> tuple[ManualClock, Scheduler]:
    clock = ManualClock(start)
    return clock, Scheduler(clock)


# -- ManualClock ----------------------------------------------------------------------


def test_manual_clock_stands_still_while_wall_time_passes(wall: FakeMonotonic) -> None:
    clock = ManualClock(START)
    first = clock.now()
    wall.value += 3600
    assert clock.now() == first == START


def test_manual_clock_advance_moves_forward_and_returns_new_time() -> None:
    clock = ManualClock(START)
    assert clock.advance(2.5) == START + 2.5
    assert clock.now() == START + 2.5


def test_manual_clock_advance_by_zero_is_allowed() -> None:
    clock = ManualClock(START)
    assert clock.advance(0) == START


def test_manual_clock_refuses_to_advance_backwards_and_stays_put() -> None:
    clock = ManualClock(START)
    with pytest.raises(ClockError):
        clock.advance(-1)
    assert clock.now() == START


def test_manual_clock_move_to_refuses_the_past() -> None:
    clock = ManualClock(START)
    clock.move_to(START + 10)
    with pytest.raises(ClockError):
        clock.move_to(START + 5)
    assert clock.now() == START + 10


def test_manual_clock_never_falls_due_on_its_own() -> None:
    assert ManualClock(START).wall_delay(1) == float("inf")


# -- RealClock ------------------------------------------------------------------------


def test_real_clock_follows_wall_time(wall: FakeMonotonic) -> None:
    clock = RealClock(START)
    assert clock.now() == START
    wall.value += 2.5
    assert clock.now() == START + 2.5


def test_real_clock_time_scale_speeds_virtual_time_up(wall: FakeMonotonic) -> None:
    clock = RealClock(START, time_scale=60)
    wall.value += 2
    assert clock.now() == START + 120
    assert clock.time_scale == 60.0


def test_real_clock_wall_delay_is_virtual_seconds_divided_by_scale(wall: FakeMonotonic) -> None:
    clock = RealClock(START, time_scale=60)
    assert clock.wall_delay(120) == 2.0
    assert clock.wall_delay(-5) == 0.0


def test_real_clock_advance_jumps_on_top_of_wall_time(wall: FakeMonotonic) -> None:
    clock = RealClock(START, time_scale=10)
    assert clock.advance(30) == START + 30
    wall.value += 1
    assert clock.now() == START + 40


def test_real_clock_times_lie_on_the_microsecond_grid(wall: FakeMonotonic) -> None:
    clock = RealClock(START, time_scale=3)
    clock.advance(0.1)
    clock.advance(0.2)
    for step in (0.000_000_4, 0.123_456_789, 1e-7, 2.5e-7, 7.654_321_987):
        wall.value += step
        now = clock.now()
        assert now == round(now, 6)
        assert abs(now - (START + 0.3 + (wall.value - 500) * 3)) <= 1e-6


def test_real_clock_refuses_to_advance_backwards(wall: FakeMonotonic) -> None:
    clock = RealClock(START)
    with pytest.raises(ClockError):
        clock.advance(-0.5)
    assert clock.now() == START


def test_real_clock_move_to_only_jumps_forward(wall: FakeMonotonic) -> None:
    clock = RealClock(START)
    clock.move_to(START + 100)
    assert clock.now() == START + 100
    clock.move_to(START + 50)  # already past it: a late job, never a step back
    assert clock.now() == START + 100


def _times_near_halves(draw: random.Random) -> list[float]:
    """Times of every kind a clock or a job holds, and the ones `quantize` must not get
    wrong: exactly on a microsecond, a hair either side of a half microsecond, far in
    the future, tiny, negative."""
    times = []
    for _ in range(40_000):
        micros = draw.randrange(0, 4 * 10**15)
        times += [
            micros / 1e6,
            (micros + 0.5) / 1e6,
            micros / 1e6 + draw.choice((5e-7, -5e-7, 4.9999999e-7, 5.0000001e-7)),
            draw.uniform(1.7e9, 1.9e9),
            draw.uniform(0, 1e4),
            draw.uniform(1e4, clock_module.LATEST),
            draw.uniform(-1e3, 0),
        ]
    return times + [0.0, 5e-7, 1.5e-6, 2.5e-6, 2.0**53 / 1e6, clock_module.LATEST]


def test_quantize_gives_what_rounding_to_six_places_gives() -> None:
    draw = random.Random(20261128)
    for ts in _times_near_halves(draw):
        assert quantize(ts) == round(ts, 6), ts
    for ts in (float("inf"), float("-inf")):
        assert quantize(ts) == ts
    assert math.isnan(quantize(float("nan")))


@pytest.mark.parametrize("scale", [0, -1])
def test_real_clock_refuses_a_non_positive_time_scale(scale: float) -> None:
    with pytest.raises(ClockError):
        RealClock(START, time_scale=scale)


def test_make_clock_builds_each_mode(wall: FakeMonotonic) -> None:
    manual = make_clock("manual", start=START)
    real = make_clock("real", start=START, time_scale=5)
    assert (manual.mode, manual.now()) == ("manual", START)
    assert (real.mode, real.time_scale, real.now()) == ("real", 5.0, START)


def test_make_clock_defaults_start_to_wall_time_in_whole_ms(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(clock_module.time, "time", lambda: START + 0.123456)
    assert make_clock("manual").now() == round(START + 0.123456, 3)


def test_make_clock_refuses_an_unknown_mode() -> None:
    with pytest.raises(ClockError, match="unknown clock mode"):
        make_clock("sundial", start=START)


# -- iso / parse_iso --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ts", "expected"),
    [
        (0, "1970-01-01T00:00:00.000Z"),
        (START, "2026-01-01T00:00:00.000Z"),
        (START + 1.5, "2026-01-01T00:00:01.500Z"),
        (START + 0.007, "2026-01-01T00:00:00.007Z"),
        (START + 3723.25, "2026-01-01T01:02:03.250Z"),
        (START + 59.9996, "2026-01-01T00:01:00.000Z"),  # rounds to the ms, carrying over
        (START - 0.001, "2025-12-31T23:59:59.999Z"),  # the second before, not the next
        (-1.25, "1969-12-31T23:59:58.750Z"),
    ],
)
def test_iso_renders_utc_with_milliseconds_and_z(ts: float, expected: str) -> None:
    assert iso(ts) == expected
    assert ISO_FORMAT.match(iso(ts))


def test_iso_renders_every_millisecond_exactly() -> None:
    wrong = [ms for ms in range(1000) if not iso(START + ms / 1000).endswith(f".{ms:03d}Z")]
    assert wrong == []


@pytest.mark.parametrize(
    "text",
    [
        "2026-01-01T00:00:00Z",
        "2026-01-01T00:00:00z",
        "2026-01-01T00:00:00.000Z",
        "2026-01-01T00:00:00+00:00",
        "2026-01-01T01:00:00+01:00",
        "2025-12-31T19:00:00-05:00",
        "2026-01-01T00:00:00",  # no zone means UTC
        "  2026-01-01T00:00:00Z  ",
    ],
)
def test_parse_iso_reads_z_offsets_and_zoneless_times_as_the_same_instant(text: str) -> None:
    assert parse_iso(text) == START


def test_parse_iso_keeps_fractional_seconds() -> None:
    assert parse_iso("2026-01-01T00:00:00.250Z") == START + 0.25


def test_parse_iso_round_trips_iso() -> None:
    ts = START + 12345.678
    assert iso(parse_iso(iso(ts))) == iso(ts)


@pytest.mark.parametrize("text", ["", "yesterday", "2026-13-01T00:00:00Z", "12:00"])
def test_parse_iso_refuses_non_iso_text(text: str) -> None:
    with pytest.raises(ClockError):
        parse_iso(text)


# -- Scheduler.advance ------------------------------------------------------------------


async def test_advance_runs_jobs_in_due_order_not_scheduling_order() -> None:
    clock, scheduler = make_scheduler()
    ran: list[str] = []
    for delay in (30, 10, 20):
        scheduler.call_later(delay, lambda d=delay: ran.append(f"t+{d}"), owner="a")
    await scheduler.advance(60)
    assert ran == ["t+10", "t+20", "t+30"]


async def test_jobs_due_at_the_same_time_run_in_scheduling_order() -> None:
    _, scheduler = make_scheduler()
    ran: list[int] = []
    for n in range(5):
        scheduler.call_at(START + 1, lambda n=n: ran.append(n), owner="a")
    await scheduler.advance(1)
    assert ran == [0, 1, 2, 3, 4]


async def test_clock_reads_each_jobs_due_time_while_it_runs() -> None:
    clock, scheduler = make_scheduler()
    seen: list[float] = []
    for delay in (5, 12.5, 40):
        scheduler.call_later(delay, lambda: seen.append(clock.now()), owner="a")
    now = await scheduler.advance(60)
    assert seen == [START + 5, START + 12.5, START + 40]
    assert now == clock.now() == START + 60


async def test_advance_with_nothing_due_just_moves_the_clock() -> None:
    clock, scheduler = make_scheduler()
    assert await scheduler.advance(7) == START + 7
    assert clock.now() == START + 7


async def test_job_scheduled_by_a_job_runs_when_it_falls_inside_the_span() -> None:
    clock, scheduler = make_scheduler()
    seen: list[tuple[str, float]] = []

    def first() -> None:
        seen.append(("first", clock.now()))
        scheduler.call_later(5, lambda: seen.append(("second", clock.now())), owner="a")

    scheduler.call_later(10, first, owner="a")
    await scheduler.advance(20)
    assert seen == [("first", START + 10), ("second", START + 15)]
    assert scheduler.pending() == 0


async def test_job_scheduled_by_a_job_beyond_the_span_stays_pending() -> None:
    clock, scheduler = make_scheduler()
    seen: list[float] = []

    def first() -> None:
        scheduler.call_later(50, lambda: seen.append(clock.now()), owner="a")

    scheduler.call_later(10, first, owner="a")
    await scheduler.advance(20)
    assert seen == []
    assert scheduler.pending() == 1
    await scheduler.advance(40)
    assert seen == [START + 60]


async def test_jobs_due_after_the_span_stay_pending_and_do_not_run() -> None:
    _, scheduler = make_scheduler()
    ran: list[str] = []
    scheduler.call_later(10, lambda: ran.append("early"), owner="a")
    scheduler.call_later(100, lambda: ran.append("late"), owner="a")
    await scheduler.advance(50)
    assert ran == ["early"]
    assert scheduler.pending() == 1


async def test_a_job_due_exactly_at_the_target_runs() -> None:
    _, scheduler = make_scheduler()
    ran: list[str] = []
    scheduler.call_later(30, lambda: ran.append("edge"), owner="a")
    await scheduler.advance(30)
    assert ran == ["edge"]


async def test_advance_by_zero_runs_a_job_due_now() -> None:
    _, scheduler = make_scheduler()
    ran: list[str] = []
    scheduler.call_later(0, lambda: ran.append("now"), owner="a")
    await scheduler.advance(0)
    assert ran == ["now"]


async def test_advance_awaits_the_awaitables_jobs_return_before_returning() -> None:
    clock, scheduler = make_scheduler()
    done: list[float] = []

    async def delivery() -> None:
        for _ in range(5):  # yields to the loop several times, like real I/O
            await asyncio.sleep(0)
        done.append(clock.now())

    scheduler.call_later(10, delivery, owner="a")
    await scheduler.advance(60)
    assert done == [START + 10]  # finished, and while the clock read its due time


async def test_awaitables_of_one_job_finish_before_a_later_job_runs() -> None:
    _, scheduler = make_scheduler()
    order: list[str] = []

    async def slow() -> None:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        order.append("io of job at 10 finished")

    scheduler.call_later(10, slow, owner="a")
    scheduler.call_later(20, lambda: order.append("job at 20 ran"), owner="a")
    await scheduler.advance(30)
    assert order == ["io of job at 10 finished", "job at 20 ran"]


async def test_awaitables_of_jobs_due_together_run_concurrently() -> None:
    _, scheduler = make_scheduler()
    trace: list[str] = []

    def delivery(name: str):
        async def send() -> None:
            trace.append(f"{name} start")
            await asyncio.sleep(0)
            trace.append(f"{name} end")

        return send

    scheduler.call_later(5, delivery("a"), owner="a")
    scheduler.call_later(5, delivery("b"), owner="b")
    await scheduler.advance(5)
    assert trace[:2] == ["a start", "b start"]
    assert sorted(trace[2:]) == ["a end", "b end"]


async def test_cancelled_job_never_runs() -> None:
    _, scheduler = make_scheduler()
    ran: list[str] = []
    job = scheduler.call_later(10, lambda: ran.append("cancelled"), owner="a")
    scheduler.call_later(10, lambda: ran.append("kept"), owner="a")
    job.cancel()
    assert scheduler.pending() == 1
    await scheduler.advance(60)
    assert ran == ["kept"]
    assert scheduler.pending() == 0


async def test_job_cancelled_by_an_earlier_job_in_the_same_advance_never_runs() -> None:
    _, scheduler = make_scheduler()
    ran: list[str] = []
    victim = scheduler.call_later(20, lambda: ran.append("victim"), owner="a")
    scheduler.call_later(10, victim.cancel, owner="a")
    await scheduler.advance(30)
    assert ran == []


async def test_failing_job_is_recorded_and_later_jobs_still_run() -> None:
    _, scheduler = make_scheduler()
    ran: list[str] = []

    def boom() -> None:
        raise RuntimeError("boom")

    scheduler.call_later(10, boom, owner="acct-1", label="exploding job")
    scheduler.call_later(10, lambda: ran.append("same time"), owner="a")
    scheduler.call_later(20, lambda: ran.append("later"), owner="a")
    await scheduler.advance(30)
    assert ran == ["same time", "later"]
    assert len(scheduler.failures) == 1
    failure = scheduler.failures[0]
    assert failure["job"] == "exploding job"
    assert failure["owner"] == "acct-1"
    assert failure["due"] == "2026-01-01T00:00:10.000Z"
    assert "RuntimeError" in failure["error"]
    assert "boom" in failure["error"]


async def test_failing_awaitable_is_recorded_and_later_jobs_still_run() -> None:
    _, scheduler = make_scheduler()
    ran: list[str] = []

    async def broken_delivery() -> None:
        await asyncio.sleep(0)
        raise ConnectionError("receiver gone")

    scheduler.call_later(10, broken_delivery, owner="a", label="delivery")
    scheduler.call_later(20, lambda: ran.append("later"), owner="a")
    await scheduler.advance(30)
    assert ran == ["later"]
    assert [f["job"] for f in scheduler.failures] == ["delivery"]
    assert "receiver gone" in scheduler.failures[0]["error"]


async def test_job_due_at_60_runs_once_on_the_advance_that_reaches_it() -> None:
    _, scheduler = make_scheduler()
    runs: list[float] = []
    scheduler.call_later(60, lambda: runs.append(1), owner="a")
    await scheduler.advance(59)
    assert runs == []
    await scheduler.advance(1)
    assert runs == [1]
    await scheduler.advance(600)
    assert runs == [1]


async def test_advance_refuses_negative_seconds_and_runs_nothing() -> None:
    clock, scheduler = make_scheduler()
    ran: list[str] = []
    scheduler.call_later(0, lambda: ran.append("due now"), owner="a")
    with pytest.raises(ClockError):
        await scheduler.advance(-1)
    assert clock.now() == START
    assert ran == []
    assert scheduler.pending() == 1


async def test_reset_forgets_pending_jobs_and_failures_and_adopts_the_new_clock() -> None:
    _, scheduler = make_scheduler()
    ran: list[str] = []
    scheduler.call_later(1, lambda: 1 / 0, owner="a")
    await scheduler.advance(1)
    scheduler.call_later(10, lambda: ran.append("forgotten"), owner="a")
    new_clock = ManualClock(START + 1000)
    scheduler.reset(new_clock)
    assert scheduler.pending() == 0
    assert list(scheduler.failures) == []
    assert await scheduler.advance(60) == START + 1060
    assert ran == []


async def test_ten_advances_of_100ms_run_a_job_due_at_one_second() -> None:
    clock, scheduler = make_scheduler()
    ran: list[str] = []
    scheduler.call_later(1, lambda: ran.append("due at 1 s"), owner="a")
    for _ in range(10):
        await scheduler.advance(0.1)
    assert iso(clock.now()) == "2026-01-01T00:00:01.000Z"
    assert ran == ["due at 1 s"]
