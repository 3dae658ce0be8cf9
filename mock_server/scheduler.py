"""The timer heap: every piece of deferred work in the sandbox runs from here.

Fulfillment steps, webhook attempts and retries are `Job`s due at a virtual time. The
scheduler runs them in time order:

* under a manual clock, `advance(seconds)` replays every job due inside the span,
  moving the clock to each job's due time first (so timestamps read "when it
  happened"), and awaits any I/O a job returns before answering;
* under a real clock, `run_forever()` sleeps until the next job falls due; I/O a job
  returns runs as a tracked task so one slow receiver never holds up the timeline.

Each job names the account it belongs to (`owner`): per-account clocks are planned,
and this keeps that a change of wiring rather than of every call site.

A job that raises is logged and kept in `failures` (visible through `/_mock`); it never
stops the scheduler.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import inspect
import itertools
import logging
import time
import traceback
from collections import deque
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from .clock import Clock, check_reachable, iso, quantize

log = logging.getLogger(__name__)

Action = Callable[..., Awaitable[Any] | None]

#: At most this many awaitables from jobs due together run at once.
IO_CONCURRENCY = 100
#: Seconds of work between two turns given to the rest of the event loop: an advance
#: that settles a whole sandbox takes seconds, and the other sandboxes' calls are
#: answered meanwhile (docs/hosting.md, "What one request may cost").
SLICE_SECONDS = 0.005


@dataclass(order=True, slots=True)
class Job:
    due: float
    seq: int
    owner: str = field(compare=False)
    label: str | tuple[Any, ...] = field(compare=False)  # a tuple is joined only if shown
    action: Action = field(compare=False, repr=False)
    #: Called as `action(*args)`: a `functools.partial` per job cost 144 bytes more, and
    #: every pending order holds a job.
    args: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class Scheduler:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._heap: list[Job] = []
        self._seq = itertools.count()
        self._wakeup = asyncio.Event()
        self._advance_lock = asyncio.Lock()
        self._io_slots = asyncio.Semaphore(IO_CONCURRENCY)
        self._background: set[asyncio.Task[Any]] = set()
        self.failures: deque[dict[str, str]] = deque(maxlen=100)

    # -- scheduling -------------------------------------------------------------------

    def call_at(
        self,
        due: float,
        action: Action,
        *args: Any,
        owner: str,
        label: str | tuple[Any, ...] = "",
    ) -> Job:
        """Run `action(*args)` at virtual time `due`."""
        job = Job(quantize(due), next(self._seq), owner, label, action, args)
        heap = self._heap
        heapq.heappush(heap, job)
        if heap[0] is job:  # due first: the real-clock loop sleeps until the first job
            self._wakeup.set()
        return job

    def call_later(
        self,
        delay: float,
        action: Action,
        *args: Any,
        owner: str,
        label: str | tuple[Any, ...] = "",
    ) -> Job:
        return self.call_at(self.clock.now() + delay, action, *args, owner=owner, label=label)

    def pending(self) -> int:
        return sum(1 for job in self._heap if not job.cancelled)

    def upcoming(self, limit: int) -> list[dict[str, Any]]:
        """The next `limit` jobs in the order they will run: due time, what, whose."""
        live = (job for job in self._heap if not job.cancelled)
        return [
            {"due": iso(job.due), "job": _label(job), "owner": job.owner}
            for job in heapq.nsmallest(limit, live)
        ]

    def forget_owners(self, owners: Collection[str]) -> int:
        """Forget every job of `owners` (accounts replaced: their orders and deliveries
        are gone) and every cancelled one, and say how many went. A job waits in the
        heap until it falls due, holding what it runs on: an order's step scripted
        `after: 999999h` would otherwise keep a replaced account's order alive for good
        (docs/hosting.md, "Quotas"). Linear in the jobs pending, as the replacement is."""
        heap = self._heap
        kept = [job for job in heap if not job.cancelled and job.owner not in owners]
        dropped = len(heap) - len(kept)
        if dropped:
            heapq.heapify(kept)
            heap[:] = kept  # in place: a running `_run_until` reads the same list
            self._wakeup.set()
        return dropped

    def reset(self, clock: Clock) -> None:
        """Forget every job and run on `clock` from now on; running I/O is cancelled."""
        self.clock = clock
        self._heap.clear()
        self.failures.clear()
        for task in self._background:
            task.cancel()
        self._background.clear()
        self._wakeup.set()

    # -- running ----------------------------------------------------------------------

    async def advance(self, seconds: float) -> float:
        """Move the clock `seconds` forward, running everything due on the way."""
        async with self._advance_lock:
            target = quantize(self.clock.now() + seconds)
            if seconds < 0:
                self.clock.advance(seconds)  # raises ClockError
            check_reachable(target)
            await self._run_until(target, await_io=True)
            self.clock.move_to(max(target, self.clock.now()))
            return self.clock.now()

    async def run_due(self) -> None:
        """Run what is due now (real clock), without waiting for the I/O it starts."""
        await self._run_until(self.clock.now(), await_io=False)

    async def run_forever(self) -> None:
        """Real-clock loop: sleep until the next job is due, run it, repeat."""
        while True:
            self._wakeup.clear()
            await self.run_due()
            delay = self._wall_delay_to_next()
            if delay is None:
                await self._wakeup.wait()
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout=min(delay, 3600))

    def _wall_delay_to_next(self) -> float | None:
        self._drop_cancelled_head()
        if not self._heap:
            return None
        return self.clock.wall_delay(self._heap[0].due - self.clock.now())

    def _drop_cancelled_head(self) -> None:
        while self._heap and self._heap[0].cancelled:
            heapq.heappop(self._heap)

    async def _run_until(self, target: float, *, await_io: bool) -> None:
        slice_end = time.perf_counter() + SLICE_SECONDS
        while True:
            self._drop_cancelled_head()
            if not self._heap or self._heap[0].due > target:
                return
            due = self._heap[0].due
            self.clock.move_to(max(due, self.clock.now()))
            # Jobs due together run one by one as they are popped (each may schedule the
            # next step of its order), and only the I/O they return is held for the
            # batch: keeping the popped jobs alive too doubled peak memory at scale.
            pending_io: deque[tuple[Awaitable[Any], Job]] = deque()
            while self._heap and self._heap[0].due == due:
                job = heapq.heappop(self._heap)
                if not job.cancelled and (started := self._start(job)) is not None:
                    pending_io.append(started)
                if time.perf_counter() >= slice_end:
                    await asyncio.sleep(0)  # the other sandboxes' turn
                    slice_end = time.perf_counter() + SLICE_SECONDS
            if not pending_io:
                continue
            # A few workers take the batch's I/O in order, each under the shared limit:
            # a task per awaitable held memory while it waited, and many webhooks
            # falling due together left the heap grown for good (bench/FINDINGS.md
            # section 3b).
            workers = min(IO_CONCURRENCY, len(pending_io))
            drains = [self._drain(pending_io) for _ in range(workers)]
            if await_io:
                await asyncio.gather(*drains)
            else:
                for drain in drains:
                    task = asyncio.ensure_future(drain)
                    self._background.add(task)
                    task.add_done_callback(self._background.discard)

    async def _drain(self, batch: deque[tuple[Awaitable[Any], Job]]) -> None:
        while batch:
            awaitable, job = batch.popleft()
            await self._bounded(awaitable, job)

    def _start(self, job: Job) -> tuple[Awaitable[Any], Job] | None:
        try:
            result = job.action(*job.args)
        except Exception as exc:  # noqa: BLE001 - a job's failure must not stop the timeline
            self._record_failure(job, exc)
            return None
        if inspect.isawaitable(result):
            return result, job
        return None

    async def _bounded(self, awaitable: Awaitable[Any], job: Job) -> None:
        async with self._io_slots:
            try:
                await awaitable
            except Exception as exc:  # noqa: BLE001
                self._record_failure(job, exc)

    def _record_failure(self, job: Job, exc: BaseException) -> None:
        label = _label(job)
        log.error("scheduled job %s failed", label or job.seq, exc_info=exc)
        self.failures.append(
            {
                "job": label,
                "owner": job.owner,
                "due": iso(job.due),
                "error": "".join(traceback.format_exception_only(exc)).strip(),
            }
        )


def _label(job: Job) -> str:
    """`order <id> step 2 processing`, `webhook <id> attempt 1`: labels are tuples until
    shown, so scheduling never pays for the string."""
    return job.label if isinstance(job.label, str) else " ".join(map(str, job.label))
