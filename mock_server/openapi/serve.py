"""Serving the document (`GET /openapi.json`) and the docs page (`GET /docs` and its
assets, read from `data/docs/`), and the table of those routes."""

from __future__ import annotations

import functools
import json
from importlib import resources

from aiohttp import web

from ..edge.paths import split_base

#: Served by the sandbox but not described in the document: the document and its page.
DOCUMENT_PATHS = ("/openapi.json", "/docs", "/docs/app.js", "/docs/style.css")


@functools.cache
def _document_bytes() -> bytes:
    from .document import build_openapi  # on first request: not a start-up cost

    return json.dumps(build_openapi(), indent=2, ensure_ascii=False).encode("utf-8")


# -- HTTP handlers -------------------------------------------------------------------------

#: The page makes no request anywhere but this sandbox.
PAGE_SECURITY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_PAGE_FILES = {
    "/docs": ("index.html", "text/html"),
    "/docs/app.js": ("app.js", "text/javascript"),
    "/docs/style.css": ("style.css", "text/css"),
}


@functools.cache
def _page_file(name: str) -> bytes:
    return (resources.files("mock_server") / "data" / "docs" / name).read_bytes()


async def serve_openapi(request: web.BaseRequest) -> web.Response:
    return web.Response(body=_document_bytes(), content_type="application/json")


async def serve_docs_file(request: web.BaseRequest) -> web.Response:
    name, content_type = _PAGE_FILES[split_base(request.path)[1]]  # also under a base path
    return web.Response(
        body=_page_file(name),
        content_type=content_type,
        charset="utf-8",
        headers={"Content-Security-Policy": PAGE_SECURITY, "Cache-Control": "no-cache"},
    )


routes = web.RouteTableDef()
routes.get("/openapi.json")(serve_openapi)
for _path in _PAGE_FILES:
    routes.get(_path)(serve_docs_file)
