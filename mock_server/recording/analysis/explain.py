"""Explaining outcome classes (docs/recording.md, "What it does"): for each class
(`traces.classes`), up to `REPRESENTATIVES` of its orders, spread over the class's
durations, are played in one world under the sandbox's own choice and under every
scenario of the server, the clock advanced to each observed time; each play is judged
(`judge`), and a `ClassVerdict` says which scenarios explain which orders and the one
the session replay creates each order of the class under.

Orders never seen to settle form no class (`trust.settled`): every scenario passes
through `pending`, so such a class would be "explained" by all of them. The sample
order a report draws is one that no scenario explains, where there is one; each
scenario's reason names the order it is about.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .judge import MIN_TOLERANCE, Play, judge, status_of
from .reading import Message
from .rewriting import creation_headers, request_bytes
from .sessions import Session
from .traces import Observation, OutcomeClass, Trace
from .trust import settled
from .world import Server, World, recorded_answers, world_account

#: Orders of a class played under each scenario: the shortest and the longest lives of
#: the class, and some between (a class can mix timings that different scenarios play).
REPRESENTATIVES = 5


@dataclass
class ClassVerdict:
    outcome: OutcomeClass
    played: list[Trace]
    #: Scenario name -> the played orders it explains (`id()` of their traces), the
    #: scenario explaining most first.
    explains: dict[str, set[int]]
    #: Scenario name -> why it does not explain a played order, that order named
    #: (the sample's where the scenario fails it, else the first it fails).
    why_not: dict[str, str]
    own_choice: str | None
    #: A played order under the sandbox's own choice, for the timeline: the first that
    #: no scenario explains, where one is.
    sample: Play | None

    def explaining(self, trace: Trace) -> list[str]:
        return [name for name, ids in self.explains.items() if id(trace) in ids]

    @property
    def explained_orders(self) -> int:
        return sum(1 for trace in self.played if self.explaining(trace))

    @property
    def explained(self) -> bool:
        """Every played order is explained by some scenario of the set."""
        return bool(self.played) and self.explained_orders == len(self.played)

    def scenario_for(self, trace: Trace) -> str | None:
        """The scenario the replay creates `trace` under: of those explaining it (or
        the played order nearest in duration), the one explaining most of the class
        (`explains` is in that order); None where none does."""
        candidates = [t for t in self.played if self.explaining(t)]
        if not candidates:
            return None
        nearest = (
            trace
            if any(t is trace for t in candidates)
            else min(candidates, key=lambda t: abs(_duration(t) - _duration(trace)))
        )
        return self.explaining(nearest)[0]


def representatives(outcome: OutcomeClass, count: int = REPRESENTATIVES) -> list[Trace]:
    """Up to `count` orders spread over the class's durations, shortest and longest
    included."""
    ordered = sorted(outcome.traces, key=_duration)
    if len(ordered) <= count:
        return ordered
    picks = sorted({round(i * (len(ordered) - 1) / (count - 1)) for i in range(count)})
    return [ordered[i] for i in picks]


def _duration(trace: Trace) -> float:
    return trace.observations[-1].at if trace.observations else 0.0


async def explain(
    server: Server,
    outcomes: list[OutcomeClass],
    session_of: dict[int, Session],
    scenarios: list[dict[str, Any]],
    catalog: list[dict[str, Any]] | None,
    tolerance: float,
) -> list[ClassVerdict]:
    names = [scenario["name"] for scenario in scenarios]
    priced = {s["name"] for s in scenarios if s.get("pricing")}
    verdicts = []
    for outcome in outcomes:
        if not all(settled(trace) for trace in outcome.traces):
            continue  # never seen to settle: no class (compare counts them)
        played = representatives(outcome)
        plays = await _play_class(server, played, session_of, names, catalog)
        explains: dict[str, set[int]] = {}
        for play in plays:
            play.why_not = judge(play, tolerance)
            if play.scenario is not None and play.explained:
                explains.setdefault(play.scenario, set()).add(id(play.trace))
        explained = set().union(*explains.values())
        own = [play for play in plays if play.scenario is None]
        sample = next((p for p in own if id(p.trace) not in explained), own[0] if own else None)
        own_choice = next((p.chosen for p in own if p.chosen), None)
        why_not = _reasons(plays, sample)
        # Listing order, scenarios without `pricing` first on a tie.
        ordered = sorted(explains, key=lambda n: (-len(explains[n]), n in priced, names.index(n)))
        verdicts.append(
            ClassVerdict(
                outcome, played, {n: explains[n] for n in ordered}, why_not, own_choice, sample
            )
        )
    return verdicts


def _reasons(plays: list[Play], sample: Play | None) -> dict[str, str]:
    """Each scenario's reason for not explaining a played order, naming the order: the
    sample's (the order the timeline shows) where the scenario fails it, else the
    first order it fails."""
    failed = [p for p in plays if p.scenario is not None and not p.explained]
    if sample is not None:
        failed.sort(key=lambda p: p.trace is not sample.trace)  # stable: the sample's first
    why_not: dict[str, str] = {}
    for play in failed:
        assert play.scenario is not None
        why_not.setdefault(play.scenario, f"{play.why_not or ''} (order {play.trace.order_id})")
    return dict(sorted(why_not.items(), key=lambda item: _index(plays, item[0])))


def _index(plays: list[Play], scenario: str) -> int:
    return next(i for i, p in enumerate(plays) if p.scenario == scenario)


async def _play_class(
    server: Server,
    played: list[Trace],
    session_of: dict[int, Session],
    names: list[str],
    catalog: list[dict[str, Any]] | None,
) -> list[Play]:
    variants: list[str | None] = [None, *names]
    plays: list[Play] = []
    accounts: list[dict[str, Any]] = []
    keys: list[str] = []
    for r, trace in enumerate(played):
        session = session_of[id(trace)]
        webhooked = session.account_of(trace) in session.webhooked
        for v, variant in enumerate(variants):
            key = server.key("play", r, v)
            keys.append(key)
            accounts.append(world_account(f"play-{r}-{v}", key, webhooked and server.receiver.url))
            plays.append(Play(trace, session, variant))
    world = await server.world(played[0].created.at, accounts, catalog)
    try:
        for play, key in zip(plays, keys, strict=True):
            play.key = key
            play.token = await world.token(key)
            headers = creation_headers(play.trace.created, play.token)
            if play.scenario is not None:
                headers.append(("X-Mock-Scenario", play.scenario))
            play.created = await server.call(
                "POST",
                world.base_url + play.trace.created.path,
                data=request_bytes(play.trace.created.request, {}),
                headers=headers,
            )
            if play.order_id is not None:
                server.receiver.expect(play.order_id, recorded_answers(play.trace))
        moments: dict[float, list[tuple[Play, Observation]]] = {}
        for play in plays:
            for observation in play.trace.observations[1:]:
                moments.setdefault(observation.at, []).append((play, observation))
        for when in sorted(moments):
            await world.advance_to(when)
            done: set[tuple[int, float]] = set()
            for play, observation in moments[when]:
                if play.order_id is None:
                    continue
                if observation.kind == "client_code":
                    await _submit_code(world, play, observation)
                elif (id(play), when) not in done:
                    done.add((id(play), when))
                    path = f"/api/v1/orders/{play.order_id}"
                    status, answer = await _as_merchant(world, play, "GET", path, None)
                    play.reads.append((when, status_of(status, answer), "read"))
        await world.advance_to(max(_horizon(play.trace, play.session) for play in plays))
        for play in plays:
            if play.order_id is not None:
                play.inspected = await world.inspect(play.order_id)
                play.chosen = play.inspected.get("scenario")
    finally:
        server.receiver.forget(p.order_id for p in plays if p.order_id)
        await world.close()
    return plays


async def _submit_code(world: World, play: Play, observation: Observation) -> None:
    exchange = play.session.exchanges.get(observation.seq)
    request = exchange.request if exchange is not None else Message(body={"code": "0000"})
    path = exchange.path if exchange is not None else "/api/v1/orders/{id}/client-code"
    path = re.sub(r"/orders/[^/]+/client-code$", f"/orders/{play.order_id}/client-code", path)
    status, answer = await _as_merchant(world, play, "POST", path, request_bytes(request, {}))
    play.reads.append((observation.at, status_of(status, answer), "client code"))


async def _as_merchant(
    world: World, play: Play, method: str, path: str, data: bytes | None
) -> tuple[int, Any]:
    """A merchant call of the play's account; a token expired on the way (a life
    longer than a token's 2 hours) is exchanged again, as a client would."""
    for _ in range(2):
        headers = [("Authorization", f"Bearer {play.token}")]
        if data is not None:
            headers.append(("Content-Type", "application/json"))
        status, answer = await world.server.call(
            method, world.base_url + path, data=data, headers=headers
        )
        if status != 401:
            break
        play.token = await world.token(play.key)
    return status, answer


def _horizon(trace: Trace, session: Session) -> float:
    """How long after its creation the order is watched: to the recording's end (all
    production sent by then was recorded), at least past its last observation."""
    last = trace.observations[-1].at if trace.observations else 0.0
    return max(session.end - trace.created.at, last) + MIN_TOLERANCE
