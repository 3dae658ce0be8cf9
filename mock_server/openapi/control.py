"""The control API's operations (`/_mock`, mock-only)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..control.calls import HEALTH_PATH
from ..domain.randomness import MAX_SEED
from ..domain.statuses import STATUSES
from ..merchant.api import SCENARIO_HEADER
from .merchant import ORDER_ID
from .schema_helpers import (
    ADMIN_AUTH,
    NO_AUTH,
    Schema,
    array,
    body,
    control_errors,
    enum,
    error,
    integer,
    nullable,
    number,
    obj,
    operation,
    path_param,
    query_param,
    quota_errors,
    ref,
    response,
    string,
    timestamp,
)

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
                    "seed": nullable(
                        integer(
                            "Restart the random sequence from this seed.",
                            minimum=0,
                            maximum=MAX_SEED,
                        )
                    ),
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
        "the clock, the next ones with their due times, and the last 100 that raised: a "
        "crashed job is logged and shown here, never lost. The pytest plugin fails a test "
        "whose sandbox recorded one.",
        parameters=[
            query_param("upcoming", "How many upcoming jobs to list (20).", integer(minimum=0))
        ],
        errors=bad_request("An `upcoming` that is not a non-negative integer."),
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
                    "409": error("An account with that email, key or id exists.", "already_exists"),
                    **quota_errors("--sandbox-max-accounts", "--sandbox-max-api-keys"),
                },
            ),
            "put": control(
                "mockReplaceAccounts",
                "Replace every account",
                tag,
                ("200", "The new accounts.", ref("AccountList")),
                description="Orders, deliveries, tokens and ledger entries of the old "
                "accounts go with them; the catalog stays. JSON or YAML.",
                errors=quota_errors("--sandbox-max-accounts", "--sandbox-max-api-keys"),
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
                errors={**not_found("account"), **quota_errors("--sandbox-max-adjustments")},
            ),
        },
        "/_mock/accounts/{account_id}/ledger": {
            "get": control(
                "mockReadLedger",
                "Read an account's ledger",
                tag,
                ("200", "Every balance movement.", ref("Ledger")),
                parameters=[
                    ACCOUNT_ID,
                    query_param(
                        "order_id",
                        "Only this order's entries (`conserved` still covers all).",
                        string(),
                    ),
                ],
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
                errors={**not_found("account"), **quota_errors("--sandbox-max-api-keys")},
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
                errors=quota_errors("--sandbox-max-catalog"),
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
                errors=quota_errors("--sandbox-max-scenarios"),
                request_body=body(ref("ScenarioDocument"), {"scenarios": [example]}, yaml=True),
            ),
        },
        "/_mock/scenarios/next": {
            "post": control(
                "mockQueueScenario",
                "Queue a scenario for the next orders",
                tag,
                ("201", "The queue entry.", ref("QueueEntry")),
                description=f"The `{SCENARIO_HEADER}` header still wins over the queue. "
                "Each entry counts once against `--sandbox-max-queue`, whatever its `count`.",
                request_body=body(ref("QueueRequest"), {"scenario": "timeout_partial"}),
                errors={**not_found("account"), **quota_errors("--sandbox-max-queue")},
            ),
        },
        "/_mock/shapes": {
            "get": control(
                "mockReadShapes",
                "Production's shapes of this sandbox's answers and events",
                tag,
                ("200", "The `{KIND: RULES}` mapping that applies.", ref("ShapesDocument")),
            ),
            "put": control(
                "mockReplaceShapes",
                "Replace production's shapes",
                tag,
                ("200", "The mapping that applies now.", ref("ShapesDocument")),
                description="Merchant answers (both prefixes) and webhook events take these "
                "shapes from now on (docs/shapes.md); an empty mapping removes them. A rule "
                "that would change what the spec defines is refused. JSON or YAML.",
                request_body=body(
                    ref("ShapesDocument"),
                    {"shapes": {"balance": {"as": {"balance": "decimal_string"}}}},
                    yaml=True,
                ),
                errors=bad_request("A kind or rule that is not known, or one the spec forbids."),
            ),
        },
        "/_mock/scenarios/explain": {
            "post": control(
                "mockExplainScenario",
                "Which scenario an order request would get, and why",
                tag,
                ("200", "The choice, its reason and the near misses.", ref("Explanation")),
                description="Nothing is created, charged, drawn or taken from the queue. "
                "`near_misses` lists, for every scenario with a `match` that does not hold, "
                "the first key that failed and why. Where the order would be drawn among "
                "weighted scenarios, `scenario` is null, the reason's `source` is `weight` "
                "and `candidates` lists each with its weight and share of the draws.",
                request_body=body(
                    obj(
                        {
                            "body": obj({}, extra=True, description="The order request."),
                            "account_id": nullable(string("Whose (default: the first).")),
                            "headers": nullable(
                                obj({}, extra=string(), description="e.g. X-Mock-Scenario.")
                            ),
                        },
                        required=["body"],
                    ),
                    {"body": {"item_id": 1001, "merchant_order_id": "timeout-1"}},
                ),
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
                    query_param(
                        "sort",
                        "`oldest` first (creation order) or `newest` first.",
                        enum(["oldest", "newest"]),
                    ),
                    query_param("offset", "Skip this many (after sorting).", integer(minimum=0)),
                    query_param("limit", "At most this many.", integer(minimum=0)),
                ],
                errors=bad_request("An unknown `status` or `sort`, a bad `offset` or `limit`."),
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
                errors={**not_found("delivery"), **quota_errors("--sandbox-max-redeliveries")},
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
                errors=quota_errors("--sandbox-max-faults"),
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
