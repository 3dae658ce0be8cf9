"""What the sandbox knows about an answer beyond its fields, for the rules of a shapes
file that read it (docs/shapes.md, "Named facts"): the token's lifetime, an order's
choice options, the delivery of the event an order's `webhook` object or an event is
about. Plain values in, a `shapes.Facts` out."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from ..clock import iso
from .catalog import Catalog
from .deliveries import Delivery
from .shapes import FACTS, Facts
from .tokens import TOKEN_LIFETIME

#: The named facts of an event's delivery.
DELIVERY_FACTS = frozenset(name for name in FACTS if name.startswith("delivery."))


def token_facts(now: float, rng: random.Random) -> Facts:
    return Facts(now=now, named={"token.expires_in": int(TOKEN_LIFETIME)}, rng=rng)


def order_facts(
    order: Mapping[str, Any],
    catalog: Catalog,
    delivery: Delivery | None,
    url: str | None,
    now: float,
    rng: random.Random,
    reads: frozenset[str],
) -> Facts:
    """An order answer's facts: its item's choice options (label -> id) and, for its
    `webhook` object, its event's delivery (`url`: where the next attempt goes); only
    those its rules read (`reads`, `Shapes.reads`)."""
    choices: dict[str, dict[str, int]] = {}
    if "choices" in reads:
        item = catalog.get(order.get("item")) if isinstance(order.get("item"), int) else None
        choices = {
            field.name: {option.label: option.id for option in field.options}
            for field in (item.fields if item is not None else ())
            if field.options
        }
    named = delivery_facts(delivery, url) if reads & DELIVERY_FACTS else {}
    return Facts(now=now, named=named, order=order, choices=choices, rng=rng)


def delivery_facts(delivery: Delivery | None, url: str | None) -> dict[str, Any]:
    """`delivery.url`, `.status`, `.attempts`, `.last_attempt_at`, `.last_status_code`,
    `.next_attempt_at` (docs/shapes.md, "Named facts"); the URL where its next attempt
    goes, or went."""
    if delivery is None:
        return {"delivery.url": url}
    last = delivery.attempts[-1] if delivery.attempts else None
    return {
        "delivery.url": delivery.url or url,
        "delivery.status": delivery.status,
        "delivery.attempts": len(delivery.attempts),
        "delivery.last_attempt_at": iso(last.at) if last else None,
        "delivery.last_status_code": last.status_code if last else None,
        "delivery.next_attempt_at": (
            iso(delivery.next_attempt_at) if delivery.next_attempt_at else None
        ),
    }
