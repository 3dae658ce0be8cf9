"""The recorder's HTTP/1.1 server (mock_server/recording/recorder/listener.py), the side of
`mock-server record` a client talks to (docs/recording.md, "Record"), over real
sockets on 127.0.0.1 with raw streams, so each test sees the exact bytes on the wire.

A reply goes out as the handler gave it, with only the framing added (RFC 9112 section
6.3: `Content-Length`; section 9.6: `Connection: close`; section 9.3 and its appendix
C.2.2: `keep-alive` to an HTTP/1.0 client that asked); bodiless answers (RFC 9110
section 6.4.1); pipelining and persistence (RFC 9112 section 9.3); a chunked body
joined (section 7.1); `100 Continue` (RFC 9110 section 10.1.1); malformed heads
refused in the error envelope and the connection closed (RFC 9112 section 11.2); a
handler that fails; and the listener's shutdown and idle sweep."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import orjson
import pytest

from mock_server.recording.recorder.listener import HEAD_LIMIT, KEEPALIVE, Listener, Reply, Request

#: Seconds any one wait may take before the test fails (nothing here takes nearly so long).
TIMEOUT = 5.0


class Handler:
    """Records each `Request` and answers it by `respond` (by default: 200 echoing the
    method, the target and the body). `arrived` is set on each request."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.arrived = asyncio.Event()
        self.respond: Callable[[Request], Awaitable[Reply]] = self.echo

    async def __call__(self, request: Request) -> Reply:
        self.requests.append(request)
        self.arrived.set()
        return await self.respond(request)

    @staticmethod
    async def echo(request: Request) -> Reply:
        return Reply(200, [("X-Echo", f"{request.method} {request.target}")], request.body)


class Served:
    """A started `Listener`, its handler, what it warned of, and client connections."""

    def __init__(self, listener: Listener, handler: Handler, warnings: list[str], port: int):
        self.listener, self.handler, self.warnings, self.port = listener, handler, warnings, port
        self.writers: list[asyncio.StreamWriter] = []

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writers.append(writer)
        return reader, writer


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    handler = Handler()
    warnings: list[str] = []
    listener = Listener(handler, warn=warnings.append)
    host, port = await listener.start("127.0.0.1", 0)
    assert host == "127.0.0.1" and port > 0
    served = Served(listener, handler, warnings, port)
    yield served
    await listener.close(0)
    for writer in served.writers:
        writer.close()


async def within(awaitable: Awaitable, timeout: float = TIMEOUT):
    return await asyncio.wait_for(awaitable, timeout)


async def until(condition: Callable[[], object]) -> object:
    """Turns of the loop until `condition()` is true (for at most `TIMEOUT` seconds)."""

    async def turns() -> object:
        while not (value := condition()):
            await asyncio.sleep(0)
        return value

    return await within(turns())


async def read_answer(reader: asyncio.StreamReader) -> tuple[bytes, dict[str, str], bytes]:
    """One answer: its head (without the empty line), its fields by lower-case name (the
    last of each), its body by `Content-Length`."""
    head = (await within(reader.readuntil(b"\r\n\r\n")))[:-4]
    fields = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.decode("latin-1").partition(":")
        fields[name.lower()] = value.strip()
    body = await within(reader.readexactly(int(fields.get("content-length", "0"))))
    return head, fields, body


async def read_to_end(reader: asyncio.StreamReader) -> bytes:
    """All the server sends until it closes the connection."""
    return await within(reader.read())


async def is_closed(reader: asyncio.StreamReader) -> bool:
    """Whether the server closed the connection (with nothing more sent)."""
    return await read_to_end(reader) == b""


async def exchange(served: Served, request: bytes) -> bytes:
    """`request` on a fresh connection, and all that comes back until the server closes."""
    reader, writer = await served.connect()
    writer.write(request)
    await writer.drain()
    return await read_to_end(reader)


def envelope_of(data: bytes) -> tuple[str, dict[str, str], dict]:
    """A whole answer's status line, fields and JSON body, checking its length."""
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    fields = dict(line.split(": ", 1) for line in lines)
    assert int(fields["Content-Length"]) == len(body)
    return status_line, fields, orjson.loads(body)


# -- replies --------------------------------------------------------------------------------


async def test_a_reply_goes_out_with_its_own_headers_and_only_the_framing_added(served):
    async def respond(request: Request) -> Reply:
        return Reply(201, [("X-One", "1"), ("x-one", "2"), ("Date", "then")], b"hello")

    served.handler.respond = respond
    reader, writer = await served.connect()
    writer.write(b"POST /v1/orders HTTP/1.1\r\nHost: r\r\nContent-Length: 2\r\n\r\n{}")
    head, _, body = await read_answer(reader)
    assert head + b"\r\n\r\n" + body == (
        b"HTTP/1.1 201 Created\r\nX-One: 1\r\nx-one: 2\r\nDate: then\r\n"
        b"Content-Length: 5\r\n\r\nhello"
    )
    # Kept alive (HTTP/1.1): nothing said about the connection, and it serves again.
    writer.write(b"GET /again HTTP/1.1\r\nHost: r\r\nConnection: close\r\n\r\n")
    assert await read_to_end(reader) == (
        b"HTTP/1.1 201 Created\r\nX-One: 1\r\nx-one: 2\r\nDate: then\r\n"
        b"Content-Length: 5\r\nConnection: close\r\n\r\nhello"
    )
    assert [r.target for r in served.handler.requests] == ["/v1/orders", "/again"]


async def test_a_reply_with_its_own_length_and_reason_gets_none_added(served):
    async def respond(request: Request) -> Reply:
        return Reply(200, [("content-length", "3")], b"abc", reason="Fine By Me")

    served.handler.respond = respond
    data = await exchange(served, b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert data == b"HTTP/1.1 200 Fine By Me\r\ncontent-length: 3\r\nConnection: close\r\n\r\nabc"


@pytest.mark.parametrize(
    ("status", "status_line"),
    [
        (404, b"HTTP/1.1 404 Not Found"),
        (503, b"HTTP/1.1 503 Service Unavailable"),
        (299, b"HTTP/1.1 299 "),  # no standard phrase: an empty one
    ],
)
async def test_the_standard_reason_phrase_when_none_is_given(served, status, status_line):
    async def respond(request: Request) -> Reply:
        return Reply(status)

    served.handler.respond = respond
    data = await exchange(served, b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert data == status_line + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


@pytest.mark.parametrize(
    ("method", "status", "headers", "expected_head"),
    [
        # A HEAD's answer keeps the length the handler gave (that of the GET), no body.
        ("HEAD", 200, [("Content-Length", "5")], b"HTTP/1.1 200 OK\r\nContent-Length: 5"),
        # Nor is a length added where no body may be.
        ("HEAD", 200, [], b"HTTP/1.1 200 OK"),
        ("DELETE", 204, [], b"HTTP/1.1 204 No Content"),
        ("GET", 304, [("ETag", '"v1"')], b'HTTP/1.1 304 Not Modified\r\nETag: "v1"'),
    ],
)
async def test_bodiless_answers_carry_no_body_bytes(served, method, status, headers, expected_head):
    async def respond(request: Request) -> Reply:
        return Reply(status, headers, b"hello")

    served.handler.respond = respond
    reader, writer = await served.connect()
    writer.write(f"{method} /a HTTP/1.1\r\n\r\n".encode())
    writer.write(b"GET /after HTTP/1.1\r\nConnection: close\r\n\r\n")
    data = await read_to_end(reader)
    # The second answer follows the first's head at once: no body bytes in between.
    first, second = data.split(b"\r\n\r\n", 1)
    assert first == expected_head
    assert second.startswith(b"HTTP/1.1 ")
    assert [r.method for r in served.handler.requests] == [method, "GET"]


# -- connections ----------------------------------------------------------------------------


async def test_pipelined_requests_are_answered_in_turn(served):
    first_may_go = asyncio.Event()

    async def respond(request: Request) -> Reply:
        if request.target == "/first":
            await first_may_go.wait()
        return await Handler.echo(request)

    served.handler.respond = respond
    reader, writer = await served.connect()
    writer.write(
        b"POST /first HTTP/1.1\r\nContent-Length: 1\r\n\r\n1"
        b"POST /second HTTP/1.1\r\nContent-Length: 1\r\n\r\n2"
    )
    await within(served.handler.arrived.wait())
    for _ in range(20):
        await asyncio.sleep(0)
    # The second waits for the answer before it.
    assert [r.target for r in served.handler.requests] == ["/first"]
    first_may_go.set()
    answers = [await read_answer(reader), await read_answer(reader)]
    assert [(fields["x-echo"], body) for _, fields, body in answers] == [
        ("POST /first", b"1"),
        ("POST /second", b"2"),
    ]
    assert [r.body for r in served.handler.requests] == [b"1", b"2"]


async def test_a_connection_is_kept_alive_over_several_requests(served):
    reader, writer = await served.connect()
    for n in range(5):
        writer.write(f"PUT /n/{n} HTTP/1.1\r\nContent-Length: 1\r\n\r\n{n}".encode())
        head, fields, body = await read_answer(reader)
        assert head.startswith(b"HTTP/1.1 200 OK\r\n")
        assert (fields["x-echo"], body) == (f"PUT /n/{n}", str(n).encode())
        assert "connection" not in fields


async def test_a_client_that_says_close_is_answered_then_closed(served):
    reader, writer = await served.connect()
    writer.write(b"GET /bye HTTP/1.1\r\nConnection: TE, Close\r\n\r\n")
    head, fields, _ = await read_answer(reader)
    assert fields["connection"] == "close"
    assert await is_closed(reader)


async def test_an_http_1_0_client_is_kept_alive_only_when_it_asks(served):
    reader, writer = await served.connect()
    for target in ("/one", "/two"):
        writer.write(f"GET {target} HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".encode())
        head, fields, _ = await read_answer(reader)
        assert head.startswith(b"HTTP/1.1 200 OK\r\n")
        assert head.endswith(b"\r\nContent-Length: 0\r\nConnection: keep-alive")
        assert fields["x-echo"] == f"GET {target}"
    writer.write(b"GET /three HTTP/1.0\r\n\r\n")
    data = await read_to_end(reader)
    assert data == (
        b"HTTP/1.1 200 OK\r\nX-Echo: GET /three\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    assert [r.minor for r in served.handler.requests] == [0, 0, 0]


async def test_a_reply_that_says_close_closes_the_connection(served):
    # RFC 9112 section 9.6: a server that sends "close" closes the connection after
    # that answer; the module's docstring: kept alive "unless either side says close".
    async def respond(request: Request) -> Reply:
        return Reply(200, [("Connection", "close")], b"ok")

    served.handler.respond = respond
    reader, writer = await served.connect()
    writer.write(b"GET / HTTP/1.1\r\n\r\n")
    head, _, body = await read_answer(reader)
    assert (head.count(b"Connection:"), body) == (1, b"ok")
    assert await is_closed(reader)


# -- request bodies -------------------------------------------------------------------------


async def test_a_chunked_body_is_handed_over_joined_with_the_headers_as_sent(served):
    reader, writer = await served.connect()
    writer.write(
        b"POST /chunks?x=1 HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\n"
        b"X-Case: Kept \r\n\r\n3;ext=1\r\nabc\r\n"
    )
    await writer.drain()
    for _ in range(20):
        await asyncio.sleep(0)
    assert served.handler.requests == []  # not before the body is whole
    writer.write(b"4\r\nde\r\n\r\n0\r\nX-Trailer: t\r\n\r\nGET /next HTTP/1.1\r\n\r\n")
    _, fields, body = await read_answer(reader)
    assert (fields["x-echo"], body) == ("POST /chunks?x=1", b"abcde\r\n")
    _, fields, _ = await read_answer(reader)
    assert fields["x-echo"] == "GET /next"
    first = served.handler.requests[0]
    assert (first.method, first.target, first.minor, first.body) == (
        "POST",
        "/chunks?x=1",
        1,
        b"abcde\r\n",
    )
    assert first.headers == [
        ("Host", "r"),
        ("Transfer-Encoding", "chunked"),
        ("X-Case", "Kept"),
    ]
    assert abs(first.arrived - time.time()) < 60


async def test_expect_100_continue_is_answered_before_the_body_is_sent(served):
    reader, writer = await served.connect()
    writer.write(b"PUT /big HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
    interim = await within(reader.readuntil(b"\r\n\r\n"))
    assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
    assert served.handler.requests == []
    writer.write(b"12345")
    head, fields, body = await read_answer(reader)
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert (fields["x-echo"], body) == ("PUT /big", b"12345")
    # Once only, and not to a request whose body came with its head.
    writer.write(b"PUT /b HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n1")
    writer.write(b"GET /c HTTP/1.1\r\nConnection: close\r\n\r\n")
    rest = await read_to_end(reader)
    assert b"100 Continue" not in rest
    assert rest.count(b"HTTP/1.1 200 OK\r\n") == 2


# -- refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_bytes", "status_line", "detail"),
    [
        (
            b"GET / HTTP/1.1\r\nHost : r\r\n\r\n",
            "HTTP/1.1 400 Bad Request",
            "Invalid header token",  # a space before the colon
        ),
        (
            b"GET / HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n",
            "HTTP/1.1 400 Bad Request",
            "Unexpected whitespace after header value",  # obs-fold
        ),
        (
            b"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "HTTP/1.1 400 Bad Request",
            "Transfer-Encoding can't be present with Content-Length",
        ),
        (
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "HTTP/1.1 400 Bad Request",
            "Invalid character in chunk size",
        ),
        (
            b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            "HTTP/1.1 501 Not Implemented",
            "transfer coding gzip",
        ),
        (
            b"GET / HTTP/2.0\r\n\r\n",
            "HTTP/1.1 505 HTTP Version Not Supported",
            "HTTP/2.0 is not served here",
        ),
    ],
)
async def test_a_request_that_cannot_be_read_is_refused_and_the_connection_closed(
    served, request_bytes, status_line, detail
):
    data = await exchange(served, request_bytes)
    line, fields, document = envelope_of(data)
    assert line == status_line
    assert list(fields) == ["Content-Type", "Content-Length", "Date", "Connection"]
    assert fields["Content-Type"] == "application/json; charset=utf-8"
    assert fields["Connection"] == "close"
    assert list(document) == ["detail", "code"]
    assert document["code"] == "malformed_request"
    assert detail in document["detail"]
    assert served.handler.requests == []


async def test_a_refusal_after_a_served_request_ends_the_connection(served):
    data = await exchange(
        served,
        b"GET /fine HTTP/1.1\r\n\r\nGET /bad HTTP/1.1\r\nX-A: a\x01b\r\n\r\n"
        b"GET /never HTTP/1.1\r\n\r\n",
    )
    first, _, refusal = data.partition(b"HTTP/1.1 400 Bad Request\r\n")
    assert first == b"HTTP/1.1 200 OK\r\nX-Echo: GET /fine\r\nContent-Length: 0\r\n\r\n"
    assert b"Invalid header value char" in refusal
    assert [r.target for r in served.handler.requests] == ["/fine"]


async def test_a_head_over_the_limit_is_refused_431(served):
    # No end of head in sight: more bytes than the limit and the end's four together.
    start = b"GET / HTTP/1.1\r\nX-Big: "
    data = await exchange(served, start + b"a" * (HEAD_LIMIT + 4 - len(start)))
    line, fields, document = envelope_of(data)
    assert line == "HTTP/1.1 431 Request Header Fields Too Large"
    assert fields["Connection"] == "close"
    assert document == {
        "detail": f"the request's head is over {HEAD_LIMIT} bytes",
        "code": "malformed_request",
    }
    assert served.handler.requests == []


async def test_a_head_at_the_limit_is_served(served):
    start = b"GET / HTTP/1.1\r\nConnection: close\r\nX-Big: "
    big = "a" * (HEAD_LIMIT - len(start))
    data = await exchange(served, start + big.encode() + b"\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 200 OK\r\n"), data[:60]
    assert served.handler.requests[0].headers[1] == ("X-Big", big)


async def test_a_handler_that_raises_gets_a_500_envelope_and_a_warning(served):
    async def respond(request: Request) -> Reply:
        raise RuntimeError("boom")

    served.handler.respond = respond
    reader, writer = await served.connect()
    writer.write(b"POST /v1/orders HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
    head, fields, body = await read_answer(reader)
    assert head.startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
    assert orjson.loads(body) == {
        "detail": "the recorder failed to handle this request",
        "code": "internal_error",
    }
    assert "connection" not in fields  # the connection is still good
    (warning,) = served.warnings
    assert "POST /v1/orders" in warning
    assert "RuntimeError: boom" in warning
    served.handler.respond = Handler.echo
    writer.write(b"GET /still HTTP/1.1\r\n\r\n")
    _, fields, _ = await read_answer(reader)
    assert fields["x-echo"] == "GET /still"


# -- shutdown and the idle sweep ------------------------------------------------------------


async def idle_and_busy(
    served: Served, slow: bytes
) -> tuple[asyncio.StreamReader, asyncio.StreamReader, asyncio.StreamWriter, asyncio.Event]:
    """Two connections: one answered and idle since, one whose request (`slow`, to
    `/slow`) is being served until the returned event is set."""
    may_answer = asyncio.Event()

    async def respond(request: Request) -> Reply:
        if request.target == "/slow":
            await may_answer.wait()
        return await Handler.echo(request)

    served.handler.respond = respond
    idle_reader, idle_writer = await served.connect()
    idle_writer.write(b"GET /quick HTTP/1.1\r\n\r\n")
    await read_answer(idle_reader)
    busy_reader, busy_writer = await served.connect()
    busy_writer.write(slow)
    while len(served.handler.requests) < 2:
        served.handler.arrived.clear()
        await within(served.handler.arrived.wait())
    return idle_reader, busy_reader, busy_writer, may_answer


async def test_close_answers_the_request_in_flight_and_closes_the_idle(served):
    idle_reader, busy_reader, busy_writer, may_answer = await idle_and_busy(
        served, b"POST /slow HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"
    )

    closing = asyncio.create_task(served.listener.close(TIMEOUT))
    assert await is_closed(idle_reader)
    with pytest.raises(OSError):
        await within(asyncio.open_connection("127.0.0.1", served.port))
    assert not closing.done()
    may_answer.set()
    head, fields, body = await read_answer(busy_reader)
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert (fields["connection"], body) == ("close", b"hi")
    assert await is_closed(busy_reader)
    await within(closing)


async def test_close_answers_in_full_a_reply_still_being_written(served):
    may_answer = asyncio.Event()
    big = bytes(range(256)) * (1 << 17)  # 32 MiB: more than the sockets' buffers hold

    async def respond(request: Request) -> Reply:
        await may_answer.wait()
        return Reply(200, [], big)

    served.handler.respond = respond
    reader, writer = await served.connect()
    writer.write(b"GET /big HTTP/1.1\r\n\r\n")
    await within(served.handler.arrived.wait())
    closing = asyncio.create_task(served.listener.close(TIMEOUT))
    await asyncio.sleep(0)
    may_answer.set()
    head = await within(reader.readuntil(b"\r\n\r\n"))
    assert head.endswith(b"Content-Length: 33554432\r\nConnection: close\r\n\r\n")
    received = bytearray()
    try:
        while block := await within(reader.read(1 << 20)):
            received += block
    except ConnectionResetError:
        pass  # dropped: what arrived is compared below
    assert len(received) == len(big)
    assert received == big
    await within(closing)


async def test_a_handler_still_running_after_the_grace_is_cancelled(served):
    cancelled = asyncio.Event()

    async def respond(request: Request) -> Reply:
        try:
            await asyncio.Event().wait()  # never set
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("not reached")

    served.handler.respond = respond
    reader, writer = await served.connect()
    writer.write(b"GET /forever HTTP/1.1\r\n\r\n")
    await within(served.handler.arrived.wait())
    await within(served.listener.close(0.05))
    assert cancelled.is_set()
    try:
        data = await read_to_end(reader)
    except ConnectionResetError:
        data = b""
    assert data == b""  # no answer: the connection was dropped
    assert served.warnings == []


async def test_sweep_closes_connections_idle_too_long_but_not_one_being_served(served):
    idle_reader, busy_reader, busy_writer, may_answer = await idle_and_busy(
        served, b"GET /slow HTTP/1.1\r\n\r\n"
    )

    served.listener.sweep(time.monotonic() + KEEPALIVE + 1)
    assert await is_closed(idle_reader)
    may_answer.set()
    head, fields, _ = await read_answer(busy_reader)
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert "connection" not in fields  # still kept alive after its answer
    busy_writer.write(b"GET /again HTTP/1.1\r\n\r\n")
    _, fields, _ = await read_answer(busy_reader)
    assert fields["x-echo"] == "GET /again"


async def test_sweep_spares_a_connection_heard_from_lately(served):
    reader, writer = await served.connect()
    writer.write(b"GET / HTTP/1.1\r\n\r\n")
    await read_answer(reader)
    served.listener.sweep(time.monotonic() + KEEPALIVE - 10)
    writer.write(b"GET /still HTTP/1.1\r\n\r\n")
    _, fields, _ = await read_answer(reader)
    assert fields["x-echo"] == "GET /still"
