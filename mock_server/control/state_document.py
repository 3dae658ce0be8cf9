"""`GET, PUT /_mock/state` (docs/state.md): the sandbox's whole state as one JSON document.

Attach "the state my bug happened in" to a report, or start a test from a saved state.
`PUT` checks the document as strictly as the files are checked, and replaces nothing
unless all of it is good.
"""

from __future__ import annotations

from aiohttp import web

from ..domain import state_document
from ..edge.context import sandbox_of
from ..edge.json_stream import paced
from ..edge.jsonio import json_response, read_json

routes = web.RouteTableDef()


@routes.get("/_mock/state")
async def read_state(request: web.BaseRequest) -> web.Response:
    """Written in pieces, each rendered as it goes (docs/state.md)."""
    sandbox = sandbox_of(request)
    return paced.answer(state_document.dump_as_read(sandbox), sandbox)


@routes.put("/_mock/state")
async def replace_state(request: web.BaseRequest) -> web.Response:
    sandbox = sandbox_of(request)
    sandbox.load_state(await read_json(request, exact=False))
    return json_response({"status": "loaded", **sandbox.clock_info(), "seed": sandbox.seed})
