"""Production's shapes on the way out (docs/shapes.md): every merchant answer passes
here once, as it leaves `merchant.calls`, and is reshaped by its sandbox's shapes file
when one applies to its kind. Without shapes (or with no rule for the kind) the answer
leaves as it is, byte for byte.

What this costs an answer no rule shapes is kept near nothing (bench/SHAPES.md): the
kind is decided from the path and status before the body is read, and a body is parsed
only when a rule of its kind may change it.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from ..domain.sandbox import Sandbox
from ..domain.shapes import answer_kind
from ..edge.jsonio import dumps

#: Stands for a body in the spec's error envelope while the body is not read yet: with
#: it, `answer_kind` names the kind an answer to that path and status has, if it has
#: one (a refusal without `code` has none, and is then left as it is).
_ENVELOPE = {"code": None}


def shaped(sandbox: Sandbox, path: str, response: web.StreamResponse) -> web.StreamResponse:
    """`response` in production's shape for `path` (the path as a whole server sees it)."""
    shapes = sandbox.shapes
    if not shapes or not isinstance(response, web.Response):
        return response
    status = response.status
    kind = answer_kind(path, status, _ENVELOPE)
    if kind is None or not shapes.applies(kind):
        return response
    raw = response.body
    if not isinstance(raw, bytes) or not raw.startswith(b"{"):
        return response
    body = _parsed(raw)
    if body is None or answer_kind(path, status, body) != kind:
        return response
    reshaped = shapes.shape(kind, body, sandbox.answer_facts(kind, body))
    response.body = dumps(reshaped)
    return response


#: The last body parsed and what came of it: an order looked up again and again is
#: answered with the same bytes object (`jsonio.OrderRenderings`), and is parsed once.
#: The rules only read what they are given (`KindRules.apply` copies), so it is reused.
_last: tuple[bytes | None, Any] = (None, None)


def _parsed(raw: bytes) -> Any:
    global _last
    last_raw, last_body = _last
    if raw is last_raw:
        return last_body
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        body = None
    _last = (raw, body)
    return body
