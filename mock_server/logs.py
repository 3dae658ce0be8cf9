"""One log line per request, as text or JSON (`--log-format`)."""

from __future__ import annotations

import json
import logging
import time

from aiohttp.abc import AbstractAccessLogger
from aiohttp.web import BaseRequest, StreamResponse


def configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")


class AccessLog(AbstractAccessLogger):
    """aiohttp's designated extension point for access logs; `log_format` is the
    runner's `access_log_format`, here "text" or "json"."""

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
        self.logger.info(line)
