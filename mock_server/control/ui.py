"""The dashboard (docs/dashboard.md): `GET /_mock/ui/` and its files, and `GET /` leading there.

The files are shipped in the package (`data/ui/`) and read once; nothing is loaded from
another host. They carry no data (the page reads everything through the documented
`/_mock` calls and `GET /_mock/events`), so they are served without the admin token:
with `--admin-token` the page asks for it and sends it on each data call.
"""

from __future__ import annotations

import functools
from importlib import resources

from aiohttp import web

from ..edge.context import params_of
from ..edge.paths import split_base

UI_PATH = "/_mock/ui/"
#: Served without the admin token: the page and its static files (no data).
OPEN_PATHS = ("/", "/_mock/ui", UI_PATH)
_TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
}
PAGE_SECURITY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

routes = web.RouteTableDef()


@functools.cache
def _files() -> dict[str, tuple[bytes, str]]:
    folder = resources.files("mock_server") / "data" / "ui"
    found = {}
    for entry in folder.iterdir():
        suffix = entry.name[entry.name.rfind(".") :]
        if suffix in _TYPES:
            found[entry.name] = (entry.read_bytes(), _TYPES[suffix])
    return found


@routes.get(UI_PATH + "{name}")
@routes.get(UI_PATH)
async def serve_ui_file(request: web.BaseRequest) -> web.Response:
    name = params_of(request).get("name") or "index.html"
    found = _files().get(name)
    if found is None:
        raise web.HTTPNotFound()
    body, content_type = found
    return web.Response(
        body=body,
        content_type=content_type,
        charset="utf-8",
        headers={"Content-Security-Policy": PAGE_SECURITY, "Cache-Control": "no-cache"},
    )


@routes.get("/_mock/ui")
@routes.get("/")
async def to_ui(request: web.BaseRequest) -> web.Response:
    """`/` and `/_mock/ui` lead to the dashboard (of the sandbox whose base path it is)."""
    path = request.path
    base = path[: len(path) - len(split_base(path)[1])]
    raise web.HTTPFound(base + UI_PATH)
