"""The live event stream of one sandbox: what changed, for whoever listens
(docs/control-api.md, "Live events").

The sandbox publishes `order`, `delivery`, `clock`, `reset` and `journal` events; the
readers of `GET /_mock/events` share one bounded log of encoded frames, each at its own
place in it. Publishing never waits on a reader: a frame is encoded once and appended
once, and a reader more than the bound behind is marked overflowed, dropped from the
hub and told so, so a slow or stalled dashboard never slows the merchant API. With no
reader, publishing is one truth test.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from .quotas import Quotas

Encoder = Callable[[Any], bytes]

#: Frames a reader may have waiting before it is cut off with `overflow`.
READER_BUFFER = 2000
#: Frames published between two looks for what every reader has taken.
TRIM_EVERY = 64
_JOURNAL_FRAME = (
    b'event: journal\ndata: {"method":"%s","path":%s,"status":%d,"body":%s,"time":"%s"}\n\n'
)


def encode_json(data: Any) -> bytes:
    """Compact JSON (the app passes the HTTP layer's faster encoder instead)."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def frame(encode: Encoder, name: str, data: Any) -> bytes:
    """One Server-Sent Events frame: `event: NAME`, `data: JSON`, blank line."""
    return b"event: " + name.encode() + b"\ndata: " + encode(data) + b"\n\n"


class Reader:
    """One reader's place in its hub's log of frames."""

    def __init__(self, hub: EventHub, position: int) -> None:
        self._hub = hub
        self.position = position  # the absolute index of the next frame it takes
        self._wakeup = asyncio.Event()
        self.overflowed = False
        self.closed = False

    def take(self) -> bytes:
        """Every frame waiting for this reader, as one write (empty once overflowed)."""
        return b"" if self.overflowed else self._hub.take(self)

    async def next_batch(self, timeout: float) -> bytes:
        """Every frame waiting, as one write (empty after `timeout` with nothing new,
        or once closed or overflowed)."""
        if not (self._hub.waiting_for(self) or self.closed or self.overflowed):
            self._wakeup.clear()
            self._hub.sleeping(self)
            try:
                await asyncio.wait_for(self._wakeup.wait(), timeout)
            except TimeoutError:
                return b""
            finally:
                self._hub.awake(self)
        return self.take()

    def wake(self) -> None:
        self._wakeup.set()

    def end(self) -> None:
        """Finish this reader's stream: its client hung up."""
        self.closed = True
        self.wake()


class EventHub:
    """One log of encoded frames shared by every reader, each at its own position: a
    publish appends once and wakes only the readers asleep, whatever their number (with
    a buffer per reader, each merchant call paid for every open dashboard;
    bench/FINDINGS.md section 7).

    `order_body` renders an order's JSON: the app passes its rendering cache, so an
    order event and the answer that follows it share one encoding."""

    def __init__(
        self,
        encode: Encoder,
        limit: int = READER_BUFFER,
        order_body: Callable[[Any], bytes] | None = None,
    ) -> None:
        self._encode = encode
        self._limit = limit
        self._order_body = order_body or (lambda order: encode(order.to_json()))
        self._readers: set[Reader] = set()
        self._asleep: set[Reader] = set()
        self._log: list[bytes] = []
        self._first = 0  # the absolute index of `_log[0]`
        self._trim_at = TRIM_EVERY  # the log's length at which `_trim` runs next

    @property
    def active(self) -> bool:
        """Whether anyone listens: callers skip building event data when not."""
        return bool(self._readers)

    def subscribe(self) -> Reader:
        reader = Reader(self, self._first + len(self._log))
        self._readers.add(reader)
        return reader

    def unsubscribe(self, reader: Reader) -> None:
        self._readers.discard(reader)
        self._asleep.discard(reader)
        if not self._readers:
            self._trim()

    def frame(self, name: str, data: Any) -> bytes:
        return frame(self._encode, name, data)

    def publish_order(self, order: Any) -> None:
        """`order` with `{"order", "account_id"}`, built around the order's own JSON."""
        if self._readers:
            data = (
                b'{"order":'
                + self._order_body(order)
                + b',"account_id":'
                + self._encode(order.account_id)
                + b"}"
            )
            self._push(b"event: order\ndata: " + data + b"\n\n")

    def publish_journal(self, method: str, path: str, status: int, body: str, time: str) -> None:
        """`journal` with the call as the journal shows it (`journal.Call.to_json`),
        encoded without building the object: every merchant call publishes one. The
        method and the ISO time need no escaping."""
        if self._readers:
            encode = self._encode
            self._push(
                _JOURNAL_FRAME
                % (method.encode(), encode(path), status, encode(body), time.encode())
            )

    def publish(self, name: str, data: Any) -> None:
        if self._readers:
            self._push(self.frame(name, data))

    def _push(self, encoded: bytes) -> None:
        log = self._log
        log.append(encoded)
        if len(log) > self._limit:
            self._drop_laggards()
        elif len(log) >= self._trim_at:
            self._trim()
        if self._asleep:
            asleep, self._asleep = self._asleep, set()
            for reader in asleep:
                reader.wake()

    def _drop_laggards(self) -> None:
        """Readers more than `limit` frames behind are overflowed and let go."""
        end = self._first + len(self._log)
        for reader in list(self._readers):
            if end - reader.position > self._limit:
                reader.overflowed = True
                self._readers.discard(reader)
                reader.wake()
        self._trim()

    # -- what a reader calls ------------------------------------------------------------

    def waiting_for(self, reader: Reader) -> bool:
        return reader.position < self._first + len(self._log)

    def sleeping(self, reader: Reader) -> None:
        self._asleep.add(reader)

    def awake(self, reader: Reader) -> None:
        self._asleep.discard(reader)

    def take(self, reader: Reader) -> bytes:
        if reader not in self._readers:  # closed, or let go
            return b""
        start = reader.position - self._first
        batch = b"".join(self._log[start:])
        reader.position = self._first + len(self._log)
        return batch

    def _trim(self) -> None:
        """Forget the frames every reader has taken. It looks at every reader, so it
        runs only once `TRIM_EVERY` frames more are kept than after the last time (or
        the last reader leaves), never on each reader's take: that made a publish cost
        readers x readers (docs/hosting.md, "No tenant can stall the others")."""
        if not self._readers:
            self._first += len(self._log)
            self._log.clear()
        else:
            slowest = min(reader.position for reader in self._readers)
            if slowest > self._first:
                del self._log[: slowest - self._first]
                self._first = slowest
        self._trim_at = len(self._log) + TRIM_EVERY

    def close(self) -> None:
        """End every stream (the sandbox is going away, or the server is)."""
        for reader in self._readers:
            reader.closed = True
            reader.wake()
        self._readers.clear()
        self._asleep.clear()
        self._trim()


class StreamPlace:
    """One open stream's place under its sandbox's `streams` quota."""

    __slots__ = ("gone", "end")

    def __init__(self, gone: Callable[[], bool], end: Callable[[], None]) -> None:
        self.gone = gone  # whether the client has hung up
        self.end = end  # make the stream finish (it then gives its place back)


class OpenStreams:
    """A sandbox's open streams, `GET /_mock/events` and `GET /_mock/listen` together,
    counted against its `streams` quota (docs/hosting.md, "Quotas"): every open stream
    is woken by what the sandbox does, so thousands of them cost the server's CPU. A
    stream past the quota is refused before it opens; one whose client hung up is let go
    first, so a closed stream's place is free at once rather than at its next write."""

    def __init__(self) -> None:
        self._places: set[StreamPlace] = set()

    def __len__(self) -> int:
        return len(self._places)

    def take(
        self, quotas: Quotas, gone: Callable[[], bool], end: Callable[[], None]
    ) -> StreamPlace:
        """A place for a new stream, or 429 `quota_exceeded`."""
        if quotas.refusal("streams", len(self._places) + 1) is not None:
            for place in [place for place in self._places if place.gone()]:
                self._places.discard(place)
                place.end()
        quotas.check("streams", len(self._places) + 1)
        place = StreamPlace(gone, end)
        self._places.add(place)
        return place

    def give_back(self, place: StreamPlace) -> None:
        self._places.discard(place)
