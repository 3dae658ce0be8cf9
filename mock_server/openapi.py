"""The OpenAPI 3.1 document (`GET /openapi.json`) and the docs page (`GET /docs`).

The document describes the merchant API as the spec defines it, under both path
prefixes, the plant demo and the control API under `/_mock`. Its schemas are exact:
every field the sandbox writes, nullable ones as type arrays, objects closed with
`additionalProperties: false` where the sandbox's shape is fixed, so a fuzzer can hold
every response to them. `tests/test_openapi.py` keeps it true: every route the app
serves is documented, every documented route is served, and real responses validate.

The page is three static files in `data/docs/`, served by the sandbox itself (no CDN:
it must work offline). It reads this document and can send requests ("try it").
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterable
from importlib import metadata, resources
from typing import Any

from aiohttp import web

from .api.merchant import PREFIXES, SCENARIO_HEADER
from .api.middleware import HEALTH_PATH
from .config import MAX_BODY_BYTES
from .domain.accounts import DEFAULT_SIGNATURE_HEADERS
from .domain.catalog import FIELD_TYPES, PRODUCT_TYPES
from .domain.deliveries import MAX_ATTEMPTS, RETRY_INTERVAL
from .domain.order_request import MAX_MERCHANT_ORDER_ID
from .domain.orders import STATUSES, TERMINAL
from .domain.plants import PLANT_STATUSES
from .domain.tokens import TOKEN_LIFETIME

Schema = dict[str, Any]

#: Served by the sandbox but not described in the document: the document and its page.
DOCUMENT_PATHS = ("/openapi.json", "/docs", "/docs/app.js", "/docs/style.css")

PRIMARY_PREFIX = PREFIXES[0]
TERMINAL_STATUSES = [status for status in STATUSES if status in TERMINAL]
DELIVERY_STATUSES = ["pending", "retrying", "delivered", "failed"]
YAML_MEDIA_TYPE = "application/yaml"
MERCHANT_AUTH = [{"bearerAuth": []}]
ADMIN_AUTH = [{"adminToken": []}, {}]  # the admin token only when --admin-token is set
NO_AUTH: list[dict[str, list[str]]] = []

# -- schema helpers -----------------------------------------------------------------------


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def _typed(type_: str, description: str | None, **keywords: Any) -> Schema:
    schema: Schema = {"type": type_, **keywords}
    if description:
        schema["description"] = description
    return schema


def string(description: str | None = None, **keywords: Any) -> Schema:
    return _typed("string", description, **keywords)


def integer(description: str | None = None, **keywords: Any) -> Schema:
    return _typed("integer", description, **keywords)


def number(description: str | None = None, **keywords: Any) -> Schema:
    return _typed("number", description, **keywords)


def boolean(description: str | None = None, **keywords: Any) -> Schema:
    return _typed("boolean", description, **keywords)


def array(items: Schema, description: str | None = None, **keywords: Any) -> Schema:
    return _typed("array", description, items=items, **keywords)


def enum(values: Iterable[str], description: str | None = None) -> Schema:
    return string(description, enum=list(values))


def nullable(schema: Schema) -> Schema:
    """`schema` or null: a type array for a plain type, `oneOf` around a `$ref`."""
    if isinstance(schema.get("type"), str):
        result = dict(schema, type=[schema["type"], "null"])
        if "enum" in result:
            result["enum"] = [*result["enum"], None]
        return result
    return {"oneOf": [schema, {"type": "null"}]}


def obj(
    properties: dict[str, Schema],
    required: Iterable[str] | None = None,
    *,
    extra: bool | Schema = False,
    description: str | None = None,
) -> Schema:
    """An object with these properties. Every property is required unless `required`
    says otherwise (responses always carry all their fields); `extra` is what
    `additionalProperties` allows (nothing, by default)."""
    schema = _typed("object", description, properties=properties)
    schema["required"] = list(properties) if required is None else list(required)
    if not schema["required"]:
        del schema["required"]
    if extra is not True:
        schema["additionalProperties"] = extra
    return schema


def money(description: str) -> Schema:
    return number(f"{description} Major currency units, at most 2 decimals.", minimum=0)


def timestamp(description: str) -> Schema:
    return string(
        f"{description} ISO 8601 UTC with milliseconds and `Z`, on the virtual clock.",
        format="date-time",
    )


def uuid(description: str) -> Schema:
    return string(description, format="uuid")


def envelope(*codes: str) -> Schema:
    """The error envelope `{detail, code}` with `code` limited to `codes`."""
    code = {"const": codes[0]} if len(codes) == 1 else {"enum": list(codes)}
    return {"allOf": [ref("Error"), {"properties": {"code": code}}]}


# -- response and operation helpers -------------------------------------------------------


def json_content(schema: Schema, example: Any = None) -> dict[str, Any]:
    media: dict[str, Any] = {"schema": schema}
    if example is not None:
        media["example"] = example
    return {"application/json": media}


def response(
    description: str,
    schema: Schema | None = None,
    *,
    example: Any = None,
    headers: dict[str, Any] | None = None,
) -> dict[str, Any]:
    result: dict[str, Any] = {"description": description}
    if headers:
        result["headers"] = headers
    if schema is not None:
        result["content"] = json_content(schema, example)
    return result


def error(description: str, *codes: str) -> dict[str, Any]:
    return response(description, envelope(*codes))


def use(name: str) -> dict[str, str]:
    """A response defined once under `components/responses`."""
    return {"$ref": f"#/components/responses/{name}"}


def body(
    schema: Schema,
    example: Any = None,
    *,
    required: bool = True,
    yaml: bool = False,
) -> dict[str, Any]:
    """A request body: JSON, and YAML too for configuration documents."""
    content = json_content(schema, example)
    if yaml:
        content[YAML_MEDIA_TYPE] = {"schema": schema}
    return {"required": required, "content": content}


def path_param(name: str, description: str, schema: Schema | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": schema or string(),
    }


def query_param(name: str, description: str, schema: Schema) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
    }


def operation(
    operation_id: str,
    summary: str,
    *,
    tag: str,
    responses: dict[str, Any],
    description: str | None = None,
    security: list[dict[str, list[str]]] = NO_AUTH,
    parameters: Iterable[dict[str, Any]] = (),
    request_body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    op: dict[str, Any] = {"operationId": operation_id, "summary": summary, "tags": [tag]}
    if description:
        op["description"] = description
    op["security"] = security
    if parameters:
        op["parameters"] = list(parameters)
    if request_body is not None:
        op["requestBody"] = request_body
    op["responses"] = responses
    return op


def merchant_errors(*, reads_body: bool, authenticated: bool = True) -> dict[str, Any]:
    """Responses every merchant operation can give besides its own."""
    errors: dict[str, Any] = {}
    if authenticated:
        errors["401"] = use("NotAuthenticated")
    errors["405"] = use("MethodNotAllowed")
    if reads_body:
        errors["413"] = use("PayloadTooLarge")
    errors["5XX"] = use("InternalError")
    return errors


def control_errors(*, reads_body: bool = False, protected: bool = True) -> dict[str, Any]:
    """Responses every `/_mock` operation can give besides its own."""
    errors: dict[str, Any] = {}
    if reads_body:
        errors["400"] = use("ValidationError")
    if protected:
        errors["401"] = use("AdminNotAuthenticated")
    errors["405"] = use("MethodNotAllowed")
    if reads_body:
        errors["413"] = use("PayloadTooLarge")
    errors["5XX"] = use("InternalError")
    return errors


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
            "the sandbox, DESIGN section 4). A scripted `drop` stays `pending`.",
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


def _merchant_schemas() -> dict[str, Schema]:
    hours = TOKEN_LIFETIME / 3600
    return {
        "Error": obj(
            {
                "detail": string("Human-readable; may change. Says what to change."),
                "code": string("Stable machine-readable code: branch on this."),
            },
            description="The error envelope (spec 2.6).",
        ),
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
                "status": nullable(enum(PLANT_STATUSES)),
            },
            required=["id"],
            extra=True,
            description="Spec 2.4, plus the integer `id` its 400 and 404 need (DESIGN 4). "
            "Absent or null fields are left unchanged.",
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


def _account_properties() -> dict[str, Schema]:
    return {
        "id": uuid("The id `GET .../account/me` returns and orders carry as `created_by.id`."),
        "email": string(),
        "api_keys": array(string(pattern="^ak_"), "Keys that exchange for a token."),
        "balance": money("Balance."),
        "has_active_subscription": boolean(),
        "webhook_url": nullable(string("Where order-result webhooks go; null: none sent.")),
        "webhook_secret": string("The `whsec_` secret that signs webhooks.", pattern="^whsec_"),
        "signature_headers": array(string(), "Headers that carry the signature."),
    }


def _account_input(*, key_required: bool) -> Schema:
    header_names = array(
        string(pattern="^[A-Za-z0-9!#$%&'*+.^_`|~-]+$"),
        f"Default: {', '.join(DEFAULT_SIGNATURE_HEADERS)}.",
    )
    schema = obj(
        {
            "email": string("Unique.", pattern="^[^@\\s]+@[^@\\s]+$"),
            "api_key": string("Prefix `ak_`; generated when absent.", pattern="^ak_.+"),
            "api_keys": array(string(pattern="^ak_.+"), "Several keys.", minItems=1),
            "balance": number("Major units, at most 2 decimals; default 0.", minimum=0),
            "has_active_subscription": boolean(),
            "webhook_url": nullable(string("An http(s) URL.", pattern="^https?://")),
            "webhook_secret": string(
                "Prefix `whsec_`; generated when absent.", pattern="^whsec_.+"
            ),
            "id": nullable(uuid("Taken from the random sequence when absent.")),
            "signature_headers": header_names,
        },
        required=["email"],
        description="An accounts-file entry (DESIGN 5.2).",
    )
    if key_required:
        schema["anyOf"] = [{"required": ["api_key"]}, {"required": ["api_keys"]}]
    return schema


def _control_account_schemas() -> dict[str, Schema]:
    account = _account_properties()
    patch = {
        key: value
        for key, value in _account_input(key_required=False)["properties"].items()
        if key
        in (
            "balance",
            "has_active_subscription",
            "webhook_url",
            "webhook_secret",
            "signature_headers",
        )
    }
    return {
        "AdminAccount": obj(account, description="An account as the control API shows it."),
        "CreatedAccount": obj(
            account | {"api_key": string("Its first key, ready to exchange.")},
            description="A new account, generated key and secret included.",
        ),
        "AccountList": obj({"accounts": array(ref("AdminAccount"))}),
        "AccountInput": _account_input(key_required=False),
        "AccountsDocument": obj(
            {"accounts": array(_account_input(key_required=True), minItems=1)},
            extra=True,
            description="An accounts file's content (DESIGN 5.2).",
        ),
        "AccountPatch": obj(patch, required=[]),
        "Ledger": obj(
            {
                "account_id": uuid("The account."),
                "opening_balance": money("Balance at startup or creation."),
                "balance": money("Balance now."),
                "entries": array(ref("LedgerEntry")),
                "conserved": boolean(
                    "opening balance + adjustments - charges + refunds == balance."
                ),
            }
        ),
        "LedgerEntry": obj(
            {
                "kind": enum(("charge", "refund", "adjustment")),
                "amount": number("Signed, major units."),
                "balance_after": number("Major units."),
                "order_id": nullable(uuid("The order; null for adjustments.")),
                "at": timestamp("When."),
            }
        ),
        "IssuedApiKey": obj({"api_key": string(pattern="^ak_"), "account_id": string()}),
        "RevokedApiKey": obj({"revoked": string()}),
    }


def _catalog_schemas() -> dict[str, Schema]:
    option = obj(
        {"id": integer(), "name": string("Label (the feed may call it `label`).")},
        required=["id"],
        extra=True,
    )
    field = obj(
        {"name": string(minLength=1), "type": enum(FIELD_TYPES), "options": array(option)},
        required=["name", "type"],
        extra=True,
        description="An item input field: the value is a string for `text`, the numeric "
        "option id for `choice`.",
    )
    cents = "Integer cents."
    item_properties = {
        "id": integer("The value to send as `item_id`.", minimum=1),
        "name": string(minLength=1),
        "product_type": enum(PRODUCT_TYPES),
        "price": integer(f"Per-unit price. {cents}", minimum=0),
        "base_price": integer(f"List price. {cents}", minimum=0),
        "subscriber_price": integer(f"Per-unit price for subscribers. {cents}", minimum=0),
        "amount_per_price": number("Top-ups: what one unit delivers.", exclusiveMinimum=0),
        "min_quantity": number(exclusiveMinimum=0),
        "max_quantity": number(exclusiveMinimum=0),
        "in_stock": boolean(),
        "fields": array(field),
        "stock": nullable(
            integer("Mock-only: key items' units left; absent = unlimited.", minimum=0)
        ),
        "client_code": boolean("Mock-only: a login top-up that stops in need_client_code."),
    }
    always = [key for key in item_properties if key not in ("stock", "client_code")]
    item = obj(
        item_properties,
        required=always,
        extra=True,
        description="Spec 2.2, plus mock-only keys; unknown keys are kept.",
    )
    item_input = obj(
        item_properties,
        required=["id", "name", "product_type", "price"],
        extra=True,
        description="A feed record; unknown keys are kept and ignored.",
    )
    return {
        "CatalogItem": item,
        "CatalogItemInput": item_input,
        "Catalog": obj({"items": array(ref("CatalogItem"))}),
        "CatalogDocument": {
            "oneOf": [
                obj({"items": array(ref("CatalogItemInput"))}, extra=True),
                array(ref("CatalogItemInput")),
            ],
            "description": 'A catalog snapshot: `{"items": [...]}` or a bare array.',
        },
        "CatalogItemPatch": obj(
            {
                "price": integer(cents, minimum=0),
                "in_stock": boolean(),
                "stock": nullable(integer("Key items only; null: unlimited.", minimum=0)),
            },
            required=[],
        ),
    }


def _scenario_schemas() -> dict[str, Schema]:
    duration = {
        "oneOf": [
            number("Seconds.", minimum=0),
            string("`500ms`, `2s`, `5m`, `1h`.", pattern="^\\s*\\d+(\\.\\d+)?\\s*(ms|s|m|h)?\\s*$"),
        ]
    }
    step = obj(
        {
            "after": duration | {"description": "Since the previous step (or creation)."},
            "status": enum(STATUSES[1:]),
            "deliver": {
                "oneOf": [
                    number("Units delivered in total.", exclusiveMinimum=0),
                    string(
                        "`all` or a percentage such as `50%`.",
                        pattern="^(all|\\s*\\d+(\\.\\d+)?\\s*%\\s*)$",
                    ),
                ]
            },
            "error": string("UPPER_SNAKE_CASE code.", pattern="^([A-Z][A-Z0-9_]{0,63})?$"),
            "error_message": string(),
            "expect_code": {"type": ["string", "integer", "null"]},
            "webhook": nullable(
                obj(
                    {
                        "duplicate": integer(minimum=0, maximum=10),
                        "delay": duration,
                        "drop": boolean(),
                    },
                    required=[],
                    description="Chaos for the terminal event.",
                )
            ),
        },
        required=["status"],
    )
    scenario = obj(
        {
            "name": string(pattern="^[A-Za-z0-9_.-]{1,64}$"),
            "description": string(),
            "match": nullable(
                obj(
                    {
                        "merchant_order_id": string("A regular expression."),
                        "item_id": nullable(integer()),
                        "product_type": nullable(enum(PRODUCT_TYPES)),
                        "quantity_min": nullable(number()),
                    },
                    required=[],
                    description="Automatic selection; every key given must hold.",
                )
                | {"minProperties": 1}
            ),
            "steps": array(step, minItems=1),
            "pricing": nullable(
                {
                    "oneOf": [
                        obj({"delta_percent": number(exclusiveMinimum=-100)}),
                        obj({"unit_price": integer("Cents.", minimum=0)}),
                    ]
                }
            ),
        },
        required=["name", "steps"],
        description="A fulfillment script (DESIGN section 6, docs/scenarios.md).",
    )
    pricing_view = obj(
        {"delta_percent": nullable(number()), "unit_price": nullable(integer(minimum=0))}
    )
    return {
        "ScenarioInput": scenario,
        "ScenarioDocument": {
            "oneOf": [
                obj({"scenarios": array(ref("ScenarioInput"), minItems=1)}),
                array(ref("ScenarioInput"), minItems=1),
                ref("ScenarioInput"),
            ],
            "description": 'A scenario file\'s content: `{"scenarios": [...]}`, a list, or '
            "one scenario.",
        },
        "Scenario": obj(
            {
                "name": string(),
                "description": string(),
                "source": string("File and line; `request body` when loaded over HTTP."),
                "steps": array(
                    obj(
                        {
                            "after": number("Seconds since the previous step.", minimum=0),
                            "status": enum(STATUSES[1:]),
                            "error": string(),
                        }
                    )
                ),
                "match": boolean("Whether it has automatic selection."),
                "pricing": nullable(pricing_view),
            }
        ),
        "QueueEntry": obj(
            {
                "scenario": string(),
                "account_id": nullable(string("Only this account's orders; null: any.")),
                "remaining": nullable(integer("Orders left; null: every order.", minimum=0)),
            }
        ),
        "QueueRequest": obj(
            {
                "scenario": string("A loaded scenario's name."),
                "account_id": nullable(string("Only this account's orders.")),
                "count": nullable(integer("Default 1; null: every order.", minimum=1)),
                "replace": boolean("First drop what was queued for the same account."),
            },
            required=["scenario"],
            extra=True,
        ),
        "ScenarioList": obj(
            {"scenarios": array(ref("Scenario")), "queue": array(ref("QueueEntry"))}
        ),
        "LoadedScenarios": obj({"loaded": array(string())}),
    }


def _inspection_schemas() -> dict[str, Schema]:
    attempt = obj(
        {
            "at": timestamp("When it was made."),
            "status_code": nullable(integer("The receiver's status; null: no answer.")),
            "error": nullable(string("Why it failed without an answer.")),
            "duration_ms": number("Wall time.", minimum=0),
            "manual": boolean("A `/_mock` redelivery, outside the retry schedule."),
        }
    )
    return {
        "Clock": obj(
            {
                "now": timestamp("Virtual time."),
                "mode": enum(("manual", "real")),
                "time_scale": number(exclusiveMinimum=0),
            }
        ),
        "Jobs": obj(
            {
                "pending": integer("Jobs waiting on the clock.", minimum=0),
                "failures": array(
                    obj(
                        {
                            "job": string("What the job was doing."),
                            "owner": string("The account it belonged to."),
                            "due": timestamp("When it was due."),
                            "error": string("The exception, one line."),
                        }
                    )
                ),
            }
        ),
        "ResetResult": obj(
            {
                "status": string(const="reset"),
                "now": timestamp("Virtual time."),
                "mode": enum(("manual", "real")),
                "time_scale": number(exclusiveMinimum=0),
                "seed": integer(),
            }
        ),
        "OrderList": obj({"orders": array(ref("Order"))}),
        "OrderDetail": obj(
            {
                "order": ref("Order"),
                "account_id": uuid("The owner."),
                "scenario": string("The scenario that drives it."),
                "history": array(obj({"status": enum(STATUSES), "at": timestamp("Entered at.")})),
                "deliveries": array(ref("Delivery")),
            }
        ),
        "Delivery": obj(
            {
                "id": uuid("Delivery id."),
                "order_id": uuid("The order."),
                "account_id": uuid("The account."),
                "copy": integer("0 for the event, 1.. for scripted duplicates.", minimum=0),
                "url": nullable(string("Where the last attempt went.")),
                "status": enum([*DELIVERY_STATUSES, "dropped"]),
                "body": string("The exact bytes sent, as text."),
                "headers": obj({}, extra=string(), description="Of the last attempt."),
                "attempts": array(attempt),
                "next_attempt_at": nullable(timestamp("Next automatic retry.")),
            }
        ),
        "DeliveryList": obj({"deliveries": array(ref("Delivery"))}),
        "Fault": obj(
            {
                "id": integer(minimum=1),
                "method": string("An HTTP method or `*`."),
                "path": string("A path or `fnmatch` pattern."),
                "status": integer(minimum=400, maximum=599),
                "times": nullable(integer("Uses left; null: always.", minimum=1)),
                "latency_ms": integer(minimum=0, maximum=60000),
                "after_commit": boolean(),
            }
        ),
        "FaultInput": obj(
            {
                "method": string("An HTTP method, or `*` (default).", minLength=1),
                "path": string(
                    "Path or `fnmatch` pattern such as `/api/v1/orders/*`; not under `/_mock`.",
                    pattern="^/(?!_mock)",
                ),
                "status": integer("Default 500.", minimum=400, maximum=599),
                "times": nullable(integer("Omit for always.", minimum=1, maximum=1_000_000)),
                "latency_ms": integer("Wall-clock delay.", minimum=0, maximum=60000),
                "after_commit": boolean("Run the real call first, then answer the error."),
            },
            required=["path"],
        ),
        "FaultList": obj({"faults": array(ref("Fault"))}),
        "JournalEntry": obj(
            {
                "method": string(),
                "path": string(),
                "status": integer("The status the caller got."),
                "body": string("Request body as text, cut at 4096 characters."),
                "time": timestamp("When."),
            }
        ),
        "Journal": obj({"requests": array(ref("JournalEntry"), "Newest first.")}),
    }


def _schemas() -> dict[str, Schema]:
    return (
        _merchant_schemas()
        | _order_schemas()
        | _control_account_schemas()
        | _catalog_schemas()
        | _scenario_schemas()
        | _inspection_schemas()
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
                        envelope("validation_error", "insufficient_balance"),
                        ref("PriceMismatchError"),
                    ]
                },
            ),
            **merchant_errors(reads_body=True),
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


# -- control operations ---------------------------------------------------------------------


def control(
    operation_id: str,
    summary: str,
    tag: str,
    ok: tuple[str, str, Schema],
    *,
    description: str | None = None,
    request_body: dict[str, Any] | None = None,
    parameters: Iterable[dict[str, Any]] = (),
    errors: dict[str, Any] | None = None,
    protected: bool = True,
) -> dict[str, Any]:
    """A `/_mock` operation: `ok` is (status, description, schema) of its success."""
    status, ok_description, schema = ok
    reads_body = request_body is not None
    responses = {status: response(ok_description, schema)}
    responses |= control_errors(reads_body=reads_body, protected=protected) | (errors or {})
    return operation(
        operation_id,
        summary,
        tag=f"Control: {tag}",
        description=description,
        security=ADMIN_AUTH if protected else NO_AUTH,
        parameters=parameters,
        request_body=request_body,
        responses=dict(sorted(responses.items())),
    )


def not_found(what: str) -> dict[str, Any]:
    return {"404": error(f"No such {what}.", "not_found")}


def bad_request(description: str) -> dict[str, Any]:
    return {"400": error(description, "validation_error")}


ACCOUNT_ID = path_param("account_id", "Account id.")


def _control_basics() -> dict[str, dict[str, Any]]:
    health = control(
        "mockHealth",
        "Health check",
        "health and reset",
        ("200", "Serving.", obj({"status": string(const="ok")})),
        description="Readiness probe; open even with `--admin-token`.",
        protected=False,
    )
    reset = control(
        "mockReset",
        "Back to the startup state",
        "health and reset",
        ("200", "Reset done.", ref("ResetResult")),
        description="Accounts, balances, catalog and stock, clock, orders, deliveries, "
        "tokens, scenario queue, run-time scenarios, faults and journal. An optional seed "
        "and start time apply to this reset only.",
        request_body=body(
            obj(
                {
                    "seed": nullable(integer("Restart the random sequence from this seed.")),
                    "start_time": nullable(
                        string("ISO 8601; restart the virtual clock here (no zone: UTC).")
                    ),
                },
                required=[],
                extra=True,
            ),
            {"seed": 42, "start_time": "2026-01-01T00:00:00Z"},
            required=False,
        ),
    )
    read_clock = control(
        "mockReadClock", "Read the clock", "clock", ("200", "The clock.", ref("Clock"))
    )
    advance = control(
        "mockAdvanceClock",
        "Advance the clock",
        "clock",
        ("200", "Everything due has run.", obj({"now": timestamp("The new time.")})),
        description="Moves virtual time forward and runs, in time order, every fulfillment "
        "step and webhook attempt that falls due (deliveries awaited), then answers.",
        request_body=body(
            obj({"seconds": number("Seconds, >= 0.", minimum=0)}, extra=True),
            {"seconds": 5},
        ),
    )
    jobs = control(
        "mockReadJobs",
        "Background work",
        "clock",
        ("200", "Pending jobs and recent failures.", ref("Jobs")),
        description="How many scheduled jobs (fulfillment steps, webhook attempts) wait on "
        "the clock, and the last 100 that raised: a crashed job is logged and shown here, "
        "never lost. The pytest plugin fails a test whose sandbox recorded one.",
    )
    return {
        HEALTH_PATH: {"get": health},
        "/_mock/reset": {"post": reset},
        "/_mock/clock": {"get": read_clock},
        "/_mock/clock/advance": {"post": advance},
        "/_mock/jobs": {"get": jobs},
    }


def _control_accounts() -> dict[str, dict[str, Any]]:
    tag = "accounts"
    return {
        "/_mock/accounts": {
            "get": control(
                "mockListAccounts",
                "List accounts",
                tag,
                ("200", "Every account, in creation order.", ref("AccountList")),
            ),
            "post": control(
                "mockCreateAccount",
                "Create an account",
                tag,
                ("201", "The account.", ref("CreatedAccount")),
                request_body=body(ref("AccountInput"), {"email": "ci@example.com", "balance": 100}),
                errors={
                    "409": error("An account with that email, key or id exists.", "already_exists")
                },
            ),
            "put": control(
                "mockReplaceAccounts",
                "Replace every account",
                tag,
                ("200", "The new accounts.", ref("AccountList")),
                description="Orders, deliveries, tokens and ledger entries of the old "
                "accounts go with them; the catalog stays. JSON or YAML.",
                request_body=body(
                    ref("AccountsDocument"),
                    {"accounts": [{"email": "shop@example.com", "api_key": "ak_shop_1"}]},
                    yaml=True,
                ),
            ),
        },
        "/_mock/accounts/{account_id}": {
            "get": control(
                "mockReadAccount",
                "Read an account",
                tag,
                ("200", "The account.", ref("AdminAccount")),
                parameters=[ACCOUNT_ID],
                errors=not_found("account"),
            ),
            "patch": control(
                "mockPatchAccount",
                "Change an account",
                tag,
                ("200", "The account.", ref("AdminAccount")),
                description="A new `balance` is recorded in the ledger as an adjustment. "
                "Nothing changes unless every field is valid.",
                parameters=[ACCOUNT_ID],
                request_body=body(ref("AccountPatch"), {"balance": 500}),
                errors=not_found("account"),
            ),
        },
        "/_mock/accounts/{account_id}/ledger": {
            "get": control(
                "mockReadLedger",
                "Read an account's ledger",
                tag,
                ("200", "Every balance movement.", ref("Ledger")),
                parameters=[ACCOUNT_ID],
                errors=not_found("account"),
            ),
        },
        "/_mock/accounts/{account_id}/api-keys": {
            "post": control(
                "mockIssueApiKey",
                "Issue another API key",
                tag,
                ("201", "The new key.", ref("IssuedApiKey")),
                parameters=[ACCOUNT_ID],
                errors=not_found("account"),
            ),
        },
        "/_mock/api-keys/{key}": {
            "delete": control(
                "mockRevokeApiKey",
                "Revoke an API key",
                tag,
                (
                    "200",
                    "Revoked: it no longer exchanges, its tokens stop working.",
                    ref("RevokedApiKey"),
                ),
                parameters=[path_param("key", "The API key.")],
                errors=not_found("API key"),
            ),
        },
    }


def _control_catalog() -> dict[str, dict[str, Any]]:
    tag = "catalog"
    return {
        "/_mock/catalog": {
            "get": control(
                "mockReadCatalog",
                "Read the catalog",
                tag,
                ("200", "The live snapshot, prices in cents.", ref("Catalog")),
            ),
            "put": control(
                "mockReplaceCatalog",
                "Replace the catalog",
                tag,
                ("200", "The new catalog.", ref("Catalog")),
                description="Same checks as `--catalog`; JSON or YAML.",
                request_body=body(
                    ref("CatalogDocument"),
                    {
                        "items": [
                            {
                                "id": 1005,
                                "name": "PlayStation Store $10 (US)",
                                "product_type": "key",
                                "price": 1000,
                            }
                        ]
                    },
                    yaml=True,
                ),
            ),
        },
        "/_mock/catalog/items/{item_id}": {
            "patch": control(
                "mockPatchCatalogItem",
                "Change one item",
                tag,
                ("200", "The item.", ref("CatalogItem")),
                parameters=[path_param("item_id", "Item id.", integer(minimum=1))],
                request_body=body(ref("CatalogItemPatch"), {"in_stock": True, "stock": 2}),
                errors=not_found("item"),
            ),
        },
    }


def _control_scenarios() -> dict[str, dict[str, Any]]:
    tag = "scenarios"
    example = {
        "name": "fast_fail",
        "description": "Fails at once.",
        "steps": [{"after": "500ms", "status": "failed", "error": "PROVIDER_DOWN"}],
    }
    return {
        "/_mock/scenarios": {
            "get": control(
                "mockListScenarios",
                "List scenarios and the queue",
                tag,
                ("200", "Loaded scenarios and queued entries.", ref("ScenarioList")),
            ),
            "post": control(
                "mockLoadScenarios",
                "Load scenarios",
                tag,
                ("201", "Their names.", ref("LoadedScenarios")),
                description="A scenario with the name of a loaded one replaces it. All or "
                "nothing. JSON or YAML.",
                request_body=body(ref("ScenarioDocument"), {"scenarios": [example]}, yaml=True),
            ),
        },
        "/_mock/scenarios/next": {
            "post": control(
                "mockQueueScenario",
                "Queue a scenario for the next orders",
                tag,
                ("201", "The queue entry.", ref("QueueEntry")),
                description=f"The `{SCENARIO_HEADER}` header still wins over the queue.",
                request_body=body(ref("QueueRequest"), {"scenario": "timeout_partial"}),
                errors=not_found("account"),
            ),
        },
    }


def _control_inspection() -> dict[str, dict[str, Any]]:
    status_filter = query_param("status", "Only orders in this status.", enum(STATUSES))
    return {
        "/_mock/orders": {
            "get": control(
                "mockListOrders",
                "List every order",
                "orders",
                ("200", "Orders of every account, in creation order.", ref("OrderList")),
                parameters=[
                    query_param("account_id", "Only this account's.", string()),
                    status_filter,
                    query_param("merchant_order_id", "Exactly this reference.", string()),
                ],
                errors=bad_request("An unknown `status`."),
            )
        },
        "/_mock/orders/{order_id}": {
            "get": control(
                "mockReadOrder",
                "Read an order with its history and deliveries",
                "orders",
                ("200", "The order, owner, scenario, history and deliveries.", ref("OrderDetail")),
                parameters=[ORDER_ID],
                errors=not_found("order"),
            )
        },
        "/_mock/webhooks": {
            "get": control(
                "mockListWebhooks",
                "List webhook deliveries",
                "webhooks",
                ("200", "Every delivery, in creation order.", ref("DeliveryList")),
                parameters=[query_param("order_id", "Only this order's.", string())],
            )
        },
        "/_mock/webhooks/{delivery_id}/redeliver": {
            "post": control(
                "mockRedeliverWebhook",
                "Send a delivery again, now",
                "webhooks",
                ("200", "The delivery, the new attempt appended.", ref("Delivery")),
                description="One extra attempt to the account's current URL and secret; "
                "no retries of its own.",
                parameters=[path_param("delivery_id", "Delivery id.")],
                errors=not_found("delivery"),
            )
        },
        "/_mock/faults": {
            "get": control(
                "mockListFaults",
                "List faults",
                "faults",
                ("200", "Active faults, in the order added.", ref("FaultList")),
            ),
            "post": control(
                "mockAddFault",
                "Inject a fault into the merchant API",
                "faults",
                ("201", "The fault.", ref("Fault")),
                request_body=body(
                    ref("FaultInput"),
                    {"method": "GET", "path": "/api/v1/orders/*", "status": 503, "times": 1},
                ),
            ),
            "delete": control(
                "mockClearFaults",
                "Clear every fault",
                "faults",
                ("200", "None left.", obj({"faults": array(ref("Fault"), maxItems=0)})),
            ),
        },
        "/_mock/requests": {
            "get": control(
                "mockListRequests",
                "Read the request journal",
                "request journal",
                ("200", "The last merchant API calls, newest first.", ref("Journal")),
                parameters=[query_param("limit", "Keep the newest N.", integer(minimum=0))],
                errors=bad_request("A `limit` that is not a non-negative integer."),
            )
        },
    }


# -- the document -----------------------------------------------------------------------------

TAGS = [
    ("Authentication", "Token exchange (spec 4.1, 5)."),
    ("Account", "Balance and account read (spec 4.2, 4.4)."),
    ("Orders", "Order placement, lookup and client codes (spec 4.3-4.5)."),
    ("Plant demo", "The separate plant demo operation (spec 4.6)."),
    ("Control: health and reset", "Mock-only control API (`/_mock`)."),
    ("Control: clock", "The virtual clock."),
    ("Control: accounts", "Accounts, API keys and ledgers."),
    ("Control: catalog", "The catalog snapshot."),
    ("Control: scenarios", "Fulfillment scripts and the queue."),
    ("Control: orders", "Every order, with history."),
    ("Control: webhooks", "Webhook deliveries and their attempts."),
    ("Control: faults", "Faults injected into the merchant API."),
    ("Control: request journal", "The merchant API calls answered."),
]

DESCRIPTION = f"""\
A high-fidelity sandbox of the digital-goods ordering service.

**Merchant API** (spec section 4): every operation is served under `{PREFIXES[0]}` and,
identically, under `{PREFIXES[1]}` (operationIds of the second carry a `V1` suffix).
Everything but the token exchange and the plant demo needs
`Authorization: Bearer <access token>`.
Errors use the envelope `{{"detail", "code"}}`: branch on `code`. The token endpoint
answers `{{"error"}}` instead. Any path not listed here is 404 `not_found`; a listed path
called with another method is 405 `method_not_allowed` with an `Allow` header; a body
over 1 MiB is 413 `payload_too_large`. A 4xx means nothing was created or charged.

**Control API** (`/_mock`, mock-only): sets up and inspects the sandbox. Open unless the
sandbox runs with `--admin-token`, then it needs `Authorization: Bearer <admin token>`
(except `{HEALTH_PATH}`). The `{SCENARIO_HEADER}` header on order creation is the only
other mock-only addition.

Every answer carries CORS headers. Where the spec is silent, `docs/fidelity.md` says
what the sandbox chose.
"""


def _webhooks() -> dict[str, Any]:
    signature = {
        "schema": string(pattern="^sha256=[0-9a-f]{64}$"),
        "description": "HMAC-SHA256 of the raw body with the account's `whsec_` secret.",
    }
    retries = MAX_ATTEMPTS - 1
    return {
        "orderResult": {
            "post": {
                "operationId": "orderResultWebhook",
                "summary": "Order-result event",
                "description": "Sent to the account's webhook URL when an API-placed order "
                f"settles (spec 6). Only 200 is a success; otherwise up to {retries} "
                f"retries, {RETRY_INTERVAL:g} s apart (virtual clock). Dedupe on `order_id`.",
                "tags": ["Orders"],
                "parameters": [
                    {"name": name, "in": "header", "required": False, **signature}
                    for name in DEFAULT_SIGNATURE_HEADERS
                ],
                "requestBody": body(ref("OrderEvent")),
                "responses": {"200": {"description": "Received."}},
            }
        }
    }


def _version() -> str:
    try:
        return metadata.version("ordering-sandbox")
    except metadata.PackageNotFoundError:
        return "0.0.0"


@functools.cache
def build_openapi() -> dict[str, Any]:
    """The whole document (built once; treat it as read-only)."""
    paths = (
        _merchant_paths()
        | _plant_paths()
        | _control_basics()
        | _control_accounts()
        | _control_catalog()
        | _control_scenarios()
        | _control_inspection()
    )
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Ordering sandbox",
            "version": _version(),
            "description": DESCRIPTION,
            "license": {"name": "MIT", "identifier": "MIT"},
        },
        "servers": [{"url": "/", "description": "This sandbox"}],
        "tags": [{"name": name, "description": text} for name, text in TAGS],
        "paths": paths,
        "webhooks": _webhooks(),
        "components": {
            "schemas": _schemas(),
            "responses": _responses(),
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An access token from the token exchange.",
                },
                "adminToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The `--admin-token`; needed only when one is set.",
                },
            },
        },
    }


@functools.cache
def _document_bytes() -> bytes:
    return json.dumps(build_openapi(), indent=2, ensure_ascii=False).encode("utf-8")


# -- HTTP handlers -------------------------------------------------------------------------

#: The page makes no request anywhere but this sandbox.
PAGE_SECURITY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_PAGE_FILES = {
    "/docs": ("index.html", "text/html"),
    "/docs/app.js": ("app.js", "text/javascript"),
    "/docs/style.css": ("style.css", "text/css"),
}


@functools.cache
def _page_file(name: str) -> bytes:
    return (resources.files("mock_server") / "data" / "docs" / name).read_bytes()


async def serve_openapi(request: web.Request) -> web.Response:
    return web.Response(body=_document_bytes(), content_type="application/json")


async def serve_docs_file(request: web.Request) -> web.Response:
    name, content_type = _PAGE_FILES[request.path]
    return web.Response(
        body=_page_file(name),
        content_type=content_type,
        charset="utf-8",
        headers={"Content-Security-Policy": PAGE_SECURITY, "Cache-Control": "no-cache"},
    )


def add_routes(app: web.Application) -> None:
    app.router.add_get("/openapi.json", serve_openapi)
    for path in _PAGE_FILES:
        app.router.add_get(path, serve_docs_file)
