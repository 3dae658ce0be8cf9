"""One log line per request, as text or JSON (`--log-format`), or none
(`--access-log off`).

Access lines bypass the `logging` machinery (a large share of a lookup's cost went
there: bench/FINDINGS.md section 1). Each request renders its own line as it is noted
(under a microsecond for a text line), and hands it to a `LineSink`: a buffer that
`serve` writes out a few times a second and on shutdown, and that writes itself out
whenever `BATCH` lines are waiting. Rendering a batch of lines at once was a stall that
every request in flight waited out and that reached the lookup's p99; a write of
already rendered lines takes a few microseconds (bench/FINDINGS.md section 17).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, TextIO

from aiohttp.abc import AbstractAccessLogger
from aiohttp.web import BaseRequest, StreamResponse

#: Seconds between the writes `serve` makes of whatever lines are waiting.
FLUSH_INTERVAL = 0.2
#: Lines waiting at most before the sink writes them out by itself: memory stays small
#: under any load, and one write of 256 rendered lines takes ~15 µs.
BATCH = 256


def configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")


def access_log_options(sink: LineSink | None, log_format: str) -> dict[str, Any]:
    """aiohttp's server options for the access log: a line per request to `sink`, in
    `log_format` ("text" or "json"); `sink` None (`--access-log off`): no access log at
    all, so a request notes nothing. Start-up, the banner and errors print either way."""
    if sink is None:
        return {"access_log": None}
    writer = JsonAccessLog if log_format == "json" else TextAccessLog
    return {"access_log_class": writer, "access_log": sink, "access_log_format": log_format}


class LineSink:
    """Collects rendered lines and writes them out in one call per flush; never drops
    one (a full batch is written at once, the rest by `flush`)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._lines: list[str] = []

    def write(self, line: str) -> None:
        lines = self._lines
        lines.append(line)
        if len(lines) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if self._lines:
            lines = self._lines
            self._lines = []
            lines.append("")  # the last line's newline
            self._stream.write("\n".join(lines))
            self._stream.flush()


def json_line(
    remote: str | None, method: str, path: str, status: int, seconds: float, at: float
) -> str:
    """One JSON object; `at` is the wall time (epoch seconds) the request ended."""
    return json.dumps(
        {
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at)),
            "method": method,
            "path": path,
            "status": status,
            "duration_ms": round(seconds * 1000, 2),
            "remote": remote,
        },
        separators=(",", ":"),
    )


class TextAccessLog(AbstractAccessLogger):
    """aiohttp's designated extension point for access logs: `logger` is the server's
    `access_log` (a `LineSink`), `log_format` "text". Renders the request's line,
    `127.0.0.1 GET /api/v1/orders/o-1 200 1.2ms`, in place: it runs after every answer
    (bench/FINDINGS.md section 18)."""

    def log(self, request: BaseRequest, response: StreamResponse, time_taken: float) -> None:
        self.logger.write(  # type: ignore[attr-defined]
            f"{request.remote} {request.method} {request.path} {response.status} "
            f"{time_taken * 1000:.1f}ms"
        )


#: The text writer under its earlier name (bench/profile.py serves with it).
AccessLog = TextAccessLog


class JsonAccessLog(AbstractAccessLogger):
    """As `TextAccessLog`, one JSON object per line (`--log-format json`)."""

    def log(self, request: BaseRequest, response: StreamResponse, time_taken: float) -> None:
        line = json_line(
            request.remote, request.method, request.path, response.status, time_taken, time.time()
        )
        self.logger.write(line)  # type: ignore[attr-defined]
