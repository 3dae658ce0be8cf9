"""Large answers rendered as they are written (docs/hosting.md, "What one request may
cost").

A read of everything a sandbox holds (`GET /_mock/orders`, `GET /_mock/state`, an
account's ledger) once rendered its whole answer before sending a byte: 1 to 2 s of the
one event loop every sandbox shares, at the order quota. Here such an answer is a
document whose long lists are iterators, rendered in pieces of about `PIECE_BYTES`, with
the event loop free between pieces, so another tenant's call waits at most one piece.
The bytes are the ones `jsonio.dumps` gives for the whole document.

An answer that fits in two pieces is sent as before, whole, with its `Content-Length`;
a larger one is sent chunked. While it is written it holds what its iterators have yet
to read (their lists of references, about 8 bytes an order) and one piece: a sandbox
may have at most `PACED_PER_SANDBOX` of them waiting for their clients at once, so that
clients that never read cannot make it hold more (the next is refused with 429
`quota_exceeded`; one is always let through).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Hashable, Iterator
from typing import Any

from aiohttp import web

from .jsonio import JSON_HEADERS, dumps, json_response

#: About how many bytes of JSON one piece holds: rendering one costs a few ms at most
#: (an order of 1000 codes, the largest item, is 20 KB).
PIECE_BYTES = 64 * 1024
#: Large answers one sandbox may have being written at once (docs/hosting.md, "Clients
#: that never read").
PACED_PER_SANDBOX = 4


def pieces(document: Any, size: int = PIECE_BYTES) -> Iterator[bytes]:
    """`dumps(document)` in pieces of about `size` bytes (each at least `size`, the last
    excepted), where every iterator in `document` is a JSON array rendered as it is read.
    Iterators may be values of dicts at any depth; their items are plain JSON values.
    A dict that holds an iterator is consumed as it is written, so that what is written
    is let go."""
    buffer = bytearray()
    for fragment in _fragments(document):
        buffer += fragment
        if len(buffer) >= size:
            yield bytes(buffer)
            buffer.clear()
    if buffer:
        yield bytes(buffer)


def _fragments(value: Any) -> Iterator[bytes]:
    if isinstance(value, Iterator):
        yield b"["
        first = True
        for item in value:
            yield dumps(item) if first else b"," + dumps(item)
            first = False
        yield b"]"
    elif isinstance(value, dict) and _lazy(value):
        yield b"{"
        for index, key in enumerate(list(value)):
            yield (b"," if index else b"") + dumps(key) + b":"
            yield from _fragments(value.pop(key))
        yield b"}"
    else:
        yield dumps(value)


def _lazy(value: Any) -> bool:
    """Whether `value` holds an iterator (dicts are looked into, lists are plain)."""
    if isinstance(value, Iterator):
        return True
    return isinstance(value, dict) and any(_lazy(v) for v in value.values())


class PacedAnswers:
    """The large answers being written, by sandbox."""

    def __init__(self, limit: int = PACED_PER_SANDBOX) -> None:
        self.limit = limit
        self._writing: dict[Hashable, int] = {}

    def writing(self, holder: Hashable) -> int:
        return self._writing.get(holder, 0)

    def answer(self, document: Any, holder: Hashable) -> web.Response:
        """`document` as JSON: whole when it is small, else in pieces (see the module)."""
        rendered = pieces(document)
        first = next(rendered, b"")
        second = next(rendered, None)
        if second is None:
            return web.Response(body=first, headers=JSON_HEADERS)
        if self.writing(holder) >= self.limit:
            rendered.close()
            return json_response(
                {
                    "detail": f"This sandbox already has {self.limit} large answers being "
                    'written to clients that have not read them (docs/hosting.md, "What '
                    'one request may cost"): read those answers, or close the connections '
                    "that asked for them, then ask again",
                    "code": "quota_exceeded",
                },
                429,
            )
        return web.Response(
            body=self._paced(holder, first + second, rendered), headers=JSON_HEADERS
        )

    async def _paced(
        self, holder: Hashable, head: bytes, rest: Iterator[bytes]
    ) -> AsyncIterator[bytes]:
        """Counted while it is written: from its first piece (an answer never started,
        to a HEAD or a client gone, holds nothing) until its last or its client's end."""
        self._writing[holder] = self.writing(holder) + 1
        try:
            yield head
            for piece in rest:
                yield piece
                await asyncio.sleep(0)  # the other sandboxes' calls, between pieces
        finally:
            rest.close()
            left = self._writing[holder] - 1
            if left:
                self._writing[holder] = left
            else:
                del self._writing[holder]


#: One for the process: a sandbox is held by one app, and the key is the sandbox.
paced = PacedAnswers()
