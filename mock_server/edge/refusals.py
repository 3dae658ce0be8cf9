"""The one place errors are rendered.

Domain errors become the spec's envelope `{"detail", "code"}`; token-exchange failures
keep their own `{"error"}` shape (spec 4.1); aiohttp's own HTTP errors (unknown path,
wrong method, oversized body) are translated into the envelope; anything unexpected is
logged and answered 500 in the envelope, never as a traceback.
"""

from __future__ import annotations

import logging

import aiohttp
from aiohttp import web

from ..errors import ApiError, TokenError, payload_too_large
from .jsonio import json_response

log = logging.getLogger(__name__)

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


def failure(request: web.BaseRequest, exc: Exception, max_body: int) -> web.StreamResponse:
    """The answer to what a handler raised: the spec's envelope for domain errors and
    aiohttp's own HTTP errors, 499 for a client that left, 500 for anything else."""
    if isinstance(exc, ApiError | TokenError):
        return refusal(exc)
    if isinstance(exc, web.HTTPRequestEntityTooLarge):
        error = payload_too_large(max_body)
        return json_response(error.body(), error.status)
    if isinstance(exc, web.HTTPException):
        if exc.status < 400:
            raise exc
        response = json_response(
            {"detail": _detail(request, exc), "code": code_for(exc.status)}, exc.status
        )
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


def refusal(error: ApiError | TokenError) -> web.Response:
    """The spec's envelope; the token endpoint's own `{"error"}` shape (spec 4.1)."""
    if isinstance(error, TokenError):
        return json_response({"error": error.message}, error.status)
    return json_response(error.body(), error.status)


def code_for(status: int) -> str:
    return _HTTP_CODES.get(status, "internal_error" if status >= 500 else "error")


def _detail(request: web.BaseRequest, exc: web.HTTPException) -> str:
    if exc.status == 404:
        return f"No such endpoint: {request.method} {request.path}"
    if exc.status == 405:
        return f"Method {request.method} is not allowed on {request.path}"
    return exc.reason
