"""What the merchant client raises: one base class, one subclass per decision to make."""

from __future__ import annotations

from typing import Any


class OrderingError(Exception):
    """Base of every error the client raises."""


class AuthenticationFailed(OrderingError):
    """The token endpoint refused the API key (401 `{"error": ...}`): fix the key."""


class ApiError(OrderingError):
    """A 4xx in the spec's envelope (`{detail, code}`): nothing was created or charged.

    Branch on `code`; `detail` is for people and may change.
    """

    def __init__(self, status: int, code: str, detail: str, body: Any = None) -> None:
        super().__init__(f"HTTP {status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.body = body


class PriceMismatch(ApiError):
    """The price guard differed from the live price; `actual_price` is what it would cost."""

    def __init__(self, status: int, code: str, detail: str, body: Any = None) -> None:
        super().__init__(status, code, detail, body)
        self.actual_price = body.get("actual_price") if isinstance(body, dict) else None


class ServiceUnavailable(OrderingError):
    """Every attempt of a read (or of the token exchange) got a 5xx or no answer."""


class OrderOutcomeUnknown(OrderingError):
    """Order creation failed in a way that may have created the order anyway.

    Raised when every attempt got a 5xx or no answer, or when a retry (after such a
    failure) was refused and the refusal did not lead to the order. The order under
    `merchant_order_id` may exist and be charged. Do NOT place it again under a new
    reference: wait for its webhook (which carries `merchant_order_id` and `order_id`)
    or look it up on the dashboard, the only place that lists orders.
    """

    def __init__(self, merchant_order_id: str, reason: str) -> None:
        super().__init__(
            f"order {merchant_order_id!r} may or may not exist: {reason}; "
            "find it by its merchant_order_id in its webhook or on the dashboard"
        )
        self.merchant_order_id = merchant_order_id
        self.reason = reason


class OutcomeTimeout(OrderingError):
    """Polling gave up before the order settled (or paused in `need_client_code`)."""

    def __init__(self, order_id: str, status: str, waited: float) -> None:
        super().__init__(f"order {order_id} still {status} after {waited:g} s of polling")
        self.order_id = order_id
        self.status = status
        self.waited = waited
