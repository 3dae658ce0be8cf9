"""The merchant's webhook receiver: verify, deduplicate, process once, answer.

`handle_webhook` is framework-free: give it the raw body and the headers of the POST
the ordering service sent, and answer the status it returns. Wiring it into a web
framework takes three lines (see examples/README.md).

The signature is checked with the standard library's `hmac` (a merchant's production
code does not import the sandbox); `mock_server.webhooks.verify` is the sandbox's
equivalent, handy in tests, and the example's tests check that both agree.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

log = logging.getLogger(__name__)

#: The change record names the first; the spec's receiver examples use the second.
SIGNATURE_HEADERS = ("X-Webhook-Signature", "X-Signature")
_PREFIX = "sha256="


def signature_is_valid(secret: str, raw_body: bytes, header: str | None) -> bool:
    """Whether `header` (`sha256=<hex>`) is the HMAC-SHA256 of the raw body bytes.

    Compute it on the bytes as received, before any JSON parsing: re-serialized JSON
    does not give the same bytes. Constant-time comparison.
    """
    if not header:
        return False
    candidate = header.strip()
    if candidate.lower().startswith(_PREFIX):
        candidate = candidate[len(_PREFIX) :]
    expected = hmac.new(secret.encode("utf-8"), raw_body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(candidate.lower().encode("utf-8"), expected.encode("ascii"))


def handle_webhook(
    raw_body: bytes,
    headers: Mapping[str, str],
    secret: str,
    seen: MutableMapping[str, dict[str, Any]],
    *,
    on_event: Callable[[dict[str, Any]], object] | None = None,
) -> int:
    """Handle one order-result delivery; returns the HTTP status to answer.

    * 401 when no signature header verifies: a forgery, or the wrong secret. (The
      service retries any non-200, so a misconfigured secret shows up as retries.)
    * 400 when the signed body is not an event with an `order_id`.
    * 200 for an `order_id` already in `seen`: a retry or a duplicate copy. Nothing is
      processed twice.
    * 200 after `on_event(event)` ran for a new order; the event is then recorded in
      `seen` (`order_id` -> event). If `on_event` raises, nothing is recorded and 500
      is answered, so the service's retry gets another chance.

    `seen` stands for the merchant's store (a table with a unique `order_id`); it also
    maps a `merchant_order_id` back to its `order_id` (see `order_id_for`).
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    signatures = [lowered.get(name.lower()) for name in SIGNATURE_HEADERS]
    if not any(signature_is_valid(secret, raw_body, s) for s in signatures):
        return 401
    try:
        event = json.loads(raw_body)
    except ValueError:
        return 400
    order_id = event.get("order_id") if isinstance(event, dict) else None
    if not isinstance(order_id, str) or not order_id:
        return 400
    if order_id in seen:
        return 200
    if on_event is not None:
        try:
            on_event(event)
        except Exception:  # answer 500: the service retries, 60 s later
            log.exception("processing the webhook of order %s failed", order_id)
            return 500
    seen[order_id] = event
    return 200


def order_id_for(seen: Mapping[str, dict[str, Any]], merchant_order_id: str) -> str | None:
    """The order id a received event correlates with `merchant_order_id` (spec 6).

    This is how an order whose creation answer was lost (`OrderOutcomeUnknown`) is found
    again: its webhook carries both ids.
    """
    for order_id, event in seen.items():
        if event.get("merchant_order_id") == merchant_order_id:
            return order_id
    return None
