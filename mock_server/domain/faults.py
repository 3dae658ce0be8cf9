"""Injected faults for the merchant API (`/_mock/faults`, docs/control-api.md "Faults").

A fault matches a method and a path (`fnmatch` pattern, so `/api/v1/orders/*` works)
and answers `status` instead of the real response, `times` times (or until cleared).
`latency_ms` delays the answer in wall time (it exercises the caller's own timeouts).
`after_commit: true` lets the real operation happen first, then answers the error:
the "5xx after the order was created and charged" case of spec section 7.
How many may be pending at once is a quota (docs/hosting.md, "Quotas").
"""

from __future__ import annotations

import fnmatch
import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import ApiError, validation_error
from .quotas import NO_QUOTAS, Quotas

_KEYS = {"method", "path", "status", "times", "latency_ms", "after_commit"}
#: The longest method and path a fault keeps: with the faults quota they bound what a
#: sandbox's faults can hold (docs/hosting.md, "Sizing").
MAX_METHOD = 32
MAX_PATH = 2048
#: The characters the paths of a sandbox's faults pending may hold in all: a compiled
#: pattern takes up to about 115 bytes a character (`/a*a*a*...`), so 1000 faults of
#: the longest paths would hold over 200 MiB; this keeps them to about 7 MiB, and a
#: thousand faults of ordinary paths (`/api/v1/orders/*`) well within it
#: (docs/hosting.md, "Sizing").
MAX_PATHS_TOTAL = 64 * 1024
#: Longer paths are not left in the cache of `re` once compiled (see `Fault`).
_CACHED_PATH = 128


@dataclass(slots=True)
class Fault:
    id: int
    method: str
    path: str
    status: int
    times: int | None
    latency_ms: int
    after_commit: bool
    #: The path pattern compiled for this fault alone: `fnmatch`'s own cache, shared by
    #: the process, keeps up to 32768 compiled patterns that a tenant adding and
    #: clearing faults could fill (docs/hosting.md, "Sizing").
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.pattern = re.compile(fnmatch.translate(self.path))
        if len(self.path) > _CACHED_PATH:
            # `re` keeps the last 512 patterns it compiled, for the whole process: a
            # long one may hold 230 KiB, so it goes with its fault alone.
            re.purge()

    def matches(self, method: str, path: str) -> bool:
        return self.method in ("*", method) and self.pattern.match(path) is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "method": self.method,
            "path": self.path,
            "status": self.status,
            "times": self.times,
            "latency_ms": self.latency_ms,
            "after_commit": self.after_commit,
        }


class Faults:
    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._ids = itertools.count(1)

    def __bool__(self) -> bool:
        return bool(self._faults)

    def __len__(self) -> int:
        return len(self._faults)

    def add(
        self, body: dict[str, Any], quotas: Quotas = NO_QUOTAS, *, restoring: bool = False
    ) -> Fault:
        """Check `body` and add the fault it describes; past the faults quota, 429 and
        nothing added (nor an id drawn). `restoring`: a saved fault, kept whatever the
        length of its method and path (it was accepted when it was saved)."""
        unknown = sorted(set(body) - _KEYS)
        if unknown:
            raise validation_error(
                f"unknown fault key {unknown[0]!r}; known: {', '.join(sorted(_KEYS))}"
            )
        method = body.get("method", "*")
        path = body.get("path")
        status = body.get("status", 500)
        times = body.get("times")
        latency = body.get("latency_ms", 0)
        after_commit = body.get("after_commit", False)
        if not isinstance(method, str) or not method:
            raise validation_error("method must be an HTTP method or '*'")
        if len(method) > MAX_METHOD and not restoring:
            raise validation_error(f"method must be at most {MAX_METHOD} characters")
        if not isinstance(path, str) or not path.startswith("/"):
            raise validation_error("path is required: a path or pattern such as /api/v1/orders")
        if len(path) > MAX_PATH and not restoring:
            raise validation_error(f"path must be at most {MAX_PATH} characters")
        if path.startswith("/_mock"):
            raise validation_error("faults apply to the merchant API, not to /_mock")
        if not _int_in(status, 400, 599):
            raise validation_error("status must be an integer 400..599")
        if times is not None and not _int_in(times, 1, 1_000_000):
            raise validation_error("times must be an integer >= 1 (omit for always)")
        if not _int_in(latency, 0, 60_000):
            raise validation_error("latency_ms must be an integer 0..60000")
        if not isinstance(after_commit, bool):
            raise validation_error("after_commit must be true or false")
        quotas.check("faults", len(self._faults) + 1)
        if not restoring:
            _check_paths(quotas, sum(len(f.path) for f in self._faults), len(path))
        fault = Fault(next(self._ids), method.upper(), path, status, times, latency, after_commit)
        self._faults.append(fault)
        return fault

    def take(self, method: str, path: str) -> Fault | None:
        """The first fault matching this call, counting one use of it."""
        for fault in self._faults:
            if fault.matches(method, path):
                if fault.times is not None:
                    fault.times -= 1
                    if fault.times == 0:
                        self._faults.remove(fault)
                return fault
        return None

    def list(self) -> list[Fault]:
        return list(self._faults)

    def dump(self) -> dict[str, Any]:
        """Saved state: the faults and the id the next one gets."""
        next_id = next(self._ids)
        self._ids = itertools.count(next_id)
        return {"next_id": next_id, "faults": [fault.to_json() for fault in self._faults]}

    @classmethod
    def load(cls, data: dict[str, Any]) -> Faults:
        faults = cls()
        for record in data["faults"]:
            faults.add({k: v for k, v in record.items() if k != "id"}, restoring=True)
            faults._faults[-1].id = record["id"]
        faults._ids = itertools.count(data["next_id"])
        return faults

    def clear(self) -> None:
        self._faults.clear()

    def check_sizes(self, quotas: Quotas) -> None:
        """What `add` checks of each fault's path and of all of them, for faults a saved
        state brings (`PUT /_mock/state`): a sandbox with a faults quota takes no more."""
        if quotas.faults is None:
            return
        for fault in self._faults:
            if len(fault.path) > MAX_PATH:
                raise validation_error(f"a fault's path must be at most {MAX_PATH} characters")
        _check_paths(quotas, sum(len(f.path) for f in self._faults), 0)


def _check_paths(quotas: Quotas, held: int, adding: int) -> None:
    """429 where a sandbox with a faults quota would hold more than `MAX_PATHS_TOTAL`
    characters of fault paths."""
    if quotas.faults is not None and held + adding > MAX_PATHS_TOTAL:
        raise ApiError(
            429,
            "quota_exceeded",
            f"The faults pending in this sandbox may hold at most {MAX_PATHS_TOTAL} "
            f'characters of paths in all (docs/hosting.md, "Sizing"); they hold {held}'
            + (f", this one adds {adding}" if adding else "")
            + ": DELETE /_mock/faults clears them",
            cause="faults",
        )


def _int_in(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
