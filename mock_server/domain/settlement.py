"""How a terminal step turns into a spec-valid outcome (pure arithmetic, no state).

A script says what it wants (`completed`, `partial` with some delivery, `failed`); the
spec's rules decide what happens (spec 3.2 and 2.1):

* `partial` means 0 < delivered < quantity, so a script's partial is held below the
  quantity, and becomes `failed` when nothing is left to deliver;
* `failed` delivers nothing; a service is all-or-nothing (rule 4);
* key stock caps delivery: a key order that runs short settles `partial` with an
  empty error (rule 4), or `failed` OUT_OF_STOCK when none is left;
* only a timed-out or scripted partial carries an error; `completed` never does.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal

from .money import charge_for

Quantity = int | Decimal

DEFAULT_MESSAGES = {
    "OUT_OF_STOCK": "The item is out of stock.",
    "NOT_ENOUGH_STOCK": "Not enough stock to deliver every unit.",
    "INVALID_FIELDS": "The provider rejected the submitted fields.",
    "INSUFFICIENT_BALANCE": "The balance could not cover the order.",
    "ORDER_TIMEOUT": "The order timed out before every unit was delivered.",
}
_CENT = Decimal("0.01")


@dataclass(frozen=True, slots=True)
class Outcome:
    status: str
    delivered: Quantity
    refund: int  # cents
    error: str
    error_message: str


def smallest_unit(product_type: str) -> Quantity:
    return _CENT if product_type == "topup" else 1


def partial_target(
    quantity: Quantity, product_type: str, *, units: Decimal | None, percent: Decimal | None
) -> Quantity:
    """Units a scripted partial asks for, before stock: below quantity, maybe 0."""
    step = smallest_unit(product_type)
    if units is not None:
        wanted = Decimal(units)
    else:
        share = Decimal(50) if percent is None else percent
        wanted = Decimal(quantity) * share / 100
    if product_type == "topup":
        wanted = wanted.quantize(_CENT, rounding=ROUND_DOWN)
    else:
        whole = int(wanted.to_integral_value(rounding=ROUND_DOWN))
        # "half of 3" is 1, and a share of 2+ units delivers at least one.
        wanted = Decimal(max(whole, 1) if units is None else whole)
    capped = min(wanted, Decimal(quantity) - step)
    if capped <= 0:
        return 0
    return int(capped) if product_type != "topup" else _tidy(capped)


def settle(
    *,
    requested: str,
    quantity: Quantity,
    product_type: str,
    unit_price: int,
    charged: int,
    target: Quantity | None,
    stock: int | None,
    error: str = "",
    error_message: str = "",
) -> Outcome:
    """Decide the terminal outcome of an order.

    `requested` is the scripted terminal status; `target` the units a partial asks for
    (from `partial_target`); `stock` the key units left (None = unlimited).
    """
    if requested == "completed":
        wanted: Quantity = quantity
    elif requested == "partial":
        wanted = target if target is not None else 0
    else:
        wanted = 0
    if product_type == "service" and wanted != quantity:
        wanted = 0
    delivered = wanted
    short_of_stock = False
    if product_type == "key" and stock is not None and stock < wanted:
        delivered, short_of_stock = stock, True

    if delivered == 0:
        code = error or "OUT_OF_STOCK"
        return Outcome("failed", 0, charged, code, error_message or _message(code))
    if delivered == quantity:
        return Outcome("completed", quantity, 0, "", "")
    refund = charged - charge_for(delivered, unit_price)
    code = "" if short_of_stock and requested == "completed" else error
    message = (error_message or _message(code)) if code else ""
    return Outcome("partial", delivered, max(0, refund), code, message)


def _message(code: str) -> str:
    return DEFAULT_MESSAGES.get(code, code.replace("_", " ").capitalize() + ".")


def _tidy(value: Decimal) -> Quantity:
    return int(value) if value == value.to_integral_value() else value
