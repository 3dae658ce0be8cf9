"""`mock-server compare --html PATH` (docs/recording.md, "The HTML report"): the report as
one self-contained page, for a person to look at rather than read.

It is drawn from what `compare.to_json` and `timelines.timeline` computed from the replay
(nothing is replayed again): the summary; each outcome class (explained or not, by which
scenarios, why each other scenario does not) with the life of its sample order drawn in
inline SVG, the recording's and the sandbox's on one time axis (statuses as coloured
spans, polls and webhook attempts as marks, the first difference as a line); the findings
grouped as the text report groups them (`compare._finding_lines`).

Recordings hold arbitrary strings (production's answers, a client's fields), so every
value reaches the page through `_e` (HTML escaping, quotes included), colours and
geometry are computed here, never taken from the data, and the page declares a
Content-Security-Policy that allows no script, no request and no frame: it needs none,
and an escaping mistake could not run anything.
"""

from __future__ import annotations

import html
import json
import math
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .replay import Outcome
from .timelines import NO_SCENARIO, timeline

_e = html.escape  # quote=True by default: safe in text and in attribute values

#: Longest recorded value shown in full in a finding (a body can be megabytes).
VALUE_LIMIT = 300


def write_html(path: str, outcome: Outcome, document: dict[str, Any]) -> None:
    """Write the page for `outcome` (whose `to_json` is `document`) to `path`."""
    Path(path).write_text(render(outcome, document), encoding="utf-8")


def render(outcome: Outcome, document: dict[str, Any]) -> str:
    timelines = _timelines(outcome, document)
    statuses: set[str] = set()
    sections = []
    for number, (entry, line) in enumerate(zip(document["classes"], timelines, strict=True), 1):
        sections.append(_class_section(number, entry, line, statuses))
    summary = document["summary"]
    title = "compare: " + ", ".join(Path(f).name for f in summary["files"])
    return "".join(
        [
            _HEAD.format(title=_e(title), css=_CSS),
            "<body><main>",
            f"<h1>Compare report <small>{_e(', '.join(summary['files']))}</small></h1>",
            _summary(document),
            _legend(statuses),
            '<section aria-labelledby="classes"><h2 id="classes">Outcome classes</h2>',
            *(sections or ["<p>No order settled: no outcome class.</p>"]),
            "</section>",
            _findings(document["findings"]),
            "</main></body></html>\n",
        ]
    )


def _timelines(outcome: Outcome, document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every class's timeline: those `to_json` made (the unexplained classes'), and the
    same from the verdict for the explained ones."""
    made = iter(document["timelines"])
    return [timeline(v) if v.explained else next(made) for v in outcome.verdicts]


# -- summary and legend -------------------------------------------------------------------


def _summary(document: dict[str, Any]) -> str:
    summary, code = document["summary"], document["exit"]
    unexplained, findings = summary["unexplained"], summary["shape_findings"]
    if code == 0:
        verdict = "Clean: every outcome class is explained and no answer's shape differs."
    elif not unexplained and not findings:
        verdict = "Not to be trusted as clean: see the warnings below."
    else:
        verdict = (
            f"Drift: {unexplained} of {summary['classes']} outcome classes unexplained, "
            f"{findings} shape finding{'s' if findings != 1 else ''}."
        )
    cards = [
        (
            "exchanges",
            summary["exchanges"],
            f"{summary['replayed']} replayed, {summary['skipped']} skipped",
        ),
        ("webhooks", summary["webhooks"], "recorded deliveries"),
        ("orders", summary["orders"], "recorded"),
        (
            "classes",
            summary["classes"],
            f"{summary['explained']} explained, {unexplained} unexplained",
        ),
        ("shape findings", findings, "answers that differ"),
        ("exit", code, "0 clean, 1 drift"),
    ]
    warnings = document.get("warnings") or []
    return "".join(
        [
            '<section aria-labelledby="summary"><h2 id="summary">Summary</h2>',
            f'<p class="verdict {"clean" if code == 0 else "drift"}">{_e(verdict)}</p>',
            *(f'<p class="warning">warning: {_e(str(w))}</p>' for w in warnings),
            '<dl class="cards">',
            *(
                f'<div class="card"><dt>{_e(name)}</dt><dd><strong>{_e(str(value))}</strong>'
                f"<span>{_e(note)}</span></dd></div>"
                for name, value, note in cards
            ),
            '</dl><p class="meta">',
            f"tolerance {summary['tolerance']:g} of each gap, at least 1 s · catalog "
            f"{_e(summary['catalog'])} · scenarios: ",
            ", ".join(f"<code>{_e(name)}</code>" for name in summary["scenarios"]),
            "</p></section>",
        ]
    )


def _legend(statuses: set[str]) -> str:
    known = [s for s in STATUS_COLOURS if s in statuses]
    shown = known + sorted(statuses - set(known))
    swatches = "".join(
        f'<li><svg width="22" height="12" aria-hidden="true"><rect width="22" height="12" '
        f'rx="2" fill="{status_colour(s)}"/></svg>{_e(s)}</li>'
        for s in shown
    )
    return (
        '<section aria-labelledby="legend" class="legend"><h2 id="legend">Legend</h2>'
        f'<ul class="statuses" aria-label="statuses">{swatches}</ul>'
        '<ul class="marks" aria-label="marks">'
        '<li><svg width="14" height="14" aria-hidden="true"><path d="M7 2v10" '
        'stroke="#334155" stroke-width="2"/></svg>a poll (recording) or the same read '
        "(sandbox)</li>"
        '<li><svg width="14" height="14" aria-hidden="true"><path d="M7 1l6 6-6 6-6-6z" '
        'fill="#fff" stroke="#334155" stroke-width="1.5"/></svg>a webhook attempt, with the '
        "status its receiver answered (red: refused)</li>"
        '<li><svg width="14" height="14" aria-hidden="true"><path d="M7 2l6 10H1z" '
        'fill="#7c3aed"/></svg>a client code submitted</li>'
        '<li><svg width="14" height="14" aria-hidden="true"><path d="M7 0v14" '
        'stroke="#dc2626" stroke-width="2" stroke-dasharray="3 2"/></svg>the first '
        "difference</li></ul>"
        '<p class="meta">Recording: each status from the observation that first showed it '
        "(polls sample the real life). Sandbox: each status from when it entered it. "
        "One time axis per class, in seconds after the order's creation.</p></section>"
    )


# -- classes ------------------------------------------------------------------------------


def _class_section(
    number: int, entry: dict[str, Any], line: dict[str, Any], statuses: set[str]
) -> str:
    explained = entry["explained"]
    played = entry["played"]
    delays = ", ".join(
        f"{_e(str(d['status']))} +{d['after']:g} s" for d in entry["median_delays"] if d["samples"]
    )
    orders = entry["orders"]
    parts = [
        f'<section class="class {"explained" if explained else "unexplained"}" '
        f'aria-labelledby="class-{number}">',
        f'<h3 id="class-{number}"><span class="badge">'
        f"{'explained' if explained else 'unexplained'}</span> {_e(entry['name'])}</h3>",
        f'<p class="meta">{orders} order{"s" if orders != 1 else ""} · '
        f"{_e(entry['description'])} · median {delays or 'no delays seen'}</p>",
    ]
    if entry["explained_by"]:
        by = ", ".join(
            f"<code>{_e(e['scenario'])}</code> ({e['orders']} of {played})"
            for e in entry["explained_by"]
        )
        parts.append(f"<p>Explained by {by}.")
        if not explained:
            parts.append(
                f" {entry['explained_orders']} of {played} played orders explained; the "
                f"others: {NO_SCENARIO}."
            )
        parts.append("</p>")
    else:
        parts.append(f'<p class="none">{_e(NO_SCENARIO.capitalize())} ({played} played).</p>')
    parts.append(_timeline(number, line, explained, statuses))
    if entry["why_not"]:
        reasons = "".join(
            f"<li>not <code>{_e(name)}</code>: {_e(str(why))}</li>"
            for name, why in entry["why_not"].items()
        )
        parts.append(
            f"<details{'' if explained else ' open'}><summary>Why not the other scenarios "
            f'({len(entry["why_not"])})</summary><ul class="why">{reasons}</ul></details>'
        )
    parts.append("</section>")
    return "".join(parts)


def _timeline(number: int, line: dict[str, Any], explained: bool, statuses: set[str]) -> str:
    choice = line["sandbox_scenario"]
    who = "the sandbox under its own choice"
    if choice is not None:
        who += f" (<code>{_e(str(choice))}</code>)"
    differs = line["why_not"]
    svg, shown = timeline_svg(
        f"timeline-{number}", line, first_difference_at(differs, line["rows"])
    )
    statuses |= shown
    if not differs:
        verdict = '<p class="same">The sandbox\'s own choice plays this order as recorded.</p>'
    elif explained:  # by a scenario the sandbox does not choose by itself
        verdict = (
            '<p class="differs">The sandbox\'s own choice differs (the scenarios above '
            f"explain the class): {_e(differs)}</p>"
        )
    else:
        verdict = f'<p class="differs">First difference: {_e(differs)}</p>'
    parts = [
        f"<h4>Timeline of order <code>{_e(str(line['order']))}</code>: the recording and "
        f"{who}</h4>",
        f'<figure class="timeline">{svg}</figure>',
        verdict,
        "<details><summary>The timeline as a table</summary>",
        _timeline_table(line["rows"]),
        "</details>",
    ]
    return "".join(parts)


_AT = re.compile(r" at (\d+(?:\.\d+)?) s\b")


def first_difference_at(why_not: str | None, rows: list[dict[str, Any]]) -> float | None:
    """Where the judge's reason (`judge.judge`) puts the first difference: the time it
    names ("processing at 4.5 s (poll): ..."); for another ending ("ends ..."), the
    recording's last observation; else (a refusal, another charge) the creation. None
    when the play gives what was recorded."""
    if not why_not:
        return None
    if found := _AT.search(why_not):
        return float(found[1])
    if why_not.startswith("ends "):
        return max((row["at"] for row in rows if row["recording"]), default=0.0)
    return 0.0


def _timeline_table(rows: list[dict[str, Any]]) -> str:
    """The rows as `compare`'s text timeline shows them, consecutive alike rows folded."""
    runs: list[list[Any]] = []
    for row in rows:
        cells = (_cell(row["recording"]), _cell(row["sandbox"]))
        if runs and runs[-1][3] == cells:
            runs[-1][1] = row["at"]
            runs[-1][2] += 1
        else:
            runs.append([row["at"], row["at"], 1, cells])
    body = []
    for first, last, count, (recording, sandbox) in runs:
        when = f"{first:.1f} s" if count == 1 else f"{first:.1f}–{last:.1f} s"
        times = f" ×{count}" if count > 1 else ""
        body.append(
            f"<tr><td>{when}</td><td>{_e(recording)}{times if recording else ''}</td>"
            f"<td>{_e(sandbox)}{times if sandbox else ''}</td></tr>"
        )
    return (
        '<table class="rows"><thead><tr><th scope="col">time</th><th scope="col">recording'
        '</th><th scope="col">sandbox</th></tr></thead><tbody>' + "".join(body) + "</tbody></table>"
    )


def _cell(cell: dict[str, Any] | None) -> str:
    return "" if cell is None else f"{cell['status']} ({cell['source']})"


# -- the timeline, drawn ------------------------------------------------------------------

#: Each status's colour; any other status (production may have more) gets one of
#: `_OTHER_COLOURS` by a hash of its name, and a refusal ("HTTP 409 ...") `_REFUSED`.
STATUS_COLOURS = {
    "pending": "#cbd5e1",
    "processing": "#60a5fa",
    "need_client_code": "#fbbf24",
    "completed": "#16a34a",
    "partial": "#ea580c",
    "failed": "#dc2626",
}
_OTHER_COLOURS = ("#0d9488", "#db2777", "#7c3aed", "#65a30d", "#0891b2", "#a16207")
_REFUSED = "#475569"
_DARK_TEXT = {"#cbd5e1", "#60a5fa", "#fbbf24"}

# Geometry, in the SVG's own units (it scales to the page's width).
_WIDTH, _LEFT, _RIGHT, _TOP = 1000, 92, 16, 24
_CODES, _BAR, _TICKS, _GAP = 14, 22, 10, 6
_LANE = _CODES + _BAR + _TICKS
_WEBHOOK = re.compile(r"^webhook, answered (.*)$")


def status_colour(status: str) -> str:
    if status in STATUS_COLOURS:
        return STATUS_COLOURS[status]
    if status.startswith("HTTP "):
        return _REFUSED
    return _OTHER_COLOURS[zlib.crc32(status.encode()) % len(_OTHER_COLOURS)]


@dataclass
class _Lane:
    """One life on the axis: status spans (status, from, to), and its marks."""

    name: str
    spans: list[list[Any]] = field(default_factory=list)
    polls: list[tuple[float, str]] = field(default_factory=list)
    codes: list[tuple[float, str]] = field(default_factory=list)
    webhooks: list[tuple[float, str, str]] = field(default_factory=list)

    def enter(self, at: float, status: str) -> None:
        if self.spans and self.spans[-1][0] == status:
            return
        if self.spans:
            self.spans[-1][2] = at
        self.spans.append([status, at, math.inf])


def _lanes(rows: list[dict[str, Any]]) -> tuple[_Lane, _Lane]:
    """The recording's lane (each status from the observation that first showed it; a
    webhook retry of a status already seen changes nothing) and the sandbox's (its
    creation and each status it entered; reads are marks)."""
    recording, sandbox = _Lane("recording"), _Lane("sandbox")
    webhooked: set[str] = set()
    for row in rows:
        at = float(row["at"])
        for lane, cell in ((recording, row["recording"]), (sandbox, row["sandbox"])):
            if cell is None:
                continue
            status, source = str(cell["status"]), str(cell["source"])
            if webhook := _WEBHOOK.match(source):
                lane.webhooks.append((at, status, webhook[1]))
                if lane is recording and status not in webhooked:
                    webhooked.add(status)
                    lane.enter(at, status)
                continue
            if source in ("poll", "read"):
                lane.polls.append((at, status))
            elif source in ("client_code", "client code"):
                lane.codes.append((at, status))
            if lane is recording or source in ("create", "entered"):
                lane.enter(at, status)
    return recording, sandbox


def _axis(latest: float) -> tuple[float, float]:
    """A round step for about eight ticks, and the axis's end (a whole number of steps)."""
    raw = max(latest, 1.0) / 8
    steps = (0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)
    step = next((s for s in steps if s >= raw), 3600 * math.ceil(raw / 3600))
    return step, step * max(1, math.ceil(latest * 1.03 / step))


def _seconds(at: float, step: float = 1) -> str:
    return f"{at / 60:g} min" if step >= 60 and at else f"{at:g} s"


def timeline_svg(
    ident: str, line: dict[str, Any], difference_at: float | None
) -> tuple[str, set[str]]:
    """The order's two lives on one time axis, and the statuses drawn (for the legend)."""
    lanes = _lanes(line["rows"])
    latest = max([row["at"] for row in line["rows"]] + [difference_at or 0.0])
    step, end = _axis(latest)
    span = _WIDTH - _LEFT - _RIGHT

    def x(at: float) -> float:
        return round(_LEFT + span * min(max(at, 0.0), end) / end, 1)

    axis_y = _TOP + 2 * _LANE + _GAP + 4
    height = axis_y + 22
    out = [
        f'<svg viewBox="0 0 {_WIDTH} {height}" role="img" aria-labelledby="{ident}-t '
        f'{ident}-d" font-size="12">',
        f'<title id="{ident}-t">The life of order {_e(str(line["order"]))}: the recording '
        "and the sandbox on one time axis</title>",
        f'<desc id="{ident}-d">{_e(_story(lanes, difference_at))}</desc>',
    ]
    ticks = [i * step for i in range(int(round(end / step)) + 1)]
    for at in ticks:
        out.append(
            f'<path d="M{x(at)} {_TOP}V{axis_y}" stroke="#e2e8f0"/>'
            f'<text x="{x(at)}" y="{axis_y + 16}" text-anchor="middle" fill="#64748b">'
            f"{_seconds(at, step)}</text>"
        )
    out.append(f'<path d="M{_LEFT} {axis_y}H{_WIDTH - _RIGHT}" stroke="#94a3b8"/>')
    statuses: set[str] = set()
    for index, lane in enumerate(lanes):
        top = _TOP + index * (_LANE + _GAP)
        out.append(_lane_svg(lane, top, x, end))
        statuses |= {s[0] for s in lane.spans}
    if difference_at is not None:
        at = x(difference_at)
        anchor = "end" if at > _WIDTH - 200 else "start"
        shift = -4 if anchor == "end" else 4
        out.append(
            f'<g class="first-difference"><title>the first difference, at '
            f"{difference_at:g} s</title>"
            f'<path d="M{at} {_TOP - 10}V{axis_y}" stroke="#dc2626" stroke-width="2" '
            'stroke-dasharray="5 3"/>'
            f'<text x="{at + shift}" y="{_TOP - 12}" text-anchor="{anchor}" fill="#b91c1c" '
            f'font-weight="600">first difference · {difference_at:g} s</text></g>'
        )
    out.append("</svg>")
    return "".join(out), statuses


def _lane_svg(lane: _Lane, top: float, x: Any, end: float) -> str:
    bar = top + _CODES
    out = [
        f'<g class="lane {lane.name}">'
        f'<text x="{_LEFT - 10}" y="{bar + 15}" text-anchor="end" font-weight="600" '
        f'fill="#1e293b">{lane.name}</text>'
        f'<rect x="{_LEFT}" y="{bar}" width="{_WIDTH - _LEFT - _RIGHT}" height="{_BAR}" '
        'fill="#f1f5f9"/>'
    ]
    # A status held for a moment (entered and left at one instant) is drawn over its
    # neighbours, a sliver 6 units wide, so that it is not hidden by the next one.
    moments = []
    for status, begins, ends in lane.spans:
        left, right = x(begins), x(min(ends, end))
        width = round(right - left, 1)
        colour = status_colour(status)
        until = "the end" if ends == math.inf else f"{ends:g} s"
        title = f"<title>{_e(status)}: from {begins:g} s to {until}</title>"
        if width < 6:
            moments.append(
                f'<g class="span">{title}<rect x="{max(_LEFT, round(left - 3, 1))}" y="{bar - 2}" '
                f'width="6" height="{_BAR + 4}" fill="{colour}" stroke="#fff"/></g>'
            )
            continue
        out.append(
            f'<g class="span">{title}<rect x="{left}" y="{bar}" width="{width}" '
            f'height="{_BAR}" fill="{colour}"/>'
        )
        label = status if len(status) <= 40 else status[:39] + "…"
        if width > 7 * len(label) + 10:
            ink = "#0f172a" if colour in _DARK_TEXT else "#fff"
            out.append(f'<text x="{left + 5}" y="{bar + 15}" fill="{ink}">{_e(label)}</text>')
        out.append("</g>")
    out += moments
    seen = "poll" if lane.name == "recording" else "read"
    for at_first, at_last, count, status in _runs(lane.polls):
        when = f"at {at_first:g} s" if count == 1 else f"{at_first:g}–{at_last:g} s"
        ticks = "".join(
            f"M{x(at)} {bar + _BAR + 1}v{_TICKS - 2}"
            for at, s in lane.polls
            if at_first <= at <= at_last and s == status
        )
        out.append(
            f'<path class="poll" d="{ticks}" stroke="#334155" stroke-width="1.5">'
            f"<title>{count} {seen}{'s' if count != 1 else ''} {when}: {_e(status)}</title></path>"
        )
    for at, status in lane.codes:
        px = x(at)
        out.append(
            f'<path class="code" d="M{px} {bar + _BAR}l5 {_TICKS}h-10z" fill="#7c3aed">'
            f"<title>client code submitted at {at:g} s: {_e(status)}</title></path>"
        )
    for at, status, answered in lane.webhooks:
        px = x(at)
        refused = not answered.startswith("2")
        ink = "#b91c1c" if refused else "#334155"
        out.append(
            f'<g class="webhook"><title>webhook attempt at {at:g} s: {_e(status)}, answered '
            f"{_e(answered)}</title>"
            f'<path d="M{px} {bar - 6}l6 6-6 6-6-6z" fill="#fff" stroke="{ink}" '
            'stroke-width="1.5"/>'
            f'<text x="{px}" y="{bar - 8}" text-anchor="middle" font-size="10" fill="{ink}">'
            f"{_e(answered[:12])}</text></g>"
        )
    out.append("</g>")
    return "".join(out)


def _runs(marks: list[tuple[float, str]]) -> list[tuple[float, float, int, str]]:
    """Consecutive marks of one status as one run: (first, last, count, status)."""
    runs: list[tuple[float, float, int, str]] = []
    for at, status in marks:
        if runs and runs[-1][3] == status:
            first, _, count, _ = runs[-1]
            runs[-1] = (first, at, count + 1, status)
        else:
            runs.append((at, at, 1, status))
    return runs


def _story(lanes: tuple[_Lane, _Lane], difference_at: float | None) -> str:
    """The drawing in words (the SVG's description, for those who cannot see it)."""
    told = []
    for lane in lanes:
        if not lane.spans:
            told.append(f"{lane.name.capitalize()}: nothing.")
            continue
        lives = ", ".join(f"{status} from {begins:g} s" for status, begins, _ in lane.spans)
        marks = [f"{len(lane.polls)} {'polls' if lane.name == 'recording' else 'reads'}"]
        if lane.codes:
            marks.append(f"{len(lane.codes)} client code(s)")
        if lane.webhooks:
            attempts = ", ".join(f"{at:g} s answered {code}" for at, _, code in lane.webhooks)
            marks.append(f"webhook attempts at {attempts}")
        told.append(f"{lane.name.capitalize()}: {lives}; {'; '.join(marks)}.")
    if difference_at is not None:
        told.append(f"First difference at {difference_at:g} s.")
    return " ".join(told)


# -- findings -----------------------------------------------------------------------------


def finding_groups(findings: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Findings grouped where they say the same about the same request, as
    `compare._finding_lines` groups them in the text."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for finding in findings:
        key = (
            finding["request"],
            finding["pointer"],
            finding["kind"],
            json.dumps(finding["recorded"], sort_keys=True, default=str),
            json.dumps(finding["sandbox"], sort_keys=True, default=str),
        )
        groups.setdefault(key, []).append(finding)
    return list(groups.values())


def _findings(findings: list[dict[str, Any]]) -> str:
    groups = finding_groups(findings)
    head = '<section aria-labelledby="findings"><h2 id="findings">Findings</h2>'
    if not groups:
        return head + "<p>None: every replayed answer has the recorded shape.</p></section>"
    rows = []
    for group in groups:
        first = group[0]
        where = f"seq {first['seq']}" if first["seq"] is not None else f"order {first['order']}"
        more = f" <small>(and {len(group) - 1} more)</small>" if len(group) > 1 else ""
        rows.append(
            f"<tr><td>{_e(where)}{more}</td><td><code>{_e(first['request'])}</code></td>"
            f"<td><code>{_e(first['pointer'] or '(answer)')}</code></td>"
            f"<td>{_e(first['kind'])}</td><td>{_value(first['recorded'])}</td>"
            f"<td>{_value(first['sandbox'])}</td></tr>"
        )
    return (
        f"{head}<p>{len(findings)} finding{'s' if len(findings) != 1 else ''} in "
        f"{len(groups)} group{'s' if len(groups) != 1 else ''}: alike findings about the same "
        "request are one row.</p>"
        '<div class="scroll"><table class="findings"><thead><tr><th scope="col">where</th>'
        '<th scope="col">request</th><th scope="col">pointer</th><th scope="col">kind</th>'
        '<th scope="col">recorded</th><th scope="col">sandbox</th></tr></thead><tbody>'
        + "".join(rows)
        + "</tbody></table></div></section>"
    )


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if len(text) > VALUE_LIMIT:
        text = text[:VALUE_LIMIT] + f"… ({len(text)} characters)"
    return f"<code>{_e(text)}</code>"


# -- the page's head ----------------------------------------------------------------------

_HEAD = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src \
'unsafe-inline'; img-src data:; form-action 'none'; base-uri 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{title}</title><style>{css}</style></head>
"""

_CSS = """
:root{--ink:#1e293b;--soft:#64748b;--line:#e2e8f0;--bad:#b91c1c;--good:#15803d}
*{box-sizing:border-box}
body{margin:0;background:#f8fafc;color:var(--ink);font:15px/1.45 system-ui,-apple-system,
"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
main{max-width:1100px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:22px;margin:0 0 12px}h1 small{font-weight:400;color:var(--soft);font-size:14px;
margin-left:8px;overflow-wrap:anywhere}
h2{font-size:17px;margin:18px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:16px;margin:0 0 4px;overflow-wrap:anywhere}
h4{font-size:14px;margin:12px 0 4px;font-weight:600;overflow-wrap:anywhere}
code{font:13px/1.3 ui-monospace,"DejaVu Sans Mono",monospace;overflow-wrap:anywhere}
.meta{color:var(--soft);font-size:13px;margin:4px 0}
.verdict{padding:8px 12px;border-radius:6px;font-weight:600;margin:0 0 10px}
.verdict.clean{background:#dcfce7;color:#14532d}.verdict.drift{background:#fee2e2;color:#7f1d1d}
.warning{background:#fef3c7;color:#78350f;padding:6px 12px;border-radius:6px;margin:4px 0}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:8px;margin:0}
.card{background:#fff;border:1px solid var(--line);border-radius:6px;padding:4px 10px}
.card dt{font-size:11px;color:var(--soft);text-transform:uppercase;letter-spacing:.04em}
.card dd{margin:0;line-height:1.25}.card strong{font-size:18px}
.card span{display:block;font-size:12px;color:var(--soft)}
.legend ul{list-style:none;padding:0;margin:4px 0;display:flex;flex-wrap:wrap;gap:4px 16px;
font-size:13px}.legend li{display:flex;align-items:center;gap:6px}
.class{background:#fff;border:1px solid var(--line);border-left:5px solid var(--good);
border-radius:6px;padding:12px 16px;margin:12px 0}
.class.unexplained{border-left-color:var(--bad)}
.badge{display:inline-block;font-size:11px;text-transform:uppercase;letter-spacing:.05em;
padding:1px 6px;border-radius:4px;margin-right:6px;vertical-align:2px;color:#fff;
background:var(--good)}.unexplained .badge{background:var(--bad)}
.none{color:var(--bad);font-weight:600;margin:4px 0}
details{margin:6px 0;font-size:13px}summary{cursor:pointer;color:#334155}
.why{margin:4px 0;padding-left:20px}.why li{margin:2px 0}
figure.timeline{margin:6px 0}figure.timeline svg{width:100%;height:auto;display:block}
.differs{color:var(--bad);font-size:13px;margin:2px 0}.same{color:var(--good);font-size:13px}
table{border-collapse:collapse;font-size:13px;width:100%}
th,td{text-align:left;padding:3px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{color:var(--soft);font-weight:600}.rows{max-width:720px}
.scroll{overflow-x:auto}.findings td{overflow-wrap:anywhere}
"""
