"""`/_mock/accounts`, `/_mock/api-keys`, `/_mock/catalog`: state a test sets up."""

from __future__ import annotations

from aiohttp import web

from ..domain import admin
from ..edge.context import params_of, sandbox_of
from ..edge.json_stream import paced
from ..edge.jsonio import json_response, read_document, read_object
from ..errors import validation_error

routes = web.RouteTableDef()


def _state(request: web.BaseRequest):
    return sandbox_of(request).state


@routes.get("/_mock/accounts")
async def list_accounts(request: web.BaseRequest) -> web.Response:
    accounts = _state(request).accounts.values()
    return json_response({"accounts": [admin.account_view(a) for a in accounts]})


@routes.post("/_mock/accounts")
async def create_account(request: web.BaseRequest) -> web.Response:
    sandbox = sandbox_of(request)
    body = await read_object(request)
    account = admin.create_account(sandbox.state, body, sandbox.policy)
    created = admin.account_view(account) | {"api_key": account.api_keys[0]}
    return json_response(created, status=201)


@routes.put("/_mock/accounts")
async def replace_accounts(request: web.BaseRequest) -> web.Response:
    accounts = sandbox_of(request).replace_accounts(await read_document(request))
    return json_response({"accounts": [admin.account_view(a) for a in accounts]})


@routes.get("/_mock/accounts/{account_id}")
async def read_account(request: web.BaseRequest) -> web.Response:
    account = admin.find_account(_state(request), params_of(request)["account_id"])
    return json_response(admin.account_view(account))


@routes.patch("/_mock/accounts/{account_id}")
async def patch_account(request: web.BaseRequest) -> web.Response:
    body = await read_object(request)
    account = sandbox_of(request).patch_account(params_of(request)["account_id"], body)
    return json_response(admin.account_view(account))


@routes.get("/_mock/accounts/{account_id}/ledger")
async def read_ledger(request: web.BaseRequest) -> web.Response:
    """Written in pieces, each rendered as it goes (docs/control-api.md)."""
    view = admin.ledger_view(
        _state(request), params_of(request)["account_id"], request.query.get("order_id")
    )
    return paced.answer(view, sandbox_of(request))


@routes.post("/_mock/accounts/{account_id}/api-keys")
async def issue_api_key(request: web.BaseRequest) -> web.Response:
    key = sandbox_of(request).issue_api_key(params_of(request)["account_id"])
    return json_response({"api_key": key, "account_id": params_of(request)["account_id"]}, 201)


@routes.delete("/_mock/api-keys/{key}")
async def revoke_api_key(request: web.BaseRequest) -> web.Response:
    admin.revoke_api_key(_state(request), params_of(request)["key"])
    return json_response({"revoked": params_of(request)["key"]})


@routes.get("/_mock/catalog")
async def read_catalog(request: web.BaseRequest) -> web.Response:
    return json_response({"items": _state(request).catalog.to_feed()})


@routes.put("/_mock/catalog")
async def replace_catalog(request: web.BaseRequest) -> web.Response:
    sandbox = sandbox_of(request)
    catalog = admin.replace_catalog(sandbox.state, await read_document(request), sandbox.policy)
    return json_response({"items": catalog.to_feed()})


@routes.patch("/_mock/catalog/items/{item_id}")
async def patch_item(request: web.BaseRequest) -> web.Response:
    raw_id = params_of(request)["item_id"]
    if not raw_id.isascii() or not raw_id.isdigit():
        raise validation_error(f"item id must be an integer, got {raw_id!r}")
    item = admin.patch_item(_state(request), int(raw_id), await read_object(request))
    return json_response(item.to_feed())
