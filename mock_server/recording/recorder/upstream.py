"""The recorder's client of the upstream (docs/recording.md, "Record"): HTTP/1.1 to one
origin over connections kept alive between exchanges.

Written on an asyncio `Protocol` rather than aiohttp's client (or asyncio's streams)
because a recorder passes every request of a merchant's traffic on and should cost that
traffic little: aiohttp's client spent most of the recorder's time per exchange
(bench/RECORD.md). It is a pass-through and nothing more: the request goes out with the
method, target, headers (their order, case and repeats) and body it is given, framed by
a `Content-Length`; the answer, read by llhttp (`http1.AnswerReader`), comes back as
status, reason, header pairs and body bytes: a chunked body joined (its
`Transfer-Encoding`, hop-by-hop, is the caller's to drop), no content coding undone (a
gzip body stays gzip).

Each exchange has `timeout` seconds from its start to its answer's last byte, or raises
`UpstreamTimeout`; one watcher task checks the exchanges in flight a few times a second
rather than a timer per exchange.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import urllib.parse
from dataclasses import dataclass
from typing import cast

from .http1 import AnswerReader, Malformed

#: Methods a client may send again when a kept-alive connection broke before answering.
_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})


class UpstreamError(Exception):
    """The upstream could not be reached, or broke off its answer."""


class UpstreamTimeout(UpstreamError):
    """The upstream gave no whole answer within the timeout."""


@dataclass(slots=True)
class Answer:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes


class Upstream:
    def __init__(
        self, base_url: str, *, timeout: float = 30.0, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        parts = urllib.parse.urlsplit(base_url)
        self.secure = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if self.secure else 80)
        #: What the `Host` header says: the origin as the base URL names it.
        self.authority = parts.netloc.rpartition("@")[2]
        #: A base URL's own path (a sandbox's base path, say) comes before each target.
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        #: `ssl_context` trusts a private CA (`record --upstream-ca`); else the system's.
        self._ssl = (ssl_context or ssl.create_default_context()) if self.secure else None
        self._idle: list[_Connection] = []
        self._busy: set[_Connection] = set()
        self._watcher: asyncio.Task[None] | None = None

    async def request(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes
    ) -> Answer:
        """One exchange; raises `UpstreamError` (`UpstreamTimeout` past the deadline). A
        kept-alive connection the upstream has closed is not used; one that breaks
        before any byte of its answer is replaced once for a request that may be sent
        twice (RFC 9110 section 9.2.2), as HTTP clients do."""
        deadline = time.monotonic() + self.timeout
        if self._watcher is None:
            self._watcher = asyncio.get_running_loop().create_task(self._watch())
        message = self._head(method, target, headers, body) + body
        connection = self._reused()
        if connection is not None:
            try:
                return await self._exchange(connection, method, message, deadline)
            except _Stale as exc:
                if method not in _IDEMPOTENT:
                    raise UpstreamError(exc.why) from None
        connection = await self._connect(deadline)
        try:
            return await self._exchange(connection, method, message, deadline)
        except _Stale as exc:
            raise UpstreamError(exc.why) from None

    async def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _reused(self) -> _Connection | None:
        """A kept-alive connection the upstream has not closed meanwhile, or None."""
        while self._idle:
            connection = self._idle.pop()
            if not connection.ended:
                return connection
            connection.close()
        return None

    def _head(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
        lines = [f"{method} {self.prefix}{target} HTTP/1.1", f"Host: {self.authority}"]
        lines += [f"{name}: {value}" for name, value in headers]
        if body or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _connect(self, deadline: float) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout_at(loop.time() + deadline - time.monotonic()):
                _, protocol = await loop.create_connection(
                    _Connection, self.host, self.port, ssl=self._ssl
                )
        except TimeoutError:
            raise UpstreamTimeout(f"no connection within {self.timeout:g} s") from None
        except (OSError, ssl.SSLError) as exc:
            raise UpstreamError(_why(exc)) from exc
        return cast(_Connection, protocol)

    async def _exchange(
        self, connection: _Connection, method: str, message: bytes, deadline: float
    ) -> Answer:
        waiter = connection.send(method, message, deadline)
        self._busy.add(connection)
        try:
            answer, keep = await waiter
        except BaseException:  # broken, late, or a stop: no state to keep it in
            connection.close()
            raise
        finally:
            self._busy.discard(connection)
        if keep:
            self._idle.append(connection)
        else:
            connection.close()
        return answer

    async def _watch(self) -> None:
        """Fail the exchanges past their deadline."""
        period = min(1.0, self.timeout / 4)
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            for connection in list(self._busy):
                if connection.deadline < now:
                    connection.fail(UpstreamTimeout(f"no whole answer within {self.timeout:g} s"))


class _Stale(Exception):
    """A connection that broke before its answer began: another one may be tried."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class _Connection(asyncio.Protocol):
    """One connection to the upstream: `send` a request, await its answer."""

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._waiter: asyncio.Future[tuple[Answer, bool]] | None = None
        #: The answers read, one for each request sent.
        self._reader = AnswerReader()
        self._began = False
        #: The upstream closed its side, or the connection broke.
        self.ended = False
        self.deadline = 0.0
        self._loop = asyncio.get_running_loop()

    def send(
        self, method: str, message: bytes, deadline: float
    ) -> asyncio.Future[tuple[Answer, bool]]:
        assert self._transport is not None
        self._waiter = self._loop.create_future()
        self.deadline = deadline
        self._reader.expect(method)
        self._began = False
        if self.ended:
            self._waiter.set_exception(_Stale("the connection closed"))
        else:
            self._transport.write(message)
        return self._waiter

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def fail(self, problem: Exception) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(problem)
        self.close()

    # -- asyncio's side -----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self._waiter.done():
            self.ended = True  # bytes no request asked for: the connection is spoilt
            self.close()
            return
        self._reader.buffer += data
        self._began = True
        self._advance(ended=False)

    def eof_received(self) -> bool:
        self.ended = True
        self._settle(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self._settle(exc)

    # -- the answer ---------------------------------------------------------------------------

    def _settle(self, exc: BaseException | None) -> None:
        """The connection ended: an answer framed by its end is whole now; any other
        answer in progress broke off."""
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        self._advance(ended=True)
        if waiter.done():
            return
        why = _why(exc)
        if not self._began:
            waiter.set_exception(_Stale(why))
        else:
            waiter.set_exception(UpstreamError(f"the answer broke off ({why})"))

    def _advance(self, *, ended: bool) -> None:
        waiter = self._waiter
        assert waiter is not None
        reader = self._reader
        try:
            whole = reader.read() or (ended and reader.end())
        except Malformed as exc:
            waiter.set_exception(UpstreamError(f"the answer broke off ({exc.detail})"))
            self.close()
            return
        if whole:
            answer = Answer(reader.status, reader.reason, reader.headers, reader.body())
            # Bytes after the answer answer nothing that was asked: not kept.
            waiter.set_result((answer, reader.keep_alive and not reader.buffer))


def _why(exc: BaseException | None) -> str:
    if exc is None:
        return "the connection closed"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
