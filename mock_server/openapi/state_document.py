"""`/_mock/state` (docs/state.md): the portable state document."""

from __future__ import annotations

from typing import Any

from ..domain.state_document import FORMAT
from .control import control
from .schema_helpers import Schema, body, integer, number, obj, quota_errors, string

TAG = "state"


def state_paths() -> dict[str, dict[str, Any]]:
    return {
        "/_mock/state": {
            "get": control(
                "mockReadState",
                "The sandbox's whole state",
                TAG,
                ("200", "One JSON document.", {"$ref": "#/components/schemas/StateDocument"}),
                description="Accounts, keys and unexpired tokens, catalog and stock, "
                "scenarios loaded at run time, the queue, faults, orders with their history "
                "and pending steps, deliveries with their attempts, the ledger, the random "
                "sequence, the clock and the coverage counts. Money in integer cents, times "
                "in epoch seconds of the virtual clock.",
            ),
            "put": control(
                "mockReplaceState",
                "Replace the sandbox's state with a saved one",
                TAG,
                (
                    "200",
                    "Loaded.",
                    obj(
                        {
                            "status": string(const="loaded"),
                            "now": string(),
                            "mode": string(),
                            "time_scale": number(),
                            "seed": integer(),
                        }
                    ),
                ),
                description="All or nothing: a document with any mistake is refused "
                "(400 naming where) and nothing changes. Pending steps and webhook attempts "
                "resume at their virtual due times. A document of a newer format is refused.",
                request_body=body({"$ref": "#/components/schemas/StateDocument"}, None),
                errors=quota_errors(),
            ),
        }
    }


def state_schemas() -> dict[str, Schema]:
    return {
        "StateDocument": obj(
            {"format": integer(f"The document's format ({FORMAT}).", minimum=1)},
            extra=True,
            description="See docs/state.md for every key.",
        )
    }
