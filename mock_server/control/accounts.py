"""`/_mock/accounts`, `/_mock/api-keys`, `/_mock/catalog`: state a test sets up."""

from __future__ import annotations

import asyncio

from aiohttp import web

from ..domain import admin
from ..domain.catalog import Catalog
from ..domain.sandbox import Sandbox
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
    return _catalog_answer(sandbox_of(request).state.catalog, sandbox_of(request))


@routes.put("/_mock/catalog")
async def replace_catalog(request: web.BaseRequest) -> web.Response:
    """Read a piece of the items at a time and let other calls in between: 10,000 items
    read at once held the event loop 40 ms (docs/hosting.md, "What one request may
    cost"); the catalog replaces the sandbox's once all are read and checked."""
    sandbox = sandbox_of(request)
    reader = admin.catalog_reader(await read_document(request), sandbox.policy)
    while not reader.read(CATALOG_PIECE):
        await asyncio.sleep(0)
    return _catalog_answer(admin.adopt_catalog(sandbox.state, reader), sandbox)


#: Items read between two turns of the event loop (about 4 ms of work).
CATALOG_PIECE = 1000


def _catalog_answer(catalog: Catalog, sandbox: Sandbox) -> web.Response:
    """The catalog in feed format, each item rendered as its piece of the answer is
    written (a 10,000-item catalog rendered whole took 15 ms)."""
    return paced.answer({"items": (item.to_feed() for item in catalog.items.values())}, sandbox)


@routes.patch("/_mock/catalog/items/{item_id}")
async def patch_item(request: web.BaseRequest) -> web.Response:
    raw_id = params_of(request)["item_id"]
    if not raw_id.isascii() or not raw_id.isdigit():
        raise validation_error(f"item id must be an integer, got {raw_id!r}")
    item = admin.patch_item(_state(request), int(raw_id), await read_object(request))
    return json_response(item.to_feed())
