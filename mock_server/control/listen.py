"""The wire of `mock-server listen` (docs/webhooks.md, "The wire"): `GET /_mock/listen`,
a Server-Sent Events stream that hands a listener the attempts of one account, and
`POST /_mock/listen/reports`, through which it reports each attempt's outcome. What the
attempts are and how they are decided is `domain/listeners.py`."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from ..edge.context import cors_of, sandbox_of
from ..edge.jsonio import json_response, read_json
from ..errors import not_found, validation_error
from ..webhooks import ATTEMPT_TIMEOUT
from .events import KEEP_ALIVE_SECONDS, gone

REPORT_PATH = "/_mock/listen/reports"
#: How often an idle stream looks whether its listener is still connected: one that went
#: away (killed, its laptop asleep) fails the attempt it holds within this, rather than
#: at the attempt's timeout.
GONE_CHECK_SECONDS = 0.25
_SHAPES = '{"attempt_id", "status_code"} or {"attempt_id", "error"}'

routes = web.RouteTableDef()


def _frame(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


@routes.get("/_mock/listen")
async def listen(request: web.BaseRequest) -> web.StreamResponse:
    sandbox = sandbox_of(request)
    accounts = sandbox.state.accounts
    account_id = request.query.get("account")
    if account_id is None:
        account = next(iter(accounts.values()), None)
        if account is None:
            raise not_found("This sandbox has no account to listen for")
    else:
        account = accounts.get(account_id)
        if account is None:
            raise not_found(f"No account {account_id} in this sandbox")
    listeners = sandbox.listeners
    # Past the sandbox's `streams` quota: 429 before anything opens (docs/hosting.md).
    place = sandbox.streams.take(sandbox.quotas, lambda: gone(request), lambda: listener.close())
    listener = listeners.connect(account.id)
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",  # nginx: pass each frame on as it comes
        }
    )
    cors_of(request).apply(request, response)
    try:
        await response.prepare(request)
        ready = {
            "listener_id": listener.listener_id,
            "account_id": account.id,
            "webhook_secret": account.webhook_secret,
            "report_path": REPORT_PATH,
            "timeout_seconds": int(ATTEMPT_TIMEOUT)
            if ATTEMPT_TIMEOUT.is_integer()
            else ATTEMPT_TIMEOUT,
        }
        await response.write(_frame("ready", ready))
        quiet = 0.0
        while not gone(request):
            frame = await listener.next_frame(GONE_CHECK_SECONDS)
            if frame is not None:
                await response.write(_frame(*frame))
                quiet = 0.0
            elif listener.closed:
                break
            else:
                quiet += GONE_CHECK_SECONDS
                if quiet >= KEEP_ALIVE_SECONDS:
                    await response.write(b": keep-alive\n\n")
                    quiet = 0.0
    except (ConnectionResetError, OSError):
        pass  # the listener went away
    finally:
        listeners.disconnect(listener)
        sandbox.streams.give_back(place)
    return response


@routes.post(REPORT_PATH)
async def report(request: web.Request) -> web.Response:
    body = await read_json(request)
    if not isinstance(body, dict) or not isinstance(body.get("attempt_id"), str):
        raise validation_error(
            'The body must be {"attempt_id", "status_code"} or {"attempt_id", "error"}'
        )
    status_code, error = body.get("status_code"), body.get("error")
    if set(body) == {"attempt_id", "status_code"}:
        if type(status_code) is not int or not 100 <= status_code <= 599:
            raise validation_error("status_code must be the receiver's HTTP status, 100..599")
    elif set(body) == {"attempt_id", "error"}:
        if not isinstance(error, str) or not error.strip():
            raise validation_error("error must say, in a non-empty string, why no status came")
    else:
        raise validation_error(f"The body must be {_SHAPES}: exactly one of the two")
    sandbox_of(request).listeners.report(body["attempt_id"], status_code, error)
    return json_response({"attempt_id": body["attempt_id"], "accepted": True})
