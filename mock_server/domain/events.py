"""The live event stream of one sandbox (DESIGN 13): what changed, for whoever listens.

The sandbox publishes `order`, `delivery`, `clock`, `reset` and `journal` events; each
reader of `GET /_mock/events` has its own bounded buffer of encoded frames. Publishing
never waits on a reader: a frame is encoded once and appended to every buffer, and a
reader whose buffer is full is marked overflowed, dropped from the hub and told so, so
a slow or stalled dashboard never slows the merchant API. With no reader, publishing
is one truth test.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

Encoder = Callable[[Any], bytes]

#: Frames a reader may have waiting before it is cut off with `overflow`.
READER_BUFFER = 2000


def encode_json(data: Any) -> bytes:
    """Compact JSON (the app passes the HTTP layer's faster encoder instead)."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def frame(encode: Encoder, name: str, data: Any) -> bytes:
    """One Server-Sent Events frame: `event: NAME`, `data: JSON`, blank line."""
    return b"event: " + name.encode() + b"\ndata: " + encode(data) + b"\n\n"


class Reader:
    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._frames: list[bytes] = []
        self._wakeup = asyncio.Event()
        self.overflowed = False
        self.closed = False

    def push(self, data: bytes) -> bool:
        """Queue a frame; False (and overflowed) when the buffer is already full."""
        if len(self._frames) >= self._limit:
            self.overflowed = True
            self._frames.clear()
            self._wakeup.set()
            return False
        self._frames.append(data)
        self._wakeup.set()
        return True

    def close(self) -> None:
        self.closed = True
        self._wakeup.set()

    async def next_batch(self, timeout: float) -> bytes:
        """Every frame waiting, as one write (empty after `timeout` with nothing new,
        or once closed or overflowed)."""
        if not self._frames and not (self.closed or self.overflowed):
            try:
                await asyncio.wait_for(self._wakeup.wait(), timeout)
            except TimeoutError:
                return b""
        self._wakeup.clear()
        batch, self._frames = b"".join(self._frames), []
        return batch


class EventHub:
    """`order_body` renders an order's JSON: the app passes its rendering cache, so an
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

    @property
    def active(self) -> bool:
        """Whether anyone listens: callers skip building event data when not."""
        return bool(self._readers)

    def subscribe(self) -> Reader:
        reader = Reader(self._limit)
        self._readers.add(reader)
        return reader

    def unsubscribe(self, reader: Reader) -> None:
        self._readers.discard(reader)

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

    def publish(self, name: str, data: Any) -> None:
        if self._readers:
            self._push(self.frame(name, data))

    def _push(self, encoded: bytes) -> None:
        for reader in list(self._readers):
            if not reader.push(encoded):
                self._readers.discard(reader)

    def close(self) -> None:
        """End every stream (the sandbox is going away, or the server is)."""
        for reader in self._readers:
            reader.close()
        self._readers.clear()
