"""Which sandbox a merchant call is for, and whether its caller is one of that
sandbox's own (the rules: docs/control-api.md, "Sandboxes"; docs/hosting.md, "What a
tenant can see").

Under a sandbox's base path, the base path's id names it. On the root paths a bearer
token names the sandbox that issued it, and the token endpoint goes by the API key in
its body; anything else is the default sandbox's.

A call's caller is a created sandbox's own when it presents one of the sandbox's
credentials: a bearer token the sandbox issued and still honours (spec 5) or, on the
token endpoint (spec 4.1), an API key the sandbox holds. The plant demo has no
credential (spec 4.6: authentication not shown), so knowing the base URL is all its
caller needs. Only an own caller spends the sandbox's rate, keeps it alive, meets its
injected faults and reaches its journal; anyone else is answered as the handler answers
(401, or the 404 or 405 of a path no route serves) and leaves no trace there.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from ..domain.sandbox import Sandbox
from ..domain.sandbox_ids import ID_PREFIX
from ..domain.sandboxes import Entry, Sandboxes
from ..edge.jsonio import TOKEN_BODY_BYTES, parse_json
from ..edge.paths import server_url
from ..errors import ApiError, TokenError, not_authenticated

TOKEN_PATH_END = "/auth/token/client"
#: The plant demo's path (spec 4.6), whose calls carry no credential.
PLANT_PATH = "/v3/plant"


@dataclass(frozen=True, slots=True)
class Caller:
    """The sandbox a merchant call is for, and whether its caller is one of its own."""

    entry: Entry
    own: bool

    @property
    def sandbox(self) -> Sandbox:
        return self.entry.sandbox


def unrouted(sandboxes: Sandboxes, sandbox_id: str | None) -> bool:
    """Whether a call goes to the default sandbox without routing: no base path, and
    only the default sandbox ever existed. Every caller of the default sandbox is its
    own: it belongs to no tenant (docs/hosting.md), and its journal shows every call
    made to it, as docs/control-api.md says."""
    return sandbox_id is None and not sandboxes.routing_needed


async def merchant_caller(
    request: web.BaseRequest, sandboxes: Sandboxes, sandbox_id: str | None, path: str
) -> Caller:
    """The sandbox a merchant call that needs routing (`unrouted` is false) is for,
    untouched, and whether its caller is its own; raises the 404 or 401 that says why
    there is no sandbox."""
    api_key = await _api_key_in_body(request) if path.endswith(TOKEN_PATH_END) else None
    authorization = request.headers.get("Authorization")
    if sandbox_id is not None:
        entry = sandboxes.find(sandbox_id, touch=False)
    elif path.endswith(TOKEN_PATH_END):
        url = server_url(request, sandboxes.public_url)
        entry = sandboxes.for_api_key(api_key, url) if api_key else sandboxes.default
    else:
        entry = _for_root_token(request, sandboxes, authorization)
    sandbox = entry.sandbox
    own = (
        entry is sandboxes.default
        or path == PLANT_PATH
        or (api_key is not None and _holds(sandbox, api_key))
        or _honours(sandbox, authorization)
    )
    return Caller(entry, own)


def _for_root_token(
    request: web.BaseRequest, sandboxes: Sandboxes, authorization: str | None
) -> Entry:
    if not authorization:
        return sandboxes.default
    token = authorization.partition(" ")[2].strip()
    if not token.startswith(ID_PREFIX):
        return sandboxes.default
    entry = sandboxes.for_token(token)
    if entry is None:
        raise not_authenticated(_why_no_sandbox(request, sandboxes, token.partition(".")[0]))
    return entry


def _holds(sandbox: Sandbox, api_key: str) -> bool:
    return api_key in sandbox.state.account_by_key


def _honours(sandbox: Sandbox, authorization: str | None) -> bool:
    """Whether the sandbox takes this `Authorization` (spec 5), as its handlers will."""
    if not authorization:
        return False
    try:
        sandbox.authenticate(authorization)
    except ApiError:
        return False
    return True


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
    """The token request's `api_key`, read early to route it and to know its caller;
    anything unreadable is no key (the handler answers it in the endpoint's own shape)."""
    if not request.body_exists:
        return None
    try:
        body = parse_json(await request.read(), limit=TOKEN_BODY_BYTES)
    except web.HTTPRequestEntityTooLarge as error:
        # Past the server's bound the body is gone: the handler would read none.
        raise TokenError(413, "Request body is too large") from error
    except (ApiError, web.HTTPException):
        return None
    api_key = body.get("api_key") if isinstance(body, dict) else None
    return api_key if isinstance(api_key, str) else None
