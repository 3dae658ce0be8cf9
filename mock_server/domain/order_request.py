"""Checking a create-order body against the spec (4.3) and the catalog item.

Input is the parsed JSON body (floats as `Decimal`, so `19.999` is seen as having three
decimals, not rounded away). Every refusal is a 400 `validation_error` whose detail
says what to change. Nothing here touches state.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from types import MappingProxyType
from typing import Any, NamedTuple

from ..errors import ApiError, validation_error
from .catalog import Catalog, InputField, Item
from .money import cents_from_major

MAX_MERCHANT_ORDER_ID = 255
#: The most units a key order may have, whatever its item's max_quantity: each unit is a
#: code drawn, kept, shown on every read and sent in every webhook, so an order's cost
#: grows with its units (docs/hosting.md, "What one request may cost"; spec 2.1 and 4.3
#: set no number, docs/fidelity.md).
MAX_KEY_UNITS = 1000
#: Unicode category Cc, exactly: C0 controls, DEL and the C1 controls (NEL among them).
_CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f]")
#: The `fields` of every key order: one shared, read-only empty mapping.
NO_FIELDS: Mapping[str, str] = MappingProxyType({})
Quantity = int | Decimal


class OrderRequest(NamedTuple):
    """A checked create-order body (a named tuple: made once per order, and built
    faster than a frozen dataclass, bench/FINDINGS.md section 19)."""

    item: Item
    quantity: Quantity
    fields: Mapping[str, str]  # display values, as the order shows them
    merchant_order_id: str | None
    price_guard: int | None  # cents


def parse_order_request(body: dict[str, Any], catalog: Catalog) -> OrderRequest:
    """Check every field; a refusal's `cause` names the field it is about (coverage)."""
    try:
        stage = "unknown item"
        item = _item(body, catalog)
        stage = "quantity"
        quantity = _quantity(body, item)
        stage = "fields"
        fields = _fields(body, item)
        stage = "merchant_order_id"
        merchant_order_id = _merchant_order_id(body)
        stage = "price"
        price_guard = _price_guard(body)
    except ApiError as error:
        error.cause = error.cause or stage
        raise
    return OrderRequest(item, quantity, fields, merchant_order_id, price_guard)


#: Numbers beyond this are refused before any arithmetic (1E+999999 is a valid JSON number).
_LARGEST = 10**15
_NUMBER_TYPES = (int, Decimal)


def _is_number(value: Any) -> bool:
    """A JSON number (not a bool) of sane magnitude; huge ones are refused outright."""
    if isinstance(value, bool) or not isinstance(value, _NUMBER_TYPES):
        return False
    if not -_LARGEST < value < _LARGEST:
        raise validation_error(f"number out of range: {value}")
    return True


def _item(body: dict[str, Any], catalog: Catalog) -> Item:
    if "item_id" not in body or body["item_id"] is None:
        raise validation_error("item_id is required")
    item_id = body["item_id"]
    if not _is_number(item_id) or item_id != int(item_id):
        raise validation_error(
            f"item_id must be an integer, got {item_id!r}"
            if not _is_number(item_id)
            else f"item_id must be an integer, got {item_id}"
        )
    item = catalog.get(int(item_id))
    if item is None:
        raise validation_error(f"Item {int(item_id)} does not exist")
    if not item.available:
        raise validation_error("Item is not available", "unavailable item")
    return item


def _quantity(body: dict[str, Any], item: Item) -> Quantity:
    raw = body.get("quantity")
    if item.product_type == "service":
        if raw is not None and not (_is_number(raw) and raw == 1):
            raise validation_error("quantity must be omitted for service items (always 1)")
        return 1
    if raw is None:
        if item.product_type == "topup":
            raise validation_error("quantity is required for topup items")
        raw = 1
    if not _is_number(raw):
        raise validation_error(f"quantity must be a number, got {raw!r}")
    if item.product_type == "key":
        if raw != int(raw):
            raise validation_error(f"quantity must be a whole number for key items, got {raw}")
        quantity: Quantity = int(raw)
    else:
        quantity = raw if isinstance(raw, int) else _tidy_decimal(raw)
    if not quantity > 0:
        raise validation_error(f"quantity must be greater than 0, got {quantity}")
    if quantity < item.min_quantity:
        raise validation_error(
            f"quantity {quantity} is below this item's min_quantity {item.min_quantity}"
        )
    if quantity > item.max_quantity:
        raise validation_error(
            f"quantity {quantity} is above this item's max_quantity {item.max_quantity}"
        )
    if item.product_type == "key" and quantity > MAX_KEY_UNITS:
        raise validation_error(
            f"quantity {quantity} is above {MAX_KEY_UNITS}, the most units a key order may "
            f"have in this sandbox: split it into orders of at most {MAX_KEY_UNITS}"
        )
    return quantity


def _tidy_decimal(value: Decimal) -> Quantity:
    return int(value) if value == value.to_integral_value() else value.normalize()


def _fields(body: dict[str, Any], item: Item) -> dict[str, str]:
    raw = body.get("fields")
    if item.product_type == "key":
        if raw not in (None, {}):
            raise validation_error("key items take no fields: omit 'fields' or send {}")
        return NO_FIELDS
    if raw is None:
        names = ", ".join(f.name for f in item.fields)
        raise validation_error(f"fields is required for {item.product_type} items ({names})")
    if not isinstance(raw, dict):
        raise validation_error("fields must be an object keyed by field name")
    known = {f.name for f in item.fields}
    for name in raw:
        if name not in known:
            raise validation_error(
                f"fields.{name} is not a field of item {item.id} "
                f"(fields: {', '.join(sorted(known)) or 'none'})"
            )
    return {spec.name: _field_value(spec, raw) for spec in item.fields}


def _field_value(spec: InputField, raw: dict[str, Any]) -> str:
    if spec.name not in raw or raw[spec.name] is None:
        raise validation_error(f"fields.{spec.name} is required")
    value = raw[spec.name]
    if spec.type == "text":
        if not isinstance(value, str):
            raise validation_error(f"fields.{spec.name} is a text field: send a string")
        if not value.strip():
            raise validation_error(f"fields.{spec.name} must not be empty")
        return value
    choices = ", ".join(f"{o.id} ({o.label})" for o in spec.options)
    if not _is_number(value) or value != int(value):
        raise validation_error(
            f"fields.{spec.name} is a choice field: send the numeric "
            f"option id, not a label; options: {choices}"
        )
    label = spec.label_of(int(value))
    if label is None:
        raise validation_error(f"fields.{spec.name}: {value} is not an option; options: {choices}")
    return label


def _merchant_order_id(body: dict[str, Any]) -> str | None:
    value = body.get("merchant_order_id")
    if value is None:
        return None
    if not isinstance(value, str):
        raise validation_error("merchant_order_id must be a string")
    if not 1 <= len(value) <= MAX_MERCHANT_ORDER_ID:
        raise validation_error(
            f"merchant_order_id must be 1 to {MAX_MERCHANT_ORDER_ID} characters, got {len(value)}"
        )
    if _CONTROL_CHARACTERS.search(value):
        raise validation_error("merchant_order_id must not contain control characters")
    return value


def _price_guard(body: dict[str, Any]) -> int | None:
    value = body.get("price")
    if value is None:
        return None
    if not _is_number(value):
        raise validation_error(f"price must be a number, got {value!r}")
    cents = cents_from_major(value)
    if cents is None:
        raise validation_error(f"price has at most 2 decimals, got {value}")
    if cents < 0:
        raise validation_error("price must not be negative")
    return cents
