"""The one place errors are rendered, plus CORS and the control API's admin token.

Every response, errors included, carries the CORS headers. Domain errors become the
spec's envelope `{"detail", "code"}`; token-exchange failures keep their own
`{"error"}` shape (spec 4.1); aiohttp's own HTTP errors (unknown path, wrong method,
oversized body) are translated into the envelope; anything unexpected is logged and
answered 500 in the envelope, never as a traceback.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Awaitable, Callable

import aiohttp
from aiohttp import web

from ..clock import iso
from ..domain.coverage import PREFIXES as MERCHANT_PREFIXES
from ..domain.coverage import Coverage
from ..domain.journal import body_text
from ..domain.sandbox import Sandbox
from ..domain.sandboxes import Sandboxes
from ..errors import ApiError, TokenError, not_authenticated, payload_too_large
from .jsonio import json_response
from .routing import (
    BASE_PREFIX,
    CURRENT,
    ENTRY_PARAM,
    SANDBOX_PARAM,
    SANDBOXES,
    STATE_FILE,
    merchant_sandbox,
)

log = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

CONTROL_PREFIX = "/_mock"
NOT_MERCHANT_PREFIXES = (CONTROL_PREFIX, "/openapi.json", "/docs")
#: The dashboard's page and files carry no data: open even with --admin-token.
PAGE_PREFIXES = ("/_mock/ui",)
ALLOWED_HEADERS = "Authorization, Content-Type, X-Mock-Scenario"
ALLOWED_METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS"
_HTTP_CODES = {
    400: "validation_error",
    401: "not_authenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "already_exists",
    413: "payload_too_large",
    422: "validation_error",
    429: "rate_limited",
}
#: Open even with --admin-token, so a container HEALTHCHECK needs no secret.
HEALTH_PATH = "/_mock/health"


def make_middlewares(*, cors_origin: str, admin_token: str | None, max_body: int) -> list:
    origins = frozenset(o.strip() for o in cors_origin.split(",") if o.strip())
    any_origin = "*" in origins

    @web.middleware
    async def edge(request: web.Request, handler: Handler) -> web.StreamResponse:
        # Every request pays this function: one coroutine, no closures, no per-request
        # lookups that could be done once (a merchant call's whole edge is inline here).
        method = request.method
        if method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
            response: web.StreamResponse = web.Response(status=204, headers=_PREFLIGHT)
        else:
            sandbox_id = request.match_info.get(SANDBOX_PARAM)
            path = request.path
            if sandbox_id is not None:  # the path as a whole server would see it
                path = path[len(BASE_PREFIX) + len(sandbox_id) :]
            if path.startswith(NOT_MERCHANT_PREFIXES) or path == "/":
                # Control API and API documents: no faults, no journal entry.
                response = await _control(request, handler, admin_token, sandbox_id, path, max_body)
            else:
                response = await _merchant_call(request, handler, sandbox_id, path, max_body)
        if not response.prepared:
            if any_origin:
                response.headers[ACAO] = "*"
            else:
                origin = request.headers.get("Origin")
                if origin and origin in origins:
                    response.headers[ACAO] = origin
                    response.headers["Vary"] = "Origin"
        return response

    return [edge]


ACAO = "Access-Control-Allow-Origin"
_PREFLIGHT = {
    "Access-Control-Allow-Methods": ALLOWED_METHODS,
    "Access-Control-Allow-Headers": ALLOWED_HEADERS,
    "Access-Control-Max-Age": "600",
}


async def _control(
    request: web.Request,
    handler: Handler,
    admin_token: str | None,
    sandbox_id: str | None,
    path: str,
    max_body: int,
) -> web.StreamResponse:
    """The control call: authorised, then run on its sandbox (the default one on the
    root paths)."""
    try:
        sandboxes = request.app[SANDBOXES]
        if (
            admin_token is not None
            and path.startswith(CONTROL_PREFIX)
            and path != HEALTH_PATH
            and not path.startswith(PAGE_PREFIXES)
        ):
            # Reading a sandbox's own entry is one of its control calls too.
            own = sandbox_id
            if own is None and request.method in ("GET", "HEAD"):
                own = request.match_info.get(ENTRY_PARAM)
            _check_control_token(request, admin_token, sandboxes, own)
        entry = sandboxes.find(sandbox_id) if sandbox_id is not None else sandboxes.default
        request[CURRENT] = entry.sandbox
        response = await handler(request)
        await _save(request, entry.sandbox)
        return response
    except Exception as exc:  # noqa: BLE001 - rendered (or re-raised) by _failure
        return _failure(request, exc, max_body)


def _failure(request: web.Request, exc: Exception, max_body: int) -> web.StreamResponse:
    """The answer to what a handler raised: the spec's envelope for domain errors and
    aiohttp's own HTTP errors, 499 for a client that left, 500 for anything else."""
    if isinstance(exc, ApiError | TokenError):
        return _refusal(exc)
    if isinstance(exc, web.HTTPRequestEntityTooLarge):
        error = payload_too_large(max_body)
        return json_response(error.body(), error.status)
    if isinstance(exc, web.HTTPException):
        if exc.status < 400:
            raise exc
        code = _code_for(exc.status)
        detail = _detail(request, exc)
        response = json_response({"detail": detail, "code": code}, exc.status)
        if exc.status == 405 and "Allow" in exc.headers:
            response.headers["Allow"] = exc.headers["Allow"]
        return response
    if isinstance(exc, ConnectionResetError | aiohttp.ClientConnectionResetError):
        # The client hung up mid-request: nothing changed, and its one log line is the
        # access line with nginx's "client closed request" status; no traceback.
        return web.Response(status=499, reason="Client Closed Request")
    # Last line of defence: an envelope, not a traceback.
    log.error("unhandled error on %s %s", request.method, request.path, exc_info=exc)
    return json_response(
        {"detail": "Internal error in the sandbox (logged)", "code": "internal_error"}, 500
    )


async def _merchant_call(
    request: web.Request, handler: Handler, sandbox_id: str | None, path: str, max_body: int
) -> web.StreamResponse:
    """A merchant API call: its sandbox found, injected faults first, then the journal
    entry (both the sandbox's own, keyed on the path as a whole server sees it)."""
    sandboxes = request.app[SANDBOXES]
    if sandbox_id is None and not sandboxes.routing_needed:
        sandbox = sandboxes.default.sandbox  # only the default sandbox ever existed
    else:
        try:
            sandbox = await merchant_sandbox(request, sandboxes, sandbox_id, path)
        except (ApiError, TokenError) as error:  # no such sandbox: no journal to write to
            return _refusal(error)
    request[CURRENT] = sandbox
    method = request.method
    fault = sandbox.faults.take(method, path) if sandbox.faults else None
    refusal: ApiError | TokenError | None = None
    if fault is None:
        try:
            response = await handler(request)
        except (ApiError, TokenError) as error:
            refusal = error  # coverage counts refusals by cause
            response = _refusal(error)
        except Exception as exc:  # noqa: BLE001 - rendered (or re-raised) by _failure
            response = _failure(request, exc, max_body)
    else:
        if fault.latency_ms:
            await asyncio.sleep(fault.latency_ms / 1000)
        if fault.after_commit:
            try:
                await handler(request)
            except Exception as exc:  # noqa: BLE001 - as above; the fault answers anyway
                _failure(request, exc, max_body)
        response = json_response(
            {
                "detail": f"Injected fault {fault.id} on {method} {path}",
                "code": _code_for(fault.status),
            },
            fault.status,
        )
    if method not in _READS:  # (a read saves nothing: no coroutine for it)
        await _save(request, sandbox)
    if fault is None:
        _count(sandbox.coverage, refusal, path)
    body = b""
    if request.body_exists:
        try:
            body = await request.read()  # already read by the handler: no copy, no wait
        except Exception:  # noqa: BLE001 - over the size limit, or the client left: not kept
            body = b""
    status, at = response.status, sandbox.clock.now()
    sandbox.journal.record(method, path, status, body, at)
    if sandbox.events.active:
        sandbox.events.publish_journal(method, path, status, body_text(body), iso(at))
    return response


_READS = ("GET", "HEAD")


async def _save(request: web.Request, sandbox: Sandbox) -> None:
    """With --state, what this call changed is in the file before the answer leaves.
    Reads change nothing; any other call may (a control call's change has no hook of its
    own, so the sandbox's small part is rewritten)."""
    if request.method in _READS:
        return
    state_file = request.app.get(STATE_FILE)
    if state_file is not None:
        state_file.touched(sandbox)
        await state_file.committed()


def _count(coverage: Coverage, refusal: ApiError | TokenError | None, path: str) -> None:
    """Coverage of a merchant call: its path prefix and, if refused, why."""
    for prefix in _MERCHANT_PREFIXES:
        if path.startswith(prefix):
            coverage.count("prefixes", prefix[:-1])
            if isinstance(refusal, TokenError):
                coverage.count("merchant_errors", "token exchange refused")
            elif refusal is not None:
                cause = f": {refusal.cause}" if refusal.cause else ""
                coverage.count("merchant_errors", refusal.code + cause)
            return


_MERCHANT_PREFIXES = tuple(prefix + "/" for prefix in MERCHANT_PREFIXES)


def _refusal(error: ApiError | TokenError) -> web.Response:
    """The spec's envelope; the token endpoint's own `{"error"}` shape (spec 4.1)."""
    if isinstance(error, TokenError):
        return json_response({"error": error.message}, error.status)
    return json_response(error.body(), error.status)


def _code_for(status: int) -> str:
    return _HTTP_CODES.get(status, "internal_error" if status >= 500 else "error")


def _detail(request: web.Request, exc: web.HTTPException) -> str:
    if exc.status == 404:
        return f"No such endpoint: {request.method} {request.path}"
    if exc.status == 405:
        return f"Method {request.method} is not allowed on {request.path}"
    return exc.reason


def _check_control_token(
    request: web.Request, admin_token: str, sandboxes: Sandboxes, sandbox_id: str | None
) -> None:
    """The admin token opens every control call; a sandbox's control token opens the
    control calls under its own base path and nothing else (DESIGN 12)."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip().encode()
    if scheme.lower() == "bearer":
        if hmac.compare_digest(token, admin_token.encode()):
            return
        own = sandboxes.control_token_of(sandbox_id) if sandbox_id is not None else None
        if own is not None and hmac.compare_digest(token, own.encode()):
            return
    raise not_authenticated(
        "The control API needs 'Authorization: Bearer <admin token>' (--admin-token)"
        + (" or this sandbox's control_token" if sandbox_id is not None else "")
    )
