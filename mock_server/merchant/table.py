"""The merchant API's table, as the edge matches a call against it.

Built from `MerchantApi.routes()`, it answers every method and path a merchant call can
have: the route's handler and order id; GET's handler for HEAD (aiohttp sends no body
for a HEAD); for a path no route serves, a 404 `not_found`, and for a method the path's
route does not take, a 405 `method_not_allowed` with an `Allow` header, both in the
spec's envelope (spec 7, docs/fidelity.md). Paths are matched decoded: a
percent-encoded path is the path it encodes. Matching a call costs a dictionary
lookup, or one per route shape that holds an order id.
"""

from __future__ import annotations

from collections.abc import Iterable

from aiohttp import web

from ..domain.sandbox import Sandbox
from ..edge.jsonio import json_response
from .api import ORDER_ID, MerchantHandler

_ORDER_ID = "{" + ORDER_ID + "}"
#: A shape of path with an order id: (what precedes the id, what follows it).
_Shape = tuple[str, str]


class MerchantTable:
    """Method and path to handler and order id, for every merchant call."""

    def __init__(self, routes: Iterable[tuple[str, str, MerchantHandler]]) -> None:
        #: path -> {method: handler}, for the paths without an order id
        self._exact: dict[str, dict[str, MerchantHandler]] = {}
        #: what follows the id -> {what precedes it: {method: handler}}
        self._with_id: dict[str, dict[str, dict[str, MerchantHandler]]] = {}
        for method, template, handler in routes:
            head, param, tail = template.partition(_ORDER_ID)
            if param:
                methods = self._with_id.setdefault(tail, {}).setdefault(head, {})
            else:
                methods = self._exact.setdefault(template, {})
            methods[method] = handler
            if method == "GET":
                methods.setdefault("HEAD", handler)
        # Longest ending first: `/client-code` is tried before the bare id.
        self._tails = sorted(self._with_id, key=len, reverse=True)

    def match(self, method: str, path: str) -> tuple[MerchantHandler, str]:
        """The handler for a call (path as a whole server sees it) and its order id
        (`""` where the path has none): a route's, or the refusal of a 404 or 405."""
        order_id = ""
        methods = self._exact.get(path)
        if methods is None:
            for tail in self._tails:
                if path.endswith(tail):
                    start, slash, order_id = path[: len(path) - len(tail)].rpartition("/")
                    methods = self._with_id[tail].get(start + slash)
                    if methods is not None and order_id:
                        break
                    methods = None
            if methods is None:
                return _not_found, ""
        handler = methods.get(method)
        if handler is None:
            return _NotAllowed(methods), ""
        return handler, order_id


async def _not_found(request: web.BaseRequest, sandbox: Sandbox, order_id: str) -> web.Response:
    detail = f"No such endpoint: {request.method} {request.path}"
    return json_response({"detail": detail, "code": "not_found"}, 404)


class _NotAllowed:
    """The 405 for a path whose route takes other methods."""

    def __init__(self, methods: Iterable[str]) -> None:
        self._allow = ",".join(sorted(methods))

    async def __call__(
        self, request: web.BaseRequest, sandbox: Sandbox, order_id: str
    ) -> web.Response:
        detail = f"Method {request.method} is not allowed on {request.path}"
        response = json_response({"detail": detail, "code": "method_not_allowed"}, 405)
        response.headers["Allow"] = self._allow
        return response
