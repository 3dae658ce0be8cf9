"""The merchant API of spec section 4, served under both `/api/v1` and `/v1`.

Handlers parse, make one call to the `Sandbox`, and render. Business rules live in
`mock_server.domain`.
"""

from __future__ import annotations

from aiohttp import web

from ..domain.accounts import Account
from ..domain.sandbox import Sandbox
from ..errors import ApiError, TokenError
from ..webhooks import WebhookSender
from .jsonio import OrderRenderings, json_response, read_json, read_object
from .routing import CURRENT

#: The default sandbox and its webhook sender (the CLI's banner, in-process benches).
SANDBOX = web.AppKey("sandbox", Sandbox)
WEBHOOKS = web.AppKey("webhooks", WebhookSender)
RENDERINGS = web.AppKey("renderings", OrderRenderings)
PREFIXES = ("/api/v1", "/v1")
SCENARIO_HEADER = "X-Mock-Scenario"


def _sandbox(request: web.Request) -> Sandbox:
    return request[CURRENT]  # chosen by the edge middleware (`routing`)


def _account(request: web.Request) -> Account:
    return _sandbox(request).authenticate(request.headers.get("Authorization"))


async def exchange_token(request: web.Request) -> web.Response:
    try:
        body = await read_json(request, required=False)
    except ApiError as error:  # this endpoint answers in its own {"error"} shape
        raise TokenError(error.status, error.detail) from error
    except web.HTTPRequestEntityTooLarge as error:
        raise TokenError(413, "Request body is too large") from error
    return json_response(_sandbox(request).exchange_token(body))


async def read_balance(request: web.Request) -> web.Response:
    sandbox = _sandbox(request)
    return json_response(sandbox.balance(_account(request)))


async def read_account(request: web.Request) -> web.Response:
    sandbox = _sandbox(request)
    return json_response(sandbox.me(_account(request)))


async def create_order(request: web.Request) -> web.Response:
    sandbox = request[CURRENT]
    account = sandbox.authenticate(request.headers.get("Authorization"))
    body = await read_json(request)
    order = sandbox.create_order(account, body, scenario_name=request.headers.get(SCENARIO_HEADER))
    return request.app[RENDERINGS].response(order, status=201)


async def get_order(request: web.Request) -> web.Response:
    sandbox = request[CURRENT]
    account = sandbox.authenticate(request.headers.get("Authorization"))
    order = sandbox.get_order(account, request.match_info["order_id"])
    return request.app[RENDERINGS].response(order)


async def submit_client_code(request: web.Request) -> web.Response:
    sandbox = _sandbox(request)
    account = _account(request)
    body = await read_object(request)
    order = sandbox.submit_client_code(account, request.match_info["order_id"], body)
    return json_response(order.to_json())


async def update_plant(request: web.Request) -> web.Response:
    body = await read_json(request)
    return json_response(_sandbox(request).update_plant(body).to_json())


def add_routes(app: web.Application) -> None:
    if RENDERINGS not in app:  # create_app makes it first: the event stream uses it too
        app[RENDERINGS] = OrderRenderings()
    for prefix in PREFIXES:
        app.router.add_post(f"{prefix}/auth/token/client", exchange_token)
        app.router.add_get(f"{prefix}/account/balance", read_balance)
        app.router.add_get(f"{prefix}/account/me", read_account)
        app.router.add_post(f"{prefix}/orders", create_order)
        app.router.add_get(f"{prefix}/orders/{{order_id}}", get_order)
        app.router.add_post(f"{prefix}/orders/{{order_id}}/client-code", submit_client_code)
    app.router.add_put("/v3/plant", update_plant)
