"""HTTP/1.1 messages as the recorder reads and writes them (RFC 9112): requests read from
a client, answers read from the upstream, an answer's bytes.

Each message is tokenized and framed by llhttp, Node.js's parser (the `httptools`
package): a parser at a security boundary is where request smuggling lives (RFC 9112
section 11.2), and a well-kept, widely run one reads messages as other servers do. The
rules here are stricter on top, where llhttp is more lenient than docs/recording.md
("Record") allows; each refusal is `Malformed`, answered with its status and the
connection closed:

* a head over its limit is 431 (llhttp has none);
* a request body over its limit is 413: at once when its `Content-Length` says so, as
  soon as a chunked body passes it;
* a transfer coding other than `chunked` is 501; `chunked` applied twice, a
  `Content-Length` beside a `Transfer-Encoding`, lengths that differ are 400;
* HTTP/0.9, or HTTP/2 and later, is 505 (llhttp reads their heads);
* a chunk line, or the trailer section, over `LINE_LIMIT` bytes is 400 (llhttp has no
  limit);
* a request-target that cannot be turned into a path and query is 400.

`Reader` gives the parser a connection's bytes in pieces cut so that it always knows
where a message begins and ends: a head whole (only whole lines while it is incomplete,
so llhttp never joins a field from pieces), a body by its length, a chunked body line
by line. So each limit counts exact bytes, every byte is read once (linear time
whatever the chunks), and the bytes after a message stay unread in `Reader.buffer`
until the message before them is answered.
"""

from __future__ import annotations

import re
import time
import urllib.parse
from dataclasses import dataclass
from http import HTTPStatus

import httptools

#: The longest chunk line (size and extensions) or trailer section.
LINE_LIMIT = 4096
#: How a body is framed, besides a length (0: none): chunked, or by the connection's end.
CHUNKED = -1
TO_CLOSE = -2
#: A method or a field name (RFC 9110 section 5.6.2).
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_DIGITS = re.compile(r"[0-9]{1,18}")
#: The lengths of `Content-Length` and `Transfer-Encoding`: the names that frame a body.
_FRAMING_SIZES = (14, 17)
#: Empty lines before a message, which llhttp skips (RFC 9112 section 2.2).
_BLANK = re.compile(rb"[\r\n]*")

#: What llhttp says of a version it does not read, HTTP/2's preface among them.
_VERSION_REASONS = frozenset(
    {"Invalid HTTP version", "Pause on PRI/Upgrade", "Expected HTTP/2 Connection Preface"}
)

# What a `Reader` is doing: awaiting a message, reading a head, a body by its length, a
# chunked body, a body up to the connection's end; or holding a whole message.
_IDLE, _HEAD, _LENGTH, _CHUNKS, _TO_END, _WHOLE = range(6)


class Malformed(Exception):
    """A message that cannot be read: answered `status` with `detail`, then closed."""

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


def request_target(url: str) -> str:
    """The path and query a request-target names (RFC 9112 section 3.2): origin form as
    sent, `*`, an absolute URL's path and query; raises `Malformed`."""
    if url.startswith("/") or url == "*":
        return url
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # an absolute URL with a bracket unclosed, say
        parts = None
    if parts is None or not parts.scheme or not parts.netloc:
        raise Malformed(f"not a request target: {url[:80]!r}")
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def body_length(headers: list[tuple[str, str]], *, request: bool = True) -> int:
    """The body's length by its framing fields (RFC 9112 section 6.3), `CHUNKED`, or (an
    answer's) `TO_CLOSE`; raises `Malformed`. Only spaces and tabs surround a value:
    `str.strip()` would take a NBSP or NEL too, where llhttp sees another value."""
    if not headers:
        return 0 if request else TO_CLOSE
    if len(headers) == 1:  # the usual case, a length alone, at less cost
        name, value = headers[0]
        digits = value.isdigit() and value.isascii() and len(value) < 19
        if digits and name.lower() == "content-length":
            return int(value)
    codings: list[str] | None = None
    lengths: set[str] = set()
    for name, value in headers:
        lowered = name.lower()
        if lowered == "transfer-encoding":
            listed = [c.strip(" \t").lower() for c in value.split(",")]
            codings = (codings or []) + [c for c in listed if c]
        elif lowered == "content-length":
            lengths.update(v.strip(" \t") for v in value.split(","))
    if codings is not None:
        if lengths:
            raise Malformed("both Content-Length and Transfer-Encoding frame the body")
        if not codings or codings[-1] != "chunked":
            if not request:
                return TO_CLOSE
            raise Malformed("a request's last transfer coding must be chunked")
        if codings.count("chunked") > 1:
            raise Malformed("chunked is applied more than once")
        if len(codings) > 1 and request:
            raise Malformed(f"transfer coding {codings[0]} is not implemented here", 501)
        return CHUNKED
    if not lengths:
        return 0 if request else TO_CLOSE
    if len(lengths) > 1:
        raise Malformed("the Content-Length fields disagree")
    (length,) = lengths
    if not _DIGITS.fullmatch(length):
        raise Malformed(f"not a Content-Length: {length[:40]!r}")
    return int(length)


class Reader:
    """The messages on one side of a connection: bytes go into `buffer`, `read()` says
    when a message is whole. Subclasses are the parser's protocol (its callbacks)."""

    #: The longest head, its final empty line aside; a longer one is 431.
    head_limit = 1 << 16
    #: The longest body as sent (chunked: its chunk lines included); 0: no limit.
    body_limit = 0
    #: What a message is, in a refusal's words.
    kind = "message"

    def __init__(self) -> None:
        #: Bytes received and not yet read.
        self.buffer = bytearray()
        #: The fields of the message's head (its trailer fields are dropped).
        self.headers: list[tuple[str, str]] = []
        #: Whether llhttp would read another message after this one.
        self.keep_alive = False
        self._phase = _IDLE
        self._parts: list[bytes] = []
        #: The fields that may frame the body (`Content-Length`, `Transfer-Encoding`).
        self._framing: list[tuple[str, str]] = []
        self._head_size = 0
        #: How much of `buffer` was searched for a head's end (or a line's) in vain.
        self._searched = 0
        #: Bytes of body the length still frames; a chunked body's size as sent, and
        #: how much of it since its last data (a chunk line, the trailers).
        self._remaining = 0
        self._body_size = 0
        self._quiet = 0
        self._data_came = False
        #: A refusal raised inside a callback (llhttp reports only that one failed).
        self._problem: Malformed | None = None

    @property
    def in_body(self) -> bool:
        """Whether a head was read and its body is awaited."""
        return self._phase in (_LENGTH, _CHUNKS, _TO_END)

    def body(self) -> bytes:
        parts = self._parts
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def read(self) -> bool:
        """Give the parser what `buffer` holds, up to the end of one message: True once
        that message is whole (the bytes after it stay in `buffer`), False while more
        must come. Raises `Malformed`."""
        buffer = self.buffer
        size = len(buffer)
        position = 0
        feed = self._parser.feed_data
        try:
            while position < size:
                phase = self._phase
                if phase == _LENGTH:
                    stop = min(size, position + self._remaining)
                    self._remaining -= stop - position
                elif phase <= _HEAD:
                    if phase == _IDLE and buffer[position] in b"\r\n":
                        position = _BLANK.match(buffer, position).end()
                        continue
                    stop = self._head_piece(position, size)
                    if stop < 0:
                        break
                    self._head_size += stop - position
                elif phase == _CHUNKS:
                    line = buffer.find(b"\r\n", position, size)
                    if line >= 0:
                        stop = line + 2
                    elif buffer[size - 1] != 13:
                        stop = size
                    elif size - 1 > position:  # a CR whose LF may follow: kept back
                        stop = size - 1
                    else:
                        break
                    self._data_came = False
                elif phase == _WHOLE:
                    break
                else:
                    stop = size
                try:
                    feed(buffer[position:stop])
                except httptools.HttpParserUpgrade as upgrade:
                    # The message before it is whole; llhttp reads on after it (an
                    # Upgrade the recorder does not take: the connection stays HTTP/1.1).
                    stop = position + upgrade.args[0]
                except httptools.HttpParserError as exc:
                    if self._problem is not None or self._phase != _WHOLE:
                        raise self._refused(exc, buffer[position:stop]) from None
                    # Bytes after a whole message (a 101's) that llhttp does not read.
                if phase == _CHUNKS:
                    self._count(stop - position)
                position = stop
        finally:
            if position:
                del buffer[:position]
                self._searched = max(0, self._searched - position)
        return self._phase == _WHOLE

    def next(self) -> None:
        """Forget the whole message: read the next one."""
        self._phase = _IDLE

    def _head_piece(self, position: int, size: int) -> int:
        """Where the piece of head that `buffer` holds from `position` ends: the head's
        end, else its last whole line; -1 while no line is whole. Raises 431."""
        buffer = self.buffer
        if self._phase == _IDLE:
            self._head_size = 0
        if self._phase == _HEAD and buffer.startswith(b"\r\n", position):
            stop = position + 2  # the lines before were read: this one is empty
        else:
            end = buffer.find(b"\r\n\r\n", max(position, self._searched - 3), size)
            stop = -1 if end < 0 else end + 4
        if stop >= 0:
            if self._head_size + stop - position - 4 > self.head_limit:
                raise Malformed(f"the {self.kind}'s head is over {self.head_limit} bytes", 431)
            self._searched = stop
            return stop
        if self._head_size + size - position > self.head_limit + 3:
            raise Malformed(f"the {self.kind}'s head is over {self.head_limit} bytes", 431)
        line = buffer.rfind(b"\n", max(position, self._searched), size)
        self._searched = size
        return -1 if line < 0 else line + 1

    def _count(self, size: int) -> None:
        """Count `size` bytes of chunked body against the limits."""
        self._body_size += size
        if self.body_limit and self._body_size > self.body_limit:
            raise Malformed(f"the {self.kind}'s body is over {self.body_limit} bytes", 413)
        if self._data_came:
            self._quiet = 0
        else:
            self._quiet += size
            if self._quiet > LINE_LIMIT + 4:  # with the CRLFs around a line
                raise Malformed(f"a chunk line or the trailer section is over {LINE_LIMIT} bytes")

    def _refused(self, exc: httptools.HttpParserError, piece: bytearray) -> BaseException:
        """What to raise for llhttp's refusal `exc` of `piece`."""
        if self._problem is not None:
            return self._problem
        if isinstance(exc, httptools.HttpParserCallbackError) and exc.__context__:
            return exc.__context__  # a fault of a callback's own
        return self._refusal(str(exc), piece)

    def _refusal(self, reason: str, piece: bytearray) -> Malformed:
        return Malformed(reason)

    def _fail(self, problem: Malformed) -> Malformed:
        """`problem`, kept to be raised by `read` once llhttp has stopped."""
        self._problem = problem
        return problem

    # -- llhttp's callbacks -------------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self._phase == _WHOLE:  # never: a piece ends where its message does
            raise self._fail(Malformed("two messages in one piece"))
        self._phase = _HEAD
        self.headers = []
        self._framing = []
        self._parts = []
        self._body_size = self._quiet = 0

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._phase == _HEAD:  # not a trailer field: those are dropped
            field = (name.decode("latin-1"), value.decode("latin-1").rstrip(" \t"))
            self.headers.append(field)
            if len(name) in _FRAMING_SIZES:
                self._framing.append(field)

    def on_body(self, body: bytes) -> None:
        self._parts.append(body)
        self._data_came = True

    def on_message_complete(self) -> None:
        self._phase = _WHOLE

    def _frame(self, length: int) -> None:
        """Read the body `length` frames (`body_length`)."""
        if length >= 0:
            self._phase, self._remaining = _LENGTH, length
        else:
            self._phase = _CHUNKS if length == CHUNKED else _TO_END


class RequestReader(Reader):
    """A client's requests (docs/recording.md, "Record"): `head` once `read()` is True."""

    kind = "request"

    def __init__(self, *, head_limit: int, body_limit: int) -> None:
        super().__init__()
        self.head_limit = head_limit
        self.body_limit = body_limit
        self.head: Head | None = None
        #: The wall time (`time.time()`) the head was read.
        self.arrived = 0.0
        self._url = b""
        self._parser = httptools.HttpRequestParser(self)

    def on_message_begin(self) -> None:
        Reader.on_message_begin(self)
        self._url = b""

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_headers_complete(self) -> None:
        parser = self._parser
        version = parser.get_http_version()
        if version not in ("1.1", "1.0"):
            raise self._fail(Malformed(f"HTTP/{version} is not served here: HTTP/1.1 is", 505))
        method = parser.get_method().decode("latin-1")
        try:
            target = request_target(self._url.decode("latin-1"))
            length = body_length(self._framing)
        except Malformed as exc:
            raise self._fail(exc) from None
        if length and parser.should_upgrade():
            # llhttp would read the body as the new protocol's bytes.
            raise self._fail(Malformed("an Upgrade request with a body is not served"))
        if length > self.body_limit:
            raise self._fail(Malformed(f"the request's body is over {self.body_limit} bytes", 413))
        self.head = Head(method, target, 1 if version == "1.1" else 0, self.headers)
        self.arrived = time.time()
        self.keep_alive = parser.should_keep_alive()
        self._frame(length)

    def _refusal(self, reason: str, piece: bytearray) -> Malformed:
        if reason in _VERSION_REASONS:
            version = self._parser.get_http_version()
            if reason != "Invalid HTTP version":  # HTTP/2's preface, the head of a PRI
                version = "2.0"
            return Malformed(f"HTTP/{version} is not served here: HTTP/1.1 is", 505)
        if reason == "Invalid method encountered":
            method = bytes(piece).split(b" ", 1)[0]
            shown = method[:40].decode("latin-1")
            if _TOKEN.fullmatch(method):
                return Malformed(f"method {shown} is not implemented here", 501)
            return Malformed(f"not a method: {shown!r}")
        return Malformed(reason)


class AnswerReader(Reader):
    """The answers on one connection to the upstream, each to a request (`expect` its
    method): `status`, `reason`, `headers` and `body()` once `read()` is True, or
    `end()` at the connection's end. Interim answers (1xx but 101) are read past."""

    head_limit = 1 << 20
    kind = "answer"

    def __init__(self) -> None:
        super().__init__()
        self.method = "GET"
        self.status = 0
        self.reason = ""
        self._interim = False
        #: Whether llhttp saw the last answer end (not a HEAD's, which this reader ends).
        self._clean = True
        self._parser = httptools.HttpResponseParser(self)

    def expect(self, method: str) -> None:
        """Read the answer to a request `method` next."""
        self.method = method
        if self._phase != _IDLE:
            if not self._clean or self._phase != _WHOLE:
                self._parser = httptools.HttpResponseParser(self)
            self._phase = _IDLE

    def end(self) -> bool:
        """The connection ended: whether that makes the answer whole (a body framed by
        the connection's end)."""
        if self._phase == _TO_END:
            self._phase = _WHOLE
        return self._phase == _WHOLE

    def on_message_begin(self) -> None:
        Reader.on_message_begin(self)
        self.reason = ""
        self._clean = False

    def on_status(self, reason: bytes) -> None:
        self.reason += reason.decode("latin-1")

    def on_headers_complete(self) -> None:
        parser = self._parser
        version = parser.get_http_version()
        status = parser.get_status_code()
        if version not in ("1.1", "1.0"):
            raise self._fail(Malformed(f"not an HTTP/1 answer: HTTP/{version}"))
        self.status = status
        self._interim = 100 <= status < 200 and status != 101
        self.keep_alive = parser.should_keep_alive() and version == "1.1"
        if self.method == "HEAD" or status < 200 or status in (204, 304):
            # No body, whatever the fields say (RFC 9110 section 6.4.1); llhttp, not
            # told the method, would await a HEAD answer's: this reader ends here.
            self._phase = _LENGTH if self._interim else _WHOLE
            self._remaining = 0
            return
        try:
            length = body_length(self._framing, request=False)
        except Malformed as exc:
            raise self._fail(exc) from None
        if length == TO_CLOSE:
            self.keep_alive = False
        self._frame(length)

    def on_message_complete(self) -> None:
        self._clean = True
        if self._interim:  # a 100 Continue, say: the answer follows
            self._interim = False
            self._phase = _IDLE
            return
        self._phase = _WHOLE

    def _refusal(self, reason: str, piece: bytearray) -> Malformed:
        return Malformed(f"not an HTTP/1 answer: {reason}")


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
