"""Which sandbox a request is for, decided once per request at the edge (the rules:
docs/control-api.md, "Sandboxes").

Every route is served twice: on the root paths and under a sandbox's base path
`/_mock/sandboxes/{sandbox}`. Under a base path the id names the sandbox. On the root
paths control calls are the default sandbox's, and merchant calls route by credential:
a bearer token names its sandbox, and the token endpoint routes by the API key in its
body. The edge middleware stores the answer on the request; handlers read it with
`sandbox_of`.
"""

from __future__ import annotations

from aiohttp import web

from ..domain.sandbox import Sandbox
from ..domain.sandbox_ids import ID_PREFIX
from ..domain.sandboxes import Sandboxes
from ..errors import ApiError, not_authenticated
from .jsonio import parse_json

CURRENT = web.RequestKey("sandbox", Sandbox)
#: The match-info name of the sandbox id in a mirrored route.
SANDBOX_PARAM = "sandbox"
#: The match-info name of the sandbox id in `/_mock/sandboxes/{sandbox_id}` (the entry
#: itself, served on the root paths only).
ENTRY_PARAM = "sandbox_id"
BASE_PATH = "/_mock/sandboxes/{" + SANDBOX_PARAM + "}"
BASE_PREFIX = "/_mock/sandboxes/"


def sandbox_of(request: web.Request) -> Sandbox:
    return request[CURRENT]


def server_url(request: web.Request) -> str:
    """This server as the client reached it (a container's mapped port included)."""
    return f"{request.scheme}://{request.host}"


def split_base(path: str) -> tuple[str | None, str]:
    """A path under a sandbox's base path (`/_mock/sandboxes/{id}/...`) as (that id, the
    rest as a whole server would see it); any other path as (None, itself). The one
    place a base path is taken apart: whether a call is the merchant API's or the
    control API's is then decided on what a whole server would see."""
    if path.startswith(BASE_PREFIX):
        sandbox_id, slash, rest = path[len(BASE_PREFIX) :].partition("/")
        if sandbox_id and slash:
            return sandbox_id, "/" + rest
    return None, path


async def merchant_sandbox(
    request: web.Request, sandboxes: Sandboxes, sandbox_id: str | None, path: str
) -> Sandbox:
    """The sandbox a merchant call is for; raises the 404 or 401 that says why none."""
    if sandbox_id is not None:
        return sandboxes.find(sandbox_id).sandbox
    if not sandboxes.routing_needed:
        return sandboxes.default.sandbox
    if path.endswith("/auth/token/client"):
        api_key = await _api_key_in_body(request)
        if api_key is not None:
            return sandboxes.for_api_key(api_key, server_url(request)).sandbox
        return sandboxes.default.sandbox
    _, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip()
    if token.startswith(ID_PREFIX):
        entry = sandboxes.for_token(token)
        if entry is None:
            raise not_authenticated(
                f"The sandbox {token.partition('.')[0]} that issued this token no longer "
                "exists (deleted or expired): create a sandbox and exchange its API key"
            )
        return entry.sandbox
    return sandboxes.default.sandbox


async def _api_key_in_body(request: web.Request) -> str | None:
    """The token request's `api_key`, read early to route it; anything unreadable goes to
    the default sandbox, whose handler answers it in the endpoint's own shape."""
    try:
        body = parse_json(await request.read())
    except (ApiError, web.HTTPException):
        return None
    api_key = body.get("api_key") if isinstance(body, dict) else None
    return api_key if isinstance(api_key, str) else None


def mirror_under_sandboxes(router: web.UrlDispatcher) -> None:
    """Serve every route registered so far under `BASE_PATH` too."""
    for resource in list(router.resources()):
        path = resource.canonical
        for route in resource:
            router.add_route(route.method, BASE_PATH + path, route.handler)
