"""The recorder's HTTP/1.1 messages (mock_server/recording/recorder/http1.py), the reading under
`mock-server record` (docs/recording.md, "Record"), on bytes alone: llhttp reads them,
and the rules the recorder adds on top.

A request head read as sent (RFC 9112 section 3: request line, target forms, version;
section 5: field lines), and each head refused where a lenient reading could let two
parties frame one message differently (section 11.2): obs-fold, a space before the
colon, bare CR or LF, control characters. A body's framing by its fields (section 6.3),
a chunked body joined (section 7.1), the limits on a head, a body, a chunk line and
the trailers, bytes arriving in any pieces, an upstream's answers, and an answer's
bytes as they go on the wire (section 4)."""

from __future__ import annotations

import time

import pytest

from mock_server.recording.recorder.http1 import (
    CHUNKED,
    LINE_LIMIT,
    TO_CLOSE,
    AnswerReader,
    Head,
    Malformed,
    RequestReader,
    answer_bytes,
    body_length,
    has_token,
    may_have_body,
    phrase,
)

HEAD_LIMIT = 1 << 16
BODY_LIMIT = 1 << 24


def reader(head_limit: int = HEAD_LIMIT, body_limit: int = BODY_LIMIT) -> RequestReader:
    return RequestReader(head_limit=head_limit, body_limit=body_limit)


def requests(data: bytes, *, step: int = 0, **limits: int) -> list[tuple[Head, bytes]]:
    """The requests `data` holds, given to a reader `step` bytes at a time (0: at once);
    raises `Malformed`. What comes after the last whole request is left unread."""
    read = reader(**limits)
    found = []
    for start in range(0, len(data), step or len(data) or 1):
        read.buffer += data[start : start + (step or len(data))]
        while read.read():
            assert read.head is not None
            found.append((read.head, read.body()))
            read.next()
    return found


def head_of(data: bytes) -> Head:
    """The head of the one request `data` (a head without its final empty line) holds."""
    ((head, _),) = requests(data + b"\r\n\r\n")
    return head


def refusal(data: bytes, **limits: int) -> Malformed:
    with pytest.raises(Malformed) as caught:
        requests(data, **limits)
    assert str(caught.value) == caught.value.detail
    return caught.value


# -- the head -------------------------------------------------------------------------------


@pytest.mark.parametrize("arrived", [0, 1, 2, 3], ids=lambda n: f"{n} bytes of its end")
def test_a_head_at_the_limit_is_awaited_however_much_of_its_end_came(arrived):
    limit = 64
    head = b"GET / HTTP/1.1\r\nX: " + b"a" * (limit - 19)
    assert len(head) == limit
    assert requests(head + b"\r\n\r\n"[:arrived], head_limit=limit) == []
    ((read, _),) = requests(head + b"\r\n\r\nGET", head_limit=limit)
    assert read.headers == [("X", "a" * (limit - 19))]


@pytest.mark.parametrize("step", [0, 1, 7])
def test_a_head_over_the_limit_is_refused_431_whether_or_not_its_end_came(step):
    problem = refusal(b"GET / HTTP/1.1\r\nX: " + b"a" * 49, head_limit=64, step=step)
    assert problem.status == 431 and "the request's head is over 64 bytes" in problem.detail
    problem = refusal(b"GET / HTTP/1.1\r\nX: " + b"a" * 46 + b"\r\n\r\n", head_limit=64, step=step)
    assert problem.status == 431
    # The limit is the head's: a body after it does not count.
    assert len(requests(b"POST / HTTP/1.1\r\nContent-Length: 99\r\n\r\n" + b"a" * 99)) == 1


def test_a_head_keeps_names_as_spelt_in_order_and_strips_values():
    head = head_of(
        b"POST /v1/orders?x=1&y=2 HTTP/1.1\r\n"
        b"Host: api.example\r\n"
        b"X-Trace:  \t padded\t \r\n"
        b"x-trace:second\r\n"
        b"X-Empty:\r\n"
        b"X-Blank:   \r\n"
        b"Content-Type: application/json; charset=utf-8"
    )
    assert head == Head(
        "POST",
        "/v1/orders?x=1&y=2",
        1,
        [
            ("Host", "api.example"),
            ("X-Trace", "padded"),
            ("x-trace", "second"),
            ("X-Empty", ""),
            ("X-Blank", ""),
            ("Content-Type", "application/json; charset=utf-8"),
        ],
    )


def test_a_value_keeps_its_inner_spaces_tabs_and_obs_text():
    (header,) = head_of(b"GET / HTTP/1.1\r\nX-Note: a  b\tc \xe9\xa0\x85").headers
    assert header == ("X-Note", "a  b\tc \xe9\xa0\x85")


def test_a_head_without_fields_has_none_and_empty_lines_before_it_are_skipped():
    assert head_of(b"OPTIONS * HTTP/1.1") == Head("OPTIONS", "*", 1, [])
    assert head_of(b"\r\n\r\nGET / HTTP/1.0") == Head("GET", "/", 0, [])


def test_the_head_is_read_as_it_arrives_and_its_time_kept():
    read = reader()
    read.buffer += b"GET /a HTTP/1.1\r\nHost: h\r\nX-Long: " + b"v" * 1000
    assert not read.read()
    read.buffer += b"\r\n\r\nGET /b"
    assert read.read() and read.head is not None
    assert (read.head.target, read.head.headers[1][1]) == ("/a", "v" * 1000)
    assert abs(read.arrived - time.time()) < 60
    assert read.buffer == b"GET /b"  # the next request's bytes are left where they were


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("http://api.example/v1/orders?page=2", "/v1/orders?page=2"),
        ("https://api.example:8443/a/b", "/a/b"),
        ("http://api.example", "/"),
        ("http://api.example?q=1", "/?q=1"),
        ("http://user@api.example/x#fragment", "/x"),
    ],
)
def test_an_absolute_form_target_is_reduced_to_its_path_and_query(target, expected):
    head = head_of(f"GET {target} HTTP/1.1\r\nHost: api.example".encode())
    assert head.target == expected


@pytest.mark.parametrize(("version", "minor"), [("1.0", 0), ("1.1", 1)])
def test_the_minor_version_is_0_or_1(version, minor):
    assert head_of(f"GET / HTTP/{version}".encode()).minor == minor


@pytest.mark.parametrize(
    ("data", "detail"),
    [
        # RFC 9112 section 5.1: no whitespace between a field name and its colon.
        (b"GET / HTTP/1.1\r\nHost : api.example", "Invalid header token"),
        (b"GET / HTTP/1.1\r\nHost\t: api.example", "Invalid header token"),
        # Section 5.2: obs-fold is refused in a request.
        (b"GET / HTTP/1.1\r\nX-A: one\r\n two", "Unexpected whitespace after header value"),
        (b"GET / HTTP/1.1\r\nX-A: one\r\n\ttwo", "Unexpected whitespace after header value"),
        (b"GET / HTTP/1.1\r\n two", "Unexpected space after start line"),
        # Section 2.2: lines end in CRLF, a bare CR or LF is not a line's end.
        (b"GET / HTTP/1.1\r\nX-A: 1\nX-B: 2", "Missing expected CR after header value"),
        (b"GET / HTTP/1.1\r\nX-A: 1\rX-B: 2", "Missing expected LF after header value"),
        (b"GET / HTTP/1.1\r\nX-A: 1\r", "Missing expected LF after header value"),
        # RFC 9110 section 5.5: no controls in a value but HTAB.
        (b"GET / HTTP/1.1\r\nX-A: a\x00b", "Invalid header value char"),
        (b"GET / HTTP/1.1\r\nX-A: a\x1bb", "Invalid header value char"),
        (b"GET / HTTP/1.1\r\nX-A: a\x7fb", "Invalid header value char"),
        # A line that is no field at all.
        (b"GET / HTTP/1.1\r\nHost: a\r\nno colon here", "Invalid header token"),
        (b"GET / HTTP/1.1\r\n: no name", "Invalid header token"),
        (b"GET / HTTP/1.1\r\nX(A): 1", "Invalid header token"),
    ],
)
def test_a_field_line_read_two_ways_is_refused(data, detail):
    for step in (0, 1):  # however the bytes arrive
        problem = refusal(data + b"\r\n\r\n", step=step)
        assert (problem.status, problem.detail) == (400, detail)


@pytest.mark.parametrize(
    ("line", "status", "detail"),
    [
        ("G(T / HTTP/1.1", 400, "not a method: 'G(T'"),
        ("FOO / HTTP/1.1", 501, "method FOO is not implemented here"),
        ("GET / HTTP/1.1 ", 400, "Expected CRLF after version"),
        ("GET\t/ HTTP/1.1", 400, "Expected space after method"),
        ("GET foo HTTP/1.1", 400, "Invalid characters in url"),
        ("GET api.example:80 HTTP/1.1", 400, "Unexpected char in url schema"),
        ("CONNECT api.example:80 HTTP/1.1", 400, "not a request target: 'api.example:80'"),
        ("GET http://[x/a HTTP/1.1", 400, "not a request target: 'http://[x/a'"),
        ("GET http:///a HTTP/1.1", 400, "not a request target"),
        ("GET /a\x01b HTTP/1.1", 400, "Invalid char in url path"),
        ("GET / HTTP/2.0", 505, "HTTP/2.0 is not served here"),
        ("PRI * HTTP/2.0", 505, "HTTP/2.0 is not served here"),
        ("GET / HTTP/0.9", 505, "HTTP/0.9 is not served here"),
        ("GET /", 505, "HTTP/0.9 is not served here"),
        # llhttp reads no minor version above 1 (RFC 9112 section 2.3 would read 1.1).
        ("GET / HTTP/1.2", 505, "HTTP/1.2 is not served here"),
        ("GET / HTTP/3.0", 505, "HTTP/3.0 is not served here"),
        ("GET / HTTP/1.x", 400, "Invalid minor version"),
        ("GET / HTTP/1.10", 400, "Expected CRLF after version"),
        ("GET / http/1.1", 400, "Expected HTTP/"),
    ],
)
def test_a_request_line_that_cannot_be_read_is_refused(line, status, detail):
    problem = refusal(line.encode("latin-1") + b"\r\nHost: api.example\r\n\r\n")
    assert (problem.status, detail in problem.detail) == (status, True), problem.detail


def test_llhttp_reads_a_request_line_with_two_spaces_as_one():
    # Not a framing matter: the target is the same to every reader.
    assert head_of(b"GET  /a HTTP/1.1").target == "/a"


# -- the body's framing ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "length"),
    [
        ([], 0),
        ([("Host", "a")], 0),
        ([("Content-Length", "0")], 0),
        ([("Content-Length", "12")], 12),
        ([("content-LENGTH", " 7 ")], 7),
        ([("Content-Length", "5"), ("Content-Length", "5")], 5),
        ([("Content-Length", "5, 5")], 5),
        ([("Transfer-Encoding", "chunked")], CHUNKED),
        ([("transfer-encoding", "Chunked")], CHUNKED),
        ([("Transfer-Encoding", ", chunked")], CHUNKED),
    ],
)
def test_the_body_is_framed_by_its_fields(headers, length):
    assert body_length(headers) == length


@pytest.mark.parametrize(
    ("headers", "status", "detail"),
    [
        ([("Content-Length", "5"), ("Content-Length", "6")], 400, "disagree"),
        ([("Content-Length", "5, 6")], 400, "disagree"),
        ([("Content-Length", "+5")], 400, "not a Content-Length: '+5'"),
        ([("Content-Length", "-1")], 400, "not a Content-Length: '-1'"),
        ([("Content-Length", "0x10")], 400, "not a Content-Length: '0x10'"),
        ([("Content-Length", "")], 400, "not a Content-Length: ''"),
        ([("Content-Length", "1 2")], 400, "not a Content-Length"),
        ([("Content-Length", "9" * 19)], 400, "not a Content-Length"),
        # Python's str.strip() takes these, llhttp does not: neither may frame a body.
        ([("Content-Length", "5\xa0")], 400, "not a Content-Length"),
        ([("Content-Length", "\x855")], 400, "not a Content-Length"),
        ([("Transfer-Encoding", "chunked\xa0")], 400, "last transfer coding must be chunked"),
        ([("Transfer-Encoding", "chunked\x85")], 400, "last transfer coding must be chunked"),
        (
            [("Content-Length", "5"), ("Transfer-Encoding", "chunked")],
            400,
            "both Content-Length and Transfer-Encoding",
        ),
        (
            [("Transfer-Encoding", "chunked"), ("Content-Length", "5")],
            400,
            "both Content-Length and Transfer-Encoding",
        ),
        ([("Transfer-Encoding", "gzip, chunked")], 501, "transfer coding gzip"),
        ([("Transfer-Encoding", "gzip"), ("Transfer-Encoding", "chunked")], 501, "gzip"),
        ([("Transfer-Encoding", "chunked, gzip")], 400, "last transfer coding must be chunked"),
        ([("Transfer-Encoding", "chunked, chunked")], 400, "more than once"),
        ([("Transfer-Encoding", "gzip")], 400, "last transfer coding must be chunked"),
    ],
)
def test_framing_that_could_be_read_two_ways_is_refused(headers, status, detail):
    with pytest.raises(Malformed) as caught:
        body_length(headers)
    assert caught.value.status == status
    assert detail in caught.value.detail


@pytest.mark.parametrize(
    "headers",
    [
        [("Transfer-Encoding", "")],
        [("Transfer-Encoding", " , ")],
        [("Transfer-Encoding", ""), ("Content-Length", "5")],
    ],
)
def test_a_transfer_encoding_without_chunked_last_is_refused_even_when_empty(headers):
    # RFC 9112 section 6.3: a Transfer-Encoding present in a request whose final
    # coding is not chunked leaves the length unknown: 400. Read as absent, the empty
    # field would let a `Content-Length` beside it frame the body.
    with pytest.raises(Malformed) as caught:
        body_length(headers)
    assert caught.value.status == 400


def test_an_answer_without_a_length_runs_to_the_connection_s_end():
    assert body_length([], request=False) == TO_CLOSE
    assert body_length([("Transfer-Encoding", "gzip")], request=False) == TO_CLOSE
    assert body_length([("Transfer-Encoding", "gzip, chunked")], request=False) == CHUNKED


@pytest.mark.parametrize(
    ("fields", "status"),
    [
        (b"Transfer-Encoding: gzip, chunked", 501),
        (b"Transfer-Encoding: chunked\xa0", 400),
        (b"Content-Length: 5\xa0", 400),
        (b"Transfer-Encoding: chunked\r\nContent-Length: 5", 400),
        (b"Content-Length: 5\r\nContent-Length: 6", 400),
    ],
)
def test_a_request_framed_two_ways_is_refused(fields, status):
    problem = refusal(
        b"POST /a HTTP/1.1\r\n" + fields + b"\r\n\r\n0\r\n\r\nGET /admin HTTP/1.1\r\n\r\n"
    )
    assert problem.status == status


# -- bodies ---------------------------------------------------------------------------------

#: A chunked body with extensions and a trailer section, and what it joins to.
CHUNKED_BODY = (
    b"3;name=value\r\nabc\r\n"
    b'5;a=1;b="q\\"s"\r\nde\r\nf\r\n'
    b"A\r\n0123456789\r\n"
    b"0\r\nX-T: 1\r\nX-U: 2\r\n\r\n"
)
JOINED = b"abcde\r\nf0123456789"
CHUNKED_HEAD = b"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
NEXT = b"GET /next HTTP/1.1\r\nHost: a\r\n\r\n"


@pytest.mark.parametrize("step", [0, 1, 2, 3, 5, 64])
def test_bodies_are_joined_however_the_bytes_arrive(step):
    data = (
        CHUNKED_HEAD
        + CHUNKED_BODY
        + b"PUT /l HTTP/1.1\r\nContent-Length: 5\r\n\r\n12345"
        + b"POST /z HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        + NEXT
    )
    found = requests(data, step=step)
    assert [(head.target, body) for head, body in found] == [
        ("/c", JOINED),
        ("/l", b"12345"),
        ("/z", b""),
        ("/next", b""),
    ]
    # Trailer fields are dropped: the head's fields are those before the body.
    assert found[0][0].headers == [("Transfer-Encoding", "chunked")]


def test_every_incomplete_prefix_of_a_chunked_body_is_awaited():
    whole = CHUNKED_HEAD + CHUNKED_BODY
    for length in range(len(whole)):
        assert requests(whole[:length]) == [], whole[:length]
    assert requests(whole) == [(Head("POST", "/c", 1, [("Transfer-Encoding", "chunked")]), JOINED)]


def test_the_bytes_after_a_body_wait_for_the_next_read():
    read = reader()
    read.buffer += CHUNKED_HEAD + CHUNKED_BODY + NEXT
    assert read.read() and read.body() == JOINED
    assert read.buffer == NEXT
    read.next()
    assert read.read() and read.head is not None and read.head.target == "/next"


@pytest.mark.parametrize(
    ("data", "detail"),
    [
        (b"g\r\nabc\r\n0\r\n\r\n", "Invalid character in chunk size"),
        (b"\r\n0\r\n\r\n", "Invalid character in chunk size"),
        (b"-1\r\nabc\r\n0\r\n\r\n", "Invalid character in chunk size"),
        (b"0x3\r\nabc\r\n0\r\n\r\n", "Invalid character in chunk size"),
        (b"+3\r\nabc\r\n0\r\n\r\n", "Invalid character in chunk size"),
        (b"1" * 17 + b"\r\n", "Chunk size overflow"),
        (b"3 \r\nabc\r\n0\r\n\r\n", "Invalid character in chunk size"),
        (b"3 ;a=1\r\nabc\r\n0\r\n\r\n", "Invalid character in chunk size"),
        (b"3\r\nabcXY0\r\n\r\n", "Expected LF after chunk data"),
        (b"3\r\nabcd\r\n0\r\n\r\n", "Expected LF after chunk data"),
        (b"1\r\nx\r\n3\r\nabc\n\r0\r\n\r\n", "Missing expected CR after chunk data"),
        # What a lenient reader could read as the end of one request and the next one.
        (b"2;\nxx\r\nab\r\n0\r\n\r\n", "Missing expected CR after chunk extension name"),
        (b"2;a=b\rxx\r\nab\r\n0\r\n\r\n", "Expected LF after chunk size"),
        (b"2;\x00\r\nab\r\n0\r\n\r\n", "Invalid character in chunk extensions name"),
        (b"2;a=\x00\r\nab\r\n0\r\n\r\n", "Invalid character in chunk extensions value"),
        (b"0\r\n\nGET /admin HTTP/1.1\r\n\r\n", "Invalid header field char"),
        (b"0\r\nX: a\x00b\r\n\r\n", "Invalid header value char"),
        (b"0\r\nX: a\nGET /admin HTTP/1.1\r\n\r\n", "Missing expected CR after header value"),
        (b"0\r\nX: a\rGET /admin HTTP/1.1\r\n\r\n", "Missing expected LF after header value"),
        (b"0\r\n\rGET /admin HTTP/1.1\r\n\r\n", "Expected LF after headers"),
    ],
)
def test_a_chunked_body_that_cannot_be_read_is_refused(data, detail):
    for step in (0, 1):
        problem = refusal(CHUNKED_HEAD + data + NEXT, step=step)
        assert (problem.status, problem.detail) == (400, detail), problem.detail


@pytest.mark.parametrize("step", [0, 1, 1000])
def test_a_chunk_line_or_a_trailer_section_over_its_limit_is_refused(step):
    long = b"e" * (LINE_LIMIT + 10)
    for body in (
        b"3;" + long + b"\r\nabc\r\n0\r\n\r\n",
        b"3;" + long,
        b"0\r\nX-T: " + long,
        b"0\r\n" + b"X-T: t\r\n" * (LINE_LIMIT // 8 + 1) + b"\r\n",
    ):
        problem = refusal(CHUNKED_HEAD + body, step=step)
        assert problem.status == 400 and "over 4096 bytes" in problem.detail
    # At the limit, both pass.
    line = b"3;" + b"e" * (LINE_LIMIT - 2) + b"\r\nabc\r\n"
    trailers = b"0\r\nX-T: " + b"t" * (LINE_LIMIT - 16) + b"\r\n\r\n"
    ((_, body),) = requests(CHUNKED_HEAD + line + trailers, step=step)
    assert body == b"abc"


def test_a_body_over_the_limit_is_refused_413_at_once_or_as_it_passes_the_limit():
    problem = refusal(b"POST / HTTP/1.1\r\nContent-Length: 1000000000000\r\n\r\n")
    assert (problem.status, problem.detail) == (
        413,
        f"the request's body is over {BODY_LIMIT} bytes",
    )
    assert refusal(b"POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n", body_limit=1000).detail == (
        "the request's body is over 1000 bytes"
    )
    assert len(requests(b"POST / HTTP/1.1\r\nContent-Length: 1000\r\n\r\n" + b"a" * 1000)) == 1
    # Chunked: as soon as the body, as sent, passes the limit.
    read = reader(body_limit=1000)
    read.buffer += CHUNKED_HEAD + b"200\r\n" + b"a" * 512
    assert not read.read()
    read.buffer += b"\r\n200\r\n" + b"a" * 512
    with pytest.raises(Malformed) as caught:
        read.read()
    assert caught.value.status == 413


def test_one_byte_chunks_are_read_in_linear_time():
    """Each byte is read once: a body of one-byte chunks costs in proportion to its size,
    arriving at once or in many pieces."""
    timings = []
    for count in (20_000, 80_000):
        data = CHUNKED_HEAD + b"1\r\nx\r\n" * count + b"0\r\n\r\n"
        started = time.process_time()
        ((_, body),) = requests(data, step=4096)
        timings.append(time.process_time() - started)
        assert body == b"x" * count
    # Four times the bytes: about four times the time (a re-scan would be sixteen).
    assert timings[1] < 8 * timings[0] + 0.05, timings


def test_an_upgrade_is_read_past_and_one_with_a_body_refused():
    data = b"GET /a HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n" + NEXT
    assert [head.target for head, _ in requests(data)] == ["/a", "/next"]
    problem = refusal(
        b"POST /a HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: x\r\nContent-Length: 3\r\n\r\nabc"
    )
    assert "an Upgrade request with a body" in problem.detail


# -- answers from the upstream --------------------------------------------------------------


def answer(method: str, data: bytes, *, step: int = 0, ended: bool = False) -> AnswerReader:
    read = AnswerReader()
    read.expect(method)
    whole = False
    for start in range(0, len(data), step or len(data)):
        read.buffer += data[start : start + (step or len(data))]
        whole = read.read()
    if ended and not whole:
        whole = read.end()
    assert whole
    return read


@pytest.mark.parametrize("step", [0, 1])
def test_an_answer_is_read_by_its_framing(step):
    read = answer(
        "GET", b"HTTP/1.1 201 Made\r\nX-A: 1\r\nContent-Length: 2\r\n\r\nokEXTRA", step=step
    )
    assert (read.status, read.reason, read.headers, read.body()) == (
        201,
        "Made",
        [("X-A", "1"), ("Content-Length", "2")],
        b"ok",
    )
    assert read.keep_alive and read.buffer == b"EXTRA"
    read = answer(
        "GET",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n",
        step=step,
    )
    assert (read.status, read.body(), read.headers) == (
        200,
        b"abcde",
        [("Transfer-Encoding", "chunked")],
    )
    read = answer("GET", b"HTTP/1.1 200 OK\r\n\r\nall of it", step=step, ended=True)
    assert (read.body(), read.keep_alive) == (b"all of it", False)
    read = answer("GET", b"HTTP/1.0 299 \r\nContent-Length: 0\r\n\r\n", step=step)
    assert (read.status, read.reason, read.keep_alive) == (299, "", False)


@pytest.mark.parametrize(
    ("method", "data"),
    [
        ("HEAD", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"),
        ("HEAD", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
        ("DELETE", b"HTTP/1.1 204 No Content\r\n\r\n"),
        ("GET", b'HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\nContent-Length: 5\r\n\r\n'),
        ("GET", b"HTTP/1.1 101 Switching Protocols\r\n\r\n"),
    ],
)
def test_bodiless_answers_end_with_their_head(method, data):
    assert answer(method, data).body() == b""


def test_one_reader_reads_the_answers_of_a_kept_alive_connection_in_turn():
    read = AnswerReader()
    for method, data, body in [
        ("GET", b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na", b"a"),
        ("HEAD", b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", b""),
        ("GET", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nc\r\n0\r\n\r\n", b"c"),
        ("GET", b"HTTP/1.1 204 No Content\r\n\r\n", b""),
        ("POST", b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok", b"ok"),
    ]:
        read.expect(method)
        read.buffer += data
        assert read.read() and read.body() == body and read.keep_alive
        assert read.buffer == b""


@pytest.mark.parametrize(
    ("data", "detail"),
    [
        (b"SMTP ready\r\n\r\n", "not an HTTP/1 answer"),
        (b"HTTP/2.0 200 OK\r\n\r\n", "not an HTTP/1 answer: HTTP/2.0"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "Duplicate"),
        (b"HTTP/1.1 200 OK\r\nX: a\x01\r\n\r\n", "Invalid header value char"),
        (b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * (1 << 18), "the answer's head is over"),
    ],
)
def test_an_answer_that_cannot_be_read_is_refused(data, detail):
    read = AnswerReader()
    read.buffer += data
    with pytest.raises(Malformed) as caught:
        read.read()
    assert detail in caught.value.detail


# -- writing answers ------------------------------------------------------------------------


def test_an_answer_goes_out_as_given():
    headers = [("X-A", "1"), ("x-a", "2"), ("Content-Length", "2")]
    assert answer_bytes(201, "Made", headers, b"ok") == (
        b"HTTP/1.1 201 Made\r\nX-A: 1\r\nx-a: 2\r\nContent-Length: 2\r\n\r\nok"
    )
    assert answer_bytes(204, "No Content", [], b"") == b"HTTP/1.1 204 No Content\r\n\r\n"
    # RFC 9112 section 4: the space before an empty reason phrase stays.
    assert answer_bytes(299, "", [("É", "\xe9")], b"") == b"HTTP/1.1 299 \r\n\xc9: \xe9\r\n\r\n"


def test_the_standard_reason_phrase_and_none_for_an_unknown_status():
    assert (phrase(200), phrase(404), phrase(431), phrase(505)) == (
        "OK",
        "Not Found",
        "Request Header Fields Too Large",
        "HTTP Version Not Supported",
    )
    assert phrase(299) == ""


@pytest.mark.parametrize(
    ("method", "status", "bodied"),
    [
        ("GET", 200, True),
        ("POST", 201, True),
        ("GET", 404, True),
        ("HEAD", 200, False),
        ("HEAD", 404, False),
        ("GET", 204, False),
        ("GET", 304, False),
        ("GET", 100, False),
        ("GET", 101, False),
        ("GET", 199, False),
    ],
)
def test_which_answers_carry_a_body(method, status, bodied):
    assert may_have_body(method, status) is bodied


def test_a_token_is_found_in_a_list_whatever_its_case():
    headers = [("Connection", "Upgrade"), ("CONNECTION", " Keep-Alive , TE")]
    assert has_token(headers, "connection", "keep-alive")
    assert has_token(headers, "connection", "te")
    assert not has_token(headers, "connection", "close")
    assert not has_token([("Connection", "closed")], "connection", "close")
    assert not has_token([("X-Connection", "close")], "connection", "close")
