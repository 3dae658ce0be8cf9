"""The timeline of an outcome class (docs/recording.md, "The report"): what the recording
saw of one of its orders and what the sandbox did with it, side by side by time. The
text report, `--json` and the HTML page (`html_report`) all show it.
"""

from __future__ import annotations

from typing import Any

from .explain import ClassVerdict
from .judge import Play, sandbox_attempts
from .values import parse_time

NO_SCENARIO = "no scenario produces this"


def timeline(verdict: ClassVerdict) -> dict[str, Any]:
    """The class's first played order: what the recording saw of it, and what the
    sandbox did with it under its own choice of scenario, side by side by time."""
    play = verdict.sample
    trace = play.trace if play is not None else verdict.played[0]
    rows: list[dict[str, Any]] = []
    for observation in trace.observations:
        source = observation.kind
        if observation.kind == "webhook":
            source = f"webhook, answered {observation.answered}"
        rows.append(
            {
                "at": round(observation.at, 3),
                "recording": {"status": observation.status, "source": source},
                "sandbox": None,
            }
        )
    if play is not None:
        _sandbox_rows(play, rows)
    rows.sort(key=lambda row: (row["at"], row["recording"] is None))
    return {
        "class": verdict.outcome.name,
        "order": trace.order_id,
        "sandbox_scenario": play.chosen if play is not None else None,
        "why_not": play.why_not if play is not None else None,
        "rows": rows,
    }


def _sandbox_rows(play: Play, rows: list[dict[str, Any]]) -> None:
    by_time = {row["at"]: row for row in rows if row["recording"] is not None}
    reads = {round(at, 3): (status, source) for at, status, source in play.reads}
    if play.order_id is not None and 0.0 in by_time:
        by_time[0.0]["sandbox"] = {"status": play.created[1].get("status"), "source": "create"}
    for at, (status, source) in reads.items():
        if at in by_time:
            by_time[at]["sandbox"] = {"status": status, "source": source}
        else:
            rows.append(
                {"at": at, "recording": None, "sandbox": {"status": status, "source": source}}
            )
    history = play.inspected.get("history") or []
    if history:
        start = parse_time(history[0]["at"])
        for entry in history[1:]:
            at = round(parse_time(entry["at"]) - start, 3)
            rows.append(
                {
                    "at": at,
                    "recording": None,
                    "sandbox": {"status": entry["status"], "source": "entered"},
                }
            )
        for at, status, code in sandbox_attempts(play.inspected, start):
            rows.append(
                {
                    "at": round(at, 3),
                    "recording": None,
                    "sandbox": {"status": status, "source": f"webhook, answered {code}"},
                }
            )
    if play.order_id is None:
        status, body = play.created
        code = body.get("code") if isinstance(body, dict) else None
        rows.append(
            {
                "at": 0.0,
                "recording": None,
                "sandbox": {"status": f"HTTP {status} {code or ''}".strip(), "source": "create"},
            }
        )
