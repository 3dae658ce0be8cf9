"""What surrounds every control call: its route found on the control router (root
paths only: under a sandbox's base path, the path as a whole server sees it), the admin
token or the sandbox's own control token checked, the handler run on its sandbox (the
default one on the root paths), and the `--state` save after any call that is not a
read. Errors are rendered in one place (`edge.refusals`)."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING

from aiohttp import web
from yarl import URL

from ..domain.sandboxes import Sandboxes
from ..edge.context import CURRENT, PARAMS, READS
from ..edge.paths import CONTROL_PREFIX, split_base
from ..edge.refusals import failure
from ..errors import not_authenticated
from .sandboxes import ENTRY_PARAM, served_at

if TYPE_CHECKING:  # sqlite3 is imported only when a state file is used
    from ..state_file import StateFile

ControlHandler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]

#: The dashboard's page and files carry no data: open even with --admin-token.
PAGE_PREFIXES = ("/_mock/ui",)
#: Open even with --admin-token, so a container HEALTHCHECK needs no secret.
HEALTH_PATH = "/_mock/health"


@dataclass(eq=False)
class ControlCalls:
    """The control calls of one application, resolved on `router`; `state_file` is the
    `--state` file, or None."""

    router: web.UrlDispatcher
    sandboxes: Sandboxes
    state_file: StateFile | None
    _: KW_ONLY
    admin_token: str | None
    max_body: int

    async def call(
        self, request: web.BaseRequest, sandbox_id: str | None, path: str
    ) -> web.StreamResponse:
        """Answer one control call; `path` is the path as a whole server would see it and
        `sandbox_id` the base path's id, if any."""
        try:
            match = await self.router.resolve(_as_whole_server(request, sandbox_id))  # type: ignore[arg-type]
            if self.admin_token is not None and _needs_token(path):
                # Reading a sandbox's own entry is one of its control calls too.
                own = sandbox_id
                if own is None and request.method in READS:
                    own = match.get(ENTRY_PARAM)
                self._check_token(request, own)
            if match.http_exception is not None:
                raise match.http_exception
            if not served_at(sandbox_id, path):
                raise web.HTTPNotFound()
            sandboxes = self.sandboxes
            entry = sandboxes.find(sandbox_id) if sandbox_id is not None else sandboxes.default
            request[CURRENT] = entry.sandbox
            request[PARAMS] = match
            response = await match.handler(request)  # type: ignore[arg-type]
            state_file = self.state_file
            if state_file is not None and request.method not in READS:
                await state_file.save(entry.sandbox)  # any call but a read may change it
            return response
        except Exception as exc:  # noqa: BLE001 - rendered (or re-raised) by failure
            return failure(request, exc, self.max_body)

    def _check_token(self, request: web.BaseRequest, sandbox_id: str | None) -> None:
        """The admin token opens every control call; a sandbox's control token opens the
        control calls under its own base path and nothing else (docs/control-api.md,
        "Sandboxes")."""
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        token_bytes = token.strip().encode()
        if scheme.lower() == "bearer":
            assert self.admin_token is not None
            if hmac.compare_digest(token_bytes, self.admin_token.encode()):
                return
            own = self.sandboxes.control_token_of(sandbox_id) if sandbox_id is not None else None
            if own is not None and hmac.compare_digest(token_bytes, own.encode()):
                return
        raise not_authenticated(
            "The control API needs 'Authorization: Bearer <admin token>' (--admin-token)"
            + (" or this sandbox's control_token" if sandbox_id is not None else "")
        )


def _as_whole_server(request: web.BaseRequest, sandbox_id: str | None) -> web.BaseRequest:
    """The request with its base path taken off, for the router to resolve: the raw
    (still percent-encoded) rest, so that a parameter means what it means on the root
    paths (an encoded `/`, `?` or `#` stays in it)."""
    if sandbox_id is None:
        return request
    _, inner = split_base(request.rel_url.raw_path)
    return request.clone(rel_url=URL.build(path=inner, encoded=True))


def _needs_token(path: str) -> bool:
    """The control API's own paths but the health check and the dashboard's files (the
    documents are open too)."""
    return (
        path.startswith(CONTROL_PREFIX)
        and path != HEALTH_PATH
        and not path.startswith(PAGE_PREFIXES)
    )
