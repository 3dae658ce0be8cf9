"""What `mock-server record` refuses (docs/recording.md, "Record": code
`malformed_request`), over loopback against a live recorder in front of an upstream
stub that logs every byte it receives: each request below was passed on, or framed
otherwise than llhttp frames it, by the recorder's former hand-written parser (an outside
differential run against llhttp found them). Each is refused with its status, nothing
reaches the upstream, and the recorder goes on serving the next client."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from mock_server.recording.recorder.proxy import Recorder

#: Seconds any one wait may take before the test fails (nothing here takes nearly so long).
TIMEOUT = 10.0
SIXTEEN_MIB = 1 << 24


class LoggingUpstream:
    """An upstream on 127.0.0.1 that keeps every byte it receives and answers each
    request (a head and its `Content-Length` body: the recorder frames all it sends so)
    with 200 `ok`."""

    def __init__(self) -> None:
        self.received = bytearray()
        self.requests: list[bytes] = []
        self.url = ""
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        host, port = self._server.sockets[0].getsockname()[:2]
        self.url = f"http://{host}:{port}"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.received += head
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length)
                self.received += body
                self.requests.append(head + body)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
        except asyncio.IncompleteReadError as exc:
            self.received += exc.partial
        except ConnectionError:
            pass
        writer.close()


class Live:
    def __init__(self, recorder: Recorder, upstream: LoggingUpstream, warnings: list[str]):
        self.recorder, self.upstream, self.warnings = recorder, upstream, warnings
        host, port = recorder.url.removeprefix("http://").split(":")
        self.host, self.port = host, int(port)

    async def send(self, data: bytes) -> bytes:
        """`data` on a fresh connection, and all that comes back until the recorder closes."""
        reader, writer = await asyncio.open_connection(self.host, self.port)
        try:
            writer.write(data)
            await writer.drain()
            return await asyncio.wait_for(reader.read(), TIMEOUT)
        finally:
            writer.close()

    async def still_serves(self) -> None:
        """A next client is served, and its request is all the upstream ever got."""
        answer = await self.send(b"GET /next HTTP/1.1\r\nHost: r\r\nConnection: close\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b"\r\n\r\nok")
        (request,) = self.upstream.requests
        assert request.startswith(b"GET /next HTTP/1.1\r\n")
        assert bytes(self.upstream.received) == request
        assert self.warnings == []


@pytest.fixture
async def live(tmp_path: Path) -> AsyncIterator[Live]:
    upstream = LoggingUpstream()
    await upstream.start()
    warnings: list[str] = []
    recorder = Recorder(upstream.url, str(tmp_path / "r.jsonl"), port=0, warn=warnings.append)
    await recorder.start()
    try:
        yield Live(recorder, upstream, warnings)
    finally:
        await recorder.stop()
        await upstream.close()


def refusal(answer: bytes) -> tuple[int, str]:
    """A refusal's status and detail, checking its form: the error envelope, closed."""
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    fields = dict(line.split(": ", 1) for line in lines)
    assert fields["Connection"] == "close"
    assert int(fields["Content-Length"]) == len(body)
    document = orjson.loads(body)
    assert document["code"] == "malformed_request"
    return int(status_line.split(" ")[1]), document["detail"]


POST_CHUNKED = b"POST /a HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\n\r\n"
ADMIN = b"GET /admin HTTP/1.1\r\nHost: r\r\n\r\n"


@pytest.mark.parametrize(
    ("data", "detail"),
    [
        # A bare LF or CR inside a chunk extension: a lenient reader ends the line there.
        (POST_CHUNKED + b"2;\nxx\r\nab\r\n0\r\n\r\n" + ADMIN, "chunk extension"),
        (POST_CHUNKED + b"2;a\rxx\r\nab\r\n0\r\n\r\n" + ADMIN, "chunk"),
        # NBSP (\xa0) or NEL (\x85) after `chunked` or a length: Python's str.strip()
        # took them, llhttp reads another value.
        (
            b"POST /a HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\xa0\r\n\r\n0\r\n\r\n"
            + ADMIN,
            "last transfer coding must be chunked",
        ),
        (
            b"POST /a HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\x85\r\n\r\n0\r\n\r\n"
            + ADMIN,
            "last transfer coding must be chunked",
        ),
        (
            b"POST /a HTTP/1.1\r\nHost: r\r\nContent-Length: 5\xa0\r\n\r\nabcde" + ADMIN,
            "Content-Length",
        ),
        (
            b"POST /a HTTP/1.1\r\nHost: r\r\nContent-Length: 5\x85\r\n\r\nabcde" + ADMIN,
            "Content-Length",
        ),
        # NUL in a chunk extension or a trailer.
        (POST_CHUNKED + b"2;\x00\r\nab\r\n0\r\n\r\n" + ADMIN, "chunk extensions"),
        (POST_CHUNKED + b"2;a=\x00\r\nab\r\n0\r\n\r\n" + ADMIN, "chunk extensions"),
        (POST_CHUNKED + b"2\r\nab\r\n0\r\nX: a\x00b\r\n\r\n" + ADMIN, "header value char"),
        # Requests hidden in the trailers: the former parser passed the POST alone on,
        # a lenient proxy in front sees two.
        (POST_CHUNKED + b"0\r\n\n" + ADMIN, "header field char"),
        (POST_CHUNKED + b"0\r\n\r" + ADMIN, "Expected LF after headers"),
        (POST_CHUNKED + b"0\r\nX: a\n" + ADMIN, "Missing expected CR"),
        (POST_CHUNKED + b"0\r\nX: a\r" + ADMIN, "Missing expected LF"),
        (POST_CHUNKED + b"0\r\nX: a\r\n\n" + ADMIN, "header field char"),
        # An absolute target that cannot be split into path and query.
        (b"GET http://[x/a HTTP/1.1\r\nHost: r\r\n\r\n", "not a request target"),
        (b"GET http://[::1/a HTTP/1.1\r\nHost: r\r\n\r\n", "not a request target"),
    ],
)
async def test_a_request_framed_two_ways_is_refused_400_and_nothing_passed_on(live, data, detail):
    status, said = refusal(await live.send(data))
    assert (status, detail in said) == (400, True), said
    assert live.upstream.received == b""
    await live.still_serves()


@pytest.mark.parametrize(
    ("data", "status", "detail"),
    [
        (
            b"POST /a HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            501,
            "transfer coding gzip",
        ),
        (b"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 400, ""),
        (b"MKFOO /a HTTP/1.1\r\nHost: r\r\n\r\n", 501, "method MKFOO"),
        (b"GET /a HTTP/2.0\r\nHost: r\r\n\r\n", 505, "HTTP/2.0"),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "HTTP/2.0"),
        (b"GET /a HTTP/1.1\r\nX: " + b"a" * (1 << 16) + b"\r\n\r\n", 431, "head is over 65536"),
        (
            POST_CHUNKED + b"2;" + b"e" * 5000 + b"\r\nab\r\n0\r\n\r\n",
            400,
            "a chunk line or the trailer section is over 4096 bytes",
        ),
        (
            POST_CHUNKED + b"0\r\nX-T: " + b"t" * 5000 + b"\r\n\r\n",
            400,
            "a chunk line or the trailer section is over 4096 bytes",
        ),
    ],
)
async def test_what_the_recorder_does_not_take_is_refused(live, data, status, detail):
    got, said = refusal(await live.send(data))
    assert (got, detail in said) == (status, True), said
    assert live.upstream.received == b""
    await live.still_serves()


async def test_a_body_over_16_mib_by_its_length_is_refused_413_at_once(live):
    reader, writer = await asyncio.open_connection(live.host, live.port)
    # The head alone: the answer comes without a byte of the body, and no 100 Continue.
    writer.write(
        b"POST /a HTTP/1.1\r\nHost: r\r\nExpect: 100-continue\r\n"
        b"Content-Length: 1000000000000\r\n\r\n"
    )
    answer = await asyncio.wait_for(reader.read(), TIMEOUT)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 413 ")
    status, said = refusal(answer)
    assert said == f"the request's body is over {SIXTEEN_MIB} bytes"
    assert live.upstream.received == b""
    await live.still_serves()


async def test_a_chunked_body_is_refused_413_as_soon_as_it_passes_16_mib(live):
    reader, writer = await asyncio.open_connection(live.host, live.port)
    writer.write(POST_CHUNKED)
    chunk = b"100000\r\n" + b"x" * (1 << 20) + b"\r\n"  # 1 MiB of data each
    sent = 0
    while sent + len(chunk) <= SIXTEEN_MIB:
        writer.write(chunk)
        await writer.drain()
        sent += len(chunk)
        assert not reader.at_eof() and not len(reader._buffer)  # not refused yet
    writer.write(chunk[: SIXTEEN_MIB - sent + 1])  # one byte past the limit, then wait
    answer = await asyncio.wait_for(reader.read(), TIMEOUT)
    writer.close()
    status, said = refusal(answer)
    assert (status, said) == (413, f"the request's body is over {SIXTEEN_MIB} bytes")
    assert live.upstream.received == b""
    await live.still_serves()


async def test_a_body_of_one_byte_chunks_is_read_in_linear_time_beside_other_clients(live):
    """600 kB of one-byte chunks once cost 1.5 s of CPU and stalled other clients by up
    to 0.47 s: each byte is now read once, and another client is answered meanwhile."""
    count = 100_000
    body = b"1\r\nx\r\n" * count + b"0\r\n\r\n"
    started = time.process_time()
    reader, writer = await asyncio.open_connection(live.host, live.port)
    writer.write(POST_CHUNKED.replace(b"Host: r", b"Host: r\r\nConnection: close"))
    sending = asyncio.ensure_future(_send_slowly(writer, body))
    other = await live.send(b"GET /other HTTP/1.1\r\nHost: r\r\nConnection: close\r\n\r\n")
    assert other.endswith(b"\r\n\r\nok")
    await asyncio.wait_for(sending, TIMEOUT)
    answer = await asyncio.wait_for(reader.read(), TIMEOUT)
    writer.close()
    spent = time.process_time() - started
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    (passed,) = [r for r in live.upstream.requests if r.startswith(b"POST /a ")]
    assert passed.endswith(b"\r\nContent-Length: 100000\r\n\r\n" + b"x" * count)
    # This process ran the client, the recorder and the upstream: all together well
    # under what the re-scanning alone cost.
    assert spent < 1.0, spent


async def _send_slowly(writer: asyncio.StreamWriter, data: bytes) -> None:
    """`data` in 64 KiB writes, letting the loop turn between them."""
    for start in range(0, len(data), 1 << 16):
        writer.write(data[start : start + (1 << 16)])
        await writer.drain()
        await asyncio.sleep(0)
