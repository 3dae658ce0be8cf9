"""JSON in and out at the HTTP edge.

Request bodies are parsed strictly: UTF-8 only, no NaN/Infinity, at most 64 levels of
nesting, floats kept exact as `Decimal` (so the price guard's "at most 2 decimals" is
checked on what was sent, not on a rounded float). Responses are compact JSON.

Every body costs the server in proportion to what it holds, and one event loop serves
every sandbox, so a body is bounded before it is parsed (docs/hosting.md, "Inputs a
tenant sends"): its bytes (the server's 1 MiB; `TOKEN_BODY_BYTES` on the token
endpoint, whose body is one key, spec 4.1), its objects and arrays, and its nesting.
It is parsed once, by orjson; the standard decoder reads it again only where orjson
cannot give what was sent: fractions kept exact, integers beyond 64 bits.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import orjson
from aiohttp import hdrs, web
from multidict import CIMultiDict

from ..errors import ApiError, payload_too_large, validation_error
from ..sourcefile import ConfigError, parse_sent

MAX_DEPTH = 64
#: The server's own bound on a body (`config.MAX_BODY_BYTES`): what aiohttp refuses
#: past it never reaches a parser.
BODY_BYTES = 1024 * 1024
#: The token request is `{"api_key": "..."}` (spec 4.1): read before any credential is
#: checked, so it is kept small.
TOKEN_BODY_BYTES = 64 * 1024
#: Objects and arrays in one body: parsing costs about 0.1 to 0.4 us each, so this
#: keeps any body under ~20 ms; a 1 MiB catalog holds a few thousand.
MAX_CONTAINERS = 50_000
#: A YAML document costs 50 times what the same JSON does to read (libyaml builds a
#: Python object per token and per node): 32 KiB is read in ~40 ms.
YAML_BYTES = 32 * 1024
#: A body at most this long is read by walking what orjson made of it (`_parse_small`):
#: it holds at most a few hundred objects and arrays, walked in tens of microseconds.
WALKED_BYTES = 1024
#: What `bytes.strip()` removes: a body starting with none of these is not blank.
_BLANK = frozenset(b" \t\n\r\x0b\x0c")
_JSON_TYPES = ("application/json",)
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))
_ONE_BRACKET = bytes.maketrans(b"{}", b"[]")
#: A number orjson cannot give as sent: a fraction or exponent (kept exact as
#: `Decimal`), or 19 digits and more (beyond 64 bits orjson gives a float).
_FRACTION = re.compile(rb"[.eE]")
_LONG_INTEGER = re.compile(rb"\d{19}")


def malformed_body(detail: str) -> ApiError:
    """A body the API cannot read at all (coverage counts it as `malformed body`)."""
    return validation_error(detail, "malformed body")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_EXACT = json.JSONDecoder(parse_float=Decimal, parse_constant=_reject_constant)
_FLOATS = json.JSONDecoder(parse_constant=_reject_constant)
#: The last body parsed and what came of it: a body routed by its content (the token
#: endpoint's `api_key`) is read again by its handler, and is parsed once.
_last: tuple[Any, ...] = (None, None, None)


def parse_json(raw: bytes, *, exact: bool = True, limit: int = BODY_BYTES) -> Any:
    """Parse a request body; any problem is a 400 `validation_error` (413 past `limit`
    bytes). `exact` keeps fractions as `Decimal` (money and quantities); configuration
    documents take floats, as they do from a file."""
    global _last
    if len(raw) > limit:
        raise payload_too_large(limit)
    key = (exact, limit)
    cached_raw, cached_key, outcome = _last
    if cached_raw is raw and cached_key == key:
        if isinstance(outcome, ApiError):
            raise ApiError(outcome.status, outcome.code, outcome.detail, cause=outcome.cause)
        return outcome
    try:
        outcome = _parse(raw, exact)
    except ApiError as error:
        _last = (raw, key, error)
        raise
    _last = (raw, key, outcome)
    return outcome


def _parse(raw: bytes, exact: bool) -> Any:
    if exact and len(raw) <= WALKED_BYTES:
        return _parse_small(raw)
    return _parse_bytes(raw, exact)


def _parse_bytes(raw: bytes, exact: bool) -> Any:
    """Bounded before orjson reads it: its objects and arrays counted, and its nesting
    measured, on its bytes with the strings taken out; those bytes also say whether the
    standard decoder must read it again."""
    outside = _outside_strings(raw)
    brackets = outside.translate(_ONE_BRACKET, _NOT_BRACKETS)
    if brackets.count(b"[") > MAX_CONTAINERS:
        raise malformed_body(
            f"The body holds more than {MAX_CONTAINERS} objects and arrays; "
            "send less at once (docs/hosting.md, 'Inputs a tenant sends')"
        )
    data = _orjson(raw)
    if len(brackets) > 2 * MAX_DEPTH and _deeper_than(brackets, MAX_DEPTH):
        raise _too_deep()
    if _LONG_INTEGER.search(outside) or (
        exact and _FRACTION.search(outside.replace(b"true", b"").replace(b"false", b""))
    ):
        return _standard(raw, exact)
    return data


def _parse_small(raw: bytes) -> Any:
    """`_parse` of a body of at most `WALKED_BYTES`, read from orjson's result rather
    than from the bytes: too short to hold `MAX_CONTAINERS`, it is parsed at once, then
    walked for its depth and for a float, which orjson gives exactly where the standard
    decoder is needed (a fraction or exponent, an integer beyond 64 bits)."""
    data = _orjson(raw)
    return _standard(raw, True) if _holds_float(data, 0) else data


def _holds_float(value: Any, depth: int) -> bool:
    """Whether `value` holds a float; refuses containers nested deeper than `MAX_DEPTH`
    (the whole value is walked: the standard decoder never meets a deeper body)."""
    kind = type(value)
    if kind is float:
        return True
    if kind is dict:
        items = value.values()
    elif kind is list:
        items = value
    else:
        return False
    if depth >= MAX_DEPTH:
        raise _too_deep()
    found = False
    for item in items:
        if _holds_float(item, depth + 1):
            found = True
    return found


def _orjson(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if isinstance(exc.__cause__, UnicodeDecodeError) or "UTF-8" in exc.msg:
            raise malformed_body("The request body is not valid UTF-8") from exc
        raise malformed_body(
            f"Malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc


def _too_deep() -> ApiError:
    return malformed_body(f"Malformed JSON: nested deeper than {MAX_DEPTH} levels")


def _standard(raw: bytes, exact: bool) -> Any:
    """The standard decoder's reading of a body orjson has accepted (so it is valid
    UTF-8 and JSON, within the bounds): fractions as `Decimal` when `exact`, and
    integers of any size."""
    try:
        return (_EXACT if exact else _FLOATS).decode(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # e.g. an integer of over 4300 digits
        raise malformed_body(f"Malformed JSON: {exc}") from exc


def _outside_strings(raw: bytes) -> bytes:
    """The body with its strings taken out (for valid JSON; anything else gives some
    bytes that orjson then refuses). Escaped backslashes go first, so that what is
    left of `\\"` is an escaped quote, then those; the quotes left delimit strings."""
    if b'"' not in raw:
        return raw
    if b"\\" in raw:
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    return b"".join(raw.split(b'"')[::2])


def _deeper_than(brackets: bytes, depth: int) -> bool:
    """Whether balanced brackets nest deeper than `depth`: each pass takes out the empty
    pairs, the innermost level, so `depth` passes empty them exactly when they nest no
    deeper (linear in the brackets for each level)."""
    for _ in range(depth):
        if not brackets:
            return False
        brackets = brackets.replace(b"[]", b"")
    return bool(brackets)


async def read_json(
    request: web.BaseRequest,
    *,
    required: bool = True,
    exact: bool = True,
    limit: int = BODY_BYTES,
) -> Any:
    """The request's JSON body; an empty body is `{}` when not `required`."""
    raw = await request.read()
    if len(raw) > limit:  # whatever it holds, blank included
        raise payload_too_large(limit)
    if not raw or (raw[0] in _BLANK and not raw.strip()):
        if required:
            raise malformed_body("A JSON object body is required")
        return {}
    declared = request.headers.get(hdrs.CONTENT_TYPE)
    # The header as clients send it most is taken as it is; any other is parsed.
    if declared and declared not in _JSON_TYPES and not _is_json_type(request.content_type):
        raise malformed_body(f"Content-Type must be application/json, got {request.content_type}")
    return parse_json(raw, exact=exact, limit=limit)


async def read_object(request: web.BaseRequest, *, required: bool = True) -> dict[str, Any]:
    body = await read_json(request, required=required)
    if not isinstance(body, dict):
        raise malformed_body("The request body must be a JSON object")
    return body


YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/plain")


async def read_document(request: web.BaseRequest) -> Any:
    """A configuration document (catalog, accounts, scenarios) as JSON, or as YAML when
    sent with a YAML or text content type; YAML mistakes name their line. YAML is read
    as a tenant's (`sourcefile.parse_sent`: no aliases) and within `YAML_BYTES`."""
    if request.content_type not in YAML_TYPES:
        return await read_json(request, exact=False)
    raw = await request.read()
    if len(raw) > YAML_BYTES:
        raise ApiError(
            413,
            "payload_too_large",
            f"A YAML document is at most {YAML_BYTES} bytes (32 KiB), this one is "
            f"{len(raw)}: send it as JSON (up to {BODY_BYTES} bytes), or in parts",
        )
    try:
        return parse_sent(raw.decode("utf-8"), "request body")
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


#: Every JSON answer's headers, copied into each `web.Response`. Given as a header, not as
#: `content_type=` and `charset=`, which aiohttp would compose anew for every response
#: (bench/FINDINGS.md section 8); as a `CIMultiDict` keyed by aiohttp's own `istr` name,
#: the copy aiohttp makes fastest (section 19). Never changed in place.
JSON_HEADERS = CIMultiDict({hdrs.CONTENT_TYPE: "application/json; charset=utf-8"})


def json_response(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=dumps(data), status=status, headers=JSON_HEADERS)


class RenderedResponse(web.Response):
    """A JSON answer that keeps the mapping its body was just encoded from: a step that
    reads the answer after its handler (production's shapes, `merchant.shaping`) takes
    the mapping rather than parsing the bytes back."""

    __slots__ = ("mapping",)
    mapping: dict[str, Any]


class OrderRenderings:
    """The JSON of recently read orders, reused while the same order object keeps its
    `version` (a reset makes new orders that may reuse ids and version numbers). A new
    order's answer is not kept: most are read seldom or never, and keeping each one
    cost every creation more than rendering it again costs its first read
    (bench/FINDINGS.md section 19)."""

    LIMIT = 10_000
    #: The bytes kept in all: an order of 1000 codes is 20 KB of JSON, and 10,000 of them
    #: would be 200 MB (docs/hosting.md, "Sizing").
    BYTES = 16 * 1024 * 1024

    def __init__(self) -> None:
        self._bodies: dict[str, tuple[Any, int, bytes]] = {}
        self._bytes = 0

    def response(self, order: Any, status: int = 200, *, keep: bool = True) -> web.Response:
        """The order's answer; a `RenderedResponse` when it was encoded now (a created
        or changed order), kept for the next read unless `keep` is false."""
        body = self._kept(order)
        if body is not None:
            return web.Response(body=body, status=status, headers=JSON_HEADERS)
        mapping = order.to_json()
        body = self._keep(order, mapping) if keep else dumps(mapping)
        response = RenderedResponse(body=body, status=status, headers=JSON_HEADERS)
        response.mapping = mapping
        return response

    def body(self, order: Any) -> bytes:
        """The order's JSON (also what the live stream's `order` events carry)."""
        body = self._kept(order)
        return body if body is not None else self._keep(order, order.to_json())

    def _kept(self, order: Any) -> bytes | None:
        cached = self._bodies.get(order.id)
        if cached is None or cached[0] is not order or cached[1] != order.version:
            return None
        return cached[2]

    def _keep(self, order: Any, mapping: dict[str, Any]) -> bytes:
        # Copied to its own size: orjson's result keeps its whole working buffer, many
        # times an order's JSON, and a full cache of those held far more than the bodies
        # themselves (bench/FINDINGS.md section 3b).
        body = bytes(memoryview(dumps(mapping)))
        replaced = self._bodies.get(order.id)
        if replaced is not None:
            self._bytes -= len(replaced[2])
        if len(self._bodies) >= self.LIMIT or self._bytes + len(body) > self.BYTES:
            self._bodies.clear()
            self._bytes = 0
        self._bodies[order.id] = (order, order.version, body)
        self._bytes += len(body)
        return body
