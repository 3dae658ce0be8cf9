"""`mock-server recording show FILE`: what a recording holds, order by order
(docs/recording.md, "5. Read it, then commit it"): whether the file is finished, then
each recorded order's observed life (its creation, each poll's status, client codes)
and the webhook deliveries that carried its id, with the answer each got, in seconds
after the order's creation. What one reads before committing a recording as a fixture.
"""

from __future__ import annotations

from .reading import Recording
from .traces import Trace, traces
from .trust import file_warnings, settled, unanswered, unsettled_warning


def show(recording: Recording) -> str:
    """The text `recording show` prints."""
    found = traces(recording)
    answered = sum(1 for exchange in recording.exchanges if not unanswered(exchange))
    lines = [
        f"{recording.path}: {len(recording.exchanges)} exchanges ({answered} answered by "
        f"the upstream), {len(recording.webhooks)} webhooks, {len(found)} orders",
        _finished(recording),
    ]
    if recording.end is not None:
        lines += [f"warning (when recorded): {w}" for w in recording.end.get("warnings") or []]
    lines += [f"warning: {w}" for w in file_warnings(recording)]
    if (orders := unsettled_warning(sum(1 for t in found if not settled(t)))) is not None:
        lines.append(f"warning: {orders}")
    for trace in found:
        lines += ["", *_order(trace)]
    return "\n".join(lines)


def _finished(recording: Recording) -> str:
    if recording.kind != "recording":
        return "a HAR file (no end line: written whole by another tool)"
    if recording.end is None:
        return "unfinished: no end line"
    return "finished: end line present, scanned for secrets" + (
        "" if recording.end.get("scanned") is True else " (not said)"
    )


def _order(trace: Trace) -> list[str]:
    key = trace.key()
    created = trace.created_order
    shown = {"item": "item", "item_product_type": "type", "quantity": "quantity", "price": "price"}
    what = ", ".join(f"{word} {created[name]}" for name, word in shown.items() if name in created)
    ending = key.describe() if settled(trace) else f"never seen to settle (last: {key.final})"
    lines = [f"order {trace.order_id} ({what}): {ending}"]
    for observation in trace.observations:
        how = observation.kind.replace("_", " ")
        if observation.kind == "webhook":
            how = f"webhook, answered {observation.answered}"
        lines.append(
            f"  {f'+{observation.at:.1f} s':>10}  {observation.status:<17} {how} "
            f"(seq {observation.seq})"
        )
    return lines
