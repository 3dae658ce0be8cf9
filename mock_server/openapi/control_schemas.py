"""The control API's (`/_mock`) component schemas: accounts, the catalog, scenarios, and
what inspection returns."""

from __future__ import annotations

from ..domain.accounts import DEFAULT_SIGNATURE_HEADERS
from ..domain.catalog import FIELD_TYPES, PRODUCT_TYPES
from ..domain.faults import MAX_METHOD, MAX_PATH
from ..domain.statuses import STATUSES
from .schema_helpers import (
    DELIVERY_STATUSES,
    Schema,
    array,
    boolean,
    enum,
    integer,
    money,
    nullable,
    number,
    obj,
    ref,
    string,
    timestamp,
    uuid,
)


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
        description="An accounts-file entry (`--accounts`).",
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
            description="An accounts file's content (`--accounts`), as JSON.",
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
                        "retry": array(
                            duration,
                            maxItems=3,
                            description="The gaps between attempts after a non-200; "
                            "default the spec's 60 s, 60 s, 60 s.",
                        ),
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
                        "item_id": nullable({"oneOf": [integer(), array(integer(), minItems=1)]}),
                        "product_type": nullable(enum(PRODUCT_TYPES)),
                        "quantity_min": nullable(number()),
                    },
                    required=[],
                    description="Automatic selection; every key given must hold.",
                )
                | {"minProperties": 1}
            ),
            "steps": array(step, minItems=1),
            "weight": nullable(
                number(
                    "Drawn, with this weight, among the weighted scenarios whose match "
                    "(if any) holds, where no header, queue entry or unweighted match "
                    'chose (docs/scenarios.md, "Weighted selection").',
                    exclusiveMinimum=0,
                    maximum=10**15,
                )
            ),
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
        description="A fulfillment script (docs/scenarios.md).",
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
                "weight": nullable(
                    number("Its weight in the draw; null: never drawn.", exclusiveMinimum=0)
                ),
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
                "count": nullable(
                    integer("Default 1; null: every order.", minimum=1, maximum=10**6)
                ),
                "replace": boolean("First drop what was queued for the same account."),
            },
            required=["scenario"],
            extra=True,
        ),
        "ScenarioList": obj(
            {"scenarios": array(ref("Scenario")), "queue": array(ref("QueueEntry"))}
        ),
        "LoadedScenarios": obj({"loaded": array(string())}),
        "ShapesDocument": obj(
            {
                "shapes": obj(
                    {},
                    extra=obj({}, extra=True),
                    description="Per kind of answer (`token`, `token_error`, `balance`, "
                    "`account`, `order`, `order.webhook`, `error`, `error.CODE`, `event`, "
                    "`plant`), its rules: `add`, `drop`, `as`, `values`, `choice_fields` "
                    "(docs/shapes.md).",
                )
            },
            required=["shapes"],
        ),
    }


def _inspection_schemas() -> dict[str, Schema]:
    attempt = obj(
        {
            "at": timestamp("When it was made."),
            "status_code": nullable(integer("The receiver's status; null: no answer.")),
            "error": nullable(string("Why it failed without an answer.")),
            "duration_ms": number("Wall time.", minimum=0),
            "manual": boolean("A `/_mock` redelivery, outside the retry schedule."),
            "via": string(
                "`listener` when a `mock-server listen` made it (docs/webhooks.md); "
                "absent for a direct attempt.",
                const="listener",
            ),
        },
        required=("at", "status_code", "error", "duration_ms", "manual"),
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
                "upcoming": array(
                    obj(
                        {
                            "due": timestamp("When it will run."),
                            "job": string(
                                "What it will do: `order <id> step <n> <status>` or "
                                "`webhook <delivery id> attempt <n> order <order id>`."
                            ),
                            "owner": string("The account it belongs to."),
                        }
                    ),
                    "The next jobs in the order they will run.",
                ),
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
        "Explanation": obj(
            {
                "scenario": nullable(
                    string(
                        "The scenario the order would get; null when it would be drawn "
                        "among weighted scenarios (`candidates`)."
                    )
                ),
                "reason": ref("ScenarioReason"),
                "near_misses": array(
                    obj(
                        {
                            "scenario": string(),
                            "key": string("The first match key that failed."),
                            "why": string("In words."),
                        }
                    )
                ),
                "candidates": array(
                    obj(
                        {
                            "scenario": string(),
                            "weight": number(exclusiveMinimum=0),
                            "share": number(
                                "Its chance in the draw: weight / sum.", minimum=0, maximum=1
                            ),
                        }
                    ),
                    "What the order would be drawn among, in load order; empty when no "
                    "draw would be made.",
                ),
            }
        ),
        "ScenarioReason": obj(
            {
                "source": enum(["header", "queue", "match", "weight", "client_code", "default"]),
                "detail": string("Which header, queue entry, match keys, weighted draw or item."),
            },
            description="How the scenario was chosen (docs/control-api.md).",
        ),
        "OrderList": obj(
            {
                "orders": array(ref("Order"), "The page asked for."),
                "total": integer("Orders matching the filters, on every page.", minimum=0),
            }
        ),
        "OrderDetail": obj(
            {
                "order": ref("Order"),
                "account_id": uuid("The owner."),
                "scenario": string("The scenario that drives it."),
                "scenario_reason": nullable(ref("ScenarioReason")),
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
                "method": string(
                    "An HTTP method, or `*` (default).", minLength=1, maxLength=MAX_METHOD
                ),
                "path": string(
                    "Path or `fnmatch` pattern such as `/api/v1/orders/*`; not under `/_mock`.",
                    pattern="^/(?!_mock)",
                    maxLength=MAX_PATH,
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
