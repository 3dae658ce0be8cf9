"""An example merchant integration with the ordering service (see examples/README.md).

`OrderingClient` calls the merchant API; `handle_webhook` receives order results.
"""

from .client import STOP_POLLING_STATUSES, TERMINAL_STATUSES, OrderingClient
from .errors import (
    ApiError,
    AuthenticationFailed,
    OrderingError,
    OrderOutcomeUnknown,
    OutcomeTimeout,
    PriceMismatch,
    ServiceUnavailable,
)
from .receiver import SIGNATURE_HEADERS, handle_webhook, order_id_for, signature_is_valid

__all__ = [
    "STOP_POLLING_STATUSES",
    "SIGNATURE_HEADERS",
    "TERMINAL_STATUSES",
    "ApiError",
    "AuthenticationFailed",
    "OrderOutcomeUnknown",
    "OrderingClient",
    "OrderingError",
    "OutcomeTimeout",
    "PriceMismatch",
    "ServiceUnavailable",
    "handle_webhook",
    "order_id_for",
    "signature_is_valid",
]
