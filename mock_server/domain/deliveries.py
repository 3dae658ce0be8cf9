"""Webhook deliveries as data: what was (or will be) sent for an order, and every attempt.

The sending itself (HTTP, signing) is `mock_server.webhooks`; this module only keeps
the record the control API shows and the order's `webhook` object mirrors.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any, Protocol

from ..clock import iso
from .orders import Order
from .scenarios import SPEC_RETRY


class Sender(Protocol):
    """Who makes a sandbox's delivery attempts (`mock_server.webhooks.WebhookSender`,
    wired by the app): the domain keeps the record, the sender does the I/O."""

    def resume(self, delivery: Delivery) -> None:
        """Plan the next attempt of a delivery restored from a saved state."""

    async def redeliver(self, delivery: Delivery) -> Delivery:
        """Send a copy of `delivery` now (`POST /_mock/webhooks/{id}/redeliver`)."""

    async def close(self) -> None:
        """Stop sending: the sandbox is going away."""


#: One first attempt plus up to 3 retries, 60 s apart (spec 6 and 8); a scenario's
#: `webhook: {retry: [...]}` gives other gaps (docs/scenarios.md).
MAX_ATTEMPTS = 1 + len(SPEC_RETRY)
RETRY_INTERVAL = SPEC_RETRY[0]
SIGNATURE_PREFIX = "sha256="
#: An attempt's `via` (and its delivery's `url`) when a listener made it.
LISTENER = "listener"


def sign(secret: str, body: bytes) -> str:
    """The signature header value for `body`: `sha256=<hex HMAC-SHA256>`."""
    digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return SIGNATURE_PREFIX + digest


def signed_headers(secret: str, signature_headers: tuple[str, ...], body: bytes) -> dict[str, str]:
    """The headers an attempt sends: the content type and the signature under each name."""
    signature = sign(secret, body)
    return {"Content-Type": "application/json"} | {name: signature for name in signature_headers}


@dataclass(frozen=True, slots=True)
class Attempt:
    at: float
    status_code: int | None
    error: str | None
    duration_ms: float
    manual: bool = False  # a /_mock redelivery, outside the spec's retry schedule
    #: "listener" when a `mock-server listen` made it (docs/webhooks.md); None: direct.
    via: str | None = None

    def to_json(self) -> dict[str, Any]:
        view = {
            "at": iso(self.at),
            "status_code": self.status_code,
            "error": self.error,
            "duration_ms": self.duration_ms,
            "manual": self.manual,
        }
        if self.via is not None:
            view["via"] = self.via
        return view


@dataclass(frozen=True, slots=True)
class Own:
    """What a delivery has of its own: its retry schedule, the shaped bytes it sent."""

    retry: tuple[float, ...] = SPEC_RETRY
    sent: bytes | None = None

    @classmethod
    def of(cls, retry: tuple[float, ...], sent: bytes | None = None) -> Own | None:
        """None where both are as for any delivery."""
        return None if retry == SPEC_RETRY and sent is None else cls(retry, sent)


@dataclass(slots=True, eq=False)
class Delivery:
    id: str
    order: Order  # settled: it no longer changes
    status: str = "pending"  # pending | retrying | delivered | failed | dropped
    copy: int = 0  # 0 for the event itself, 1.. for scripted duplicates
    url: str | None = None  # where the last attempt went
    #: How the last attempt was signed (the account's own objects, shared): `headers`
    #: is rebuilt from them, where a dict and a signature per delivery cost ~300 bytes.
    secret: str | None = None
    signature_headers: tuple[str, ...] = ()
    #: A tuple, grown by one per attempt: most deliveries make one, and a list cost
    #: 40 bytes more.
    attempts: tuple[Attempt, ...] = ()
    next_attempt_at: float | None = None
    #: A scenario's own retry schedule and the shaped bytes last sent, where a delivery
    #: has either (one slot: most deliveries have neither, and a sandbox keeps many).
    own: Own | None = None

    @property
    def retry(self) -> tuple[float, ...]:
        """The gap before each retry of the schedule: the spec's unless a scenario gave
        its own (docs/scenarios.md)."""
        return self.own.retry if self.own is not None else SPEC_RETRY

    @property
    def sent(self) -> bytes | None:
        """The bytes the last attempt sent when production's shapes made them differ
        from the plain event (docs/shapes.md); None: the plain event."""
        return self.own.sent if self.own is not None else None

    @sent.setter
    def sent(self, body: bytes | None) -> None:
        self.own = Own(self.retry, body)

    @property
    def order_id(self) -> str:
        return self.order.id

    @property
    def account_id(self) -> str:
        return self.order.account_id

    @property
    def body(self) -> bytes:
        """The order-result event as last sent. Rendered when needed rather than kept
        (420 bytes a delivery): the order is terminal, so every copy and retry sends the
        same bytes, unless a shapes file adds what changes (`sent`)."""
        return self.sent if self.sent is not None else event_body(self.order)

    @property
    def headers(self) -> dict[str, str]:
        """The headers of the last attempt ({} before any was sent)."""
        if self.secret is None:
            return {}
        return signed_headers(self.secret, self.signature_headers, self.body)

    def sent_with(self, url: str, secret: str, signature_headers: tuple[str, ...]) -> None:
        self.url, self.secret, self.signature_headers = url, secret, signature_headers

    @property
    def finished(self) -> bool:
        return self.status in ("delivered", "failed", "dropped")

    @property
    def scheduled_attempts(self) -> int:
        """Attempts of the retry schedule made so far (manual redeliveries are not)."""
        return sum(1 for a in self.attempts if not a.manual)

    def record(self, attempt: Attempt) -> None:
        """Count an attempt and decide what comes next (spec 6: only 200 is success).

        A failed scheduled attempt is retried after the schedule's next gap (`retry`:
        60 s, 60 s, 60 s unless a scenario said otherwise) until the gaps run out. A
        failed manual attempt leaves a planned attempt in place, and otherwise ends
        `failed`.
        """
        self.attempts += (attempt,)
        scheduled = self.scheduled_attempts
        if attempt.status_code == 200:
            self.status, self.next_attempt_at = "delivered", None
        elif attempt.manual:
            if self.next_attempt_at is None:  # nothing planned: this failure is the last word
                self.status = "failed"
        elif scheduled <= len(self.retry):
            self.status, self.next_attempt_at = "retrying", attempt.at + self.retry[scheduled - 1]
        else:
            self.status, self.next_attempt_at = "failed", None

    def order_view(self) -> dict[str, Any]:
        """The order's `webhook` object (its sub-fields, which spec 2.1 leaves open:
        docs/fidelity.md)."""
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
            "headers": self.headers,
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
    """The order-result event of a settled order."""
    return json.dumps(event_view(order), separators=(",", ":"), ensure_ascii=False).encode()


def event_view(order: Order) -> dict[str, Any]:
    """The order-result event of a settled order, as a mapping."""
    view = order.to_json()
    return {"order_id": order.id} | {key: view[key] for key in EVENT_FIELDS}


class ByOrder:
    """Each order's deliveries, in the order they were made. Most orders have exactly
    one: it is kept as itself, and a list only once a copy follows (a one-element list
    per order cost ~90 bytes; bench/FINDINGS.md section 7)."""

    __slots__ = ("_of",)

    def __init__(self) -> None:
        self._of: dict[str, Delivery | list[Delivery]] = {}

    def add(self, delivery: Delivery) -> None:
        order_id = delivery.order.id
        found = self._of.get(order_id)
        if found is None:
            self._of[order_id] = delivery
        elif type(found) is list:
            found.append(delivery)
        else:
            self._of[order_id] = [found, delivery]

    def of(self, order_id: str) -> list[Delivery]:
        found = self._of.get(order_id)
        if found is None:
            return []
        return list(found) if type(found) is list else [found]

    def clear(self) -> None:
        self._of.clear()
