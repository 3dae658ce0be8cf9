"""Which scenario an order gets, and why (docs/scenarios.md, "Selecting one";
docs/control-api.md, "Why this scenario").

First that applies: the `X-Mock-Scenario` header, the queue, the first scenario without
a `weight` whose `match` holds (in load order), a draw among the scenarios with a
`weight` whose `match` (if any) holds, `need_client_code` for items marked
`client_code`, else `happy_path`. Every choice comes with a `ScenarioReason` the
control API shows; the reasons are shared between orders that got the same one, so
keeping one per order costs a pointer.
"""

from __future__ import annotations

import functools
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, NamedTuple

from .scenarios import Scenario

DEFAULT_SCENARIO = "happy_path"
CLIENT_CODE_SCENARIO = "need_client_code"


@dataclass(frozen=True, slots=True)
class ScenarioReason:
    source: str  # header | queue | match | weight | client_code | default
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"source": self.source, "detail": self.detail}


@functools.lru_cache(maxsize=4096)
def reason(source: str, detail: str) -> ScenarioReason:
    return ScenarioReason(source, detail)


def by_header(name: str) -> ScenarioReason:
    return reason("header", f"X-Mock-Scenario: {name}")


def by_queue(scenario: str, account_id: str | None, remaining: int | None) -> ScenarioReason:
    whose = f"account {account_id}" if account_id else "any account"
    left = "every order" if remaining is None else f"{remaining} queued, this order included"
    return reason("queue", f"POST /_mock/scenarios/next queued {scenario!r} for {whose} ({left})")


class Candidate(NamedTuple):
    """What the automatic rules look at in an order request (a named tuple: made once
    per order, and built faster than a frozen dataclass, bench/FINDINGS.md section 19)."""

    merchant_order_id: str | None
    item_id: int
    product_type: str
    quantity: Any
    client_code: bool

    def match_args(self) -> dict[str, Any]:
        return {
            "merchant_order_id": self.merchant_order_id,
            "item_id": self.item_id,
            "product_type": self.product_type,
            "quantity": self.quantity,
        }


@dataclass(frozen=True, slots=True)
class Draw:
    """The weighted scenarios an order is drawn among, in load order, each with the
    probability weight / sum (docs/scenarios.md, "Weighted selection"). Describing it
    draws nothing: `pick` is given the draw, from the sandbox's own stream of them
    (`Randomness.next_weight_draw`), so explaining an order never uses the sequence."""

    scenarios: tuple[Scenario, ...]
    #: The running sums of the weights; the last is their total.
    bounds: tuple[float, ...]

    @classmethod
    def among(cls, scenarios: list[Scenario]) -> Draw:
        return cls(tuple(scenarios), tuple(accumulate(s.weight or 0 for s in scenarios)))

    def pick(self, draw: float) -> tuple[Scenario, ScenarioReason]:
        """The scenario a draw in [0, 1) lands on, and why."""
        index = bisect_right(self.bounds, draw * self.bounds[-1])
        scenario = self.scenarios[min(index, len(self.scenarios) - 1)]
        return scenario, reason("weight", f"drawn among {self.describe()}: {scenario.name!r}")

    def why(self) -> ScenarioReason:
        """The reason before the draw (`POST /_mock/scenarios/explain`)."""
        return reason("weight", f"drawn among {self.describe()}")

    def describe(self) -> str:
        """`'a' (weight 3, 75%), 'b' (weight 1, 25%)`."""
        return _describe(tuple((s.name, s.weight or 0) for s in self.scenarios))

    def candidates(self) -> list[dict[str, Any]]:
        """Each candidate with its weight and its share of the draws (0 to 1)."""
        total = self.bounds[-1]
        return [
            {"scenario": s.name, "weight": s.weight, "share": (s.weight or 0) / total}
            for s in self.scenarios
        ]


@functools.lru_cache(maxsize=1024)
def _describe(weights: tuple[tuple[str, float], ...]) -> str:
    total = sum(weight for _, weight in weights)
    return ", ".join(
        f"{name!r} (weight {weight}, {100 * weight / total:.4g}%)" for name, weight in weights
    )


def automatic(
    scenarios: dict[str, Scenario], candidate: Candidate
) -> tuple[Scenario, ScenarioReason] | Draw:
    """The rules after header and queue: the first match among the scenarios without a
    weight, in load order; then the draw among the weighted scenarios whose match (if
    any) holds, returned undrawn (the caller draws, or only describes it); then the
    client-code item, then the default."""
    args = candidate.match_args()
    weighted = []
    for scenario in scenarios.values():
        match = scenario.match
        if scenario.weight is not None:
            if match is None or match.first_failure(**args) is None:
                weighted.append(scenario)
        elif match is not None and match.first_failure(**args) is None:
            return scenario, reason("match", f"{scenario.name!r} matches: {match.describe()}")
    if weighted:
        return Draw.among(weighted)
    if candidate.client_code and CLIENT_CODE_SCENARIO in scenarios:
        detail = f"item {candidate.item_id} is marked client_code"
        return scenarios[CLIENT_CODE_SCENARIO], reason("client_code", detail)
    detail = "no header, queue entry, match rule or client-code item applied"
    return scenarios[DEFAULT_SCENARIO], reason("default", detail)


def near_misses(scenarios: dict[str, Scenario], candidate: Candidate) -> list[dict[str, str]]:
    """For every scenario with a `match` that does not hold: the first key that failed."""
    misses = []
    for scenario in scenarios.values():
        if scenario.match is None:
            continue
        failure = scenario.match.first_failure(**candidate.match_args())
        if failure is not None:
            key, why = failure
            misses.append({"scenario": scenario.name, "key": key, "why": why})
    return misses
