"""The order resource (spec 2.1) and its status rules (spec 3)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from ..clock import iso
from .money import major
from .statuses import TERMINAL

if TYPE_CHECKING:
    from ..scheduler import Job
    from .scenarios import Scenario
    from .selection import ScenarioReason

Quantity = int | Decimal


#: The `webhook` object of an order not settled yet: one read-only mapping for them all
#: (a dict each cost 180 bytes an order).
PENDING_WEBHOOK: Mapping[str, Any] = MappingProxyType(
    {
        "status": "pending",
        "attempts": 0,
        "last_status_code": None,
        "last_attempt_at": None,
        "next_attempt_at": None,
    }
)


class TransitionError(RuntimeError):
    """A status change the spec forbids: a bug in the engine, never the caller's fault."""


class WebhookSource(Protocol):
    """What an order's `webhook` object is read from: its primary delivery."""

    def order_view(self) -> dict[str, Any]: ...


@dataclass(slots=True, eq=False)
class Order:
    id: str
    account_id: str
    created_by_email: str
    item_id: int
    item_name: str
    product_type: str
    quantity: Quantity
    unit_price: int  # cents
    price: int  # cents charged
    fields: Mapping[str, str]  # display values (choice labels)
    merchant_order_id: str | None
    created_at: float
    scenario: Scenario
    status: str = "pending"
    delivered_quantity: Quantity = 0
    refund_amount: int = 0  # cents
    error: str = ""
    error_message: str = ""
    codes: Sequence[str] = ()  # shared and empty until settlement
    completed_at: float | None = None
    source: str = "api"
    #: The pending view the order was created with, then its primary delivery, rendered
    #: when read (a dict kept per order cost ~180 bytes).
    webhook: Mapping[str, Any] | WebhookSource | None = None
    #: Status changes, flat: (status, at, status, at, ...). One tuple, replaced on each
    #: change: a tuple per change cost 56 bytes more, a list 64 more than this (and a
    #: list made and dropped per order left the allocator's pages fragmented). A change
    #: copies what came before; a scenario has at most `scenarios.MAX_STEPS` steps, so
    #: an order's copies stay a few thousand pointers.
    history: tuple[str | float, ...] = ()
    next_step: int = 0
    expected_code: str | None = None
    timer: Job | None = None
    #: How its scenario was chosen (`scenario_reason`); shared between orders chosen alike.
    scenario_reason: ScenarioReason | None = None
    #: Bumped by every change the merchant can see, so a rendering of the order can be
    #: reused until the order changes (lookups are the hottest call). Visible fields
    #: change only through `move_to` (settlement sets its fields just before) and
    #: `set_webhook`.
    version: int = 0

    def set_webhook(self, source: Mapping[str, Any] | WebhookSource | None) -> None:
        """Call it whenever the source changes too: renderings are reused by `version`."""
        self.webhook = source
        self.version += 1

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def move_to(self, status: str, at: float) -> None:
        """Change status, enforcing spec 3.2: never back to pending, terminal is final,
        and need_client_code is left only for processing (by a submitted code)."""
        if self.terminal:
            raise TransitionError(f"order {self.id} is {self.status}: terminal is final")
        if status == "pending":
            raise TransitionError("an order never returns to pending")
        if self.status == "need_client_code" and status != "processing":
            raise TransitionError("need_client_code is left only for processing")
        self.history += (status, at)
        self.status = status
        self.version += 1

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "item": self.item_id,
            "item_name": self.item_name,
            "item_product_type": self.product_type,
            "quantity": _number(self.quantity),
            "delivered_quantity": _number(self.delivered_quantity),
            "price": major(self.price),
            "refund_amount": major(self.refund_amount),
            "fields": dict(self.fields),
            "status": self.status,
            "error": self.error,
            "error_message": self.error_message,
            "codes": list(self.codes),
            "merchant_order_id": self.merchant_order_id,
            "source": self.source,
            "created_by": {"id": self.account_id, "email": self.created_by_email},
            "created_at": iso(self.created_at),
            "completed_at": iso(self.completed_at) if self.completed_at is not None else None,
            "webhook": self._webhook_json(),
        }

    def _webhook_json(self) -> dict[str, Any] | None:
        webhook = self.webhook
        if webhook is None:
            return None
        if isinstance(webhook, Mapping):
            return dict(webhook)
        return webhook.order_view()

    def history_json(self) -> list[dict[str, str]]:
        steps = self.history
        return [{"status": steps[i], "at": iso(steps[i + 1])} for i in range(0, len(steps), 2)]


def _number(value: Quantity) -> int | float:
    return float(value) if isinstance(value, Decimal) else value


def key_units(orders: Iterable[Order]) -> int:
    """The units of the key orders among `orders`: each is a code an order delivers or
    may still deliver, what the `codes` quota counts (docs/hosting.md, "Quotas")."""
    return sum(int(order.quantity) for order in orders if order.product_type == "key")
