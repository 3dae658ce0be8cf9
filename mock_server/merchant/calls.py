"""What surrounds every merchant call, a refused one included: its sandbox and caller
found (`sandbox_choice`), then, for one of the sandbox's own callers only, its idle time
restarted, the rate, injected faults first, the handler, the `--state` save, the
coverage count, the answer in production's shapes (`shaping`) and the journal entry (the
sandbox's own, keyed on the path as a whole server sees it). A caller without the
sandbox's credentials gets the handler's refusal and nothing else (docs/hosting.md,
"What a tenant can see")."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from aiohttp import web

from ..clock import iso
from ..domain.coverage import PREFIXES as MERCHANT_PREFIXES
from ..domain.coverage import Coverage
from ..domain.journal import body_text
from ..domain.sandbox import Sandbox
from ..domain.sandboxes import Sandboxes
from ..edge.context import READS
from ..edge.jsonio import json_response
from ..edge.refusals import code_for, failure, refusal
from ..errors import ApiError, TokenError, rate_limited
from .api import MerchantHandler
from .rate_guard import RateGuard
from .sandbox_choice import TOKEN_PATH_END, Caller, merchant_caller, unrouted
from .shaping import shaped

if TYPE_CHECKING:  # sqlite3 is imported only when a state file is used
    from ..state_file import StateFile

#: Each prefix as a path starts with it, and as coverage names it.
_MERCHANT_PREFIXES = tuple((prefix + "/", prefix) for prefix in MERCHANT_PREFIXES)


class MerchantCalls:
    """The merchant calls of one application. `state_file` is the `--state` file, or
    None."""

    def __init__(
        self,
        sandboxes: Sandboxes,
        state_file: StateFile | None,
        max_body: int,
        rate_guard: RateGuard | None = None,
    ) -> None:
        self._sandboxes = sandboxes
        self._state_file = state_file
        self._max_body = max_body
        self._rate_guard = rate_guard
        self._default_caller = Caller(sandboxes.default, own=True)

    async def call(
        self,
        request: web.BaseRequest,
        handler: MerchantHandler,
        sandbox_id: str | None,
        path: str,
        order_id: str,
    ) -> web.StreamResponse:
        """Answer one merchant call; `path` is the path as a whole server would see it
        (a sandbox's base path taken off) and `sandbox_id` the base path's id, if any."""
        if unrouted(self._sandboxes, sandbox_id):
            caller = self._default_caller  # decided without awaiting anything
        else:
            try:
                caller = await merchant_caller(request, self._sandboxes, sandbox_id, path)
            except (ApiError, TokenError) as error:  # no such sandbox: no journal to write to
                return refusal(error)
        sandbox = caller.sandbox
        if not caller.own:
            return await self._stranger(request, handler, sandbox, path, order_id)
        self._sandboxes.touch(caller.entry)
        method = request.method
        guard = self._rate_guard
        wait = guard.retry_after(sandbox) if guard is not None else 0
        fault = sandbox.faults.take(method, path) if sandbox.faults and not wait else None
        refused: ApiError | TokenError | None = None
        if wait and guard is not None:
            await asyncio.sleep(guard.hold(sandbox))
            response = _rate_limited(path, wait)
        elif fault is None:
            try:
                response = await handler(request, sandbox, order_id)
            except (ApiError, TokenError) as error:
                refused = error  # coverage counts refusals by cause
                response = refusal(error)
            except Exception as exc:  # noqa: BLE001 - rendered (or re-raised) by failure
                response = failure(request, exc, self._max_body)
        else:
            if fault.latency_ms:
                await asyncio.sleep(fault.latency_ms / 1000)
            if fault.after_commit:
                try:
                    await handler(request, sandbox, order_id)
                except Exception as exc:  # noqa: BLE001 - as above; the fault answers anyway
                    failure(request, exc, self._max_body)
            response = _fault_response(fault.id, fault.status, method, path)
        state_file = self._state_file
        if state_file is not None and method not in READS:  # a read changes nothing
            await state_file.save(sandbox, merchant=True)
        if fault is None and not wait:
            _count(sandbox.coverage, refused, path)
        body = b""
        if request.body_exists:
            try:
                body = await request.read()  # already read by the handler: no copy, no wait
            except Exception:  # noqa: BLE001 - over the size limit, or the client left: not kept
                body = b""
        if sandbox.shapes.rules:  # production's shapes: only a sandbox given a file has any
            response = shaped(sandbox, path, response)
        status, at = response.status, sandbox.clock.now()
        sandbox.journal.record(method, path, status, body, at)
        if sandbox.events.active:
            sandbox.events.publish_journal(method, path, status, body_text(body), iso(at))
        return response

    async def _stranger(
        self,
        request: web.BaseRequest,
        handler: MerchantHandler,
        sandbox: Sandbox,
        path: str,
        order_id: str,
    ) -> web.StreamResponse:
        """A call without the sandbox's credentials (`sandbox_choice`): the handler
        refuses it as it refuses any such call, and coverage counts the refusal (so that
        a test of its own 401s sees them), but the call spends none of the sandbox's
        rate, meets none of its faults, keeps it no longer alive and is neither
        journaled nor saved (docs/hosting.md, "What a tenant can see")."""
        refused: ApiError | TokenError | None = None
        try:
            response = await handler(request, sandbox, order_id)
        except (ApiError, TokenError) as error:
            refused = error
            response = refusal(error)
        except Exception as exc:  # noqa: BLE001 - rendered (or re-raised) by failure
            response = failure(request, exc, self._max_body)
        _count(sandbox.coverage, refused, path)
        return shaped(sandbox, path, response)


def _rate_limited(path: str, wait: int) -> web.Response:
    """429 `rate_limited` (the token endpoint's own `{"error"}` shape there)."""
    detail = (
        f"This sandbox's merchant calls are over the server's rate (--sandbox-rate): "
        f"retry in {wait} s"
    )
    error = TokenError(429, detail) if path.endswith(TOKEN_PATH_END) else rate_limited(detail)
    response = refusal(error)
    response.headers["Retry-After"] = str(wait)
    return response


def _fault_response(fault_id: object, status: int, method: str, path: str) -> web.Response:
    return json_response(
        {"detail": f"Injected fault {fault_id} on {method} {path}", "code": code_for(status)},
        status,
    )


def _count(coverage: Coverage, refused: ApiError | TokenError | None, path: str) -> None:
    """Coverage of a merchant call: its path prefix and, if refused, why."""
    for prefix, name in _MERCHANT_PREFIXES:
        if path.startswith(prefix):
            coverage.count("prefixes", name)
            if isinstance(refused, TokenError):
                coverage.count("merchant_errors", "token exchange refused")
            elif refused is not None:
                cause = f": {refused.cause}" if refused.cause else ""
                coverage.count("merchant_errors", refused.code + cause)
            return
