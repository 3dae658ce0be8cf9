"""The replay behind `mock-server compare` (docs/recording.md, "Compare"): what the
sandbox would have done with a recorded session's traffic. `run` is the whole of it;
its parts are modules of their own.

A sandbox server is started here (manual clock, seeded, 127.0.0.1 on a free port) and
driven only over HTTP, through the merchant API and the documented control API
(docs/control-api.md), as any client would (`world`). Nothing here reaches into a
`Sandbox`.

1. **Worlds.** Every play and every session is a sandbox of its own
   (`POST /_mock/sandboxes`, docs/control-api.md "Sandboxes"), so nothing one does is
   seen by another. Its catalog is the recording's items as order answers showed them
   (`catalog_inference.infer_catalog`) unless `--catalog` gives one; its accounts are
   one per recorded API key (`sessions`), with a balance large enough, whose webhook
   URL is the `world.Receiver` where the recording shows webhooks (or an order's
   `webhook` object).
2. **Explaining classes** (`explain`). For each outcome class (`traces.classes`), up to
   `REPRESENTATIVES` of its orders, spread over the class's durations, are played under
   the sandbox's own choice and under every scenario of the server
   (`GET /_mock/scenarios`: the built-in ones and `--scenarios` files), each play an
   order of its own account forced with `X-Mock-Scenario` and created at the same
   instant. The clock is advanced to each observed time (`POST /_mock/clock/advance`),
   where the order is read (`GET .../orders/{id}`) or its client code submitted as
   recorded; then the order's history and webhook deliveries are read
   (`GET /_mock/orders/{id}`), and each play judged by `judge.judge`.
3. **The session replay** (`session_replay.replay_session`). Requests are sent in `seq`
   order with the clock advanced by the recorded gaps; tokens and order ids the sandbox
   makes are bound to the recorded ones by order of appearance (`rewriting`); each
   order is created under the scenario that explained it. Each answer is compared as
   `conformance.compare` compares (status, error code, field set, JSON types), and
   values only for enums, echoed request fields and money (`findings`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .catalog_inference import infer_catalog
from .explain import ClassVerdict, explain
from .findings import Finding
from .reading import Recording
from .session_replay import replay_session
from .sessions import Session, sessions_of
from .shape_inference import Pair
from .traces import OutcomeClass, classes, median
from .world import Server


@dataclass(repr=False)
class Outcome:
    """Everything `compare` reports. (Its repr is short: asyncio formats the result of
    the task that made it when it finishes, and the recordings it holds are large.)"""

    sessions: list[Session]
    verdicts: list[ClassVerdict]
    findings: list[Finding]
    replayed: int
    skipped: int
    tolerance: float
    scenarios: list[str]
    #: The catalog's items (inferred from the recordings; empty where `--catalog` gave it).
    catalog: list[dict[str, Any]]
    catalog_given: bool
    #: Each recorded answer and event beside the sandbox's (`calibrate --shapes-out`).
    pairs: list[Pair] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"<Outcome of {len(self.sessions)} recording(s): {len(self.findings)} findings>"

    @property
    def exchanges(self) -> int:
        return sum(len(s.recording.exchanges) for s in self.sessions)

    @property
    def webhooks(self) -> int:
        return sum(len(s.recording.webhooks) for s in self.sessions)

    @property
    def orders(self) -> int:
        return sum(len(s.traces) for s in self.sessions)


async def run(
    recordings: list[Recording],
    scenario_paths: list[str],
    catalog_path: str | None,
    tolerance: float,
    shapes_path: str | None = None,
) -> Outcome:
    """Replay `recordings` (one session each, one after another, each in a sandbox of
    its own; their orders pooled into one set of outcome classes)."""
    sessions = sessions_of(recordings)
    session_of = {id(trace): session for session in sessions for trace in session.traces}
    outcomes = classes(trace for session in sessions for trace in session.traces)
    catalog = None if catalog_path else infer_catalog(sessions)
    server = Server(scenario_paths, catalog_path, shapes_path)
    await server.start()
    try:
        scenarios = await server.scenarios()
        verdicts = await explain(server, outcomes, session_of, scenarios, catalog, tolerance)
        scenario_of: dict[int, str | None] = {}
        explained_trace: dict[int, bool] = {}
        for verdict in verdicts:
            for trace in verdict.outcome.traces:
                scenario_of[id(trace)] = verdict.scenario_for(trace)
                explained_trace[id(trace)] = verdict.explained
        findings: list[Finding] = []
        pairs: list[Pair] = []
        replayed = skipped = 0
        for session in sessions:
            result = await replay_session(
                server, session, catalog, scenario_of, explained_trace, tolerance
            )
            findings += result.findings
            pairs += result.pairs
            replayed += result.replayed
            skipped += result.skipped
    finally:
        await server.stop()
    return Outcome(
        sessions=sessions,
        verdicts=verdicts,
        findings=findings,
        replayed=replayed,
        skipped=skipped,
        tolerance=tolerance,
        scenarios=[s["name"] for s in scenarios],
        catalog=catalog or [],
        catalog_given=catalog_path is not None,
        pairs=pairs,
    )


def class_delays(outcome: OutcomeClass) -> list[tuple[str, float, int]]:
    """The class's usual history: each status with its median delay and sample count."""
    return [(status, median(samples), len(samples)) for status, samples in outcome.delays()]
