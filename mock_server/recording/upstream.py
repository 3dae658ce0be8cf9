"""The recorder's client of the upstream (docs/recording.md, "Record"): HTTP/1.1 to one
origin over connections kept alive between exchanges.

Written on asyncio's streams rather than aiohttp's client because a recorder passes
every request of a merchant's traffic on and should cost that traffic little: aiohttp's
client spent most of the recorder's time per exchange (bench/RECORD.md). It is a
pass-through and nothing more: the request goes out with the method, target, headers
(their order, case and repeats) and body it is given, framed by a `Content-Length`;
the answer comes back as status, reason, header pairs and body bytes: a chunked body
joined (its `Transfer-Encoding`, hop-by-hop, is the caller's to drop), no content coding
undone (a gzip body stays gzip).
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.parse
from dataclasses import dataclass

#: The longest status line and header block an answer may have.
_HEAD_LIMIT = 1 << 20
#: Answers that never have a body (RFC 9110 section 6.4.1).
_BODILESS = frozenset({204, 304})
#: Methods a client may send again when a kept-alive connection broke before answering.
_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})


class UpstreamError(Exception):
    """The upstream could not be reached, or broke off its answer."""


@dataclass(slots=True)
class Answer:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    def close(self) -> None:
        self.writer.close()


class Upstream:
    def __init__(self, base_url: str) -> None:
        parts = urllib.parse.urlsplit(base_url)
        self.secure = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if self.secure else 80)
        #: What the `Host` header says: the origin as the base URL names it.
        self.authority = parts.netloc.rpartition("@")[2]
        #: A base URL's own path (a sandbox's base path, say) comes before each target.
        self.prefix = parts.path.rstrip("/")
        self._ssl = ssl.create_default_context() if self.secure else None
        self._idle: list[_Connection] = []

    async def request(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes
    ) -> Answer:
        """One exchange; raises `UpstreamError` (a caller's deadline raises its own
        `TimeoutError`). A kept-alive connection the upstream has closed is not used; one
        that breaks before any byte of its answer is replaced once for a request that
        may be sent twice (RFC 9110 section 9.2.2), as HTTP clients do."""
        head = self._head(method, target, headers, body)
        connection = self._reused()
        if connection is not None:
            try:
                return await self._exchange(connection, method, head, body)
            except _Stale as exc:
                if method not in _IDEMPOTENT:
                    raise UpstreamError(_why(exc.__cause__)) from exc
        connection = await self._connect()
        try:
            return await self._exchange(connection, method, head, body)
        except _Stale as exc:
            raise UpstreamError(_why(exc.__cause__)) from exc

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _reused(self) -> _Connection | None:
        """A kept-alive connection the upstream has not closed meanwhile, or None."""
        while self._idle:
            connection = self._idle.pop()
            if not connection.reader.at_eof() and not connection.writer.is_closing():
                return connection
            connection.close()
        return None

    def _head(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
        lines = [f"{method} {self.prefix}{target} HTTP/1.1", f"Host: {self.authority}"]
        lines += [f"{name}: {value}" for name, value in headers]
        if body or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _connect(self) -> _Connection:
        try:
            reader, writer = await asyncio.open_connection(
                self.host, self.port, ssl=self._ssl, limit=_HEAD_LIMIT
            )
        except (OSError, ssl.SSLError) as exc:
            raise UpstreamError(_why(exc)) from exc
        return _Connection(reader, writer)

    async def _exchange(
        self, connection: _Connection, method: str, head: bytes, body: bytes
    ) -> Answer:
        reader, writer = connection.reader, connection.writer
        begun = False
        try:
            writer.write(head + body)
            await writer.drain()
            first = await reader.readuntil(b"\r\n\r\n")
            begun = True
            answer, keep = await self._answer(reader, method, first)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            connection.close()
            partial = getattr(exc, "partial", b"")
            if not begun and not partial:
                raise _Stale from exc
            raise UpstreamError(f"the answer broke off ({_why(exc)})") from exc
        except (OSError, asyncio.LimitOverrunError, ValueError) as exc:
            connection.close()
            raise UpstreamError(f"the answer broke off ({_why(exc)})") from exc
        except BaseException:  # a deadline or a stop: the connection is in no state to keep
            connection.close()
            raise
        if keep:
            self._idle.append(connection)
        else:
            connection.close()
        return answer

    async def _answer(
        self, reader: asyncio.StreamReader, method: str, head: bytes
    ) -> tuple[Answer, bool]:
        while True:
            status_line, _, rest = head.decode("latin-1").partition("\r\n")
            version, _, after = status_line.partition(" ")
            code, _, reason = after.partition(" ")
            if not version.startswith("HTTP/1.") or not code.isdigit():
                raise ValueError(f"not an HTTP/1 status line: {status_line[:80]!r}")
            status = int(code)
            if status >= 200 or status == 101:
                break
            head = await reader.readuntil(b"\r\n\r\n")  # 1xx: an interim answer
        headers = [
            (name, value.strip())
            for name, _, value in (line.partition(":") for line in rest.split("\r\n") if line)
        ]
        fields = {name.lower(): value for name, value in headers}
        keep = version != "HTTP/1.0" and "close" not in fields.get("connection", "").lower()
        if method == "HEAD" or status in _BODILESS or status < 200:
            return Answer(status, reason, headers, b""), keep
        if "chunked" in fields.get("transfer-encoding", "").lower():
            return Answer(status, reason, headers, await _chunks(reader)), keep
        length = fields.get("content-length")
        if length is not None:
            return Answer(status, reason, headers, await reader.readexactly(int(length))), keep
        return Answer(status, reason, headers, await reader.read()), False


class _Stale(Exception):
    """A connection that broke before its answer began: another one may be tried."""


def _why(exc: BaseException | None) -> str:
    if exc is None:
        return "the connection closed"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def _chunks(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":
                pass  # trailer fields are not passed on
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
