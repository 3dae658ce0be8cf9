"""Where a request goes, read off its path once at the edge (docs/architecture.md).

A sandbox's base path `/_mock/sandboxes/{id}` is taken off here and nowhere else; what is
left is the path as a whole server would see it. A path under `/_mock`, the API
documents (`/openapi.json`, `/docs`) and `/` are the control API's; every other path is
a merchant call, a wrong one included (docs/control-api.md, "Request journal").
"""

from __future__ import annotations

from aiohttp import web

BASE_PREFIX = "/_mock/sandboxes/"
CONTROL_PREFIX = "/_mock"
_CONTROL_PREFIXES = (CONTROL_PREFIX, "/openapi.json", "/docs")


def split_base(path: str) -> tuple[str | None, str]:
    """A path under a sandbox's base path (`/_mock/sandboxes/{id}/...`) as (that id, the
    rest as a whole server would see it); any other path as (None, itself)."""
    if path.startswith(BASE_PREFIX):
        sandbox_id, slash, rest = path[len(BASE_PREFIX) :].partition("/")
        if sandbox_id and slash:
            return sandbox_id, "/" + rest
    return None, path


def is_control(path: str) -> bool:
    """Whether a path, as a whole server sees it, is the control API's (or a document's)
    rather than a merchant call."""
    return path.startswith(_CONTROL_PREFIXES) or path == "/"


def server_url(request: web.BaseRequest, public_url: str | None = None) -> str:
    """This server as clients call it: `public_url` when set (`--public-url`, a router's
    address: docs/cluster.md), else as the client reached it (a container's mapped port
    included, or a router's address when the router passes the `Host` on)."""
    if public_url is not None:
        return public_url
    return f"{request.scheme}://{request.host}"
