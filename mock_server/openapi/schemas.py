"""`components/schemas` and `components/responses`: the merchant API's shapes here, the
control API's in `control_schemas`."""

from __future__ import annotations

from typing import Any

from ..config import MAX_BODY_BYTES
from ..domain.catalog import PRODUCT_TYPES
from ..domain.order_request import MAX_MERCHANT_ORDER_ID
from ..domain.plants import PLANT_STATUSES
from ..domain.statuses import STATUSES, TERMINAL
from ..domain.tokens import TOKEN_LIFETIME
from .control_schemas import (
    _catalog_schemas,
    _control_account_schemas,
    _inspection_schemas,
    _scenario_schemas,
)
from .coverage import coverage_schemas
from .sandboxes import sandbox_schemas
from .schema_helpers import (
    DELIVERY_STATUSES,
    ENVELOPE_CODES,
    Schema,
    array,
    boolean,
    enum,
    envelope,
    error,
    error_schema_name,
    integer,
    money,
    nullable,
    number,
    obj,
    ref,
    response,
    string,
    timestamp,
    uuid,
)
from .state_document import state_schemas

TERMINAL_STATUSES = [status for status in STATUSES if status in TERMINAL]

# -- component schemas ----------------------------------------------------------------------


def _order_schemas() -> dict[str, Schema]:
    quantity = "Integer count for key items; decimal for top-ups; always 1 for services."
    return {
        "Order": obj(
            {
                "id": uuid("Order id."),
                "item": integer("Numeric item id."),
                "item_name": string("Name of the item."),
                "item_product_type": enum(PRODUCT_TYPES),
                "quantity": number(quantity, exclusiveMinimum=0),
                "delivered_quantity": number(
                    "Units delivered so far; compare with quantity to explain a shortfall.",
                    minimum=0,
                ),
                "price": money("Amount charged; final (catalog figures are an estimate)."),
                "refund_amount": money(
                    "Refunded for undelivered units on `partial` or `failed`; 0 otherwise."
                ),
                "fields": obj(
                    {},
                    extra=string(),
                    description="The submitted input fields, choice values shown as their "
                    "display name. Empty object for key items.",
                ),
                "status": enum(STATUSES, "Spec section 3; settle on this, never on HTTP."),
                "error": string(
                    "Stable machine error code (e.g. `OUT_OF_STOCK`, `NOT_ENOUGH_STOCK`, "
                    "`INVALID_FIELDS`, `INSUFFICIENT_BALANCE`, `ORDER_TIMEOUT`); empty "
                    "string when there is none. Always set when `failed`."
                ),
                "error_message": string("Human text for `error`; empty when `error` is."),
                "codes": array(string(), "Delivered key codes (key items); empty otherwise."),
                "merchant_order_id": nullable(string("The caller's reference; null if none.")),
                "source": string("Origin of the order: `api` for API-placed orders."),
                "created_by": obj(
                    {"id": uuid("Account id."), "email": string()},
                    description="The account that placed the order.",
                ),
                "created_at": timestamp("Creation time."),
                "completed_at": nullable(
                    timestamp("Set only when `completed`; null on `partial` and `failed`.")
                ),
                "webhook": nullable(ref("OrderWebhook")),
            },
            description="Spec 2.1. `webhook` is null unless the account has a webhook URL.",
        ),
        "OrderWebhook": obj(
            {
                "status": enum(DELIVERY_STATUSES),
                "attempts": integer("Attempts made so far.", minimum=0),
                "last_status_code": nullable(
                    integer("HTTP status of the last attempt; null when no answer came.")
                ),
                "last_attempt_at": nullable(timestamp("Time of the last attempt.")),
                "next_attempt_at": nullable(timestamp("When the next retry is due.")),
            },
            description="Delivery status of the order-result webhook (sub-fields chosen by "
            "the sandbox, docs/fidelity.md). A scripted `drop` stays `pending`.",
        ),
        "OrderRequest": obj(
            {
                "item_id": integer("Numeric item id from the catalog."),
                "quantity": nullable(
                    number(
                        "`key`: integer count, default 1. `topup`: decimal, required. "
                        "`service`: omit (always 1). Within the item's min/max range.",
                        exclusiveMinimum=0,
                    )
                ),
                "merchant_order_id": nullable(
                    string(
                        "Caller's reference, unique per account (a reused one is 400 "
                        "`validation_error`); no control characters.",
                        minLength=1,
                        maxLength=MAX_MERCHANT_ORDER_ID,
                        pattern="^[^\\x00-\\x1F\\x7F-\\x9F]*$",
                    )
                ),
                "fields": nullable(
                    obj(
                        {},
                        extra={"type": ["string", "integer"]},
                        description="Required for `topup` and `service`, keyed by the item's "
                        "field names: text values as string, choice values as the numeric "
                        "option id. Key items take none (omit or `{}`).",
                    )
                ),
                "price": nullable(
                    number(
                        "Price guard: the expected order total (quantity included), at most "
                        "2 decimals. A different amount is refused with 400 `price_mismatch`.",
                        minimum=0,
                        exclusiveMaximum=10**15,
                    )
                ),
            },
            required=["item_id"],
            extra=True,
            description="Spec 4.3. Unknown fields are ignored.",
        ),
        "ClientCodeRequest": obj(
            {
                "code": {
                    "type": ["string", "integer"],
                    "minLength": 1,
                    "pattern": "\\S",
                    "description": "The code the end customer received (an integer is "
                    "taken as its digits).",
                }
            },
            extra=True,
        ),
    }


def _error_schemas() -> dict[str, Schema]:
    """The error envelope (spec 2.6), one complete schema per code: a generated client
    gets one model per code, and an answer that may carry several codes is `oneOf` them."""
    return {
        error_schema_name(code): obj(
            {
                "detail": string("Human-readable; may change. Says what to change."),
                "code": string("Stable machine-readable code: branch on this.", const=code),
            },
            description=f"The error envelope (spec 2.6) with code `{code}`.",
        )
        for code in ENVELOPE_CODES
    }


def _merchant_schemas() -> dict[str, Schema]:
    hours = TOKEN_LIFETIME / 3600
    return _error_schemas() | {
        "PriceMismatchError": obj(
            {
                "detail": string(),
                "code": string(const="price_mismatch"),
                "actual_price": money("The amount the order would cost."),
            },
            description="400 `price_mismatch`: the envelope plus `actual_price` (spec 4.3).",
        ),
        "TokenError": obj(
            {"error": string("What went wrong.")},
            description="The token endpoint's own failure shape (spec 4.1), not the envelope.",
        ),
        "TokenRequest": obj(
            {"api_key": string("An API key (prefix `ak_`).", pattern="^ak_")},
            required=["api_key"],
            extra=True,
        ),
        "TokenResponse": obj(
            {
                "access_token": string(
                    f"Bearer token, valid {hours:g} hours of (virtual) time.", minLength=1
                ),
                "token_type": string(const="Bearer"),
            },
            description="Spec 2.5.",
        ),
        "Balance": obj(
            {
                "balance": money("Spendable balance."),
                "currency": string(const="USD"),
            },
            description="Spec 4.2 (shape chosen by the sandbox).",
        ),
        "Me": obj(
            {
                "id": uuid("Account id; the same as `created_by.id` in orders."),
                "email": string(),
                "has_active_subscription": boolean("Subscriber prices apply to orders when true."),
            },
            description="Spec 4.4 account read (other fields chosen by the sandbox).",
        ),
        "Plant": obj(
            {
                "id": integer("The plant to update (1..10 are seeded)."),
                "name": nullable(string()),
                "category": nullable(string()),
                "tags": nullable(array(string())),
                "status": enum(PLANT_STATUSES),
            },
            required=["id"],
            extra=True,
            description="Spec 2.4, plus the integer `id` its 400 and 404 need. "
            "Absent fields, and null name, category or tags, are left unchanged; a status "
            "outside the enum (null included) is a 400.",
        ),
        "PlantResponse": obj(
            {
                "id": integer(),
                "name": string(),
                "status": enum(PLANT_STATUSES),
                "tags": array(string()),
            },
            description="Spec 2.4.",
        ),
        "OrderEvent": obj(
            {
                "order_id": uuid("Dedupe on this."),
                "status": enum(TERMINAL_STATUSES),
                "merchant_order_id": nullable(string("As sent at creation.")),
                "item": integer(),
                "item_name": string(),
                "quantity": number(exclusiveMinimum=0),
                "delivered_quantity": number(minimum=0),
                "price": money("Amount charged."),
                "refund_amount": money("Amount refunded."),
                "codes": array(string()),
                "error": string(),
                "error_message": string(),
                "created_at": timestamp("Creation time."),
                "completed_at": nullable(timestamp("Set only when `completed`.")),
            },
            description="The order-result webhook body (spec 6): compact JSON, the same "
            "bytes on every retry and copy.",
        ),
    }


def _schemas() -> dict[str, Schema]:
    return (
        _merchant_schemas()
        | _order_schemas()
        | _control_account_schemas()
        | _catalog_schemas()
        | _scenario_schemas()
        | _inspection_schemas()
        | sandbox_schemas()
        | coverage_schemas()
        | state_schemas()
    )


def _responses() -> dict[str, Any]:
    return {
        "NotAuthenticated": error(
            "Missing, invalid or expired access token (or a revoked key's): exchange the "
            "API key again.",
            "not_authenticated",
        ),
        "AdminNotAuthenticated": error(
            "Only when the sandbox runs with `--admin-token`: the request lacks "
            "`Authorization: Bearer <admin token>` (a merchant token never opens `/_mock`).",
            "not_authenticated",
        ),
        "ValidationError": error(
            "Malformed JSON (also NaN, Infinity, nesting deeper than 64 levels, invalid "
            "UTF-8), a body that is not a JSON object, a Content-Type that is not JSON, a "
            "missing body, or a field that breaks its rule. Nothing changed.",
            "validation_error",
        ),
        "PayloadTooLarge": error(
            f"The body is over {MAX_BODY_BYTES} bytes (1 MiB).", "payload_too_large"
        ),
        "RateLimited": response(
            "Only with --sandbox-rate: this sandbox's merchant calls are over the server's "
            "rate (the operator's protection, not a rule of the real service). Nothing "
            "happened; retry after the header's seconds.",
            envelope("rate_limited"),
            headers={
                "Retry-After": {
                    "description": "Whole seconds until a call is taken again.",
                    "required": True,
                    "schema": integer(minimum=1),
                }
            },
        ),
        "MethodNotAllowed": response(
            "The path exists, not with this method: answered to any method the path does not list.",
            envelope("method_not_allowed"),
            headers={
                "Allow": {
                    "description": "The methods the path answers.",
                    "required": True,
                    "schema": string(),
                }
            },
        ),
        "InternalError": error(
            "A backend error: a bug in the sandbox (logged), or a fault injected with "
            "`POST /_mock/faults` (then the code follows the status). Retry with backoff; "
            "`merchant_order_id` keeps order creation idempotent.",
            "internal_error",
        ),
    }
