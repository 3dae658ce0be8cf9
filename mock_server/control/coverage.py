"""`/_mock/coverage`: what the run exercised of the contract, and what not
(docs/control-api.md, "Coverage")."""

from __future__ import annotations

from aiohttp import web

from ..edge.context import sandbox_of
from ..edge.jsonio import json_response

routes = web.RouteTableDef()


@routes.get("/_mock/coverage")
async def read_coverage(request: web.BaseRequest) -> web.Response:
    return json_response(sandbox_of(request).coverage_report())


@routes.post("/_mock/coverage/reset")
async def reset_coverage(request: web.BaseRequest) -> web.Response:
    sandbox = sandbox_of(request)
    sandbox.coverage.reset()
    return json_response(sandbox.coverage_report())
