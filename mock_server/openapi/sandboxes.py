"""`/_mock/sandboxes` (docs/control-api.md, "Sandboxes"): its operations and schemas."""

from __future__ import annotations

from typing import Any

from ..domain.randomness import MAX_SEED
from ..domain.sandbox_options import MAX_TTL
from .control import control, not_found
from .schema_helpers import (
    Schema,
    array,
    body,
    enum,
    error,
    integer,
    nullable,
    number,
    obj,
    path_param,
    ref,
    string,
)

TAG = "sandboxes"
BASE_URL_NOTE = (
    "Under a sandbox's `base_url` (`/_mock/sandboxes/{id}`) every path of this document "
    "is served again for that sandbox alone: the merchant API under both prefixes, the "
    "plant demo and its own `/_mock` control calls."
)
SANDBOX_ID = path_param("sandbox_id", "The sandbox's id (`default` is the startup one).")


def sandbox_paths() -> dict[str, dict[str, Any]]:
    return {
        "/_mock/sandboxes": {
            "get": control(
                "mockListSandboxes",
                "List sandboxes",
                TAG,
                ("200", "The default sandbox, then every live one.", ref("SandboxList")),
            ),
            "post": control(
                "mockCreateSandbox",
                "Create an isolated sandbox",
                TAG,
                (
                    "201",
                    "The new sandbox and its first account's credentials.",
                    ref("SandboxCreated"),
                ),
                description="A whole world of its own: accounts, catalog copy, scenarios, "
                "queue, faults, orders, deliveries, ledger, journal, seed and clock. Unset "
                "keys come from the server's startup state; without `accounts` the server's "
                "accounts are copied with API keys of the sandbox's own. " + BASE_URL_NOTE,
                request_body=body(
                    ref("SandboxInput"),
                    {"seed": 7, "clock": "manual", "start_time": "2026-01-01T00:00:00Z"},
                    required=False,
                ),
                errors={
                    "429": error(
                        "The server holds `--max-sandboxes` sandboxes already "
                        "(`too_many_sandboxes`), or the body brings more accounts, API "
                        "keys, catalog items or scenarios than a created sandbox's quotas "
                        "allow (`quota_exceeded`).",
                        "too_many_sandboxes",
                        "quota_exceeded",
                    )
                },
            ),
        },
        "/_mock/sandboxes/{sandbox_id}": {
            "get": control(
                "mockReadSandbox",
                "Read a sandbox's entry",
                TAG,
                ("200", "The sandbox.", ref("Sandbox")),
                description="Also opened by the sandbox's own `control_token`.",
                parameters=[SANDBOX_ID],
                errors=not_found("sandbox (unknown, deleted or expired: the detail says which)"),
            ),
            "delete": control(
                "mockDeleteSandbox",
                "Drop a sandbox and all it holds",
                TAG,
                ("204", "Gone, with its timers and pending deliveries.", None),
                parameters=[SANDBOX_ID],
                errors=not_found("sandbox")
                | {"400": error("The default sandbox cannot be deleted.", "validation_error")},
            ),
        },
    }


def sandbox_schemas() -> dict[str, Schema]:
    iso = string("ISO 8601 UTC, wall time.", format="date-time")
    return {
        "SandboxInput": obj(
            {
                "seed": nullable(integer("Random sequence.", minimum=0, maximum=MAX_SEED)),
                "start_time": nullable(string("Virtual clock start, ISO 8601.")),
                "clock": nullable(enum(["manual", "real"], "Its own clock mode.")),
                "time_scale": nullable(number("Real clock speed-up.", exclusiveMinimum=0)),
                "catalog": {"description": "Catalog feed content (spec 2.2), as JSON."},
                "accounts": nullable(
                    obj({}, extra=True, description="Accounts file content (`--accounts`).")
                ),
                "scenarios": {"description": "Scenario file content (docs/scenarios.md), as JSON."},
                "ttl": nullable(
                    number(
                        "Idle seconds before it expires (default --sandbox-ttl).",
                        exclusiveMinimum=0,
                        maximum=MAX_TTL,
                    )
                ),
            },
            required=[],
        ),
        "SandboxCreated": obj(
            {
                "id": string(),
                "base_url": string("Point a merchant client (or the pytest plugin) here."),
                "control_token": string("Opens this sandbox's control calls, nothing else."),
                "account_id": nullable(string()),
                "api_key": nullable(string()),
                "webhook_secret": nullable(string()),
                "expires_at": nullable(iso),
            },
        ),
        "Sandbox": obj(
            {
                "id": string(),
                "base_url": string(),
                "created_at": iso,
                "last_used_at": nullable(iso),
                "expires_at": nullable(iso),
                "orders": integer(minimum=0),
            },
        ),
        "SandboxList": obj({"sandboxes": array(ref("Sandbox"))}),
    }
