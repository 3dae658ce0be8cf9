"""What the edge puts on a request for the handler it runs: the sandbox the call is for
and, for a control call, its route's path parameters and the CORS policy. Handlers read
them with `sandbox_of`, `params_of` and `cors_of`."""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web

from ..domain.sandbox import Sandbox
from .cors import Cors

CURRENT = web.RequestKey("sandbox", Sandbox)
PARAMS: web.RequestKey[Mapping[str, str]] = web.RequestKey("params")
CORS = web.RequestKey("cors", Cors)
#: Methods that change nothing: no `--state` save after them.
READS = ("GET", "HEAD")


def sandbox_of(request: web.BaseRequest) -> Sandbox:
    return request[CURRENT]


def params_of(request: web.BaseRequest) -> Mapping[str, str]:
    """A control route's path parameters (`{order_id}` in `/_mock/orders/{order_id}`)."""
    return request[PARAMS]


def cors_of(request: web.BaseRequest) -> Cors:
    """The CORS policy, for a handler that starts its own stream (the edge marks every
    other answer after the handler returns)."""
    return request[CORS]
