"""Replaying a session (docs/recording.md, "What it does"): `replay_session` sends its
requests in `seq` order to a world of its own, the clock advanced by the recorded gaps,
each order created under the scenario that explained it (`explain`), the recording's
tokens and order ids bound to the sandbox's (`rewriting.Binding`), and compares each
answer with the recorded one (`findings`). When the last request is replayed, it adds
the order statuses that differed (unless the sandbox showed the recorded one within
tolerance), the balance changes between two reads, and each order's first webhook.
A creation production refused for want of balance or stock is sent with that state set
(`refusals.as_production_was`).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from .findings import Finding, echoes_and_money, money_finding, order_values, shape_findings
from .judge import MIN_TOLERANCE, shown_within, status_spans, tolerances
from .paths import BALANCE, CLIENT_CODE, ORDER, ORDERS, answer_kind
from .reading import Exchange, Message, Webhook
from .refusals import as_production_was
from .rewriting import Binding
from .sessions import Session
from .shape_inference import Pair
from .traces import TERMINAL, Trace
from .trust import unanswered
from .values import as_dict, cents, is_number, is_order, parse_time
from .world import Receiver, Server, World, world_account

#: Not the service's: the sandbox's own control calls, the recorder's receiver.
_NOT_REPLAYED = re.compile(r"^/(?:_mock|_record)(?:/|$)")


@dataclass
class Deferred:
    """An order answer whose `status` differs from the recorded one at that time: a
    finding only if the sandbox never showed the recorded status within tolerance."""

    exchange: Exchange
    order_id: str
    trace: Trace
    at: float
    limit: float
    recorded: str
    sandbox: str


@dataclass
class Replayed:
    findings: list[Finding] = field(default_factory=list)
    replayed: int = 0
    skipped: int = 0
    #: Each answer and event as production gave it beside the sandbox's, by shapes kind
    #: (`calibrate --shapes-out`: shape_inference).
    pairs: list[Pair] = field(default_factory=list)


async def replay_session(
    server: Server,
    session: Session,
    catalog: list[dict[str, Any]] | None,
    scenario_of: dict[int, str | None],
    explained_trace: dict[int, bool],
    tolerance: float,
) -> Replayed:
    """Send the session's requests in `seq` order, the clock advanced by the recorded
    gaps, and compare each answer with the recorded one."""
    result = Replayed()
    accounts, key_of = [], {}
    for number, key in enumerate([None, *session.keys]):
        replay_key = server.key("replay", session.index, number)
        key_of[key] = replay_key
        url = server.receiver.url if key in session.webhooked else None
        accounts.append(world_account(f"replay-{session.index}-{number}", replay_key, url))
    world = await server.world(session.start, accounts, catalog)
    state = Binding(key_of)
    trace_by_seq = {trace.created.seq: trace for trace in session.traces}
    trace_by_id = {trace.order_id: trace for trace in session.traces}
    limits = {
        id(t): dict(zip((o.seq for o in t.observations), tolerances(t, tolerance), strict=True))
        for t in session.traces
    }
    deferred: list[Deferred] = []
    balances: dict[str | None, list[tuple[Exchange, float, float]]] = {}
    try:
        for event in session.recording.events():
            if isinstance(event, Webhook):
                continue  # the sandbox sends its own; the receiver answers as recorded
            await world.advance_to(max(world.now, event.at - session.start))
            if (
                _NOT_REPLAYED.match(event.path)
                or unanswered(event)
                or state.names_failed_order(event)
            ):
                result.skipped += 1
                continue
            result.replayed += 1
            trace = trace_by_seq.get(event.seq)
            headers = await state.headers(world, event)
            if trace is not None and ORDERS.match(event.path) and event.method == "POST":
                scenario = scenario_of.get(id(trace))
                if scenario is not None:
                    headers.append(("X-Mock-Scenario", scenario))
            url = world.base_url + state.path(event.path) + state.query(event.query)
            async with as_production_was(world, event, key_of.get(state.account_of(event))):
                status, answer = await server.call(
                    event.method, url, data=state.body(event), headers=headers
                )
            state.bind(event, status, answer, server.receiver, trace)
            recorded = _recorded_body(event.response)
            where = {
                "seq": event.seq,
                "order": _order_named(event, trace),
                "request": f"{event.method} {_template(event.path)}",
            }
            if recorded is _NOTHING:
                if event.status != status:
                    result.findings.append(
                        Finding(
                            pointer="",
                            kind="status",
                            recorded=event.status,
                            sandbox=status,
                            **where,
                        )
                    )
                continue
            result.pairs += answer_pairs(event, recorded, status, answer, server.receiver.url)
            findings = shape_findings((event.status, recorded), (status, answer), **where)
            order_trace = _trace_of(event, trace, trace_by_id)
            if is_order(recorded) and is_order(answer) and status // 100 == 2:
                findings = order_values(findings, recorded, answer, where)
                if recorded.get("status") != answer.get("status") and order_trace is not None:
                    at = event.at - order_trace.created.at
                    limit = limits[id(order_trace)].get(event.seq, MIN_TOLERANCE)
                    deferred.append(
                        Deferred(
                            event,
                            answer["id"],
                            order_trace,
                            at,
                            limit,
                            str(recorded.get("status")),
                            str(answer.get("status")),
                        )
                    )
            elif isinstance(recorded, dict) and isinstance(answer, dict):
                findings += money_finding(recorded, answer, "actual_price", where)
            if BALANCE.match(event.path) and status == 200 and event.status == 200:
                mine, theirs = as_dict(answer).get("balance"), as_dict(recorded).get("balance")
                if is_number(mine) and is_number(theirs):
                    account = state.account_of(event)
                    balances.setdefault(account, []).append((event, theirs, mine))
            result.findings += findings
        await world.advance_to(session.end - session.start)  # webhooks after the last call
        histories = _Histories(world)
        for item in deferred:
            if not explained_trace.get(id(item.trace), False):
                continue  # its class is reported as unexplained, with a timeline
            inspected = await histories.get(item.order_id)
            history = inspected.get("history") or []
            if history and shown_within(
                status_spans(history, parse_time(history[0]["at"])),
                item.recorded,
                item.at,
                item.limit,
            ):
                continue
            result.findings.append(
                Finding(
                    seq=item.exchange.seq,
                    order=item.trace.order_id,
                    request=f"{item.exchange.method} {_template(item.exchange.path)}",
                    pointer="/status",
                    kind="value",
                    recorded=item.recorded,
                    sandbox=item.sandbox,
                )
            )
        result.findings += await _balance_findings(balances, state, histories, session, tolerance)
        result.findings += _webhook_findings(
            session, state, server.receiver, explained_trace, result.pairs
        )
    finally:
        server.receiver.forget(state.orders.values())
        await world.close()
    result.findings.sort(key=lambda f: (f.seq if f.seq is not None else 0, f.pointer))
    return result


_NOTHING = object()


def _recorded_body(message: Message) -> Any:
    """The recorded answer's body, or `_NOTHING` where none was recorded (a HAR may
    leave bodies out): then only the status is compared."""
    if message.body is not None:
        return message.body
    if message.text is not None:
        return message.text
    if message.raw is not None:
        return message.raw.decode("utf-8", "replace")
    return _NOTHING


# -- after the last request: order histories, balances, webhooks ------------------------------


class _Histories:
    def __init__(self, world: World) -> None:
        self.world = world
        self.cache: dict[str, dict[str, Any]] = {}

    async def get(self, order_id: str) -> dict[str, Any]:
        if order_id not in self.cache:
            self.cache[order_id] = await self.world.inspect(order_id)
        return self.cache[order_id]


async def _balance_findings(
    balances: dict[str | None, list[tuple[Exchange, float, float]]],
    state: Binding,
    histories: _Histories,
    session: Session,
    tolerance: float,
) -> list[Finding]:
    """Each balance change between two reads of an account, recorded and replayed (the
    level itself is not compared). A difference is timing, not money, where it is what
    orders settling within the tolerance of either read refunded: which side of a read
    a refund falls on is the lifecycles' to judge."""
    found = []
    for account, reads in balances.items():
        settled: list[tuple[list[float], list[int]]] | None = None
        for (before, theirs0, mine0), (after, theirs1, mine1) in itertools.pairwise(reads):
            theirs = (cents(theirs1) or 0) - (cents(theirs0) or 0)
            mine = (cents(mine1) or 0) - (cents(mine0) or 0)
            if theirs == mine:
                continue
            if settled is None:
                settled = await _settlements(state, histories, account, session)
            limit = max(MIN_TOLERANCE, tolerance * (after.at - before.at))
            edges = (before.at - session.start, after.at - session.start)
            refunds = [
                refund
                for times, amounts in settled
                if any(abs(at - edge) <= limit for at in times for edge in edges)
                for refund in amounts
                if refund
            ]
            if _sums_to(abs(theirs - mine), refunds):
                continue
            found.append(
                Finding(
                    seq=after.seq,
                    order=None,
                    request=f"{after.method} {_template(after.path)}",
                    pointer="/balance",
                    kind="balance change",
                    recorded=round(theirs / 100, 2),
                    sandbox=round(mine / 100, 2),
                )
            )
    return found


async def _settlements(
    state: Binding, histories: _Histories, account: str | None, session: Session
) -> list[tuple[list[float], list[int]]]:
    """For each order of the account: when it settled (in the replay; the bounds the
    recording gives), in seconds since the session's start, and what it refunded (in the
    replay; recorded), in cents."""
    traces_by_id = {trace.order_id: trace for trace in session.traces}
    found = []
    for recorded_id, order_id in state.orders.items():
        if state.order_account.get(order_id) != account:
            continue
        times: list[float] = []
        amounts: list[int] = []
        inspected = await histories.get(order_id)
        history = inspected.get("history") or []
        if history and history[-1].get("status") in TERMINAL:
            times.append(parse_time(history[-1]["at"]) - session.start)
            amounts.append(cents(as_dict(inspected.get("order")).get("refund_amount")) or 0)
        trace = traces_by_id.get(recorded_id)
        if trace is not None:
            entries = trace.entries()
            if entries and entries[-1].status in TERMINAL:
                created = trace.created.at - session.start
                times += [created + entries[-1].earliest, created + entries[-1].latest]
                amounts.append(cents(trace.final_order().get("refund_amount")) or 0)
        found.append((times, amounts))
    return found


def _sums_to(target: int, amounts: list[int]) -> bool:
    """Some of `amounts` add up to `target` (cents)."""
    sums = {0}
    for amount in amounts[:24]:
        sums |= {total + amount for total in sums if total + amount <= target}
        if target in sums:
            return True
    return target in sums


def answer_pairs(
    exchange: Exchange, recorded: Any, status: int, answer: Any, receiver_url: str | None
) -> list[Pair]:
    """The recorded answer and the sandbox's as pairs of their shapes kind: none where
    the two differ in status or kind; an order's `webhook` object a pair of its own."""
    kind = answer_kind(exchange.method, exchange.path, exchange.status, recorded)
    if kind is None or status != exchange.status:
        return []
    if kind != answer_kind(exchange.method, exchange.path, status, answer):
        return []
    if kind == "error" and as_dict(recorded).get("code") != as_dict(answer).get("code"):
        return []  # another refusal: a finding, not a shape
    pairs = [Pair(kind, recorded, answer)]
    theirs, mine = as_dict(recorded).get("webhook"), as_dict(answer).get("webhook")
    if kind == "order" and isinstance(theirs, dict) and isinstance(mine, dict):
        facts = {f"delivery.{name}": value for name, value in mine.items()}
        facts["delivery.url"] = receiver_url
        pairs.append(Pair("order.webhook", theirs, mine, facts))
    return pairs


def _webhook_findings(
    session: Session,
    state: Binding,
    receiver: Receiver,
    explained_trace: dict[int, bool],
    pairs: list[Pair],
) -> list[Finding]:
    """The first webhook of each order, recorded and received here, compared as answers
    are (its field set and types; values for enums, echoes and money)."""
    found = []
    for trace in session.traces:
        mine_id = state.orders.get(trace.order_id)
        received = receiver.received.get(mine_id or "", [])
        if not trace.webhooks or not received:
            continue
        observation = trace.webhooks[0]
        recorded, mine = observation.order, received[0]
        if isinstance(recorded, dict) and isinstance(mine, dict):
            pairs.append(Pair("event", recorded, mine, {"delivery.url": receiver.url}))
        where = {"seq": observation.seq, "order": trace.order_id, "request": "webhook"}
        findings = shape_findings((200, recorded), (200, mine), **where)
        if isinstance(recorded, dict) and isinstance(mine, dict):
            same_status = recorded.get("status") == mine.get("status")
            if not same_status and explained_trace.get(id(trace), False):
                findings.append(
                    Finding(
                        pointer="/status",
                        kind="value",
                        recorded=recorded.get("status"),
                        sandbox=mine.get("status"),
                        **where,
                    )
                )
            findings += echoes_and_money(recorded, mine, where, same_status=same_status)
            if not same_status:
                findings = [
                    f
                    for f in findings
                    if not (f.kind == "type" and "null" in (f.recorded, f.sandbox))
                ]
        found += findings
    return found


# -- what a finding names ---------------------------------------------------------------------


def _template(path: str) -> str:
    """`/api/v1/orders/{id}`: the path with ids left out, to group findings."""
    parts = path.split("/")
    return "/".join(
        "{id}" if (len(p) >= 16 and re.search(r"\d", p)) or p.startswith("<") else p for p in parts
    )


def _order_named(exchange: Exchange, trace: Trace | None) -> str | None:
    if trace is not None:
        return trace.order_id
    found = ORDER.match(exchange.path) or CLIENT_CODE.match(exchange.path)
    return found[1] if found else None


def _trace_of(exchange: Exchange, trace: Trace | None, by_id: dict[str, Trace]) -> Trace | None:
    if trace is not None:
        return trace
    found = ORDER.match(exchange.path) or CLIENT_CODE.match(exchange.path)
    return by_id.get(found[1]) if found else None
