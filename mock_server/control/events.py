"""`GET /_mock/events`: the sandbox's live event stream as Server-Sent Events
(docs/control-api.md, "Live events").

The first event is `ready` (`{"now"}`); then `order`, `delivery`, `clock`, `reset` and
`journal` as they happen. Frames waiting for this reader go out in one write; a
comment line every 15 s of quiet keeps proxies from closing the stream. A reader that
falls `READER_BUFFER` frames behind gets `overflow` and the stream ends: reconnect and
re-read the state.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from ..clock import iso
from ..domain.events import READER_BUFFER
from ..edge.context import cors_of, sandbox_of

KEEP_ALIVE_SECONDS = 15.0
#: After a write, frames gather this long before the next one: under load a dashboard
#: gets one write per 0.2 s rather than one per merchant call (open dashboards slowed
#: the merchant API plainly when every event woke each of them, and still measurably
#: with a write every 50 ms; bench/FINDINGS.md sections 6 and 7, bench/EVENTS.md). The
#: first event after a quiet spell goes out at once.
LINGER_SECONDS = 0.2

routes = web.RouteTableDef()


@routes.get("/_mock/events")
async def stream_events(request: web.BaseRequest) -> web.StreamResponse:
    sandbox = sandbox_of(request)
    hub = sandbox.events
    # Past the sandbox's `streams` quota: 429 before anything opens (docs/hosting.md).
    place = sandbox.streams.take(sandbox.quotas, lambda: gone(request), lambda: reader.end())
    reader = hub.subscribe()
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",  # nginx: pass each event on as it comes
        }
    )
    cors_of(request).apply(request, response)  # before it starts: every answer carries it
    try:
        await response.prepare(request)
        await response.write(hub.frame("ready", {"now": iso(sandbox.clock.now())}))
        while True:
            batch = await reader.next_batch(KEEP_ALIVE_SECONDS)
            if reader.overflowed:
                detail = f"more than {READER_BUFFER} events behind: reconnect, re-read the state"
                await response.write(hub.frame("overflow", {"detail": detail}))
                break
            if batch:
                await response.write(batch)
                await asyncio.sleep(LINGER_SECONDS)
            elif reader.closed:
                break
            else:
                await response.write(b": keep-alive\n\n")
    except (ConnectionResetError, OSError):
        pass  # the reader went away
    finally:
        hub.unsubscribe(reader)
        sandbox.streams.give_back(place)
    return response


def gone(request: web.BaseRequest) -> bool:
    """Whether a stream's client has hung up (its connection is closing)."""
    transport = request.transport
    return transport is None or transport.is_closing()
