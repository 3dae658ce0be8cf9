"""Whether a green `compare` or a `calibrate` can be trusted (docs/recording.md, "Can a
result be trusted"): what a recording does not vouch for, said as warnings.

* A recorder's file without its `end` line (`reading.Recording.end`): the recorder was
  killed or the file was cut, so it was never scanned for secrets and may end early.
  `compare` and `calibrate` exit 1 for it (`untrusted`).
* A last line cut in the middle (`Recording.cut_line`): named as `file:line: reason`.
* Orders never seen to settle: they form no outcome class (`settled`), and are counted.
* A recording in which nothing can be replayed (`nothing_to_replay`): no exchange, or
  every answer the recorder's own 502 (`unanswered`): exit 2, as for a file that cannot
  be read.

A HAR file has no end line (the tools that write HAR write a whole file at once, and
scan nothing): it is not warned about.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .reading import Exchange, Recording, RecordingError, read_recordings
from .traces import TERMINAL, Trace
from .values import as_dict


def unanswered(exchange: Exchange) -> bool:
    """The recorder's own 502 `upstream_unavailable`: production never answered
    (docs/recording.md, "Record")."""
    body = as_dict(exchange.response.body)
    return exchange.status == 502 and body.get("code") == "upstream_unavailable"


def file_warnings(recording: Recording) -> list[str]:
    """What the file itself does not vouch for: a cut last line, no end line."""
    if recording.kind != "recording":
        return []
    found = []
    if recording.cut_line is not None:
        found.append(
            f"{recording.path}:{recording.cut_line}: the last line is cut in the middle "
            "(the recorder was stopped while writing it, or the file was cut): left out"
        )
    if recording.end is None:
        found.append(
            f"{recording.path}: no end line: the recorder was killed or the file was cut, "
            "so it was never scanned for secrets and may end early (record again, and "
            "stop the recorder with Ctrl-C or SIGTERM)"
        )
    return found


def untrusted(recordings: Iterable[Recording]) -> bool:
    """Some file has no end line: a result drawn from it cannot be green."""
    return any(file_warnings(recording) for recording in recordings)


def nothing_to_replay(recording: Recording) -> str | None:
    """Why nothing of `recording` can be replayed (`file:1: reason`), or None."""
    if not recording.exchanges:
        return (
            f"{recording.path}:1: nothing to replay: no exchange was recorded (was the "
            "client's base URL the recorder's?)"
        )
    if all(unanswered(exchange) for exchange in recording.exchanges):
        count = len(recording.exchanges)
        return (
            f"{recording.path}:1: nothing to replay: every answer ({count}) is the "
            "recorder's own 502 upstream_unavailable: the upstream never answered "
            "(check --upstream and that it can be reached from the recorder)"
        )
    return None


def read_replayable(paths: Sequence[str]) -> list[Recording]:
    """The recordings at `paths`, each with something to replay (compare, calibrate);
    raises `RecordingError` with `file:line: reason` otherwise."""
    recordings = read_recordings(paths)
    for recording in recordings:
        if (why := nothing_to_replay(recording)) is not None:
            raise RecordingError(why)
    return recordings


def settled(trace: Trace) -> bool:
    """The recording saw the order settle (a terminal status)."""
    return trace.key().final in TERMINAL


def unsettled_warning(count: int) -> str | None:
    if not count:
        return None
    orders = "order was" if count == 1 else "orders were"
    return (
        f"{count} {orders} never seen to settle (the recording ended first, or a client "
        "code never came): they form no outcome class and explain nothing"
    )
