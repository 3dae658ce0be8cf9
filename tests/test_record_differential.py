"""The recorder's reading of requests against llhttp's own (docs/recording.md, "Record":
"HTTP/1.1 is read by llhttp"): a seeded corpus of tricky requests, those an outside
differential run found read two ways and seeded mutations of them, each given to the
recorder's `RequestReader` (as `mock-server record` configures it, in pieces cut at
random) and to a bare `httptools.HttpRequestParser` given the bytes at once.

Where both read a request, they frame it alike: the same method, target, header fields,
body bytes, and the same number of requests. Where llhttp refuses, the recorder refuses
too (at that request or before it). The recorder may refuse more (its rules on top:
versions, codings, limits, targets): never less.
"""

from __future__ import annotations

import random
import urllib.parse
from dataclasses import dataclass

import httptools
import pytest

from mock_server.recording.recorder.http1 import Malformed, RequestReader
from mock_server.recording.recorder.listener import BODY_LIMIT, HEAD_LIMIT

SEED = 20261127
#: Mutations of each request read alike (half as many of each found one).
MUTATIONS = 20


@dataclass(frozen=True)
class Framed:
    method: str
    target: str
    headers: tuple[tuple[str, str], ...]
    body: bytes


@dataclass
class Reading:
    requests: list[Framed]
    #: The recorder's refusal (status), or llhttp's (0); None: no refusal.
    refused: int | None
    #: Why the recorder refused.
    why: str = ""


# -- llhttp, bare ----------------------------------------------------------------------------


class _Bare:
    """A protocol for httptools that keeps each request as llhttp gives it."""

    def __init__(self) -> None:
        self.parser = httptools.HttpRequestParser(self)
        self.requests: list[Framed] = []
        self._url = b""
        self._headers: list[tuple[str, str]] = []
        self._body: list[bytes] = []
        self._in_head = False

    def on_message_begin(self) -> None:
        self._url, self._headers, self._body, self._in_head = b"", [], [], True

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._in_head:  # trailer fields are not the request's
            self._headers.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_headers_complete(self) -> None:
        self._in_head = False

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        url = self._url.decode("latin-1")
        self.requests.append(
            Framed(
                self.parser.get_method().decode("latin-1"),
                url,
                # llhttp leaves the whitespace after a value; a field's value has none.
                tuple((name, value.rstrip(" \t")) for name, value in self._headers),
                b"".join(self._body),
            )
        )


def llhttp_reading(data: bytes) -> Reading:
    bare = _Bare()
    rest = data
    while True:
        try:
            bare.parser.feed_data(rest)
        except httptools.HttpParserUpgrade as upgrade:  # read on after it, as the recorder
            rest = rest[upgrade.args[0] :]
            if rest:
                continue
        except httptools.HttpParserError:
            return Reading(bare.requests, 0)
        return Reading(bare.requests, None)


# -- the recorder ----------------------------------------------------------------------------


def recorder_reading(data: bytes, cuts: list[int]) -> Reading:
    reader = RequestReader(head_limit=HEAD_LIMIT, body_limit=BODY_LIMIT)
    found: list[Framed] = []
    bounds = [0, *sorted(cuts), len(data)]
    try:
        for start, stop in zip(bounds, bounds[1:], strict=False):
            reader.buffer += data[start:stop]
            while reader.read():
                head = reader.head
                assert head is not None
                found.append(Framed(head.method, head.target, tuple(head.headers), reader.body()))
                reader.next()
    except Malformed as exc:
        assert exc.status in (400, 413, 431, 501, 505), exc
        return Reading(found, exc.status, exc.detail)
    if reader.buffer.strip(b"\r\n") and not reader.in_body:
        # A head's last line is read once whole: given its end, is it refused?
        reader.buffer += b"\r\n\r\n"
        try:
            reader.read()
        except Malformed as exc:
            return Reading(found, exc.status, exc.detail)
    return Reading(found, None)


#: How the recorder's own rules, stricter than llhttp, word their refusals (http1.py).
OWN_RULES = (
    "HTTP/",
    "not a request target",
    "both Content-Length and Transfer-Encoding",
    "a request's last transfer coding must be chunked",
    "chunked is applied more than once",
    "transfer coding",
    "the Content-Length fields disagree",
    "not a Content-Length",
    "an Upgrade request with a body",
    "the request's head is over",
    "the request's body is over",
    "a chunk line or the trailer section is over",
)


def as_target(url: str) -> str:
    """The path and query an absolute-form target names (origin form as sent)."""
    if url.startswith("/") or url == "*":
        return url
    parts = urllib.parse.urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


# -- the corpus ------------------------------------------------------------------------------

ADMIN = b"GET /admin HTTP/1.1\r\nHost: r\r\n\r\n"
CHUNKED = b"POST /a HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\n\r\n"

#: What the outside differential run found, and their neighbours.
FOUND = [
    CHUNKED + b"2;\nxx\r\nab\r\n0\r\n\r\n" + ADMIN,
    CHUNKED + b"2;\rxx\r\nab\r\n0\r\n\r\n" + ADMIN,
    CHUNKED + b"2;a=b\nxx\r\nab\r\n0\r\n\r\n" + ADMIN,
    b"POST /a HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\xa0\r\n\r\n0\r\n\r\n" + ADMIN,
    b"POST /a HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\x85\r\n\r\n0\r\n\r\n" + ADMIN,
    b"POST /a HTTP/1.1\r\nHost: r\r\nContent-Length: 5\xa0\r\n\r\nabcde" + ADMIN,
    b"POST /a HTTP/1.1\r\nHost: r\r\nContent-Length: \x855\r\n\r\nabcde" + ADMIN,
    CHUNKED + b"2;\x00\r\nab\r\n0\r\n\r\n" + ADMIN,
    CHUNKED + b"2;a=\x00\r\nab\r\n0\r\n\r\n" + ADMIN,
    CHUNKED + b"2\r\nab\r\n0\r\nX: a\x00b\r\n\r\n" + ADMIN,
    CHUNKED + b"0\r\n\n" + ADMIN,
    CHUNKED + b"0\r\n\r" + ADMIN,
    CHUNKED + b"0\r\nX: a\n" + ADMIN,
    CHUNKED + b"0\r\nX: a\r\n\n" + ADMIN,
    CHUNKED + b"0\r\n" + ADMIN,
    b"GET http://[x/a HTTP/1.1\r\nHost: r\r\n\r\n",
    b"GET http://[::1]/a?q=1 HTTP/1.1\r\nHost: r\r\n\r\n",
]

#: Requests read alike by every careful reader: the seeds of the mutations.
BASE = [
    b"GET /v1/orders/1 HTTP/1.1\r\nHost: r\r\nAuthorization: Bearer t\r\n\r\n",
    b'POST /v1/orders HTTP/1.1\r\nHost: r\r\nContent-Length: 7\r\n\r\n{"a":1}',
    CHUNKED + b'3;name=value\r\nabc\r\n5;a=1;b="q"\r\nde\r\nf\r\n0\r\nX-T: 1\r\n\r\n',
    CHUNKED + b"2\r\nab\r\n0\r\n\r\n" + ADMIN,
    b"POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc" + ADMIN,
    b"GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\n",
    b"GET http://api.example/v1/x?y=1 HTTP/1.1\r\nHost: api.example\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\nHost: r\r\n\r\n",
    b"PUT /e HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi",
    b"GET /u HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n" + ADMIN,
    b"\r\nGET /x HTTP/1.1\r\nX-A:  padded \t\r\nX-B:\r\n\r\n",
    b"POST /a HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
]

INTERESTING = [
    b"\r", b"\n", b"\r\n", b"\x00", b"\xa0", b"\x85", b" ", b"\t", b",", b";", b"=", b"0",
    b"f", b":", b'"', b"\\", b"\x7f", b"\xff", b"\r\n\r\n", b"0\r\n\r\n",
]  # fmt: skip
PLAIN = [b"X-Pad: v", b"Accept: */*", b"X-Empty:", b"X-Tab:\tv\t", b"X-Obs: \xe9\xa0"]
FIELDS = [
    b"Transfer-Encoding: chunked",
    b"Transfer-Encoding: gzip",
    b"Transfer-Encoding: chunked, chunked",
    b"Transfer-Encoding: chunked\xa0",
    b"Transfer-Encoding: ,chunked",
    b"Content-Length: 3",
    b"Content-Length: 3, 3",
    b"Content-Length: 03",
    b"Content-Length: 3\x85",
    b"Connection: close",
    b"Connection: Upgrade\r\nUpgrade: x",
    b"X-Folded: a\r\n b",
    b"Host : r",
]


def mutate(data: bytes, chance: random.Random) -> bytes:
    for _ in range(chance.choice([1, 1, 1, 2, 3])):
        at = chance.randrange(len(data) + 1)
        kind = chance.randrange(9)
        if kind == 0:  # insert
            data = data[:at] + chance.choice(INTERESTING) + data[at:]
        elif kind == 1 and data:  # replace
            data = data[:at] + chance.choice(INTERESTING) + data[at + 1 :]
        elif kind == 2 and data:  # delete
            data = data[:at] + data[at + 1 :]
        elif kind == 3:  # a field after the request line
            line = data.find(b"\r\n") + 2
            data = data[:line] + chance.choice(FIELDS) + b"\r\n" + data[line:]
        elif kind == 4 and b"\r\n" in data:  # a line's end made bare
            ends = [i for i in range(len(data) - 1) if data[i : i + 2] == b"\r\n"]
            end = chance.choice(ends)
            data = data[:end] + chance.choice([b"\n", b"\r", b"\r\r\n", b"\n\r"]) + data[end + 2 :]
        elif kind == 5:  # cut short
            data = data[:at]
        elif kind == 7:  # a field that changes nothing of the framing
            line = data.find(b"\r\n") + 2
            data = data[:line] + chance.choice(PLAIN) + b"\r\n" + data[line:]
        elif kind == 8:  # a letter or digit, wherever
            data = data[:at] + bytes([chance.choice(b"aZ09")]) + data[at:]
        else:  # a line repeated
            lines = data.split(b"\r\n")
            index = chance.randrange(len(lines))
            lines.insert(index, lines[index])
            data = b"\r\n".join(lines)
    return data


def corpus() -> list[bytes]:
    chance = random.Random(SEED)
    cases = list(FOUND) + list(BASE)
    for seed in FOUND:
        cases += [mutate(seed, chance) for _ in range(MUTATIONS // 2)]
    for seed in BASE:
        cases += [mutate(seed, chance) for _ in range(MUTATIONS * 3 // 2)]
    return cases


CORPUS = corpus()


def test_the_corpus_is_large_and_mixed():
    readings = [llhttp_reading(data) for data in CORPUS]
    assert len(CORPUS) > 350
    assert sum(r.refused is None and bool(r.requests) for r in readings) > 90
    assert sum(r.refused is not None for r in readings) > 100


@pytest.mark.parametrize("index", range(0, len(CORPUS), 50), ids=lambda i: f"from {i}")
def test_the_recorder_frames_each_request_as_llhttp_does_or_refuses_it(index):
    chance = random.Random(SEED + index)
    for data in CORPUS[index : index + 50]:
        bare = llhttp_reading(data)
        cut_sets = [[], [chance.randrange(len(data) + 1) for _ in range(chance.randint(1, 8))]]
        cut_sets.append(list(range(1, len(data))))  # a byte at a time
        for cuts in cut_sets:
            ours = recorder_reading(data, cuts)
            context = f"{data!r} cut at {cuts[:8]}: llhttp {bare}, recorder {ours}"
            read = ours.requests
            # Each request the recorder read, llhttp read alike, in the same order.
            assert len(read) <= len(bare.requests), context
            for mine, theirs in zip(read, bare.requests, strict=False):
                assert (mine.method, mine.headers, mine.body) == (
                    theirs.method,
                    theirs.headers,
                    theirs.body,
                ), context
                assert mine.target == as_target(theirs.target), context
            if bare.refused is not None:
                assert ours.refused is not None, context
            elif ours.refused is None:
                assert len(read) == len(bare.requests), context
            if ours.refused is not None and len(read) < len(bare.requests):
                # A request llhttp read is refused only by a rule of the recorder's own.
                assert ours.why.startswith(OWN_RULES), context
