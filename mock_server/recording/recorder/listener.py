"""The recorder's HTTP/1.1 server (docs/recording.md, "Record"): each request read whole
and handed to an async handler, whose `Reply` goes out as given.

Written on an asyncio `Protocol` rather than aiohttp's server because the recorder
serves every request of a merchant's traffic and should cost that traffic little:
aiohttp's server (its request and response objects, their header multidicts and
writers) took most of the recorder's time per exchange (bench/RECORD.md). A recorder
needs less than a web framework: no routing, no decoding, no default headers.

What it does, per connection:

* requests are read in turn by llhttp (`http1.RequestReader`; pipelined ones wait for
  the answer before them); a body framed by `Content-Length` or chunked is read whole
  before the handler runs; `Expect: 100-continue` is answered `100 Continue` while the
  body is awaited;
* the reply goes out with its own status, reason, headers and body; added are only a
  `Content-Length` when a reply that may have a body has none, and `Connection: close`
  (or `keep-alive` to an HTTP/1.0 client that asked for it);
* the connection is kept alive for HTTP/1.1 unless either side says `close`, and closed
  after `KEEPALIVE` seconds in which nothing arrived while no request was served;
* a request that cannot be read (`http1.Malformed`: 400, 413, 431, 501 or 505) is
  answered in the spec's error envelope (section 2.6), code `malformed_request`, and
  the connection closed.

`close(grace)` stops listening, closes the idle connections, lets the requests in
flight be answered (each connection then closes) for up to `grace` seconds, and
cancels what is left.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import cast

import orjson

from .http1 import (
    Head,
    Malformed,
    RequestReader,
    answer_bytes,
    has_field,
    has_token,
    may_have_body,
    phrase,
)

#: The longest request line and header block taken.
HEAD_LIMIT = 1 << 16
#: The longest request body taken, as sent.
BODY_LIMIT = 1 << 24
#: Bytes of pipelined requests buffered while one is served, before reading pauses.
PIPELINE_LIMIT = 1 << 20
#: Seconds an idle connection is kept open.
KEEPALIVE = 75.0


@dataclass(slots=True)
class Request(Head):
    """A request read whole: its head's fields (`http1.Head`), its body, and when."""

    body: bytes
    #: The wall time (`time.time()`) its head was read.
    arrived: float


@dataclass(slots=True)
class Reply:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    #: The reason phrase; None: the standard one for `status`.
    reason: str | None = None


Handler = Callable[[Request], Awaitable[Reply]]


def envelope(status: int, detail: str, code: str) -> Reply:
    """An error in the spec's envelope (section 2.6), every header set here, so a
    recorded reply's headers are exactly those the client gets."""
    body = orjson.dumps({"detail": detail, "code": code})
    return Reply(
        status,
        [
            ("Content-Type", "application/json; charset=utf-8"),
            ("Content-Length", str(len(body))),
            ("Date", time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime())),
        ],
        body,
    )


class Listener:
    """Serves `handler` on `await start(host, port)` (returns the bound address) until
    `await close(grace)`. `warn` is told of a handler that raised (answered 500)."""

    def __init__(self, handler: Handler, *, warn: Callable[[str], None]) -> None:
        self.handler = handler
        self.warn = warn
        self.stopping = False
        self._connections: set[_Connection] = set()
        self._server: asyncio.AbstractServer | None = None
        self._sweeper: asyncio.Task[None] | None = None

    async def start(self, host: str, port: int) -> tuple[str, int]:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Connection(self), host, port)
        self._sweeper = loop.create_task(self._sweep())
        address = self._server.sockets[0].getsockname()
        return address[0], address[1]

    async def close(self, grace: float) -> None:
        self.stopping = True
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self._server is not None:
            self._server.close()
        for connection in list(self._connections):
            connection.close_if_idle()
        serving = [c.serving for c in self._connections if c.serving is not None]
        if serving:
            _, late = await asyncio.wait(serving, timeout=grace)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late)
        for connection in list(self._connections):
            connection.close()

    def opened(self, connection: _Connection) -> None:
        self._connections.add(connection)

    def closed(self, connection: _Connection) -> None:
        self._connections.discard(connection)

    def sweep(self, now: float) -> None:
        """Close the connections nothing arrived on in the `KEEPALIVE` seconds before
        `now` (`time.monotonic()`) and that serve no request."""
        for connection in list(self._connections):
            if connection.last_heard < now - KEEPALIVE:
                connection.close_if_idle()

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(KEEPALIVE / 4)
            self.sweep(time.monotonic())


class _Connection(asyncio.Protocol):
    def __init__(self, listener: Listener) -> None:
        self._listener = listener
        self._reader = RequestReader(head_limit=HEAD_LIMIT, body_limit=BODY_LIMIT)
        self._buffer = self._reader.buffer
        self._transport: asyncio.Transport | None = None
        #: Whether the request being read was answered `100 Continue`.
        self._continued = False
        #: Whether llhttp would read on after the request being served.
        self._keep_alive = True
        self._paused = False
        #: The task answering the current request, if one is.
        self.serving: asyncio.Task[None] | None = None
        self.last_heard = time.monotonic()
        self._loop = asyncio.get_running_loop()

    # -- asyncio's side -----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self._listener.opened(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._listener.closed(self)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        self.last_heard = time.monotonic()
        if self.serving is None:
            self._advance()
        elif len(self._buffer) > PIPELINE_LIMIT and not self._paused:
            self._paused = True
            self._transport.pause_reading()  # type: ignore[union-attr]

    # -- the listener's side ------------------------------------------------------------------

    def close_if_idle(self) -> None:
        if self.serving is None and self._transport is not None:
            self._transport.close()

    def close(self) -> None:
        """Close once what was written has gone out."""
        if self._transport is not None:
            self._transport.close()

    # -- requests -----------------------------------------------------------------------------

    def _advance(self) -> None:
        """Serve the next request once all of it is here."""
        if self._transport is None or self._transport.is_closing():
            return
        reader = self._reader
        try:
            whole = reader.read()
        except Malformed as exc:
            self._refuse(exc)
            return
        except Exception as exc:  # noqa: BLE001 - a fault of the reader's: an answer still
            self._listener.warn(f"record: a request not read: {type(exc).__name__}: {exc}")
            self._refuse(Malformed("the request cannot be read"))
            return
        if not whole:
            if reader.in_body:
                self._continue(reader.head)
            return
        head = reader.head
        assert head is not None
        body = reader.body()
        request = Request(head.method, head.target, head.minor, head.headers, body, reader.arrived)
        self._keep_alive = reader.keep_alive
        reader.next()
        self._continued = False
        self.serving = self._loop.create_task(self._serve(request))

    def _continue(self, head: Head | None) -> None:
        """`100 Continue` to a client that waits for it before sending its body."""
        if not self._continued and head is not None and head.minor == 1:
            self._continued = True
            if has_token(head.headers, "expect", "100-continue"):
                self._transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # type: ignore[union-attr]

    async def _serve(self, request: Request) -> None:
        try:
            reply = await self._listener.handler(request)
        except Exception as exc:  # noqa: BLE001 - a client gets an answer all the same
            self._listener.warn(
                f"record: {request.method} {request.target}: {type(exc).__name__}: {exc}"
            )
            reply = envelope(500, "the recorder failed to handle this request", "internal_error")
        keep = self._send(reply, request)
        self.serving = None
        transport = self._transport
        assert transport is not None
        if not keep:
            transport.close()
            return
        if self._paused:
            self._paused = False
            transport.resume_reading()
        if self._buffer:
            self._advance()

    def _send(self, reply: Reply, request: Request) -> bool:
        """Write the reply; whether the connection is kept alive after it."""
        if request.minor == 1:
            keep = not has_token(request.headers, "connection", "close")
        else:  # and an HTTP/1.0 body framed by chunks is faulty framing (RFC 9112 6.1)
            keep = has_token(request.headers, "connection", "keep-alive") and not has_field(
                request.headers, "transfer-encoding"
            )
        said_close = has_token(reply.headers, "connection", "close")
        keep = keep and self._keep_alive and not said_close and not self._listener.stopping
        transport = self._transport
        if transport is None or transport.is_closing():
            return False  # the client went: its exchange is recorded all the same
        headers = reply.headers
        bodied = may_have_body(request.method, reply.status)
        extra = []
        if bodied and not has_field(headers, "content-length"):
            extra.append(("Content-Length", str(len(reply.body))))
        if not keep and not said_close:
            extra.append(("Connection", "close"))
        elif keep and request.minor == 0:
            extra.append(("Connection", "keep-alive"))
        if extra:
            headers = headers + extra
        reason = phrase(reply.status) if reply.reason is None else reply.reason
        transport.write(answer_bytes(reply.status, reason, headers, reply.body if bodied else b""))
        return keep

    def _refuse(self, problem: Malformed) -> None:
        reply = envelope(problem.status, problem.detail, "malformed_request")
        reply.headers.append(("Connection", "close"))
        assert self._transport is not None
        self._transport.write(
            answer_bytes(reply.status, phrase(reply.status), reply.headers, reply.body)
        )
        self._transport.close()
        self._buffer.clear()
