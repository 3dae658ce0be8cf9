"""Small value helpers the replay's modules share (docs/recording.md, "Compare"): an
answer's body parsed, JSON values told apart (an object, an order, a number), money in
cents, and the control API's times (ISO 8601 UTC) to epoch seconds and back.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any


def parse(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def is_order(value: Any) -> bool:
    """An order answer (spec 2.1): an `id` and a `status`, with its `item` or its
    `price` (production may call the item otherwise; a plant has neither)."""
    return (
        isinstance(value, dict)
        and "status" in value
        and "id" in value
        and ("item" in value or "price" in value)
    )


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def cents(value: Any) -> int | None:
    decimal = to_decimal(value)
    return None if decimal is None else int((decimal * 100).to_integral_value(ROUND_HALF_UP))


def to_decimal(value: Any) -> Decimal | None:
    if not is_number(value):
        return None
    try:
        found = Decimal(str(value))
    except InvalidOperation:
        return None
    return found if found.is_finite() else None


def iso(ts: float) -> str:
    moment = datetime.fromtimestamp(ts, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
