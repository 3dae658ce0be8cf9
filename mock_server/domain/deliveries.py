"""Webhook deliveries as data: what was (or will be) sent for an order, and every attempt.

The sending itself (HTTP, signing) is `mock_server.webhooks`; this module only keeps
the record the control API shows and the order's `webhook` object mirrors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..clock import iso
from .orders import Order

#: One first attempt plus up to 3 retries (spec 6 and 8).
MAX_ATTEMPTS = 4
RETRY_INTERVAL = 60.0


@dataclass(frozen=True, slots=True)
class Attempt:
    at: float
    status_code: int | None
    error: str | None
    duration_ms: float
    manual: bool = False  # a /_mock redelivery, outside the spec's retry schedule

    def to_json(self) -> dict[str, Any]:
        return {
            "at": iso(self.at),
            "status_code": self.status_code,
            "error": self.error,
            "duration_ms": self.duration_ms,
            "manual": self.manual,
        }


@dataclass(slots=True, eq=False)
class Delivery:
    id: str
    order_id: str
    account_id: str
    body: bytes
    status: str = "pending"  # pending | retrying | delivered | failed | dropped
    copy: int = 0  # 0 for the event itself, 1.. for scripted duplicates
    url: str | None = None  # where the last attempt went
    headers: dict[str, str] = field(default_factory=dict)
    attempts: list[Attempt] = field(default_factory=list)
    next_attempt_at: float | None = None

    @property
    def finished(self) -> bool:
        return self.status in ("delivered", "failed", "dropped")

    def record(self, attempt: Attempt) -> None:
        """Count an attempt and decide what comes next (spec 6: only 200 is success).

        Scheduled attempts retry 60 s later until 4 have been made. A failed manual
        attempt leaves a planned attempt in place, and otherwise ends `failed`.
        """
        self.attempts.append(attempt)
        scheduled = sum(1 for a in self.attempts if not a.manual)
        if attempt.status_code == 200:
            self.status, self.next_attempt_at = "delivered", None
        elif attempt.manual:
            if self.next_attempt_at is None:  # nothing planned: this failure is the last word
                self.status = "failed"
        elif scheduled < MAX_ATTEMPTS:
            self.status, self.next_attempt_at = "retrying", attempt.at + RETRY_INTERVAL
        else:
            self.status, self.next_attempt_at = "failed", None

    def order_view(self) -> dict[str, Any]:
        """The order's `webhook` object (DESIGN section 4)."""
        last = self.attempts[-1] if self.attempts else None
        return {
            "status": "pending" if self.status == "dropped" else self.status,
            "attempts": len(self.attempts),
            "last_status_code": last.status_code if last else None,
            "last_attempt_at": iso(last.at) if last else None,
            "next_attempt_at": iso(self.next_attempt_at) if self.next_attempt_at else None,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "order_id": self.order_id,
            "account_id": self.account_id,
            "copy": self.copy,
            "url": self.url,
            "status": self.status,
            "body": self.body.decode("utf-8"),
            "headers": dict(self.headers),
            "attempts": [attempt.to_json() for attempt in self.attempts],
            "next_attempt_at": iso(self.next_attempt_at) if self.next_attempt_at else None,
        }


#: Order fields the event carries besides `order_id` (spec 6 lists what receivers read).
EVENT_FIELDS = (
    "status",
    "merchant_order_id",
    "item",
    "item_name",
    "quantity",
    "delivered_quantity",
    "price",
    "refund_amount",
    "codes",
    "error",
    "error_message",
    "created_at",
    "completed_at",
)


def event_body(order: Order) -> bytes:
    """The order-result event, serialised once: every copy and retry sends these bytes."""
    view = order.to_json()
    event = {"order_id": order.id} | {key: view[key] for key in EVENT_FIELDS}
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
