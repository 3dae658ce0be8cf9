"""`GET /_mock/events`, the live stream, described for tools (docs/control-api.md)."""

from __future__ import annotations

from typing import Any

from ..domain.events import READER_BUFFER
from .control import bad_request, control, not_found
from .schema_helpers import body, boolean, error, integer, obj, query_param, quota_errors, string

EVENTS_DESCRIPTION = (
    'Server-Sent Events (`text/event-stream`). First `ready` (`{"now"}`), then, as they '
    'happen: `order` (`{"order", "account_id"}`, an order created or changed), '
    "`delivery` (the delivery as `/_mock/webhooks` shows it, when made and after every "
    'attempt), `clock` (`{"now"}` after every advance), `reset` (`{}`) and `journal` '
    "(the journal entry of each merchant call). Each `data:` line is JSON. A reader more "
    f"than {READER_BUFFER} events behind gets `overflow` and the stream ends; it never "
    "slows the merchant API. A comment line every 15 s keeps idle streams open."
)


def event_paths() -> dict[str, dict[str, Any]]:
    operation = control(
        "mockStreamEvents",
        "Live event stream",
        "live events",
        ("200", "The stream; it stays open.", None),
        description=EVENTS_DESCRIPTION,
        errors=quota_errors("--sandbox-max-streams"),
    )
    return {"/_mock/events": {"get": _streamed(operation)}}


def _streamed(operation: dict[str, Any]) -> dict[str, Any]:
    """`operation` with its 200 answered as Server-Sent Events."""
    operation["responses"]["200"]["content"] = {
        "text/event-stream": {"schema": string("Server-Sent Events frames.")}
    }
    return operation


LISTEN_DESCRIPTION = (
    'The stream `mock-server listen` reads (docs/webhooks.md, "The wire"). While it is '
    "open, the account's webhook attempts come here instead of its `webhook_url`. "
    'Server-Sent Events: first `ready` (`{"listener_id", "account_id", "webhook_secret", '
    '"report_path", "timeout_seconds"}`), then an `attempt` per attempt '
    '(`{"attempt_id", "delivery_id", "order_id", "order_status", "attempt", "body", '
    '"headers"}`): POST `body` with `headers` to the receiver and report the outcome to '
    "`report_path` within `timeout_seconds`. A comment line every 15 s of quiet."
)


def listen_paths() -> dict[str, dict[str, Any]]:
    stream = control(
        "mockListen",
        "Receive an account's webhook attempts (a listener)",
        "webhooks",
        ("200", "The stream; it stays open while the listener is connected.", None),
        description=LISTEN_DESCRIPTION,
        parameters=[query_param("account", "The account; the first one when absent.", string())],
        errors={**not_found("account"), **quota_errors("--sandbox-max-streams")},
    )
    report_input = {
        "oneOf": [
            obj({"attempt_id": string(), "status_code": integer(minimum=100, maximum=599)}),
            obj({"attempt_id": string(), "error": string(minLength=1)}),
        ]
    }
    report = control(
        "mockListenReport",
        "Report a listener's attempt",
        "webhooks",
        (
            "200",
            "The report is the attempt's outcome.",
            obj({"attempt_id": string(), "accepted": boolean(const=True)}),
        ),
        request_body=body(report_input),
        errors=bad_request("Not one of the two shapes.")
        | not_found("attempt waiting for a report in this sandbox")
        | {"409": error("The attempt was already decided.", "already_decided")},
    )
    return {
        "/_mock/listen": {"get": _streamed(stream)},
        "/_mock/listen/reports": {"post": report},
    }
