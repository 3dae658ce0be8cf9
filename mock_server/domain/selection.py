"""Which scenario an order gets, and why (docs/scenarios.md, "Selecting one";
docs/control-api.md, "Why this scenario").

First that applies: the `X-Mock-Scenario` header, the queue, the first scenario whose
`match` holds (in load order), `need_client_code` for items marked `client_code`, else
`happy_path`. Every choice comes with a `ScenarioReason` the control API shows; the
reasons are shared between orders that got the same one, so keeping one per order
costs a pointer.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from .scenarios import Scenario

DEFAULT_SCENARIO = "happy_path"
CLIENT_CODE_SCENARIO = "need_client_code"


@dataclass(frozen=True, slots=True)
class ScenarioReason:
    source: str  # header | queue | match | client_code | default
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


@dataclass(frozen=True, slots=True)
class Candidate:
    """What the automatic rules look at in an order request."""

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


def automatic(
    scenarios: dict[str, Scenario], candidate: Candidate
) -> tuple[Scenario, ScenarioReason]:
    """The rules after header and queue: the first match in load order, then the
    client-code item, then the default."""
    for scenario in scenarios.values():
        match = scenario.match
        if match is not None and match.first_failure(**candidate.match_args()) is None:
            return scenario, reason("match", f"{scenario.name!r} matches: {match.describe()}")
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
