"""`/_mock/sandboxes`: create, list, read and drop isolated sandboxes
(docs/control-api.md, "Sandboxes").

These act on the server, not on one sandbox, so they are served on the root paths only
(not under a sandbox's base path).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..api.jsonio import json_response, read_json
from ..api.routing import ENTRY_PARAM, server_url
from ..app_keys import SANDBOXES
from ..domain.sandboxes import Entry
from ..errors import validation_error


async def create_sandbox(request: web.Request) -> web.Response:
    body = await read_json(request, required=False, exact=False)
    if not isinstance(body, dict):
        raise validation_error("The request body must be a JSON object (or empty)")
    entry = request.app[SANDBOXES].create(body)
    return json_response(created_view(entry, server_url(request)), status=201)


async def list_sandboxes(request: web.Request) -> web.Response:
    url = server_url(request)
    entries = request.app[SANDBOXES].entries()
    return json_response({"sandboxes": [entry.view(url) for entry in entries]})


async def read_sandbox(request: web.Request) -> web.Response:
    entry = request.app[SANDBOXES].find(request.match_info[ENTRY_PARAM])
    return json_response(entry.view(server_url(request)))


async def delete_sandbox(request: web.Request) -> web.Response:
    request.app[SANDBOXES].delete(request.match_info[ENTRY_PARAM])
    return web.Response(status=204)


def created_view(entry: Entry, url: str) -> dict[str, Any]:
    """The answer to a create: where it is, how to control it, and the first
    account's credentials."""
    account = next(iter(entry.sandbox.state.accounts.values()), None)
    view = entry.view(url)
    return {
        "id": entry.sandbox_id,
        "base_url": view["base_url"],
        "control_token": entry.control_token,
        "account_id": account.id if account else None,
        "api_key": account.api_keys[0] if account and account.api_keys else None,
        "webhook_secret": account.webhook_secret if account else None,
        "expires_at": view["expires_at"],
    }


def add_routes(app: web.Application) -> None:
    router = app.router
    router.add_get("/_mock/sandboxes", list_sandboxes)
    router.add_post("/_mock/sandboxes", create_sandbox)
    router.add_get(f"/_mock/sandboxes/{{{ENTRY_PARAM}}}", read_sandbox)
    router.add_delete(f"/_mock/sandboxes/{{{ENTRY_PARAM}}}", delete_sandbox)
