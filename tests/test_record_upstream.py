"""The recorder's client of the upstream (mock_server/recording/recorder/upstream.py), against a
server of the test's own on 127.0.0.1 that answers exactly the bytes each test scripts:
framing by length, by chunks (trailers included) and by closing; interim answers;
bodiless answers; connections kept alive, and those the upstream closed meanwhile."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable

import pytest
import trustme

from mock_server.recording.recorder.upstream import Upstream, UpstreamError

Script = Callable[[bytes], bytes]


class ScriptedServer:
    """Reads each request (head and a `Content-Length` body), answers `script(head)`;
    closes after it when `close_after` says so. Counts the connections it accepted."""

    def __init__(self, script: Script, close_after: Callable[[int], bool] = lambda n: False):
        self.script, self.close_after = script, close_after
        self.connections = 0
        self.requests: list[bytes] = []
        #: Set once the server has closed a connection (and the close has gone out).
        self.closed = asyncio.Event()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length)
                self.requests.append(head + body)
                writer.write(self.script(head))
                await writer.drain()
                if self.close_after(len(self.requests)):
                    break
        except asyncio.IncompleteReadError:
            pass
        writer.close()
        await writer.wait_closed()
        self.closed.set()


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., asyncio.Future]]:
    servers: list[asyncio.base_events.Server] = []

    async def start(scripted: ScriptedServer) -> str:
        server = await asyncio.start_server(scripted.handle, "127.0.0.1", 0)
        servers.append(server)
        host, port = server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}/base"

    yield start
    for server in servers:
        server.close()


def fixed(answer: bytes) -> Script:
    return lambda head: answer


async def test_a_request_goes_out_as_given_and_the_answer_comes_back_whole(serve):
    scripted = ScriptedServer(
        fixed(b"HTTP/1.1 201 Made\r\nX-A: 1\r\nx-a: 2\r\nContent-Length: 2\r\n\r\nok")
    )
    upstream = Upstream(await serve(scripted))
    answer = await upstream.request("POST", "/v1/orders?x=1", [("X-B", "b"), ("x-b", "c")], b"{}")
    assert (answer.status, answer.reason, answer.body) == (201, "Made", b"ok")
    assert answer.headers == [("X-A", "1"), ("x-a", "2"), ("Content-Length", "2")]
    (sent,) = scripted.requests
    assert sent.startswith(b"POST /base/v1/orders?x=1 HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nX-B: b\r\nx-b: c\r\nContent-Length: 2\r\n\r\n{}" in sent
    await upstream.close()


async def test_chunks_with_trailers_interim_answers_and_bodiless_ones(serve):
    answers = iter(
        [
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n",
            b"HTTP/1.1 204 No Content\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",  # a HEAD's answer: no body
        ]
    )
    scripted = ScriptedServer(lambda head: next(answers))
    upstream = Upstream(await serve(scripted))
    chunked = await upstream.request("GET", "/a", [], b"")
    assert (chunked.status, chunked.body) == (200, b"abcde")
    assert (await upstream.request("DELETE", "/b", [], b"")).body == b""
    assert (await upstream.request("HEAD", "/c", [], b"")).body == b""
    assert scripted.connections == 1  # one connection kept alive throughout
    await upstream.close()


async def test_an_answer_framed_by_closing_is_read_to_the_end(serve):
    scripted = ScriptedServer(fixed(b"HTTP/1.1 200 OK\r\n\r\nall of it"), lambda n: True)
    upstream = Upstream(await serve(scripted))
    assert (await upstream.request("GET", "/", [], b"")).body == b"all of it"
    assert (await upstream.request("GET", "/", [], b"")).body == b"all of it"
    assert scripted.connections == 2  # such a connection is not reused
    await upstream.close()


async def test_a_connection_the_upstream_closed_is_not_used_again(serve):
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1"
    scripted = ScriptedServer(fixed(answer), close_after=lambda n: n in (1, 2))
    upstream = Upstream(await serve(scripted))
    await upstream.request("POST", "/", [], b"x")
    await scripted.closed.wait()
    for _ in range(10):  # a few turns of the loop: the client reads the close
        await asyncio.sleep(0)
    second = await upstream.request("POST", "/", [], b"y")  # on a new connection
    assert second.body == b"1" and len(scripted.requests) == 2
    # Closed again, seen by the client or not yet: a GET (which may be sent twice) gets
    # its answer on a new connection either way.
    third = await upstream.request("GET", "/", [], b"")
    assert third.body == b"1" and len(scripted.requests) == 3
    assert scripted.connections == 3
    await upstream.close()


async def test_an_upstream_that_breaks_off_or_is_not_there_is_an_upstream_error(serve):
    broken = ScriptedServer(
        fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"), close_after=lambda n: True
    )
    upstream = Upstream(await serve(broken))
    with pytest.raises(UpstreamError, match="broke off"):
        await upstream.request("GET", "/", [], b"")
    garbage = ScriptedServer(fixed(b"SMTP ready\r\n\r\n"))
    upstream = Upstream(await serve(garbage))
    with pytest.raises(UpstreamError, match="not an HTTP/1 answer"):
        await upstream.request("GET", "/", [], b"")
    nobody = Upstream("http://127.0.0.1:1")
    with pytest.raises(UpstreamError):
        await nobody.request("GET", "/", [], b"")


async def test_an_https_upstream_is_verified(serve, monkeypatch, tmp_path):
    """Production is HTTPS (spec, introduction): its certificate is checked against the
    trust store (here a test CA, through OpenSSL's SSL_CERT_FILE)."""
    authority = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("localhost").configure_cert(context)
    scripted = ScriptedServer(fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecure"))
    server = await asyncio.start_server(scripted.handle, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(UpstreamError, match="CERTIFICATE_VERIFY_FAILED"):
            await Upstream(f"https://localhost:{port}").request("GET", "/", [], b"")
        ca = tmp_path / "ca.pem"
        authority.cert_pem.write_to_path(str(ca))
        monkeypatch.setenv("SSL_CERT_FILE", str(ca))
        upstream = Upstream(f"https://localhost:{port}")
        assert (await upstream.request("GET", "/", [], b"")).body == b"secure"
        await upstream.close()
    finally:
        server.close()


async def test_a_connection_with_bytes_after_its_answer_is_not_used_again(serve):
    """Bytes past the answer's end answer nothing that was asked: read as the next
    answer, they would be another request's."""
    scripted = ScriptedServer(fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1STRAY"))
    upstream = Upstream(await serve(scripted))
    assert (await upstream.request("GET", "/a", [], b"")).body == b"1"
    assert (await upstream.request("GET", "/b", [], b"")).body == b"1"
    assert scripted.connections == 2
    await upstream.close()
