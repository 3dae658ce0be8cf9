"""`/_mock/coverage`: what the run exercised of the contract, and what not
(docs/control-api.md, "Coverage")."""

from __future__ import annotations

from aiohttp import web

from ..api.jsonio import json_response
from ..api.routing import sandbox_of


async def read_coverage(request: web.Request) -> web.Response:
    return json_response(sandbox_of(request).coverage_report())


async def reset_coverage(request: web.Request) -> web.Response:
    sandbox = sandbox_of(request)
    sandbox.coverage.reset()
    return json_response(sandbox.coverage_report())


def add_routes(app: web.Application) -> None:
    app.router.add_get("/_mock/coverage", read_coverage)
    app.router.add_post("/_mock/coverage/reset", reset_coverage)
