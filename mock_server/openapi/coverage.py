"""`/_mock/coverage` (docs/control-api.md, "Coverage"): its operations and schema."""

from __future__ import annotations

from typing import Any

from ..domain.coverage import AREAS
from .control import control
from .schema_helpers import Schema, array, integer, number, obj, ref, string

TAG = "coverage"


def coverage_paths() -> dict[str, dict[str, Any]]:
    return {
        "/_mock/coverage": {
            "get": control(
                "mockReadCoverage",
                "What the run exercised of the contract",
                TAG,
                (
                    "200",
                    "Counts by area and item, what was never exercised, the percentage.",
                    ref("Coverage"),
                ),
                description="Areas: " + ", ".join(f"`{a}`" for a in AREAS) + ". A reset of "
                "the sandbox keeps the counts; `POST /_mock/coverage/reset` zeroes them.",
            )
        },
        "/_mock/coverage/reset": {
            "post": control(
                "mockResetCoverage",
                "Zero the coverage counts",
                TAG,
                ("200", "The report, now empty.", ref("Coverage")),
            )
        },
    }


def coverage_schemas() -> dict[str, Schema]:
    counts = obj({}, extra=integer(minimum=1), description="Item -> how many times.")
    return {
        "Coverage": obj(
            {
                "exercised": obj({area: counts for area in AREAS}),
                "never": array(string("`AREA: ITEM`, never exercised.")),
                "percent": number("Share of the items exercised.", minimum=0, maximum=100),
            }
        )
    }
