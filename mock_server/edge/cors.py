"""CORS (`--cors-origin`): every response, errors included, says which origins may read
it, and a preflight is answered before anything else."""

from __future__ import annotations

from aiohttp import hdrs, web

#: aiohttp's own `istr` name: setting a header by it skips folding the name's case.
ACAO = hdrs.ACCESS_CONTROL_ALLOW_ORIGIN
ALLOWED_HEADERS = "Authorization, Content-Type, X-Mock-Scenario"
ALLOWED_METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS"
_PREFLIGHT = {
    "Access-Control-Allow-Methods": ALLOWED_METHODS,
    "Access-Control-Allow-Headers": ALLOWED_HEADERS,
    "Access-Control-Max-Age": "600",
}


class Cors:
    """The origins of `--cors-origin` (a comma-separated list, `*` for any), decided once."""

    def __init__(self, cors_origin: str) -> None:
        self._origins = frozenset(o.strip() for o in cors_origin.split(",") if o.strip())
        self._any = "*" in self._origins

    @staticmethod
    def is_preflight(request: web.BaseRequest) -> bool:
        return request.method == "OPTIONS" and hdrs.ACCESS_CONTROL_REQUEST_METHOD in request.headers

    @staticmethod
    def preflight() -> web.Response:
        return web.Response(status=204, headers=_PREFLIGHT)

    def apply(self, request: web.BaseRequest, response: web.StreamResponse) -> None:
        """Mark a response not yet sent (a stream sets its own headers when it starts)."""
        if response.prepared:
            return
        if self._any:
            response.headers[ACAO] = "*"
        else:
            origin = request.headers.get(hdrs.ORIGIN)
            if origin and origin in self._origins:
                response.headers[ACAO] = origin
                response.headers["Vary"] = "Origin"
