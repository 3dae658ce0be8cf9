"""Which sandbox a merchant call is for (the rules: docs/control-api.md, "Sandboxes").

Under a sandbox's base path, the base path's id names it. On the root paths a bearer
token names the sandbox that issued it, and the token endpoint goes by the API key in
its body; anything else is the default sandbox's.
"""

from __future__ import annotations

from aiohttp import web

from ..domain.sandbox import Sandbox
from ..domain.sandbox_ids import ID_PREFIX
from ..domain.sandboxes import Sandboxes
from ..edge.jsonio import parse_json
from ..edge.paths import server_url
from ..errors import ApiError, not_authenticated

TOKEN_PATH_END = "/auth/token/client"


async def merchant_sandbox(
    request: web.BaseRequest, sandboxes: Sandboxes, sandbox_id: str | None, path: str
) -> Sandbox:
    """The sandbox a merchant call is for; raises the 404 or 401 that says why none."""
    if sandbox_id is not None:
        return sandboxes.find(sandbox_id).sandbox
    if not sandboxes.routing_needed:
        return sandboxes.default.sandbox
    if path.endswith(TOKEN_PATH_END):
        api_key = await _api_key_in_body(request)
        if api_key is not None:
            url = server_url(request, sandboxes.public_url)
            return sandboxes.for_api_key(api_key, url).sandbox
        return sandboxes.default.sandbox
    _, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip()
    if token.startswith(ID_PREFIX):
        entry = sandboxes.for_token(token)
        if entry is None:
            raise not_authenticated(_why_no_sandbox(request, sandboxes, token.partition(".")[0]))
        return entry.sandbox
    return sandboxes.default.sandbox


def _why_no_sandbox(request: web.BaseRequest, sandboxes: Sandboxes, sandbox_id: str) -> str:
    """A root call's token names a sandbox this server does not hold: on another node of
    a cluster (root paths reach the first node's sandboxes only: docs/cluster.md), or
    gone."""
    node = sandboxes.node_elsewhere(sandbox_id)
    if node is not None:
        base_url = f"{server_url(request, sandboxes.public_url)}/_mock/sandboxes/{sandbox_id}"
        return (
            f"The sandbox {sandbox_id} that issued this token lives on node {node}, which "
            f"the root paths do not reach: call it through its base_url, {base_url}"
        )
    return (
        f"The sandbox {sandbox_id} that issued this token {sandboxes.missing_reason(sandbox_id)}"
        ": create a sandbox and exchange its API key"
    )


async def _api_key_in_body(request: web.BaseRequest) -> str | None:
    """The token request's `api_key`, read early to route it; anything unreadable goes to
    the default sandbox, whose handler answers it in the endpoint's own shape."""
    try:
        body = parse_json(await request.read())
    except (ApiError, web.HTTPException):
        return None
    api_key = body.get("api_key") if isinstance(body, dict) else None
    return api_key if isinstance(api_key, str) else None
