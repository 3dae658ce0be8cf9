"""Production's shapes on the way out (docs/shapes.md): every merchant answer passes
here once, as it leaves `merchant.calls`, and is reshaped by its sandbox's shapes file
when one applies to its kind. Without shapes (or with no rule for the kind) the answer
leaves as it is, byte for byte.
"""

from __future__ import annotations

import orjson
from aiohttp import web

from ..domain.sandbox import Sandbox
from ..domain.shapes import answer_kind
from ..edge.jsonio import dumps


def shaped(sandbox: Sandbox, path: str, response: web.StreamResponse) -> web.StreamResponse:
    """`response` in production's shape for `path` (the path as a whole server sees it)."""
    shapes = sandbox.shapes
    if not shapes or not isinstance(response, web.Response):
        return response
    raw = response.body
    if not isinstance(raw, bytes) or not raw.startswith(b"{"):
        return response
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return response
    kind = answer_kind(path, response.status, body)
    if kind is None or not shapes.applies(kind):
        return response
    reshaped = shapes.shape(kind, body, sandbox.answer_facts(kind, body))
    response.body = dumps(reshaped)
    return response
