"""`--sandbox-rate R`: each sandbox's merchant calls at most R per second, in bursts of
up to 2R (docs/hosting.md, "Rate"). Past it a call is answered 429 `rate_limited` with
`Retry-After`, and nothing else happens. It protects whoever hosts the server, so that
one sandbox's load test cannot take the core every other sandbox shares: the real
service's own limits are not shown (spec 8, docs/fidelity.md). Control calls are never
limited. Time here is the process's monotonic clock, not a sandbox's virtual time.

A refused call is held before its 429 (`hold`), so that a client calling again as soon
as it is answered cannot spend the core on refusals. The held calls of a sandbox are let
go one at a time, at its rate: let go together, the connections of a flood would come
back together once a second, find the allowance refilled and take the core in a burst
that every other sandbox's calls wait behind (bench/FINDINGS.md section 11).
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Callable

from ..domain.sandbox import Sandbox

#: The longest a refused call is held before its 429 (docs/hosting.md, "Rate").
HOLD_SECONDS = 1.0


class RateGuard:
    """A token bucket per sandbox, filled at `rate` per second up to `2 * rate` (at least
    one call, so that a rate under 0.5 still lets a call through now and then)."""

    def __init__(self, rate: float, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._rate = rate
        self._burst = max(2 * rate, 1.0)
        self._now = monotonic
        #: sandbox -> [tokens, when last filled, when its last held call is let go]; a
        #: deleted sandbox's bucket goes with it.
        self._buckets: weakref.WeakKeyDictionary[Sandbox, list[float]] = weakref.WeakKeyDictionary()

    def retry_after(self, sandbox: Sandbox) -> int:
        """0 when the call may go on (it takes a token); else the whole seconds to wait."""
        now = self._now()
        bucket = self._buckets.get(sandbox)
        if bucket is None:
            bucket = self._buckets[sandbox] = [self._burst, now, now]
        tokens = min(self._burst, bucket[0] + (now - bucket[1]) * self._rate)
        bucket[1] = now
        if tokens >= 1:
            bucket[0] = tokens - 1
            return 0
        bucket[0] = tokens
        return max(1, math.ceil((1 - tokens) / self._rate))

    def hold(self, sandbox: Sandbox) -> float:
        """Seconds to hold a call `retry_after` refused: until its turn, a call's worth of
        time after the sandbox's previous held call is let go, at most `HOLD_SECONDS`."""
        now = self._now()
        bucket = self._buckets[sandbox]
        turn = min(max(now, bucket[2]) + 1 / self._rate, now + HOLD_SECONDS)
        bucket[2] = turn
        return turn - now
