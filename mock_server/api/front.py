"""The front door: merchant calls answered before aiohttp's router and middleware chain.

Every request to an `Application` is resolved against its router (some 300 routes: each
is mirrored under a sandbox's base path) and run through the middleware chain. For the
merchant API's few paths that was a third of what a lookup cost beyond returning bytes.
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

from .cors import Cors
from .merchant import ORDER_ID, MerchantApi, MerchantHandler
from .middleware import MERCHANT_CALLS
from .routing import BASE_PREFIX

CORS = web.AppKey("cors", Cors)
MERCHANT_API = web.AppKey("merchant_api", MerchantApi)
_Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
_ORDER_ID = "{" + ORDER_ID + "}"
#: What aiohttp's `{order_id}` never matches (`[^{}/]+`).
_UNROUTABLE = frozenset("{}/")


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
        self._exact: dict[tuple[str, str], MerchantHandler] = {}
        #: (method, path before the order id, path after it, handler)
        self._with_id: list[tuple[str, str, str, MerchantHandler]] = []
        for method, template, handler in app[MERCHANT_API].routes():
            head, param, tail = template.partition(_ORDER_ID)
            if param:
                self._with_id.append((method, head, tail, handler))
            else:
                self._exact[method, template] = handler

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse:
        path = request.path
        sandbox_id = None
        if path.startswith(BASE_PREFIX):
            sandbox_id, slash, rest = path[len(BASE_PREFIX) :].partition("/")
            if not (sandbox_id and slash):
                return await self._behind(request)
            path = "/" + rest
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
        handler = self._exact.get((method, path))
        if handler is not None:
            return handler, ""
        for route_method, head, tail, handler in self._with_id:
            if route_method == method and path.startswith(head) and path.endswith(tail):
                order_id = path[len(head) : len(path) - len(tail)]
                if order_id and not _UNROUTABLE.intersection(order_id):
                    return handler, order_id
        return None
