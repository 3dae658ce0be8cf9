"""The request edge: the one handler every request goes through.

`create_app` builds it, and every server runs it as the handler of aiohttp's low-level
server (`web.Server`, run by `serving.Serving`). In order, for each request: a CORS
preflight is answered; `Expect` is honoured; the sandbox's base path is taken off the
path (`paths.split_base`); the rest decides, once, between a merchant call (matched on
the merchant API's own table, `merchant.table`, and run by `merchant.calls`) and a
control call (resolved on the control router, root paths only, and run by
`control.calls`); CORS headers go on the answer; a large answer is written in pieces
(`Answers`). docs/architecture.md follows a call through it.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from aiohttp import HttpVersion11, hdrs, web

from ..control.calls import ControlCalls
from ..merchant.calls import MerchantCalls
from ..merchant.table import MerchantTable
from .context import CORS, READS
from .cors import Cors
from .jsonio import json_response
from .paths import is_control, split_base

_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
#: An answer larger than this is written in pieces of this size (docs/hosting.md,
#: "Clients that never read").
PIECE_BYTES = 64 * 1024
#: The bytes of large answers that one sandbox (or, on the root paths, one client
#: address) may have waiting for clients that do not read them (docs/hosting.md,
#: "Clients that never read").
WAITING_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, eq=False, slots=True)
class Edge:
    """The handler of one application's server."""

    cors: Cors
    merchant: MerchantTable
    merchant_calls: MerchantCalls
    control: ControlCalls
    answers: Answers = field(default_factory=lambda: Answers())

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse:
        response: web.StreamResponse
        sandbox_id, path = split_base(request.path)
        if hdrs.EXPECT in request.headers and (refused := _expect(request)) is not None:
            response = refused
        elif self.cors.is_preflight(request):
            response = self.cors.preflight()
        elif is_control(path):
            if self.answers.full(sandbox_id) and request.method not in READS:
                # The answer to a change is always sent: refused before it is made.
                response = self.answers.refusal(sandbox_id)
            else:
                request[CORS] = self.cors  # an event stream marks its own answer
                response = await self.control.call(request, sandbox_id, path)
        else:
            handler, order_id = self.merchant.match(request.method, path)
            response = await self.merchant_calls.call(request, handler, sandbox_id, path, order_id)
        self.cors.apply(request, response)
        return await self.answers.send(request, response, sandbox_id)


@dataclass(eq=False)
class Answers:
    """How answers leave (docs/hosting.md, "Clients that never read").

    aiohttp writes a whole `web.Response` to its connection at once, so a client that
    does not read leaves all of it buffered in the server. An answer larger than
    `PIECE_BYTES` is written instead as a `web.StreamResponse` in pieces of that size,
    and `StreamResponse.write` waits while the connection's buffer is above its
    high-water mark: a connection buffers at most about one piece and that mark.

    While a large answer is being written its body is held, so each sandbox (on the
    root paths, each client address) may have at most `waiting` bytes of large answers
    waiting for their clients: past it, a read (which changes nothing) is answered 429
    `quota_exceeded` instead, and so is any other control call under the base path of a
    sandbox already at it, before it runs. The answer to a change that was made is always
    sent, and one answer is always let through, whatever its size.
    """

    piece: int = PIECE_BYTES
    waiting: int = WAITING_BYTES
    #: Bytes of large answers being written, by whose they are (only those above 0).
    _held: dict[Hashable, int] = field(default_factory=dict)

    def full(self, key: Hashable) -> bool:
        """Whether `key` (a sandbox's id; None for none) has its allowance waiting."""
        return key is not None and self._held.get(key, 0) >= self.waiting

    def held(self, key: Hashable) -> int:
        """Bytes of large answers being written for `key` now."""
        return self._held.get(key, 0)

    def refusal(self, key: Hashable) -> web.Response:
        whose = "This sandbox" if isinstance(key, str) else "This client address"
        detail = (
            f"{whose} already has {self._held.get(key, 0)} bytes of answers waiting for "
            f"clients that do not read them (at most {self.waiting}, docs/hosting.md "
            '"Clients that never read"): read those answers, or close the connections '
            "that asked for them, then ask again"
        )
        return json_response({"detail": detail, "code": "quota_exceeded"}, 429)

    async def send(
        self, request: web.BaseRequest, response: web.StreamResponse, sandbox_id: str | None
    ) -> web.StreamResponse:
        """`response` as it is when small (or already sent, or to a HEAD); else written
        here in pieces, or refused when it is a read past the allowance of the sandbox
        its base path names (`sandbox_id`; on the root paths, of the client's address)."""
        if (
            response.prepared
            or request.method == "HEAD"
            or not isinstance(response, web.Response)
            or not isinstance(body := response.body, bytes)
            or len(body) <= self.piece
        ):
            return response
        key: Hashable = sandbox_id if sandbox_id is not None else ("peer", request.remote)
        size, held = len(body), self._held.get(key, 0)
        if held and held + size > self.waiting and request.method in READS:
            return self.refusal(key)
        self._held[key] = held + size
        try:
            return await self._write(request, response, body)
        finally:
            left = self._held[key] - size
            if left:
                self._held[key] = left
            else:
                del self._held[key]

    async def _write(
        self, request: web.BaseRequest, response: web.Response, body: bytes
    ) -> web.StreamResponse:
        stream = web.StreamResponse(
            status=response.status, reason=response.reason, headers=response.headers
        )
        stream.content_length = len(body)
        view, piece = memoryview(body), self.piece
        try:
            await stream.prepare(request)
            for start in range(0, len(body), piece):
                await stream.write(view[start : start + piece])
            await stream.write_eof()
        except ConnectionError:
            pass  # the client left: aiohttp closes the connection and logs the call
        return stream


def _expect(request: web.BaseRequest) -> web.Response | None:
    """`Expect: 100-continue` (HTTP/1.1): the interim answer that asks for the body, sent
    before the call is read; any other expectation is refused with a 417 (RFC 9110
    section 10.1.1)."""
    if request.version < HttpVersion11:
        return None
    if request.headers["Expect"].strip().lower() != "100-continue":
        detail = f"Unknown expectation: Expect: {request.headers['Expect']}"
        return json_response({"detail": detail, "code": "expectation_failed"}, 417)
    transport = request.transport
    if transport is not None and not transport.is_closing():
        transport.write(_CONTINUE)
    return None
