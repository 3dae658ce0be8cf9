"""Refusals replayed as production made them (docs/recording.md, "What it does"): some
refusals of an order's creation depend on state a recording shows only through the
refusal itself, the account's balance (spec 7: `insufficient_balance`) and an item out
of stock at creation (spec 7: `validation_error`, "Item is not available"). The replay's
accounts hold large balances and its catalog items are in stock, so the sandbox would
create such an order, and the difference would be drift of the replay's own making.

`as_production_was` sets that state through the control API (docs/control-api.md:
`PATCH /_mock/accounts/{id}`, `PATCH /_mock/catalog/items/{id}`) just before the
request and restores it just after, so the sandbox refuses as production did.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from .paths import ORDERS
from .reading import Exchange
from .values import as_dict
from .world import World

#: The spec's refusal of an order the balance cannot cover (spec 4.2, 7).
INSUFFICIENT_BALANCE = "insufficient_balance"
#: The spec's detail for an item out of stock at creation (spec 7).
ITEM_NOT_AVAILABLE = "Item is not available"


def state_refusal(exchange: Exchange) -> str | None:
    """`"balance"` or `"stock"` for a creation production refused for want of either;
    None for any other exchange."""
    if exchange.method != "POST" or not ORDERS.match(exchange.path) or exchange.status != 400:
        return None
    answer = as_dict(exchange.response.body)
    if answer.get("code") == INSUFFICIENT_BALANCE:
        return "balance"
    detail = answer.get("detail")
    if isinstance(detail, str) and detail.strip().rstrip(".") == ITEM_NOT_AVAILABLE:
        return "stock"
    return None


@contextlib.asynccontextmanager
async def as_production_was(
    world: World, exchange: Exchange, api_key: str | None
) -> AsyncIterator[None]:
    """While the block runs, the world's state is what production's refusal of
    `exchange` shows (`api_key`: the replay's key of the account that sent it)."""
    kind = state_refusal(exchange)
    if kind == "balance" and api_key is not None:
        account = await world.account_with_key(api_key)
        if account is not None:
            await world.change_account(account["id"], {"balance": 0})
            try:
                yield
            finally:
                await world.change_account(account["id"], {"balance": account["balance"]})
            return
    elif kind == "stock":
        item_id = as_dict(exchange.request.body).get("item_id")
        item = await world.catalog_item(item_id) if type(item_id) is int else None
        if item is not None and item.get("in_stock"):
            await world.change_item(item["id"], {"in_stock": False})
            try:
                yield
            finally:
                await world.change_item(item["id"], {"in_stock": True})
            return
    yield
