"""One log line per request, as text or JSON (`--log-format`), or none
(`--access-log off`).

Access lines bypass the `logging` machinery (a large share of a lookup's cost went
there: bench/FINDINGS.md section 1): `AccessLog` hands what the line will say to a
`LineSink`, a block-buffered writer that `serve` flushes a few times a second and on
shutdown, and that flushes itself whenever `BATCH` lines are waiting; lines are
formatted then, in one batch, not while a request is answered.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, TextIO

from aiohttp.abc import AbstractAccessLogger
from aiohttp.web import BaseRequest, StreamResponse

FLUSH_INTERVAL = 0.2
#: Lines rendered in one pass at most: under load, rendering a whole flush interval's
#: lines at once was a stall that every request in flight waited out, and it set the
#: lookup's p99 (bench/FINDINGS.md section 8).
BATCH = 256


def configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")


def access_log_options(sink: LineSink | None, log_format: str) -> dict[str, Any]:
    """aiohttp's server options for the access log: a line per request to `sink`, in
    `log_format` ("text" or "json"); `sink` None (`--access-log off`): no access log at
    all, so a request notes nothing. Start-up, the banner and errors print either way."""
    if sink is None:
        return {"access_log": None}
    return {"access_log_class": AccessLog, "access_log": sink, "access_log_format": log_format}


class LineSink:
    """Collects lines and writes them out in one call per flush. An entry is a line, or
    an access record that `AccessLog` left to be rendered here, off the request's path."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._lines: list[str | tuple] = []

    def write(self, line: str | tuple) -> None:
        lines = self._lines
        lines.append(line)
        if len(lines) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if self._lines:
            entries = self._lines
            self._lines = []
            lines = [e if type(e) is str else _render(e) for e in entries]
            self._stream.write("\n".join(lines) + "\n")
            self._stream.flush()


class AccessLog(AbstractAccessLogger):
    """aiohttp's designated extension point for access logs. `logger` is the runner's
    `access_log` (here a `LineSink`); `log_format` its `access_log_format`, "text" or
    "json". A request only notes what its line will say; the sink renders it."""

    def log(self, request: BaseRequest, response: StreamResponse, time_taken: float) -> None:
        record = (request.remote, request.method, request.path, response.status, time_taken)
        if self.log_format == "json":
            record += (time.time(),)
        self.logger.write(record)  # type: ignore[attr-defined]


def _render(record: tuple) -> str:
    """One access line: text (5 fields) or JSON (6: the wall time it was taken at)."""
    remote, method, path, status, time_taken = record[:5]
    if len(record) == 5:
        return f"{remote} {method} {path} {status} {time_taken * 1000:.1f}ms"
    return json.dumps(
        {
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record[5])),
            "method": method,
            "path": path,
            "status": status,
            "duration_ms": round(time_taken * 1000, 2),
            "remote": remote,
        },
        separators=(",", ":"),
    )
