"""The front door: merchant calls answered before aiohttp's router and middleware chain.

Every request to an `Application` is resolved against its router (every route is also
mirrored under a sandbox's base path, so it holds many) and run through the middleware
chain. For the merchant API's few paths that was a large share of what a lookup cost
beyond returning bytes (bench/FINDINGS.md section 8).
The front door wraps the server's handler: it matches a merchant call by its method and
path (on the root paths or under `/_mock/sandboxes/{id}`) and hands it to the app's
`MerchantCalls` itself, which is what the edge middleware would have done; anything else
(the control API, documents, unknown paths and wrong methods, preflights, a request
with `Expect` or a percent-encoded path) goes on to the application unchanged.

The same application served without the front door (by another runner) answers every
request the same way, through its router: tests/test_front_door.py compares the two.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from ..app_keys import CORS, MERCHANT_API, MERCHANT_CALLS
from .merchant import ORDER_ID, MerchantHandler
from .routing import split_base

_Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
_ORDER_ID = "{" + ORDER_ID + "}"


def open_front_door(runner: web.AppRunner) -> None:
    """Put the front door before a runner's application; call after `runner.setup()`,
    before any site starts (a connection keeps the handler it started with)."""
    server = runner.server
    if server is None:
        raise RuntimeError("open_front_door: set the runner up first")
    server.request_handler = FrontDoor(runner.app, server.request_handler)


class FrontDoor:
    """The server's request handler: merchant calls here, the rest to `behind` (the
    application's own handler)."""

    def __init__(self, app: web.Application, behind: _Handler) -> None:
        self._behind = behind
        self._calls = app[MERCHANT_CALLS]
        self._cors = app[CORS]
        #: method -> (handler by exact path, [(path end, handler by path start)]): the
        #: order id is what lies between a start and an end (`/v1/orders` ... `""`).
        self._routes: dict[str, tuple[dict[str, MerchantHandler], list[tuple[str, dict]]]] = {}
        for method, template, handler in app[MERCHANT_API].routes():
            exact, with_id = self._routes.setdefault(method, ({}, []))
            head, param, tail = template.partition(_ORDER_ID)
            if not param:
                exact[template] = handler
                continue
            heads = next((h for t, h in with_id if t == tail), None)
            if heads is None:
                with_id.append((tail, heads := {}))
            heads[head.removesuffix("/")] = handler  # as `rpartition("/")` leaves it

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse:
        sandbox_id, path = split_base(request.path)
        match = self.match(request.method, path)
        if match is None or "%" in request.raw_path or "Expect" in request.headers:
            return await self._behind(request)
        handler, order_id = match
        response = await self._calls.call(request, handler, sandbox_id, path, order_id)
        self._cors.apply(request, response)
        return response

    def match(self, method: str, path: str) -> tuple[MerchantHandler, str] | None:
        """The merchant handler for a path as a whole server sees it, and its order id
        (`""` if the path has none); None when the router should decide."""
        routes = self._routes.get(method)
        if routes is None:
            return None
        exact, with_id = routes
        handler = exact.get(path)
        if handler is not None:
            return handler, ""
        for tail, heads in with_id:
            if path.endswith(tail):
                head, _, order_id = path[: len(path) - len(tail)].rpartition("/")
                handler = heads.get(head)
                # (no "/" in it, after rpartition; aiohttp's `{order_id}` is `[^{}/]+`)
                if handler is not None and order_id and "{" not in order_id and "}" not in order_id:
                    return handler, order_id
        return None
