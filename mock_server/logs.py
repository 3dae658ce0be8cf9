"""One log line per request, as text or JSON (`--log-format`).

Access lines bypass the `logging` machinery (a fifth of a lookup's cost went there):
`AccessLog` formats the line and hands it to a `LineSink`, a block-buffered writer
that `serve` flushes a few times a second and on shutdown.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import TextIO

from aiohttp.abc import AbstractAccessLogger
from aiohttp.web import BaseRequest, StreamResponse

FLUSH_INTERVAL = 0.2


def configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")


class LineSink:
    """Collects lines and writes them out in one call per flush."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._lines: list[str] = []

    def write(self, line: str) -> None:
        self._lines.append(line)

    def flush(self) -> None:
        if self._lines:
            self._stream.write("\n".join(self._lines) + "\n")
            self._lines.clear()
            self._stream.flush()


class AccessLog(AbstractAccessLogger):
    """aiohttp's designated extension point for access logs. `logger` is the runner's
    `access_log` (here a `LineSink`); `log_format` its `access_log_format`, "text" or
    "json"."""

    def log(self, request: BaseRequest, response: StreamResponse, time_taken: float) -> None:
        if self.log_format == "json":
            line = json.dumps(
                {
                    "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "method": request.method,
                    "path": request.path,
                    "status": response.status,
                    "duration_ms": round(time_taken * 1000, 2),
                    "remote": request.remote,
                },
                separators=(",", ":"),
            )
        else:
            line = (
                f"{request.remote} {request.method} {request.path} {response.status} "
                f"{time_taken * 1000:.1f}ms"
            )
        self.logger.write(line)  # type: ignore[attr-defined]
