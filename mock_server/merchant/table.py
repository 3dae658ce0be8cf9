"""The merchant API's table, as the edge matches a call against it.

Built from `MerchantApi.routes()`, it answers every method and path a merchant call can
have: the route's handler and order id; GET's handler for HEAD (aiohttp sends no body
for a HEAD); for a path no route serves, a 404 `not_found`, and for a method the path's
route does not take, a 405 `method_not_allowed` with an `Allow` header, both in the
spec's envelope (spec 7, docs/fidelity.md). Paths are matched decoded: a
percent-encoded path is the path it encodes. An order id is a whole segment of a route's
path, and at most one segment follows it.
"""

from __future__ import annotations

from collections.abc import Iterable

from aiohttp import web

from ..domain.sandbox import Sandbox
from ..edge.jsonio import json_response
from .api import ORDER_ID, MerchantHandler

_ORDER_ID = "{" + ORDER_ID + "}"


class MerchantTable:
    """Method and path to handler and order id, for every merchant call."""

    def __init__(self, routes: Iterable[tuple[str, str, MerchantHandler]]) -> None:
        #: path -> {method: handler}, for the paths without an order id
        self._exact: dict[str, dict[str, MerchantHandler]] = {}
        #: what precedes the id (no slash) -> {method: handler}, where the id ends the path
        self._id_last: dict[str, dict[str, MerchantHandler]] = {}
        #: (what precedes the id, the one segment after it) -> {method: handler}
        self._id_then: dict[tuple[str, str], dict[str, MerchantHandler]] = {}
        for method, template, handler in routes:
            head, param, tail = template.partition(_ORDER_ID)
            if not param:
                methods = self._exact.setdefault(template, {})
            elif not head.endswith("/") or (tail and (tail[0] != "/" or "/" in tail[1:])):
                raise ValueError(
                    f"{template}: an order id is a whole segment, and at most one follows it"
                )
            elif tail:
                methods = self._id_then.setdefault((head[:-1], tail.removeprefix("/")), {})
            else:
                methods = self._id_last.setdefault(head[:-1], {})
            methods[method] = handler
            if method == "GET":
                methods.setdefault("HEAD", handler)
        # A path both kinds could match would be matched as the id ending it: refuse a
        # table that holds such a pair rather than pick one silently.
        for head in self._id_last:
            parent, _, segment = head.rpartition("/")
            if segment and any(then_head == parent for then_head, _ in self._id_then):
                raise ValueError(f"{head}/{_ORDER_ID}: also a path of a route under {parent}")

    def match(self, method: str, path: str) -> tuple[MerchantHandler, str]:
        """The handler for a call (path as a whole server sees it) and its order id
        (`""` where the path has none): a route's, or the refusal of a 404 or 405. An
        order id is never empty. Costs a dictionary lookup, or two or three for a path
        with an order id, and no more as routes are added."""
        order_id = ""
        methods = self._exact.get(path)
        if methods is None:
            rest, _, last = path.rpartition("/")
            methods = self._id_last.get(rest)
            if methods is not None and last:
                order_id = last
            else:
                head, _, order_id = rest.rpartition("/")
                methods = self._id_then.get((head, last)) if order_id else None
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
