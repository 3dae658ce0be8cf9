"""The merchant API of spec section 4, served under both `/api/v1` and `/v1`.

`MerchantApi.routes()` is the merchant API's one table: the edge matches every merchant
call against it (`merchant.table`). Handlers parse, make one call to the `Sandbox`, and
render; business rules live in `mock_server.domain`. A handler is given the sandbox the
call is for and the path's order id (`""` where the path has none).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator

from aiohttp import hdrs, web

from ..domain.accounts import Account
from ..domain.sandbox import Sandbox
from ..edge.jsonio import (
    TOKEN_BODY_BYTES,
    OrderRenderings,
    json_response,
    read_json,
    read_object,
)
from ..errors import ApiError, TokenError

PREFIXES = ("/api/v1", "/v1")
SCENARIO_HEADER = "X-Mock-Scenario"
#: The match-info name of the order id in a route's path.
ORDER_ID = "order_id"

MerchantHandler = Callable[[web.BaseRequest, Sandbox, str], Awaitable[web.Response]]


class MerchantApi:
    """The merchant calls of one application (its order renderings are shared with the
    event stream: an order's answer and its `order` event are one encoding)."""

    def __init__(self, renderings: OrderRenderings) -> None:
        self._renderings = renderings

    def routes(self) -> Iterator[tuple[str, str, MerchantHandler]]:
        """(method, path template, handler) for every merchant route."""
        for prefix in PREFIXES:
            yield "POST", f"{prefix}/auth/token/client", self.exchange_token
            yield "GET", f"{prefix}/account/balance", self.read_balance
            yield "GET", f"{prefix}/account/me", self.read_account
            yield "POST", f"{prefix}/orders", self.create_order
            yield "GET", f"{prefix}/orders/{{{ORDER_ID}}}", self.get_order
            yield "POST", f"{prefix}/orders/{{{ORDER_ID}}}/client-code", self.submit_client_code
        yield "PUT", "/v3/plant", self.update_plant

    async def exchange_token(
        self, request: web.BaseRequest, sandbox: Sandbox, order_id: str
    ) -> web.Response:
        try:
            body = await read_json(request, required=False, limit=TOKEN_BODY_BYTES)
        except ApiError as error:  # this endpoint answers in its own {"error"} shape
            raise TokenError(error.status, error.detail) from error
        except web.HTTPRequestEntityTooLarge as error:
            raise TokenError(413, "Request body is too large") from error
        return json_response(sandbox.exchange_token(body))

    async def read_balance(
        self, request: web.BaseRequest, sandbox: Sandbox, order_id: str
    ) -> web.Response:
        return json_response(sandbox.balance(_account(request, sandbox)))

    async def read_account(
        self, request: web.BaseRequest, sandbox: Sandbox, order_id: str
    ) -> web.Response:
        return json_response(sandbox.me(_account(request, sandbox)))

    async def create_order(
        self, request: web.BaseRequest, sandbox: Sandbox, order_id: str
    ) -> web.Response:
        account = _account(request, sandbox)
        body = await read_json(request)
        scenario = request.headers.get(SCENARIO_HEADER)
        order = sandbox.create_order(account, body, scenario_name=scenario)
        return self._renderings.response(order, status=201, keep=False)

    async def get_order(
        self, request: web.BaseRequest, sandbox: Sandbox, order_id: str
    ) -> web.Response:
        return self._renderings.response(sandbox.get_order(_account(request, sandbox), order_id))

    async def submit_client_code(
        self, request: web.BaseRequest, sandbox: Sandbox, order_id: str
    ) -> web.Response:
        account = _account(request, sandbox)
        body = await read_object(request)
        return json_response(sandbox.submit_client_code(account, order_id, body).to_json())

    async def update_plant(
        self, request: web.BaseRequest, sandbox: Sandbox, order_id: str
    ) -> web.Response:
        body = await read_json(request)
        return json_response(sandbox.update_plant(body).to_json())


def _account(request: web.BaseRequest, sandbox: Sandbox) -> Account:
    return sandbox.authenticate(request.headers.get(hdrs.AUTHORIZATION))
