"""Each recorded order's life, as the recording saw it, and the outcome classes orders
fall into (docs/recording.md, "Compare").

A trace is what was observed of one order: its creation (the `201` of
`POST .../orders`), every lookup of it (`GET .../orders/{id}`) with the status it
showed, client-code submissions, and the webhooks that carried its id, each with the
answer the receiver gave. Polls sample, so a trace is a subsequence of the real history:
a status was entered at some time after the last observation that did not show it and
no later than the first that did (`Entry.earliest`, `Entry.latest`).

Orders are grouped by what a scenario decides (spec 3: statuses and transitions; spec
7: error codes): the status they ended in, the error code, how much was delivered and
refunded (all, some, none), whether they waited for a client code, and whether their
event came more than once. Polling intervals, retries caused by the merchant's receiver,
amounts and ids do not make a class.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .paths import CLIENT_CODE, ORDER, ORDERS, TOKEN
from .reading import Exchange, Recording, Webhook

TERMINAL = ("completed", "partial", "failed")
#: What an order's answers show that settling does not change (spec 2.1, 4.3).
_KEPT = frozenset(
    {"id", "item", "item_product_type", "quantity", "price", "merchant_order_id", "fields"}
)
STATUSES = ("pending", "processing", "need_client_code", *TERMINAL)


@dataclass(slots=True)
class Observation:
    """One sight of an order: `at` in seconds after its creation."""

    at: float
    kind: str  # "create" | "poll" | "client_code" | "webhook"
    status: str
    seq: int
    order: dict[str, Any]
    #: The receiver's answer (webhooks only).
    answered: int | None = None


@dataclass(frozen=True, slots=True)
class Entry:
    """When the order entered `status`, as far as the observations bound it."""

    status: str
    earliest: float  # the last observation before that did not show it (or 0)
    latest: float  # the first observation that showed it
    #: Seen when it happened (a webhook's arrival, the answer to the client code that
    #: caused it), not by a poll some time after.
    exact: bool

    @property
    def estimate(self) -> float:
        """The time a scenario step should take it there: an exact sight as it is;
        otherwise the middle of the interval the polls leave open."""
        return self.latest if self.exact else (self.earliest + self.latest) / 2


@dataclass(frozen=True, slots=True, order=True)
class OutcomeKey:
    """What puts two orders in one class: what a scenario decides about them."""

    final: str  # a terminal status, or the last status seen when none was
    error: str
    delivered: str  # all | some | none
    refunded: str  # all | some | none
    client_code: bool
    duplicates: int  # extra copies of the terminal event answered 200
    #: Whether an answer showed the settled order's `error`: an order seen to settle
    #: only through its event (which need not carry one, spec 6) did not.
    error_shown: bool = True

    @property
    def name(self) -> str:
        """`recorded_partial_order_timeout`: a scenario name made of the class."""
        parts = ["recorded", self.final]
        if self.error:
            parts.append(self.error.lower())
        elif self.final == "partial":
            parts.append(f"{self.delivered}_delivered")
        if self.client_code and self.final != "need_client_code":
            parts.append("client_code")
        if self.duplicates:
            parts.append("duplicate")
        return "_".join(re.sub(r"[^a-z0-9]+", "_", part) for part in parts)

    def describe(self) -> str:
        words = [self.final]
        if self.error:
            words.append(f"error {self.error}")
        elif not self.error_shown:
            words.append("error not shown")
        words.append(f"delivered {self.delivered}, refunded {self.refunded}")
        if self.client_code:
            words.append("after a client code")
        if self.duplicates:
            words.append(f"event sent {self.duplicates + 1} times")
        return ", ".join(words)


@dataclass
class Trace:
    order_id: str
    created: Exchange
    #: What the order request asked for, and who asked (the API key behind the token).
    request: dict[str, Any]
    api_key: str | None
    observations: list[Observation] = field(default_factory=list)

    @property
    def created_order(self) -> dict[str, Any]:
        return self.created.response.body

    @property
    def item_id(self) -> Any:
        """The item the order request named (spec 4.3), else what its answer shows."""
        requested = self.request.get("item_id")
        return requested if requested is not None else self.created_order.get("item")

    @property
    def product_type(self) -> str | None:
        return self.created_order.get("item_product_type")

    @property
    def webhooks(self) -> list[Observation]:
        return [o for o in self.observations if o.kind == "webhook"]

    @property
    def last(self) -> Observation:
        return self.observations[-1]

    def final_order(self) -> dict[str, Any]:
        """The latest view of the order, each field as the latest observation that showed
        it: a terminal one's where the order was seen to settle. An event carries only
        some of the order's fields (spec 6 lists seven: no `price`, no `error`), so what
        it lacks comes from the order's own answers (its creation, lookups, client
        code); an `error` only an event showed the failure of stays unknown (empty)."""
        terminal = next((o for o in self.observations if o.status in TERMINAL), None)
        view: dict[str, Any] = {}
        for observation in self.observations:
            if terminal is not None and observation.status not in TERMINAL:
                # Before it settled: the fields a settled order keeps (its price,
                # quantity, ids); what settling changes is read from terminal sights.
                view.update({k: v for k, v in observation.order.items() if k in _KEPT})
            else:
                view.update(observation.order)
        if terminal is not None:
            view["status"] = terminal.status
        return view

    def entries(self) -> list[Entry]:
        """When each status of the observed history was entered, in order; a status
        seen again after another (`processing` after a client code) is a new entry."""
        entries: list[Entry] = []
        previous_at = 0.0
        current: str | None = None
        for observation in self.observations:
            if observation.status != current:
                if not (current in TERMINAL and observation.status in TERMINAL):
                    entries.append(
                        Entry(
                            observation.status,
                            previous_at,
                            observation.at,
                            observation.kind in ("create", "webhook", "client_code"),
                        )
                    )
                current = observation.status
            previous_at = observation.at
        return entries

    def key(self) -> OutcomeKey:
        order = self.final_order()
        quantity = _number(order.get("quantity"))
        delivered = _number(order.get("delivered_quantity"))
        price, refund = _number(order.get("price")), _number(order.get("refund_amount"))
        statuses = {o.status for o in self.observations}
        terminal_events = [w for w in self.webhooks if w.status in TERMINAL and w.answered == 200]
        return OutcomeKey(
            final=str(order.get("status")),
            error=str(order.get("error") or ""),
            error_shown="error" in order,
            delivered=_share(delivered, quantity),
            refunded=_share(refund, price),
            client_code="need_client_code" in statuses,
            duplicates=max(0, len(terminal_events) - 1),
        )


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _share(part: float, whole: float) -> str:
    if part <= 0:
        return "none"
    return "all" if whole and part >= whole else "some"


def traces(recording: Recording) -> list[Trace]:
    """Every order created in `recording` (a `201` to `POST .../orders`), with what was
    observed of it, in the order created."""
    by_id: dict[str, Trace] = {}
    api_key_of_token: dict[str, str] = {}
    for event in recording.events():
        if isinstance(event, Webhook):
            _add_webhook(by_id, event)
            continue
        path = event.path
        if TOKEN.match(path) and event.method == "POST" and event.status == 200:
            token = _body(event.response).get("access_token")
            api_key = _body(event.request).get("api_key")
            if isinstance(token, str) and isinstance(api_key, str):
                api_key_of_token[token] = api_key
        elif ORDERS.match(path) and event.method == "POST" and event.status == 201:
            order = _body(event.response)
            if isinstance(order.get("id"), str):
                token = _bearer(event)
                trace = Trace(
                    order["id"], event, _body(event.request), api_key_of_token.get(token or "")
                )
                trace.observations.append(
                    Observation(0.0, "create", str(order.get("status")), event.seq, order)
                )
                by_id[order["id"]] = trace
        elif (found := ORDER.match(path)) and event.method == "GET" and event.status == 200:
            _observe(by_id, found.group(1), event, "poll")
        elif (found := CLIENT_CODE.match(path)) and event.method == "POST" and event.status == 200:
            _observe(by_id, found.group(1), event, "client_code")
    for trace in by_id.values():
        # Events are in arrival order; a webhook and a poll in flight together arrive
        # in either order, so a trace is put in the order of what was seen when.
        trace.observations.sort(key=lambda o: (o.at, o.seq))
    return list(by_id.values())


def _observe(by_id: dict[str, Trace], order_id: str, event: Exchange, kind: str) -> None:
    trace = by_id.get(order_id)
    order = _body(event.response)
    if trace is not None and isinstance(order.get("status"), str):
        at = event.at - trace.created.at
        trace.observations.append(Observation(at, kind, order["status"], event.seq, order))


def _add_webhook(by_id: dict[str, Trace], webhook: Webhook) -> None:
    body = webhook.message.body
    if not isinstance(body, dict):
        return
    trace = by_id.get(str(body.get("order_id")))
    if trace is not None and isinstance(body.get("status"), str):
        at = webhook.at - trace.created.at
        trace.observations.append(
            Observation(at, "webhook", body["status"], webhook.seq, body, webhook.answered)
        )


def _body(message: Any) -> dict[str, Any]:
    return message.body if isinstance(message.body, dict) else {}


def _bearer(event: Exchange) -> str | None:
    scheme, _, token = (event.request.header("Authorization") or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


# -- classes --------------------------------------------------------------------------------


@dataclass
class OutcomeClass:
    key: OutcomeKey
    traces: list[Trace]

    @property
    def name(self) -> str:
        return self.key.name

    def delays(self) -> list[tuple[str, list[float]]]:
        """The delay before each status of the class's usual history, per order that
        showed it: `[("processing", [1.0, 1.2]), ("partial", [29.5, 31.0])]`. The usual
        history is the most common sequence of entered statuses (ties: the longest)."""
        histories: dict[tuple[str, ...], list[list[Entry]]] = {}
        for trace in self.traces:
            entries = [e for e in trace.entries() if e.status != "pending"]
            histories.setdefault(tuple(e.status for e in entries), []).append(entries)
        usual = max(histories, key=lambda h: (len(histories[h]), len(h)))
        samples: list[tuple[str, list[float]]] = [(status, []) for status in usual]
        for entries in histories[usual]:
            previous = 0.0
            for index, entry in enumerate(entries):
                estimate = max(entry.estimate, previous)
                samples[index][1].append(estimate - previous)
                previous = estimate
        return samples

    def items(self) -> set[Any]:
        return {trace.item_id for trace in self.traces}

    def product_types(self) -> set[str | None]:
        return {trace.product_type for trace in self.traces}


def classes(all_traces: Iterable[Trace]) -> list[OutcomeClass]:
    """Traces grouped by outcome, the largest class first (ties: by name)."""
    grouped: dict[OutcomeKey, list[Trace]] = {}
    for trace in all_traces:
        grouped.setdefault(trace.key(), []).append(trace)
    found = [OutcomeClass(key, members) for key, members in grouped.items()]
    found.sort(key=lambda c: (-len(c.traces), c.name))
    return found


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0
