"""The recorder's HTTP/1.1 message functions (mock_server/recording/http1.py), the
parsing under `mock-server record` (docs/recording.md, "Record"), on bytes alone.

A request head read as sent (RFC 9112 section 3: request line, target forms, version;
section 5: field lines), and each head refused where a lenient reading could let two
parties frame one message differently (section 11.2): obs-fold, a space before the
colon, bare CR or LF, control characters. A body's framing by its fields (section 6.3),
a chunked body joined (section 7.1), and an answer's bytes as they go on the wire
(section 4)."""

from __future__ import annotations

import pytest

from mock_server.recording.http1 import (
    CHUNKED,
    Head,
    Malformed,
    answer_bytes,
    body_length,
    dechunk,
    has_token,
    head_end,
    may_have_body,
    parse_head,
    phrase,
)


def refusal(data: bytes) -> Malformed:
    with pytest.raises(Malformed) as caught:
        parse_head(data)
    return caught.value


# -- the head -------------------------------------------------------------------------------


@pytest.mark.parametrize("arrived", [0, 1, 2, 3], ids=lambda n: f"{n} bytes of its end")
def test_a_head_at_the_limit_is_awaited_however_much_of_its_end_came(arrived):
    limit = 64
    head = b"GET / HTTP/1.1\r\nX: " + b"a" * (limit - 19)
    assert len(head) == limit
    assert head_end(head + b"\r\n\r\n"[:arrived], limit) == -1
    assert head_end(head + b"\r\n\r\nGET", limit) == limit


def test_a_head_over_the_limit_without_an_end_is_refused_431():
    with pytest.raises(Malformed) as caught:
        head_end(b"GET / HTTP/1.1\r\nX: " + b"a" * 49, 64)
    assert caught.value.status == 431 and "over 64 bytes" in caught.value.detail
    assert head_end(b"GET / HTTP/1.1\r\n\r\n" + b"a" * 100, 64) == 14


def test_a_head_keeps_names_as_spelt_in_order_and_strips_values():
    head = parse_head(
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
    (header,) = parse_head(b"GET / HTTP/1.1\r\nX-Note: a  b\tc \xe9").headers
    assert header == ("X-Note", "a  b\tc \xe9")


def test_a_head_without_fields_has_none():
    assert parse_head(b"OPTIONS * HTTP/1.1") == Head("OPTIONS", "*", 1, [])


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
    head = parse_head(f"GET {target} HTTP/1.1\r\nHost: api.example".encode())
    assert head.target == expected


@pytest.mark.parametrize(("version", "minor"), [("1.0", 0), ("1.1", 1), ("1.2", 1), ("1.9", 1)])
def test_the_minor_version_is_0_or_1(version, minor):
    assert parse_head(f"GET / HTTP/{version}".encode()).minor == minor


@pytest.mark.parametrize(
    ("data", "detail"),
    [
        # RFC 9112 section 5.1: no whitespace between a field name and its colon.
        (b"GET / HTTP/1.1\r\nHost : api.example", "not a header field: 'Host : api.example'"),
        (b"GET / HTTP/1.1\r\nHost\t: api.example", "not a header field"),
        # Section 5.2: obs-fold is refused in a request.
        (b"GET / HTTP/1.1\r\nX-A: one\r\n two", "obs-fold"),
        (b"GET / HTTP/1.1\r\nX-A: one\r\n\ttwo", "obs-fold"),
        (b"GET / HTTP/1.1\r\n two", "obs-fold"),
        # Section 2.2: lines end in CRLF, a bare CR or LF is not a line's end.
        (b"GET / HTTP/1.1\r\nX-A: 1\nX-B: 2", "bare CR or LF"),
        (b"GET / HTTP/1.1\r\nX-A: 1\rX-B: 2", "bare CR or LF"),
        (b"GET / HTTP/1.1\r\nX-A: 1\r", "bare CR or LF"),
        # RFC 9110 section 5.5: no controls in a value but HTAB.
        (b"GET / HTTP/1.1\r\nX-A: a\x00b", "header X-A holds a control character"),
        (b"GET / HTTP/1.1\r\nX-A: a\x1bb", "header X-A holds a control character"),
        (b"GET / HTTP/1.1\r\nX-A: a\x7fb", "header X-A holds a control character"),
        # A line that is no field at all.
        (b"GET / HTTP/1.1\r\nHost: a\r\nno colon here", "not a header field: 'no colon here'"),
        (b"GET / HTTP/1.1\r\n: no name", "not a header field"),
        (b"GET / HTTP/1.1\r\nX(A): 1", "not a header field"),
    ],
)
def test_a_field_line_read_two_ways_is_refused(data, detail):
    problem = refusal(data)
    assert problem.status == 400
    assert detail in problem.detail
    assert str(problem) == problem.detail


@pytest.mark.parametrize(
    ("line", "status", "detail"),
    [
        ("G(T / HTTP/1.1", 400, "not a method: 'G(T'"),
        ("GET  / HTTP/1.1", 400, "not a request line"),
        ("GET /  HTTP/1.1", 400, "not a request line"),
        ("GET / HTTP/1.1 ", 400, "not a request line"),
        ("GET /", 400, "not a request line"),
        ("", 400, "not a request line"),
        ("GET foo HTTP/1.1", 400, "not a request target: 'foo'"),
        ("GET api.example:80 HTTP/1.1", 400, "not a request target"),
        ("GET mailto:someone HTTP/1.1", 400, "not a request target"),
        ("GET /a\x01b HTTP/1.1", 400, "not a request target"),
        ("GET / HTTP/2.0", 505, "HTTP/2.0 is not served here"),
        ("GET / HTTP/0.9", 505, "HTTP/0.9 is not served here"),
        ("GET / HTTP/1.x", 400, "not an HTTP version: 'HTTP/1.x'"),
        ("GET / HTTP/1.10", 400, "not an HTTP version"),
        ("GET / http/1.1", 400, "not an HTTP version"),
    ],
)
def test_a_request_line_that_cannot_be_read_is_refused(line, status, detail):
    problem = refusal(line.encode("latin-1") + b"\r\nHost: api.example")
    assert (problem.status, detail in problem.detail) == (status, True), problem.detail


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


# -- a chunked body -------------------------------------------------------------------------

#: A chunked body with extensions and a trailer section, and what it joins to.
CHUNKED_BODY = (
    b"3;name=value\r\nabc\r\n"
    b"5 ; a=1;b\r\nde\r\nf\r\n"
    b"A\r\n0123456789\r\n"
    b"0\r\nX-T: 1\r\nX-U: 2\r\n\r\n"
)
JOINED = b"abcde\r\nf0123456789"
NEXT = b"GET /next HTTP/1.1\r\nHost: a\r\n\r\n"


def test_a_chunked_body_is_joined_and_ends_after_its_trailers():
    data = b"POST / HTTP/1.1\r\n\r\n" + CHUNKED_BODY + NEXT
    start = data.index(b"\r\n\r\n") + 4
    body, end = dechunk(data, start)
    assert body == JOINED
    assert data[end:] == NEXT  # a pipelined request's bytes are left where they were


def test_a_chunked_body_without_trailers_ends_after_its_last_chunk():
    data = bytearray(b"1\r\nx\r\n0\r\n\r\n" + NEXT)
    assert dechunk(data, 0) == (b"x", len(data) - len(NEXT))
    assert dechunk(b"0\r\n\r\n", 0) == (b"", 5)


@pytest.mark.parametrize(
    ("whole", "joined"),
    [
        (CHUNKED_BODY, JOINED),
        (b"1\r\nx\r\n10\r\n" + b"y" * 16 + b"\r\n0\r\n\r\n", b"x" + b"y" * 16),
    ],
)
def test_every_incomplete_prefix_of_a_chunked_body_is_awaited(whole, joined):
    for length in range(len(whole)):
        assert dechunk(whole[:length], 0) is None, whole[:length]
        # The same prefix behind bytes already read: `start` is honoured.
        assert dechunk(b"HEAD" + whole[:length], 4) is None, whole[:length]
    assert dechunk(whole, 0) == (joined, len(whole))
    assert dechunk(bytearray(b"HEAD" + whole), 4) == (joined, 4 + len(whole))


@pytest.mark.parametrize(
    ("data", "detail"),
    [
        (b"g\r\nabc\r\n0\r\n\r\n", "not a chunk size: b'g'"),
        (b"\r\n0\r\n\r\n", "not a chunk size: b''"),
        (b"-1\r\nabc\r\n0\r\n\r\n", "not a chunk size"),
        (b"0x3\r\nabc\r\n0\r\n\r\n", "not a chunk size"),
        (b"+3\r\nabc\r\n0\r\n\r\n", "not a chunk size"),
        (b"1" * 17 + b"\r\n", "not a chunk size"),
        (b"3\r\nabcXY0\r\n\r\n", "does not end in CRLF"),
        (b"3\r\nabcd\r\n0\r\n\r\n", "does not end in CRLF"),
        (b"1\r\nx\r\n3\r\nabc\n\r0\r\n\r\n", "does not end in CRLF"),
        (b"3;" + b"e" * 5000 + b"\r\nabc\r\n0\r\n\r\n", "chunk-size line is too long"),
        (b"3;" + b"e" * 5000, "chunk-size line is too long"),
        (b"0\r\nX-T: " + b"t" * 5000, "trailer section is too long"),
    ],
)
def test_a_chunked_body_that_cannot_be_read_is_refused(data, detail):
    with pytest.raises(Malformed) as caught:
        dechunk(data, 0)
    assert caught.value.status == 400
    assert detail in caught.value.detail


def test_a_short_chunk_size_line_is_awaited_and_a_long_one_refused():
    assert dechunk(b"3;" + b"e" * 4000, 0) is None
    with pytest.raises(Malformed):
        dechunk(b"3;" + b"e" * 4100, 0)


# -- answers --------------------------------------------------------------------------------


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
