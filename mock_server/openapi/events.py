"""`GET /_mock/events`, the live stream, described for tools (docs/control-api.md)."""

from __future__ import annotations

from typing import Any

from ..domain.events import READER_BUFFER
from .control import control
from .schema_helpers import string

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
    )
    operation["responses"]["200"]["content"] = {
        "text/event-stream": {"schema": string("Server-Sent Events frames.")}
    }
    return {"/_mock/events": {"get": operation}}
