"""The merchant API's operations (spec section 4) under each path prefix, and the plant
demo."""

from __future__ import annotations

import copy
from typing import Any

from ..config import MAX_BODY_BYTES
from ..domain.quotas import CREATED_DEFAULTS, Quotas
from ..domain.tokens import TOKEN_LIFETIME
from ..merchant.api import PREFIXES, SCENARIO_HEADER
from .schema_helpers import (
    MERCHANT_AUTH,
    QUOTA_EXCEEDED,
    body,
    envelope,
    error,
    merchant_errors,
    operation,
    path_param,
    ref,
    response,
    string,
    use,
)

PRIMARY_PREFIX = PREFIXES[0]

# -- merchant operations ------------------------------------------------------------------

ORDER_ID = path_param("order_id", "Order id (UUID).", string(format="uuid"))
SCENARIO_PARAM = {
    "name": SCENARIO_HEADER,
    "in": "header",
    "required": False,
    "description": "Mock-only: the scenario that fulfils this order (an unknown name is 400 "
    "`validation_error` listing the known ones).",
    "schema": string(examples=["timeout_partial"]),
}


def _exchange_token() -> dict[str, Any]:
    hours = TOKEN_LIFETIME / 3600
    limit = CREATED_DEFAULTS["tokens"]
    full = Quotas(tokens=limit).refusal("tokens", limit + 1)
    assert full is not None
    return operation(
        "exchangeToken",
        "Exchange an API key for an access token",
        tag="Authentication",
        description=f"Spec 4.1. Public. The token is valid {hours:g} hours of virtual time. "
        'Failures use `{"error": ...}`, never the envelope.',
        request_body=body(ref("TokenRequest"), {"api_key": "ak_test_default"}),
        responses={
            "200": response(
                "The access token.",
                ref("TokenResponse"),
                example={"access_token": "3f1c…", "token_type": "Bearer"},
            ),
            "400": response(
                "Malformed JSON or a Content-Type that is not JSON.", ref("TokenError")
            ),
            "401": response(
                "Unknown, revoked, missing or non-string `api_key`.",
                ref("TokenError"),
                example={"error": "Invalid API key"},
            ),
            "405": use("MethodNotAllowed"),
            "413": response(f"The body is over {MAX_BODY_BYTES} bytes.", ref("TokenError")),
            "429": response(
                "Over the server's rate (only with --sandbox-rate; see `Retry-After`), or "
                "the sandbox holds as many unexpired access tokens as its quota allows "
                "(`--sandbox-max-tokens`; a created sandbox has it by default): the error "
                "names the quota and how to free room, and no token was issued. In this "
                'endpoint\'s `{"error"}` shape, not the envelope.',
                ref("TokenError"),
                example={"error": full.detail},
            ),
            "5XX": use("InternalError"),
        },
    )


def _read_balance() -> dict[str, Any]:
    return operation(
        "readBalance",
        "Read the spendable balance",
        tag="Account",
        description="Spec 4.2.",
        security=MERCHANT_AUTH,
        responses={
            "200": response(
                "The balance.", ref("Balance"), example={"balance": 1000.0, "currency": "USD"}
            ),
            **merchant_errors(reads_body=False),
        },
    )


def _read_account() -> dict[str, Any]:
    return operation(
        "readAccount",
        "Read the calling account",
        tag="Account",
        description="Spec 4.4 (account read).",
        security=MERCHANT_AUTH,
        responses={
            "200": response("The account.", ref("Me")),
            **merchant_errors(reads_body=False),
        },
    )


def _create_order() -> dict[str, Any]:
    return operation(
        "createOrder",
        "Place an order",
        tag="Orders",
        description="Spec 4.3. Charges the balance and answers 201 at once with status "
        "`pending`; fulfillment runs in the background (poll the order, or receive the "
        "webhook). A 4xx creates and charges nothing.",
        security=MERCHANT_AUTH,
        parameters=[SCENARIO_PARAM],
        request_body=body(
            ref("OrderRequest"),
            {"item_id": 1001, "quantity": 2, "merchant_order_id": "shop-1001", "price": 40.0},
        ),
        responses={
            "201": response("The order, `pending`.", ref("Order")),
            "400": response(
                "`validation_error` (bad or missing field, unknown or unavailable item, "
                "duplicate `merchant_order_id`, quantity out of range, malformed body), "
                "`insufficient_balance`, or `price_mismatch` with `actual_price`.",
                {
                    "oneOf": [
                        envelope("validation_error"),
                        envelope("insufficient_balance"),
                        ref("PriceMismatchError"),
                    ]
                },
            ),
            **merchant_errors(reads_body=True),
            "429": response(
                "`rate_limited` (only with --sandbox-rate; see `Retry-After`), or "
                f"`quota_exceeded`: {QUOTA_EXCEEDED}",
                {"oneOf": [envelope("rate_limited"), envelope("quota_exceeded")]},
            ),
        },
    )


def _get_order() -> dict[str, Any]:
    return operation(
        "getOrder",
        "Look up an order",
        tag="Orders",
        description="Spec 4.4. Poll until the status is terminal, and also stop on "
        "`need_client_code`. There is no list-orders endpoint.",
        security=MERCHANT_AUTH,
        parameters=[ORDER_ID],
        responses={
            "200": response("The order.", ref("Order")),
            "404": error("The order does not exist or belongs to another account.", "not_found"),
            **merchant_errors(reads_body=False),
        },
    )


def _submit_client_code() -> dict[str, Any]:
    return operation(
        "submitClientCode",
        "Submit a client code",
        tag="Orders",
        description="Spec 4.5. Releases an order in `need_client_code`; it returns to "
        "`processing`.",
        security=MERCHANT_AUTH,
        parameters=[ORDER_ID],
        request_body=body(ref("ClientCodeRequest"), {"code": "123456"}),
        responses={
            "200": response("The order, now `processing`.", ref("Order")),
            "400": error(
                "Missing or empty code, the order is not in `need_client_code`, or the "
                "scenario expects another code (the order keeps waiting). Nothing changed.",
                "validation_error",
            ),
            "404": error("The order does not exist or belongs to another account.", "not_found"),
            **merchant_errors(reads_body=True),
        },
    )


def _merchant_operations() -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path after the prefix, operation) of spec section 4."""
    return [
        ("post", "/auth/token/client", _exchange_token()),
        ("get", "/account/balance", _read_balance()),
        ("get", "/account/me", _read_account()),
        ("post", "/orders", _create_order()),
        ("get", "/orders/{order_id}", _get_order()),
        ("post", "/orders/{order_id}/client-code", _submit_client_code()),
    ]


def _merchant_paths() -> dict[str, dict[str, Any]]:
    """Every merchant operation under each prefix: the first is primary, the others are
    aliases whose operationIds carry the prefix (`createOrder`, `createOrderV1`)."""
    paths: dict[str, dict[str, Any]] = {}
    for prefix in PREFIXES:
        for method, path, base in _merchant_operations():
            op = copy.deepcopy(base)
            if prefix != PRIMARY_PREFIX:
                op["operationId"] += prefix.strip("/").replace("/", "_").title()
                op["x-alias-of"] = base["operationId"]
                op["description"] = (
                    f"The same operation as `{method.upper()} {PRIMARY_PREFIX}{path}`, under "
                    f"the `{prefix}` prefix some references use. " + op.get("description", "")
                ).strip()
            paths.setdefault(prefix + path, {})[method] = op
    return paths


def _plant_paths() -> dict[str, dict[str, Any]]:
    return {
        "/v3/plant": {
            "put": operation(
                "updatePlant",
                "Update a plant (demo)",
                tag="Plant demo",
                description="Spec 4.6, served on the same host. No authentication. "
                "Plants 1..10 are seeded; a refused update changes nothing.",
                request_body=body(ref("Plant"), {"id": 3, "name": "Sansevieria", "status": "sold"}),
                responses={
                    "200": response("The updated plant.", ref("PlantResponse")),
                    "400": error(
                        "Invalid id supplied (missing, null or not an integer), a `status` "
                        "outside the enum, a field of the wrong type, or a malformed body.",
                        "validation_error",
                    ),
                    "404": error("Plant not found.", "not_found"),
                    **merchant_errors(reads_body=True, authenticated=False),
                },
            )
        }
    }
