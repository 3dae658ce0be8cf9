"""Virtual time: the only source of "now" in the sandbox.

Every timestamp in a response, every token expiry, every fulfillment step and every
webhook retry asks a `Clock`. Two kinds exist:

* `ManualClock` stands still until `advance()` moves it (tests, the pytest plugin).
* `RealClock` follows wall time, optionally `time_scale` times faster (CI, by hand).

Both only ever move forward. Times are float seconds since the Unix epoch, always on
the microsecond grid (`quantize`): ten advances of 0.1 s land exactly on the job due at
1 s, with no float drift.
"""

from __future__ import annotations

import functools
import math
import time
from datetime import UTC, datetime

#: 9999-12-31T23:59:59Z: the last instant a timestamp in a response can show.
LATEST = 253402300799.0


def check_reachable(ts: float) -> None:
    """Refuse a time no timestamp can show (an advance of 1e20 seconds, say)."""
    if not ts <= LATEST:
        raise ClockError("that would move the clock past 9999-12-31T23:59:59Z")


#: Past this many microseconds (about the year 2255) a float is not fine enough to hold
#: every microsecond, and `quantize` leaves the work to `round`.
_MICROS_HELD = 2.0**53


def quantize(ts: float) -> float:
    """Snap a time to whole microseconds, the grid every clock and job time lives on:
    the float `round(ts, 6)` gives, without its detour through decimal text where that
    is safe (every job's due time goes through here: bench/FINDINGS.md section 19).

    `ts * 10**6` is rounded to a float, so it can lie on the other side of a half
    microsecond from the exact value, by at most half a unit in its last place; only
    such near-halves, and what `_MICROS_HELD` rules out, are rounded by `round(ts, 6)`.
    Elsewhere both round the same whole number of microseconds, and dividing it by
    10**6 gives the nearest float to it, as `round` does."""
    scaled = ts * 1_000_000
    if -_MICROS_HELD < scaled < _MICROS_HELD:
        micros = round(scaled)
        if abs(abs(scaled - micros) - 0.5) > math.ulp(scaled) / 2:
            return micros / 1_000_000
    return round(ts, 6)


class ClockError(ValueError):
    """A request to move the clock that would break its rules (e.g. going backwards)."""


class Clock:
    """Interface shared by both clock kinds."""

    mode: str = ""
    time_scale: float = 1.0

    def now(self) -> float:
        raise NotImplementedError

    def advance(self, seconds: float) -> float:
        """Jump `seconds` forward and answer the new time."""
        raise NotImplementedError

    def move_to(self, when: float) -> None:
        """Jump forward to `when`; used by the scheduler while it replays due jobs."""
        raise NotImplementedError

    def wall_delay(self, virtual_seconds: float) -> float:
        """Wall-clock seconds until `virtual_seconds` of virtual time have passed."""
        raise NotImplementedError


class ManualClock(Clock):
    """Time stands still until advanced."""

    mode = "manual"

    def __init__(self, start: float) -> None:
        self._set(round(start * 1_000_000))

    def _set(self, micros: int) -> None:
        self._micros = micros
        # One float per instant, shared by every timestamp taken at it: orders settled
        # together kept a 24-byte copy each per time they recorded.
        self._now = micros / 1_000_000

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ClockError("the clock only moves forward: seconds must be >= 0")
        self._set(self._micros + round(seconds * 1_000_000))
        return self._now

    def move_to(self, when: float) -> None:
        micros = round(when * 1_000_000)
        if micros < self._micros:
            raise ClockError("the clock only moves forward")
        if micros != self._micros:
            self._set(micros)

    def wall_delay(self, virtual_seconds: float) -> float:
        return float("inf")


class RealClock(Clock):
    """Virtual time = start + (wall time elapsed) * time_scale + manual jumps, counted in
    whole microseconds as the manual clock counts them, so no time it gives needs
    `quantize` (the default clock, asked several times a request: bench/FINDINGS.md
    section 19)."""

    mode = "real"

    def __init__(self, start: float, time_scale: float = 1.0) -> None:
        if time_scale <= 0:
            raise ClockError("time_scale must be > 0")
        self.time_scale = float(time_scale)
        #: Microseconds of virtual time per second of wall time.
        self._rate = self.time_scale * 1_000_000
        #: The start and every jump since, in microseconds.
        self._base = round(start * 1_000_000)
        self._mono_start = time.monotonic()

    def now(self) -> float:
        return self._micros() / 1_000_000

    def _micros(self) -> int:
        return self._base + round((time.monotonic() - self._mono_start) * self._rate)

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ClockError("the clock only moves forward: seconds must be >= 0")
        self._base += round(seconds * 1_000_000)
        return self.now()

    def move_to(self, when: float) -> None:
        # Real time moves by itself; jobs that fall due are simply late, never early.
        ahead = round(when * 1_000_000) - self._micros()
        if ahead > 0:
            self._base += ahead

    def wall_delay(self, virtual_seconds: float) -> float:
        return max(0.0, virtual_seconds / self.time_scale)


def make_clock(mode: str, *, start: float | None = None, time_scale: float = 1.0) -> Clock:
    """Build the clock named by `--clock`, starting at `start` (default: now, whole ms)."""
    if start is None:
        start = round(time.time(), 3)
    if mode == "manual":
        return ManualClock(start)
    if mode == "real":
        return RealClock(start, time_scale)
    raise ClockError(f"unknown clock mode {mode!r}: expected 'real' or 'manual'")


@functools.lru_cache(maxsize=16384)
def iso(ts: float) -> str:
    """Render a virtual time as ISO 8601 UTC with milliseconds and a trailing Z.

    Memoised: an order's timestamps are rendered on every read, and `strftime` was a
    twelfth of a lookup's cost. A time not seen yet (each order's, on a real clock)
    formats only its milliseconds: its second's text is kept too."""
    millis = round(round(ts, 3) * 1000)
    return f"{_iso_second(millis // 1000)}{millis % 1000:03d}Z"


@functools.lru_cache(maxsize=256)
def _iso_second(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.")


def parse_iso(text: str) -> float:
    """Parse an ISO 8601 time (a missing zone means UTC) into epoch seconds."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ClockError(f"not an ISO 8601 time: {text!r}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
