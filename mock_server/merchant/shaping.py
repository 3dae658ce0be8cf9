"""Production's shapes on the way out (docs/shapes.md): every merchant answer passes
here once, as it leaves `merchant.calls`, and is reshaped by its sandbox's shapes file
when one applies to its kind. Without shapes (or with no rule for the kind) the answer
leaves as it is, byte for byte.

What this costs an answer no rule shapes is kept near nothing (bench/SHAPES.md): a
shapes file with rules for events alone leaves every answer unlooked at, the kind is
decided from the path and status before the body is read, and a body is parsed only
when a rule of its kind may change it, and not at all when the answer carries the
mapping it was just encoded from (a created or changed order). An answer shaped by
rules that make the same value each time is kept and sent again while its bytes and
facts stay the same.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from ..domain.sandbox import Sandbox
from ..domain.shapes import KINDS, Shapes, answer_kind
from ..edge.jsonio import RenderedResponse, dumps

#: Stands for a body in the spec's error envelope while the body is not read yet: with
#: it, `answer_kind` names the kind an answer to that path and status has, if it has
#: one (a refusal without `code` has none, and is then left as it is).
_ENVELOPE = {"code": None}
#: The kinds of merchant answers (`event` is the webhook body; `order` stands for
#: `order.webhook` too, and `error` for `error.CODE`).
_ANSWER_KINDS = tuple(kind for kind in KINDS if kind not in ("event", "order.webhook"))


def shaped(sandbox: Sandbox, path: str, response: web.StreamResponse) -> web.StreamResponse:
    """`response` in production's shape for `path` (the path as a whole server sees it)."""
    shapes = sandbox.shapes
    if not shapes.rules or not isinstance(response, web.Response) or not _shapes_answers(shapes):
        return response
    status = response.status
    kind = answer_kind(path, status, _ENVELOPE)
    if kind is None or not shapes.applies(kind):
        return response
    raw = response.body
    if not isinstance(raw, bytes) or not raw.startswith(b"{"):
        return response
    key = _key(sandbox, shapes, kind, path, raw)
    kept = _shaped.get(key) if key is not None else None
    if kept is not None and kept[0] is shapes:
        response.body = kept[1]
        return response
    if isinstance(response, RenderedResponse):  # an order just rendered
        body = response.mapping
    else:
        body = _parsed(raw)
        if body is None or answer_kind(path, status, body) != kind:
            return response
    response.body = dumps(shapes.shape(kind, body, sandbox.answer_facts(kind, body)))
    if key is not None:
        _keep(key, shapes, raw, response.body)
    return response


def _keep(key: tuple[Any, ...], shapes: Shapes, raw: bytes, body: bytes) -> None:
    global _shaped_bytes
    size = len(raw) + len(body)
    if len(_shaped) >= _MAX_SHAPED or _shaped_bytes + size > _MAX_SHAPED_BYTES:
        _shaped.clear()
        _shaped_bytes = 0
    _shaped[key] = (shapes, body)
    _shaped_bytes += size


#: Shaped answers kept to be sent again, by what decides them: the shapes file, the
#: answer's bytes and its facts (`Sandbox.answer_facts_key`). Only rules that make the
#: same value each time are kept (`Shapes.varies`): an order looked up again and again
#: is shaped once per change, as `jsonio.OrderRenderings` encodes it once per change.
_shaped: dict[tuple[Any, ...], tuple[Shapes, bytes]] = {}
_MAX_SHAPED = 4096
#: The bytes kept in all, each answer's own and its shaped bytes (an order of 1000
#: codes is 20 KB; docs/hosting.md, "Sizing").
_MAX_SHAPED_BYTES = 8 * 1024 * 1024
_shaped_bytes = 0


def _key(
    sandbox: Sandbox, shapes: Shapes, kind: str, path: str, raw: bytes
) -> tuple[Any, ...] | None:
    """What decides this answer's shaped bytes, or None where they are not kept: a rule
    that varies, or a created order (new bytes each time)."""
    if shapes.varies(kind):
        return None
    if kind != "order":
        return (id(shapes), kind, raw)
    _, found, rest = path.partition("/orders/")
    if not found:
        return None  # a creation
    order_id = rest.partition("/")[0]
    return (id(shapes), kind, raw, sandbox.answer_facts_key(order_id))


#: Per shapes file in use (by identity; the file itself kept, so that its id stays its
#: own): whether any of its rules shapes a merchant answer.
_answers_shaped: dict[int, tuple[Shapes, bool]] = {}
#: A server's sandboxes share the `--shapes` file; each sandbox given its own adds one.
_MAX_KNOWN = 1024


def _shapes_answers(shapes: Shapes) -> bool:
    known = _answers_shaped.get(id(shapes))
    if known is None or known[0] is not shapes:
        if len(_answers_shaped) >= _MAX_KNOWN:
            _answers_shaped.clear()
        known = _answers_shaped[id(shapes)] = (shapes, any(map(shapes.applies, _ANSWER_KINDS)))
    return known[1]


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
