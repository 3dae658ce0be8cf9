"""JSON in and out at the HTTP edge.

Request bodies are parsed strictly: UTF-8 only, no NaN/Infinity, at most 64 levels of
nesting, floats kept exact as `Decimal` (so the price guard's "at most 2 decimals" is
checked on what was sent, not on a rounded float). Responses are compact JSON.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import orjson
from aiohttp import web

from ..errors import ApiError, validation_error
from ..sourcefile import ConfigError, parse_text

MAX_DEPTH = 64
#: What `bytes.strip()` removes: a body starting with none of these is not blank.
_BLANK = frozenset(b" \t\n\r\x0b\x0c")
_JSON_TYPES = ("application/json",)


def malformed_body(detail: str) -> ApiError:
    """A body the API cannot read at all (coverage counts it as `malformed body`)."""
    return validation_error(detail, "malformed body")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_EXACT = json.JSONDecoder(parse_float=Decimal, parse_constant=_reject_constant)
_FLOATS = json.JSONDecoder(parse_constant=_reject_constant)


def parse_json(raw: bytes, *, exact: bool = True) -> Any:
    """Parse a request body; any problem is a 400 `validation_error`. `exact` keeps
    fractions as `Decimal` (money and quantities); configuration documents take floats,
    as they do from a file."""
    if exact:
        data = _fast_parse(raw)
        if data is not _SLOW:
            return data
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise malformed_body("The request body is not valid UTF-8") from exc
    try:
        data = (_EXACT if exact else _FLOATS).decode(text)
    except json.JSONDecodeError as exc:
        raise malformed_body(
            f"Malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    except (ValueError, RecursionError) as exc:
        raise malformed_body(f"Malformed JSON: {exc}") from exc
    _check_depth(data)
    return data


_SLOW = object()
_CONTAINERS = (dict, list)


def _fast_parse(raw: bytes) -> Any:
    """orjson's parse of a typical body (an object of strings, integers and small
    objects), or `_SLOW` when the standard decoder must decide: anything orjson refuses
    (so errors keep their messages), any fraction (kept exact as `Decimal` there), and
    anything nested deeper than two levels. What it returns equals the slow path's."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _SLOW
    if type(data) is dict:
        for value in data.values():
            kind = type(value)
            if kind is float:
                return _SLOW
            if kind is dict or kind is list:
                for inner in value.values() if kind is dict else value:
                    if type(inner) is float or type(inner) in _CONTAINERS:
                        return _SLOW
        return data
    return _SLOW if isinstance(data, float | dict | list) else data


def _check_depth(data: Any) -> None:
    """Refuse more than MAX_DEPTH nested objects/arrays (scalars are not a level)."""
    stack = [(data, 1)] if isinstance(data, dict | list) else []
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise malformed_body(f"Malformed JSON: nested deeper than {MAX_DEPTH} levels")
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))


async def read_json(request: web.Request, *, required: bool = True, exact: bool = True) -> Any:
    """The request's JSON body; an empty body is `{}` when not `required`."""
    content_type = request.content_type
    raw = await request.read()
    if not raw or (raw[0] in _BLANK and not raw.strip()):
        if required:
            raise malformed_body("A JSON object body is required")
        return {}
    if request.headers.get("Content-Type") and not _is_json_type(content_type):
        raise malformed_body(f"Content-Type must be application/json, got {content_type}")
    return parse_json(raw, exact=exact)


async def read_object(request: web.Request, *, required: bool = True) -> dict[str, Any]:
    body = await read_json(request, required=required)
    if not isinstance(body, dict):
        raise malformed_body("The request body must be a JSON object")
    return body


YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/plain")


async def read_document(request: web.Request) -> Any:
    """A configuration document (catalog, accounts, scenarios) as JSON, or as YAML when
    sent with a YAML or text content type; YAML mistakes name their line."""
    if request.content_type not in YAML_TYPES:
        return await read_json(request, exact=False)
    try:
        return parse_text(await request.text(), "request body")
    except ConfigError as exc:
        raise validation_error("; ".join(exc.problems)) from exc
    except UnicodeDecodeError as exc:
        raise validation_error("The request body is not valid UTF-8") from exc


def _is_json_type(content_type: str) -> bool:
    return content_type in _JSON_TYPES or content_type.endswith("+json")


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def dumps(data: Any) -> bytes:
    """Compact UTF-8 JSON (orjson: encoding was a tenth of a request's cost). Integers
    beyond 64 bits, which orjson refuses, fall back to the standard encoder."""
    try:
        return orjson.dumps(data, default=_default)
    except TypeError:
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False, default=_default).encode(
            "utf-8"
        )


#: Given as a header, not as `content_type=` and `charset=`, which aiohttp would compose
#: anew for every response (bench/FINDINGS.md section 8).
_JSON_HEADERS = {"Content-Type": "application/json; charset=utf-8"}


def json_response(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=dumps(data), status=status, headers=_JSON_HEADERS)


class OrderRenderings:
    """The JSON of recently read orders, reused while the same order object keeps its
    `version` (a reset makes new orders that may reuse ids and version numbers)."""

    LIMIT = 10_000

    def __init__(self) -> None:
        self._bodies: dict[str, tuple[Any, int, bytes]] = {}

    def response(self, order: Any, status: int = 200) -> web.Response:
        return web.Response(body=self.body(order), status=status, headers=_JSON_HEADERS)

    def body(self, order: Any) -> bytes:
        """The order's JSON (also what the live stream's `order` events carry)."""
        cached = self._bodies.get(order.id)
        if cached is None or cached[0] is not order or cached[1] != order.version:
            if len(self._bodies) >= self.LIMIT:
                self._bodies.clear()
            # Copied to its own size: orjson's result keeps its whole working buffer,
            # many times an order's JSON, and a full cache of those held far more than
            # the bodies themselves (bench/FINDINGS.md section 3b).
            body = bytes(memoryview(dumps(order.to_json())))
            cached = (order, order.version, body)
            self._bodies[order.id] = cached
        return cached[2]
