"""The request edge: the one handler every request goes through.

`create_app` builds it, and every server runs it as the handler of aiohttp's low-level
server (`web.Server`, run by `serving.Serving`). In order, for each request: a CORS
preflight is answered; `Expect` is honoured; the sandbox's base path is taken off the
path (`paths.split_base`); the rest decides, once, between a merchant call (matched on
the merchant API's own table, `merchant.table`, and run by `merchant.calls`) and a
control call (resolved on the control router, root paths only, and run by
`control.calls`); CORS headers go on the answer. docs/architecture.md follows a call
through it.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import HttpVersion11, web

from ..control.calls import ControlCalls
from ..merchant.calls import MerchantCalls
from ..merchant.table import MerchantTable
from .context import CORS
from .cors import Cors
from .jsonio import json_response
from .paths import is_control, split_base

_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


@dataclass(frozen=True, eq=False, slots=True)
class Edge:
    """The handler of one application's server."""

    cors: Cors
    merchant: MerchantTable
    merchant_calls: MerchantCalls
    control: ControlCalls

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse:
        response: web.StreamResponse
        if "Expect" in request.headers and (refused := _expect(request)) is not None:
            response = refused
        elif self.cors.is_preflight(request):
            response = self.cors.preflight()
        else:
            sandbox_id, path = split_base(request.path)
            if is_control(path):
                request[CORS] = self.cors  # an event stream marks its own answer
                response = await self.control.call(request, sandbox_id, path)
            else:
                handler, order_id = self.merchant.match(request.method, path)
                response = await self.merchant_calls.call(
                    request, handler, sandbox_id, path, order_id
                )
        self.cors.apply(request, response)
        return response


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
