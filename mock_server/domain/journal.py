"""The request journal: the last N merchant API calls, in a fixed-size ring."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from ..clock import iso

MAX_BODY_CHARS = 4096


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    path: str
    status: int
    body: str
    at: float

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "status": self.status,
            "body": self.body,
            "time": iso(self.at),
        }


class Journal:
    def __init__(self, size: int) -> None:
        self._calls: deque[Call] = deque(maxlen=size)

    def record(self, method: str, path: str, status: int, body: bytes, at: float) -> Call:
        """Keep the call (unless the journal holds none) and answer it."""
        text = body[: MAX_BODY_CHARS * 4].decode("utf-8", "replace")[:MAX_BODY_CHARS]
        call = Call(method, path, status, text, at)
        if self._calls.maxlen != 0:
            self._calls.append(call)
        return call

    def latest(self, limit: int | None = None) -> list[Call]:
        """Newest first."""
        calls = list(reversed(self._calls))
        return calls if limit is None else calls[:limit]

    def clear(self) -> None:
        self._calls.clear()
