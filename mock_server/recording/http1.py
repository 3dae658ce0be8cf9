"""HTTP/1.1 messages as the recorder reads and writes them (RFC 9112): a request's head
parsed and checked, its body's framing, a chunked body joined, an answer's bytes.

Pure functions over bytes, no I/O: `listener` feeds them what a connection received.
The parsing is strict where leniency lets two parties read one message differently
(request smuggling, RFC 9112 section 11.2): a header line folded or without a colon, a
name with a space before its colon, a control character in a value, a bare CR or LF, a
`Content-Length` beside a `Transfer-Encoding`, two lengths that differ, a length or a
chunk size that is not a plain number: each is `Malformed`, answered 400 and the
connection closed. A coding other than `chunked` is 501, an HTTP version other than 1.x
505 (RFC 9110 section 15.6).
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from http import HTTPStatus

#: A method or a field name (RFC 9110 section 5.6.2).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: Characters a field value may not hold (RFC 9110 section 5.5): controls but HTAB.
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
#: Header lines, each ended by CRLF: a name, a colon, a value of visible characters,
#: spaces, tabs and obs-text (RFC 9110 section 5.5).
_FIELDS = re.compile(r"(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[\t\x20-\x7e\x80-\xff]*\r\n)*")
_VERSION = re.compile(r"HTTP/(\d)\.(\d)")
#: A request line: method, target (no controls, no spaces), HTTP/1.x (a minor version
#: above 1 is read as 1, RFC 9112 section 2.3).
_REQUEST_LINE = re.compile(r"([!#$%&'*+\-.^_`|~0-9A-Za-z]+) ([^\x00-\x20\x7f]+) HTTP/1\.(\d)")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
_DIGITS = re.compile(r"[0-9]{1,18}")
#: The longest chunk-size line (with its extensions) or trailer section.
_CHUNK_LINE_LIMIT = 4096


class Malformed(Exception):
    """A request that cannot be read: answered `status` with `detail`, then closed."""

    def __init__(self, detail: str, status: int = 400) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclass(slots=True)
class Head:
    method: str
    #: The target in origin form (`/path?query`), as sent; an absolute-form target's
    #: path and query.
    target: str
    #: 0 for HTTP/1.0, 1 for HTTP/1.1.
    minor: int
    #: The header fields in the order sent, names as spelt, values without the
    #: whitespace around them.
    headers: list[tuple[str, str]]


#: How a request's body is framed: a length (0: none), or chunked.
CHUNKED = -1


def head_end(data: bytes | bytearray, limit: int) -> int:
    """Where the head that `data` begins with ends (the index of its final CRLF CRLF), or
    -1 while that has not all come; raises `Malformed` (431) once `data` holds more than
    `limit` bytes of head and no end (the end's first bytes may be there already)."""
    end = data.find(b"\r\n\r\n", 0, limit + 4)
    if end < 0 and len(data) > limit + 3:
        raise Malformed(f"the request's head is over {limit} bytes", 431)
    return end


def parse_head(data: bytes) -> Head:
    """The request line and header fields of `data` (the head without its final empty
    line); raises `Malformed`."""
    line, _, block = data.decode("latin-1").partition("\r\n")
    method, target, minor = _request_line(line)
    if not block:
        return Head(method, target, minor, [])
    if _FIELDS.fullmatch(block + "\r\n") is None:
        raise Malformed(_why_not_fields(block))
    headers = [
        (name, value.strip(" \t"))
        for name, _, value in (field.partition(":") for field in block.split("\r\n"))
    ]
    return Head(method, target, minor, headers)


def _why_not_fields(block: str) -> str:
    """What is wrong with a header block `_FIELDS` refused."""
    if "\n" in block.replace("\r\n", "") or "\r" in block.replace("\r\n", ""):
        return "a line ends in a bare CR or LF; HTTP/1.1 lines end in CRLF"
    for line in block.split("\r\n"):
        if line[:1] in (" ", "\t"):
            return "a folded header line (obs-fold) is not accepted"
        name, colon, value = line.partition(":")
        if not colon or not _TOKEN.fullmatch(name):
            return f"not a header field: {line[:80]!r}"
        if _BAD_VALUE.search(value):
            return f"header {name} holds a control character"
    return "a header block that cannot be read"  # pragma: no cover - each case is above


def _request_line(line: str) -> tuple[str, str, int]:
    matched = _REQUEST_LINE.fullmatch(line)
    if matched is None:
        raise _why_not_request_line(line)
    method, target, minor = matched.groups()
    if not target.startswith("/") and target != "*":
        parts = urllib.parse.urlsplit(target)
        if not parts.scheme or not parts.netloc:
            raise Malformed(f"not a request target: {target[:80]!r}")
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return method, target, min(int(minor), 1)


def _why_not_request_line(line: str) -> Malformed:
    """What is wrong with a request line `_REQUEST_LINE` refused."""
    parts = line.split(" ")
    if len(parts) != 3:
        return Malformed(f"not a request line: {line[:80]!r}")
    method, target, version = parts
    if not _TOKEN.fullmatch(method):
        return Malformed(f"not a method: {method[:40]!r}")
    matched = _VERSION.fullmatch(version)
    if matched is None:
        return Malformed(f"not an HTTP version: {version[:40]!r}")
    if matched[1] != "1":
        return Malformed(f"{version} is not served here: HTTP/1.1 is", 505)
    return Malformed(f"not a request target: {target[:80]!r}")


def body_length(headers: list[tuple[str, str]]) -> int:
    """The body's length by its framing fields (RFC 9112 section 6.3), or `CHUNKED`;
    raises `Malformed`."""
    codings: list[str] | None = None
    lengths: set[str] = set()
    for name, value in headers:
        lowered = name.lower()
        if lowered == "transfer-encoding":
            codings = (codings or []) + [c.strip().lower() for c in value.split(",") if c.strip()]
        elif lowered == "content-length":
            lengths.update(v.strip() for v in value.split(","))
    if codings is not None:
        if lengths:
            raise Malformed("both Content-Length and Transfer-Encoding frame the body")
        if not codings or codings[-1] != "chunked":
            raise Malformed("a request's last transfer coding must be chunked")
        if codings.count("chunked") > 1:
            raise Malformed("chunked is applied more than once")
        if len(codings) > 1:
            raise Malformed(f"transfer coding {codings[0]} is not implemented here", 501)
        return CHUNKED
    if not lengths:
        return 0
    if len(lengths) > 1:
        raise Malformed("the Content-Length fields disagree")
    (length,) = lengths
    if not _DIGITS.fullmatch(length):
        raise Malformed(f"not a Content-Length: {length[:40]!r}")
    return int(length)


def dechunk(data: bytes | bytearray, start: int) -> tuple[bytes, int] | None:
    """The chunked body that begins at `start` joined, and where it ends (after its
    trailer section, whose fields are dropped); None while it is incomplete. Raises
    `Malformed`."""
    parts = []
    position = start
    while True:
        end = data.find(b"\r\n", position, position + _CHUNK_LINE_LIMIT)
        if end < 0:
            if len(data) - position >= _CHUNK_LINE_LIMIT:
                raise Malformed("a chunk-size line is too long")
            return None
        size_text = bytes(data[position:end]).split(b";", 1)[0].strip(b" \t")
        if not _HEX.fullmatch(size_text):
            raise Malformed(f"not a chunk size: {size_text[:40]!r}")
        size = int(size_text, 16)
        position = end + 2
        if size == 0:
            return _after_trailers(data, position, b"".join(parts))
        if len(data) < position + size + 2:
            return None
        parts.append(bytes(data[position : position + size]))
        if data[position + size : position + size + 2] != b"\r\n":
            raise Malformed("a chunk does not end in CRLF")
        position += size + 2


def _after_trailers(
    data: bytes | bytearray, position: int, body: bytes
) -> tuple[bytes, int] | None:
    if data[position : position + 2] == b"\r\n":
        return body, position + 2
    end = data.find(b"\r\n\r\n", position, position + _CHUNK_LINE_LIMIT)
    if end < 0:
        if len(data) - position >= _CHUNK_LINE_LIMIT:
            raise Malformed("the trailer section is too long")
        return None
    return body, end + 4


def has_field(headers: list[tuple[str, str]], name: str) -> bool:
    """Whether `headers` hold a field `name` (lower case)."""
    for field, _ in headers:  # noqa: SIM110 - a loop costs less than any() of a generator
        if field.lower() == name:
            return True
    return False


def has_token(headers: list[tuple[str, str]], name: str, token: str) -> bool:
    """Whether a field `name` (lower case) lists `token` (lower case), as `Connection`
    lists `close`."""
    for field, value in headers:  # a loop, not any(): it runs twice per exchange
        lowered = value.lower()
        if field.lower() == name and token in lowered and token in _tokens(lowered):
            return True
    return False


def _tokens(value: str) -> list[str]:
    return [t.strip() for t in value.split(",")]


def phrase(status: int) -> str:
    """The reason phrase this side writes for `status` (an upstream's own is kept)."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def may_have_body(method: str, status: int) -> bool:
    """Whether an answer to `method` with `status` carries a body (RFC 9110 section 6.4.1)."""
    return method != "HEAD" and status >= 200 and status not in (204, 304)


def answer_bytes(status: int, reason: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    """An answer as it goes on the wire: status line, fields as given, body."""
    lines = [f"HTTP/1.1 {status} {reason}"]
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
