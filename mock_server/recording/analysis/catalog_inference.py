"""The catalog a recording shows (docs/recording.md, "Compare": `--catalog`'s default):
`infer_catalog` gives the items its order answers name, in the feed format (spec 2.2),
priced by what their creations charged, with the fields and quantities sent. The
replay's sandboxes sell it unless `--catalog` gives a catalog.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from .paths import ORDERS
from .reading import Exchange
from .sessions import Session
from .values import as_dict, is_order, to_decimal


@dataclass
class _SeenItem:
    id: int
    name: str | None = None
    product_type: str | None = None
    charges: list[tuple[Decimal, int]] = field(default_factory=list)
    #: Prices of lookups, used where no creation of the item was recorded.
    shown: list[tuple[Decimal, int]] = field(default_factory=list)
    quantities: list[Decimal] = field(default_factory=list)
    text_fields: list[str] = field(default_factory=list)
    choices: dict[str, dict[int, str]] = field(default_factory=dict)
    client_code: bool = False


def infer_catalog(sessions: list[Session]) -> list[dict[str, Any]]:
    """The items the recordings' order answers show, in the feed format (spec 2.2): id,
    name, type, unit price (the charged `price` over `quantity`, in cents), `fields`
    (text values sent as text fields; numeric choice ids paired with the labels the
    answers showed), the range of the quantities ordered. An item production refused
    as unknown or unavailable, and never sold, is not in it: the sandbox refuses it too.
    """
    seen: dict[int, _SeenItem] = {}
    for session in sessions:
        for exchange in session.recording.exchanges:
            _learn(seen, exchange)
        for trace in session.traces:
            item = seen.get(_int(trace.item_id) or -1)
            if item is not None and any(o.status == "need_client_code" for o in trace.observations):
                item.client_code = True
    return [_item_record(item) for item in sorted(seen.values(), key=lambda i: i.id)]


def _learn(seen: dict[int, _SeenItem], exchange: Exchange) -> None:
    answer = as_dict(exchange.response.body)
    request = as_dict(exchange.request.body)
    creation = ORDERS.match(exchange.path) and exchange.method == "POST"
    if exchange.status // 100 == 2 and is_order(answer):
        # A creation names its item in the request (spec 4.3), whatever production's
        # answer calls it (`item`, or another name a shapes file renames it to).
        item_id = _int(request.get("item_id")) if creation else None
        item_id = item_id if item_id is not None else _int(answer.get("item"))
        if item_id is None:
            return
        item = seen.setdefault(item_id, _SeenItem(item_id))
        item.name = item.name or _text(answer.get("item_name"))
        item.product_type = item.product_type or _text(answer.get("item_product_type"))
        quantity, price = to_decimal(answer.get("quantity")), to_decimal(answer.get("price"))
        if quantity is not None and quantity > 0 and price is not None:
            # What a creation charged is the price; a lookup only repeats it.
            charges = item.charges if creation else item.shown
            charges.append((quantity, int((price * 100).to_integral_value(ROUND_HALF_UP))))
            item.quantities.append(quantity)
        if creation:
            _learn_fields(item, request.get("fields"), answer.get("fields"))
    elif creation and exchange.status == 400 and answer.get("code") == "price_mismatch":
        # The item exists (production priced it); what it costs is `actual_price`.
        item_id, actual = _int(request.get("item_id")), to_decimal(answer.get("actual_price"))
        quantity = to_decimal(request.get("quantity", 1))
        if item_id is None or actual is None or quantity is None or quantity <= 0:
            return
        item = seen.setdefault(item_id, _SeenItem(item_id))
        item.charges.append((quantity, int((actual * 100).to_integral_value(ROUND_HALF_UP))))
        item.quantities.append(quantity)
        _learn_fields(item, request.get("fields"), None)


def _learn_fields(item: _SeenItem, sent: Any, shown: Any) -> None:
    if not isinstance(sent, dict):
        return
    shown = shown if isinstance(shown, dict) else {}
    for name, value in sent.items():
        if isinstance(value, int) and not isinstance(value, bool):
            label = shown.get(name)
            options = item.choices.setdefault(name, {})
            options.setdefault(value, label if isinstance(label, str) else f"option {value}")
        elif name not in item.text_fields:
            item.text_fields.append(name)


def _item_record(item: _SeenItem) -> dict[str, Any]:
    product_type = item.product_type
    if product_type not in ("key", "topup", "service"):
        product_type = "topup" if (item.text_fields or item.choices) else "key"
    price = _unit_price(item.charges or item.shown)
    quantities = item.quantities or [Decimal(1)]
    low, high = min(quantities), max(quantities)
    if product_type == "service":
        low = high = Decimal(1)
    elif product_type == "key":
        low, high = Decimal(max(1, math.floor(low))), Decimal(max(1, math.ceil(high)))
    record: dict[str, Any] = {
        "id": item.id,
        "name": item.name or f"item {item.id}",
        "product_type": product_type,
        "price": price,
        "base_price": price,
        "subscriber_price": price,
        "min_quantity": _number(low),
        "max_quantity": _number(high),
        "in_stock": True,
        "fields": [],
    }
    if product_type != "key":
        fields: list[dict[str, Any]] = []
        for name, options in item.choices.items():
            fields.append(
                {
                    "name": name,
                    "type": "choice",
                    "options": [{"id": i, "name": label} for i, label in sorted(options.items())],
                }
            )
        fields += [{"name": n, "type": "text"} for n in item.text_fields if n not in item.choices]
        record["fields"] = fields
    if item.client_code and product_type == "topup":
        record["client_code"] = True
    return record


def _unit_price(charges: list[tuple[Decimal, int]]) -> int:
    """The price in cents that charges what was charged (quantity x price, rounded half
    up, as spec 4.3 charges), for as many recorded charges as any price does."""
    if not charges:
        return 100
    candidates: set[int] = set()
    for quantity, cents in charges:
        guess = int((Decimal(cents) / quantity).to_integral_value(ROUND_HALF_UP))
        candidates.update(range(max(0, guess - 2), guess + 3))

    def fits(unit: int) -> int:
        return sum(
            1
            for quantity, cents in charges
            if int((quantity * unit).to_integral_value(ROUND_HALF_UP)) == cents
        )

    return max(sorted(candidates), key=fits)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)
