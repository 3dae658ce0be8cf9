"""Money: integer cents inside, major units (at most 2 decimals) only at the JSON edge."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal


def major(cents: int) -> float:
    """Cents to a JSON number in major units (2400 -> 24.0, 1999 -> 19.99)."""
    return cents / 100


def charge_for(quantity: int | Decimal, unit_price: int) -> int:
    """quantity x per-unit price in cents, decimal quantities rounded half-up to a cent."""
    if isinstance(quantity, int):
        return quantity * unit_price
    return int((quantity * unit_price).to_integral_value(rounding=ROUND_HALF_UP))


def cents_from_major(amount: int | Decimal) -> int | None:
    """Exact cents of a major-unit amount, or None when it has more than 2 decimals."""
    cents = Decimal(amount) * 100
    if cents != cents.to_integral_value():
        return None
    return int(cents)
