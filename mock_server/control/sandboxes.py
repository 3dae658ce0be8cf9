"""`/_mock/sandboxes`: create, list, read and drop isolated sandboxes
(docs/control-api.md, "Sandboxes").

These act on the server, not on one sandbox, so they are served on the root paths only
(not under a sandbox's base path: `served_at`).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..domain.sandboxes import Entry, Sandboxes
from ..edge.context import params_of
from ..edge.jsonio import json_response, read_json
from ..edge.paths import server_url
from ..errors import validation_error

PATH = "/_mock/sandboxes"
#: The path parameter of one sandbox's entry, `/_mock/sandboxes/{sandbox_id}`.
ENTRY_PARAM = "sandbox_id"


def served_at(sandbox_id: str | None, path: str) -> bool:
    """Whether these routes answer `path`: on the root paths only."""
    return sandbox_id is None or not (path == PATH or path.startswith(PATH + "/"))


class SandboxesApi:
    """The handlers of `/_mock/sandboxes`, over the server's sandboxes."""

    def __init__(self, sandboxes: Sandboxes) -> None:
        self._sandboxes = sandboxes

    async def create(self, request: web.BaseRequest) -> web.Response:
        body = await read_json(request, required=False, exact=False)
        if not isinstance(body, dict):
            raise validation_error("The request body must be a JSON object (or empty)")
        entry = self._sandboxes.create(body)
        return json_response(created_view(entry, self._url(request)), status=201)

    async def list(self, request: web.BaseRequest) -> web.Response:
        url = self._url(request)
        entries = self._sandboxes.entries()
        return json_response({"sandboxes": [entry.view(url) for entry in entries]})

    async def read(self, request: web.BaseRequest) -> web.Response:
        entry = self._sandboxes.find(params_of(request)[ENTRY_PARAM])
        return json_response(entry.view(self._url(request)))

    async def delete(self, request: web.BaseRequest) -> web.Response:
        self._sandboxes.delete(params_of(request)[ENTRY_PARAM])
        return web.Response(status=204)

    def _url(self, request: web.BaseRequest) -> str:
        return server_url(request, self._sandboxes.public_url)


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


def add_routes(router: web.UrlDispatcher, sandboxes: Sandboxes) -> None:
    api = SandboxesApi(sandboxes)
    router.add_get(PATH, api.list)
    router.add_post(PATH, api.create)
    router.add_get(f"{PATH}/{{{ENTRY_PARAM}}}", api.read)
    router.add_delete(f"{PATH}/{{{ENTRY_PARAM}}}", api.delete)
