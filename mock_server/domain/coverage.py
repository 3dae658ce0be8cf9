"""Coverage of the contract: what a run exercised, and what it never did
(docs/control-api.md, "Coverage").

Counters by area and item. Each area has a universe, the items the spec makes possible
(for `scenarios`, the scenarios loaded), so the report can list what was never
exercised and a percentage; items outside the universe that did happen (an error code a
script invented) are counted too. A sandbox's reset keeps its coverage: it describes
the run, not the state. `POST /_mock/coverage/reset` zeroes it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

STATUSES = ("pending", "processing", "need_client_code", "completed", "partial", "failed")
TRANSITIONS = (
    "pending->processing",
    "pending->need_client_code",
    "pending->completed",
    "pending->partial",
    "pending->failed",
    "processing->need_client_code",
    "processing->completed",
    "processing->partial",
    "processing->failed",
    "need_client_code->processing",
)
SETTLEMENT_ERRORS = (
    "OUT_OF_STOCK",
    "NOT_ENOUGH_STOCK",
    "INVALID_FIELDS",
    "INSUFFICIENT_BALANCE",
    "ORDER_TIMEOUT",
    "partial without error",
    "partial with error",
)
MERCHANT_ERRORS = (
    "validation_error: unknown item",
    "validation_error: unavailable item",
    "validation_error: quantity",
    "validation_error: fields",
    "validation_error: duplicate merchant_order_id",
    "validation_error: malformed body",
    "insufficient_balance",
    "price_mismatch",
    "not_authenticated: missing token",
    "not_authenticated: invalid token",
    "not_authenticated: expired token",
    "not_found",
    "token exchange refused",
)
CLIENT_CODES = ("accepted", "wrong code")
WEBHOOK_OUTCOMES = (
    "delivered at the first attempt",
    "delivered after retries",
    "retries exhausted",
    "2xx that is not 200",
    "duplicate",
    "dropped",
    "redelivered",
)
PREFIXES = ("/api/v1", "/v1")
AREAS = (
    "statuses",
    "transitions",
    "scenarios",
    "settlement_errors",
    "merchant_errors",
    "client_codes",
    "webhook_outcomes",
    "prefixes",
)
_FIXED = {
    "statuses": STATUSES,
    "transitions": TRANSITIONS,
    "settlement_errors": SETTLEMENT_ERRORS,
    "merchant_errors": MERCHANT_ERRORS,
    "client_codes": CLIENT_CODES,
    "webhook_outcomes": WEBHOOK_OUTCOMES,
    "prefixes": PREFIXES,
}


class Coverage:
    def __init__(self) -> None:
        self._counts: dict[str, dict[str, int]] = {area: {} for area in AREAS}

    def count(self, area: str, item: str) -> None:
        counts = self._counts[area]
        counts[item] = counts.get(item, 0) + 1

    def reset(self) -> None:
        for counts in self._counts.values():
            counts.clear()

    def dump(self) -> dict[str, dict[str, int]]:
        return {area: dict(counts) for area, counts in self._counts.items()}

    def load(self, counts: dict[str, Any]) -> None:
        """Saved counts back (unknown areas and non-counts are ignored)."""
        self.reset()
        for area in AREAS:
            for item, n in dict(counts.get(area) or {}).items():
                if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                    self._counts[area][str(item)] = n

    def report(self, scenarios: Iterable[str]) -> dict[str, Any]:
        """`{"exercised": {AREA: {ITEM: n}}, "never": ["AREA: ITEM"], "percent": P}`.
        An item that happened counts in its area's universe even if the spec does not
        name it (a script's own error code), so merged reports agree with single ones."""
        fixed = dict(_FIXED, scenarios=tuple(scenarios))
        universe = {
            area: _ordered(area, set(fixed[area]) | set(self._counts[area]), fixed[area])
            for area in AREAS
        }
        return summarise({area: dict(counts) for area, counts in self._counts.items()}, universe)


def summarise(
    exercised: dict[str, dict[str, int]], universe: dict[str, Iterable[str]]
) -> dict[str, Any]:
    """The report for `exercised` counts over `universe` (also used to merge runs)."""
    never = [
        f"{area}: {item}"
        for area in AREAS
        for item in universe.get(area, ())
        if not exercised.get(area, {}).get(item)
    ]
    total = sum(len(tuple(universe.get(area, ()))) for area in AREAS)
    percent = round(100 * (total - len(never)) / total, 1) if total else 100.0
    return {
        "exercised": {area: exercised.get(area, {}) for area in AREAS},
        "never": never,
        "percent": percent,
    }


def merge(reports: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Several reports (tests, xdist workers) as one: counts summed, and an item is
    never exercised only if no report exercised it."""
    counts: dict[str, dict[str, int]] = {area: {} for area in AREAS}
    universe: dict[str, set[str]] = {area: set() for area in AREAS}
    for report in reports:
        for area, items in report["exercised"].items():
            for item, n in items.items():
                counts[area][item] = counts[area].get(item, 0) + n
                universe[area].add(item)
        for entry in report["never"]:
            area, _, item = entry.partition(": ")
            universe[area].add(item)
    ordered = {area: _ordered(area, universe[area], _FIXED.get(area, ())) for area in AREAS}
    return summarise(counts, ordered)


def _ordered(area: str, items: set[str], fixed: Iterable[str]) -> list[str]:
    """The spec's items in the spec's order, then the others alphabetically."""
    fixed = tuple(fixed)
    return [i for i in fixed if i in items] + sorted(items - set(fixed))
