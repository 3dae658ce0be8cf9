"""The whole document: info, tags, paths, webhooks and components put together."""

from __future__ import annotations

import functools
from importlib import metadata
from typing import Any

from ..control.calls import HEALTH_PATH
from ..domain.accounts import DEFAULT_SIGNATURE_HEADERS
from ..domain.deliveries import MAX_ATTEMPTS, RETRY_INTERVAL
from ..merchant.api import PREFIXES, SCENARIO_HEADER
from .control import (
    _control_accounts,
    _control_basics,
    _control_catalog,
    _control_inspection,
    _control_scenarios,
)
from .coverage import coverage_paths
from .events import event_paths, listen_paths
from .merchant import _merchant_paths, _plant_paths
from .sandboxes import BASE_URL_NOTE, sandbox_paths
from .schema_helpers import body, ref, string
from .schemas import _responses, _schemas
from .state_document import state_paths

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
    ("Control: scenarios", "Fulfillment scripts, the queue, and production's shapes."),
    ("Control: orders", "Every order, with history."),
    ("Control: webhooks", "Webhook deliveries and their attempts."),
    ("Control: faults", "Faults injected into the merchant API."),
    ("Control: request journal", "The merchant API calls answered."),
    ("Control: sandboxes", "Isolated sandboxes in one server."),
    ("Control: live events", "What changes, as it happens."),
    ("Control: coverage", "What a run exercised of the contract."),
    ("Control: state", "The sandbox's whole state as one document."),
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

**Sandboxes**: `POST /_mock/sandboxes` makes an isolated sandbox. {BASE_URL_NOTE} On
the root paths, a sandbox's access token reaches its sandbox, and the token exchange
reaches the one sandbox that holds the API key. A sandbox's `control_token` opens its
own control calls when the server runs with `--admin-token`.

Every answer carries CORS headers. Where the spec is silent, `docs/fidelity.md` says
what the sandbox chose.

**Production's shapes**: a sandbox given a shapes file (`--shapes`, a sandbox's `shapes`,
`PUT /_mock/shapes`; docs/shapes.md) answers its merchant calls and sends its events in
production's shapes: fields added, dropped, converted (a balance as a string) or spelt
otherwise beyond what these schemas show. What the spec defines and the sandbox
decides (ids, statuses, money values, codes, the event's fields of spec 6) never changes.
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
                f"retries, {RETRY_INTERVAL:g} s apart (virtual clock; a scenario's "
                "`webhook: {retry}` may say otherwise). Dedupe on `order_id`.",
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
        | sandbox_paths()
        | event_paths()
        | listen_paths()
        | coverage_paths()
        | state_paths()
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
