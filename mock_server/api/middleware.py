"""The edge middleware: what every request the router matched goes through.

CORS on every response (`api.cors`); a merchant call is handed to the app's
`MerchantCalls` (faults, journal, coverage, `--state`); a control call is authorised
(the admin token, or a sandbox's control token under its base path) and run on its
sandbox. Errors are rendered in one place (`api.refusals`). Merchant calls on the
server's own paths usually arrive through the front door (`api.front`) instead, which
does the same without the router.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable

from aiohttp import web

from ..app_keys import MERCHANT_CALLS, SANDBOXES
from ..domain.sandbox import Sandbox
from ..domain.sandboxes import Sandboxes
from ..errors import not_authenticated
from .cors import Cors
from .merchant import MerchantHandler
from .merchant_calls import READS
from .refusals import failure
from .routing import CURRENT, ENTRY_PARAM, split_base

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

CONTROL_PREFIX = "/_mock"
NOT_MERCHANT_PREFIXES = (CONTROL_PREFIX, "/openapi.json", "/docs")
#: The dashboard's page and files carry no data: open even with --admin-token.
PAGE_PREFIXES = ("/_mock/ui",)
#: Open even with --admin-token, so a container HEALTHCHECK needs no secret.
HEALTH_PATH = "/_mock/health"


def make_middlewares(*, cors: Cors, admin_token: str | None, max_body: int) -> list:
    @web.middleware
    async def edge(request: web.Request, handler: Handler) -> web.StreamResponse:
        if cors.is_preflight(request):
            response: web.StreamResponse = cors.preflight()
        else:
            # Taken apart from the path, not the route: a wrong method or an unknown
            # path under a base path matched no route, and is still that sandbox's call.
            sandbox_id, path = split_base(request.path)
            if path.startswith(NOT_MERCHANT_PREFIXES) or path == "/":
                # Control API and API documents: no faults, no journal entry.
                response = await _control(request, handler, admin_token, sandbox_id, path, max_body)
            else:
                # (the route's handler reads its order id from the match info)
                response = await request.app[MERCHANT_CALLS].call(
                    request, _routed_call(handler), sandbox_id, path, ""
                )
        cors.apply(request, response)
        return response

    return [edge]


def _routed_call(handler: Handler) -> MerchantHandler:
    """The router's handler (a merchant route, or aiohttp's 404 or 405 for a path no
    route serves: still a merchant call, journaled and counted) as a merchant handler."""

    async def answer(request: web.BaseRequest, sandbox: Sandbox, order_id: str) -> web.Response:
        return await handler(request)  # type: ignore[arg-type,return-value]

    return answer


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
        if request.method not in READS:  # any other call may change the sandbox
            await request.app[MERCHANT_CALLS].save(entry.sandbox)
        return response
    except Exception as exc:  # noqa: BLE001 - rendered (or re-raised) by failure
        return failure(request, exc, max_body)


def _check_control_token(
    request: web.Request, admin_token: str, sandboxes: Sandboxes, sandbox_id: str | None
) -> None:
    """The admin token opens every control call; a sandbox's control token opens the
    control calls under its own base path and nothing else (docs/control-api.md,
    "Sandboxes")."""
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
