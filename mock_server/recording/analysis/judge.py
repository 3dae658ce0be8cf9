"""Judging a play (docs/recording.md, "What it does"): a `Play` is one recorded order
played under one scenario (or the sandbox's own choice); `judge` says whether it gives
what the recording saw of the order (its creation and charge, the status at each
observed time within `tolerances`, how it ended and, where the recording caught
webhooks, each delivery attempt), and if not, why not. The session replay judges an
order answer's status by the same spans (`status_spans`, `shown_within`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .sessions import Session
from .traces import TERMINAL, Trace
from .values import cents, parse, parse_time

DEFAULT_TOLERANCE = 0.25
MIN_TOLERANCE = 1.0


@dataclass
class Play:
    """One recorded order played under one scenario (None: the sandbox's own choice)."""

    trace: Trace
    session: Session
    scenario: str | None
    key: str = ""
    token: str | None = None
    created: tuple[int, Any] = (0, None)
    #: What reading the order (or submitting its code) answered at each observed time.
    reads: list[tuple[float, str, str]] = field(default_factory=list)
    inspected: dict[str, Any] = field(default_factory=dict)
    chosen: str | None = None
    why_not: str | None = None

    @property
    def order_id(self) -> str | None:
        body = self.created[1]
        return body.get("id") if self.created[0] == 201 and isinstance(body, dict) else None

    @property
    def explained(self) -> bool:
        return self.why_not is None


def tolerances(trace: Trace, tolerance: float) -> list[float]:
    """For each observation: `tolerance` of the gap since the one before, at least
    `MIN_TOLERANCE` seconds."""
    found, previous = [], 0.0
    for observation in trace.observations:
        found.append(max(MIN_TOLERANCE, tolerance * (observation.at - previous)))
        previous = observation.at
    return found


def status_of(status: int, answer: Any) -> str:
    if status == 200 and isinstance(answer, dict) and isinstance(answer.get("status"), str):
        return answer["status"]
    code = answer.get("code") if isinstance(answer, dict) else None
    return f"HTTP {status}" + (f" {code}" if code else "")


def judge(play: Play, tolerance: float) -> str | None:
    """None when the play gives what the recording saw of the order; else why not.

    Same as recorded: the creation's answer and charge; the status at each observed
    time (the sandbox shows it at some time within the tolerance); the terminal status,
    error code and delivered/refunded shares; and, where the recording caught webhooks,
    each delivery attempt (its status, its time within the tolerance) with no other
    attempt before the recording ends."""
    trace = play.trace
    status, created = play.created
    if status != 201 or not isinstance(created, dict):
        return f"the sandbox refused the order: {status_of(status, created)}"
    charged, recorded_charge = (
        cents(created.get("price")),
        cents(trace.created_order.get("price")),
    )
    if charged != recorded_charge:
        return f"charged {_money(charged)}, recorded {_money(recorded_charge)}"
    inspected = play.inspected
    history = inspected.get("history") or []
    if not history:
        return "the sandbox has no history of the order"
    start = parse_time(history[0]["at"])
    spans = status_spans(history, start)
    limits = tolerances(trace, tolerance)
    for observation, limit in zip(trace.observations, limits, strict=True):
        if observation.kind == "create":
            if created.get("status") != observation.status:
                return f"created {created.get('status')}, recorded {observation.status}"
            continue
        if not shown_within(spans, observation.status, observation.at, limit):
            return (
                f"{observation.status} at {observation.at:.1f} s ({observation.kind}): the "
                f"sandbox shows {_status_at(spans, observation.at)} then"
                f" ({_story(spans)})"
            )
    key = trace.key()
    order = inspected.get("order") or {}
    if key.final in TERMINAL:
        mine = (
            str(order.get("status")),
            str(order.get("error") or ""),
            _share(order.get("delivered_quantity"), order.get("quantity")),
            _share(order.get("refund_amount"), order.get("price")),
        )
        theirs = (key.final, key.error, key.delivered, key.refunded)
        if not key.error_shown:  # whatever code the sandbox gives, the recording hid it
            mine = (mine[0], "", *mine[2:])
        if mine != theirs:
            return f"ends {_ending(theirs)}; the sandbox: {_ending(mine)}"
    if play.session.webhooks_recorded:
        return _webhook_difference(trace, inspected, start, limits, play.session)
    return None


def status_spans(history: list[dict[str, Any]], start: float) -> list[tuple[str, float, float]]:
    spans = []
    for index, entry in enumerate(history):
        begins = parse_time(entry["at"]) - start
        ends = (
            parse_time(history[index + 1]["at"]) - start if index + 1 < len(history) else math.inf
        )
        spans.append((str(entry["status"]), begins, ends))
    return spans


def shown_within(
    spans: list[tuple[str, float, float]], status: str, at: float, limit: float
) -> bool:
    low, high = at - limit, at + limit
    return any(
        name == status and begins <= high and (ends > low or begins == ends >= low)
        for name, begins, ends in spans
    )


def _status_at(spans: list[tuple[str, float, float]], at: float) -> str:
    shown = "pending"
    for name, begins, _ends in spans:
        if begins <= at:
            shown = name
    return shown


def _story(spans: list[tuple[str, float, float]]) -> str:
    return ", ".join(f"{name} at {begins:.1f} s" for name, begins, _ in spans)


def _webhook_difference(
    trace: Trace, inspected: dict[str, Any], start: float, limits: list[float], session: Session
) -> str | None:
    recorded = [
        (o, limit)
        for o, limit in zip(trace.observations, limits, strict=True)
        if o.kind == "webhook"
    ]
    attempts = sandbox_attempts(inspected, start)
    for index, (observation, limit) in enumerate(recorded):
        if index >= len(attempts):
            return (
                f"webhook {index + 1} ({observation.status}) at {observation.at:.1f} s: the "
                f"sandbox made {len(attempts)} attempt(s)"
            )
        at, status, _code = attempts[index]
        if status != observation.status or abs(at - observation.at) > limit:
            return (
                f"webhook {index + 1} ({observation.status}) at {observation.at:.1f} s: the "
                f"sandbox's attempt {index + 1} is {status} at {at:.1f} s"
            )
    end = session.end - trace.created.at
    extra = [a for a in attempts[len(recorded) :] if a[0] + MIN_TOLERANCE <= end]
    if extra:
        return (
            f"the sandbox made {len(extra)} more webhook attempt(s) than recorded, the "
            f"first at {extra[0][0]:.1f} s ({extra[0][1]}) before the recording ends"
        )
    return None


def sandbox_attempts(inspected: dict[str, Any], start: float) -> list[tuple[float, str, Any]]:
    """Every webhook attempt the sandbox made for the order: (seconds after its
    creation, the event's status, the receiver's answer), in time order."""
    found = []
    for delivery in inspected.get("deliveries") or []:
        body = parse(str(delivery.get("body") or "").encode())
        status = str(body.get("status")) if isinstance(body, dict) else "?"
        for attempt in delivery.get("attempts") or []:
            at = parse_time(attempt["at"]) - start
            found.append((at, status, attempt.get("status_code"), delivery.get("copy", 0)))
    found.sort(key=lambda a: (a[0], a[3]))
    return [(at, status, code) for at, status, code, _copy in found]


def _share(part: Any, whole: Any) -> str:
    p = float(part) if isinstance(part, int | float) and not isinstance(part, bool) else 0.0
    w = float(whole) if isinstance(whole, int | float) and not isinstance(whole, bool) else 0.0
    if p <= 0:
        return "none"
    return "all" if w and p >= w else "some"


def _ending(parts: tuple[str, str, str, str]) -> str:
    status, error, delivered, refunded = parts
    return f"{status}{f' {error}' if error else ''}, delivered {delivered}, refunded {refunded}"


def _money(cents: int | None) -> str:
    return "nothing" if cents is None else f"{cents / 100:.2f}"
