"""The request journal: the last N merchant API calls, in a fixed-size ring."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from ..clock import iso

MAX_BODY_CHARS = 4096
#: Bytes of a body kept: enough for MAX_BODY_CHARS characters of any UTF-8 text.
MAX_BODY_BYTES = MAX_BODY_CHARS * 4


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    path: str
    status: int
    body: str
    at: float

    @classmethod
    def of(cls, method: str, path: str, status: int, body: bytes, at: float) -> Call:
        """A call as the journal shows it: the body decoded (invalid UTF-8 replaced) and
        cut to MAX_BODY_CHARS characters."""
        return cls(method, path, status, body_text(body), at)

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "status": self.status,
            "body": self.body,
            "time": iso(self.at),
        }


def body_text(body: bytes) -> str:
    return body[:MAX_BODY_BYTES].decode("utf-8", "replace")[:MAX_BODY_CHARS]


class Journal:
    """Each merchant call pays `record`: the call is kept as a plain tuple, with its
    body's bytes (cut to MAX_BODY_BYTES), and becomes a `Call` only when read."""

    def __init__(self, size: int) -> None:
        self._calls: deque[tuple[str, str, int, bytes, float]] = deque(maxlen=size)

    def record(self, method: str, path: str, status: int, body: bytes, at: float) -> None:
        """Keep the call (a journal of size 0 keeps none)."""
        self._calls.append((method, path, status, body[:MAX_BODY_BYTES], at))

    def latest(self, limit: int | None = None) -> list[Call]:
        """Newest first."""
        calls = list(reversed(self._calls))
        if limit is not None:
            calls = calls[:limit]
        return [Call.of(*call) for call in calls]

    def clear(self) -> None:
        self._calls.clear()
