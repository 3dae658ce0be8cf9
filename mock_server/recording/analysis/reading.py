"""Reading a recorded session: the recorder's own files (JSON Lines, gzipped or not:
docs/recording.md, "The file") and HAR 1.2 files from other tools (exchanges only, and
the webhooks of a HAR this package exported), into one `Recording`.

Everything `compare` and `calibrate` know comes from here. A file that cannot be read is
a `RecordingError` whose text is `file:line: reason`. A finished recording ends with its
`end` line (`Recording.end`); a recorder killed mid-line leaves its last line cut short:
that line alone is left out, and named (`Recording.cut_line`), so that `trust` can say
so (every finished exchange is whole). Times become epoch seconds (wall time of the
recording).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from ..recorder.fileformat import END, FORMAT, VERSION, read_bytes


class RecordingError(Exception):
    """A file that is not a readable recording: `file:line: reason`."""


@dataclass(slots=True)
class Message:
    """One side of an exchange, or a delivered webhook: headers and a body (a JSON
    value when it was JSON; else `text`, or `raw` bytes)."""

    headers: list[tuple[str, str]] = field(default_factory=list)
    body: Any = None
    text: str | None = None
    raw: bytes | None = None

    def header(self, name: str) -> str | None:
        """The first header of that name, case-insensitively."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)


@dataclass(slots=True)
class Exchange:
    seq: int
    at: float
    method: str
    path: str
    query: str
    request: Message
    status: int
    response: Message
    ms: float
    line: int


@dataclass(slots=True)
class Webhook:
    seq: int
    at: float
    message: Message
    answered: int | None
    signature_valid: bool | None
    line: int


@dataclass
class Recording:
    path: str
    kind: str  # "recording" | "har"
    upstream: str | None
    exchanges: list[Exchange]
    webhooks: list[Webhook]
    #: The `end` line of a finished recording (`fileformat.end_line`); None where the
    #: file has none (a recorder killed or a file cut: never scanned, may end early).
    end: dict[str, Any] | None = None
    #: The number of a last line cut in the middle, left out; None where none was.
    cut_line: int | None = None

    def events(self) -> list[Exchange | Webhook]:
        """Every event in arrival order (`seq`)."""
        return sorted([*self.exchanges, *self.webhooks], key=lambda event: event.seq)


def read_recordings(paths: list[str]) -> list[Recording]:
    return [read_recording(path) for path in paths]


def read_recording(path: str) -> Recording:
    """The recording at `path`, whatever its kind; raises `RecordingError`."""
    try:
        data = read_bytes(path)  # gzipped or not, by its first bytes
    except OSError as exc:
        raise RecordingError(f"{path}:1: cannot read it ({exc.strerror or exc})") from exc
    text = data.decode("utf-8", errors="replace")
    return _read_har(path, text) if _is_har(text) else _read_lines(path, text)


def _is_har(text: str) -> bool:
    """A recording's first line is its header; a HAR file is one JSON object with `log`
    (pretty-printed, its first line alone is no JSON)."""
    first = text.lstrip().split("\n", 1)[0]
    try:
        record = json.loads(first)
    except ValueError:
        return text.lstrip().startswith("{")
    return isinstance(record, dict) and "log" in record and "format" not in record


# -- the recorder's own files ---------------------------------------------------------------


def _read_lines(path: str, text: str) -> Recording:
    lines = text.split("\n")
    cut_short = not text.endswith("\n")
    header: dict[str, Any] | None = None
    exchanges: list[Exchange] = []
    webhooks: list[Webhook] = []
    end: dict[str, Any] | None = None
    end_number = 0
    cut_line = None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            if cut_short and number == len(lines):
                cut_line = number  # the line a killed recorder was writing
                break
            raise RecordingError(f"{path}:{number}: not JSON ({exc})") from exc
        if header is None:
            header = _header(path, number, record)
            continue
        if end is not None:
            raise RecordingError(
                f"{path}:{number}: a line after the end line (line {end_number}): "
                "a recording ends there (two files joined?)"
            )
        if isinstance(record, dict) and record.get("kind") == END:
            end, end_number = record, number
            continue
        try:
            event = _event(record, number)
        except (KeyError, TypeError, ValueError) as exc:
            raise RecordingError(f"{path}:{number}: not an event ({_why(exc)})") from exc
        (exchanges if isinstance(event, Exchange) else webhooks).append(event)
    if header is None:
        raise RecordingError(f"{path}:1: empty: a recording begins with its header line")
    exchanges.sort(key=lambda e: e.seq)
    webhooks.sort(key=lambda w: w.seq)
    return Recording(path, "recording", header.get("upstream"), exchanges, webhooks, end, cut_line)


def _header(path: str, number: int, record: Any) -> dict[str, Any]:
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise RecordingError(
            f"{path}:{number}: not a recording (its first line has no "
            f'"format": "{FORMAT}"; HAR files are read too)'
        )
    version = record.get("version")
    if version != VERSION:
        raise RecordingError(
            f"{path}:{number}: recording version {version!r}; this sandbox reads {VERSION}"
        )
    return record


def _event(record: dict[str, Any], line: int) -> Exchange | Webhook:
    kind = record["kind"]
    seq, at = _integer(record["seq"], "seq"), _time(record["at"])
    if kind == "exchange":
        request, response = record["request"], record["response"]
        return Exchange(
            seq=seq,
            at=at,
            method=str(request["method"]).upper(),
            path=str(request["path"]),
            query=str(request.get("query") or ""),
            request=_message(request),
            status=_integer(response["status"], "status"),
            response=_message(response),
            ms=float(record.get("ms") or 0.0),
            line=line,
        )
    if kind == "webhook":
        answered = record.get("answered")
        return Webhook(
            seq=seq,
            at=at,
            message=_message(record),
            answered=None if answered is None else _integer(answered, "answered"),
            signature_valid=record.get("signature_valid"),
            line=line,
        )
    raise ValueError(f"kind {kind!r} is neither exchange, webhook nor end")


def _message(record: dict[str, Any]) -> Message:
    headers = [(str(name), str(value)) for name, value in record.get("headers") or []]
    if "body" in record:
        return Message(headers, body=record["body"])
    if "body_text" in record:
        return Message(headers, text=str(record["body_text"]))
    if "body_base64" in record:
        return Message(headers, raw=base64.b64decode(record["body_base64"]))
    return Message(headers)


def _integer(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return value


def _time(value: Any) -> float:
    if not isinstance(value, str):
        raise ValueError(f"at must be an ISO 8601 time, got {value!r}")
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _why(exc: BaseException) -> str:
    return f"no {exc}" if isinstance(exc, KeyError) else str(exc)


# -- HAR 1.2 --------------------------------------------------------------------------------


def _read_har(path: str, text: str) -> Recording:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordingError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from exc
    log = document.get("log") if isinstance(document, dict) else None
    entries = log.get("entries") if isinstance(log, dict) else None
    if not isinstance(entries, list):
        raise RecordingError(f"{path}:1: not a HAR file (no log.entries list)")
    lines = _entry_lines(text, len(entries))
    exchanges: list[Exchange] = []
    webhooks: list[Webhook] = []
    upstream = None
    for index, entry in enumerate(entries):
        line = lines[index]
        try:
            request, response = entry["request"], entry["response"]
            url = urlsplit(str(request["url"]))
            at = _time(entry["startedDateTime"])
            request_message = Message(_har_headers(request), *_har_body(request.get("postData")))
            if entry.get("_direction") == "inbound":
                # HAR's status 0 is "no answer" (an export of a delivery not answered).
                answered = _integer(response["status"], "status")
                webhooks.append(
                    Webhook(
                        seq=index + 1,
                        at=at,
                        message=request_message,
                        answered=answered or None,
                        signature_valid=entry.get("_signature_valid"),
                        line=line,
                    )
                )
                continue
            upstream = upstream or f"{url.scheme}://{url.netloc}"
            exchanges.append(
                Exchange(
                    seq=index + 1,
                    at=at,
                    method=str(request["method"]).upper(),
                    path=url.path or "/",
                    query=url.query,
                    request=request_message,
                    status=_integer(response["status"], "status"),
                    response=Message(_har_headers(response), *_har_body(response.get("content"))),
                    ms=float(entry.get("time") or 0.0),
                    line=line,
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise RecordingError(
                f"{path}:{line}: log.entries[{index}] is not a HAR entry ({_why(exc)})"
            ) from exc
    return Recording(path, "har", upstream, exchanges, webhooks)


def _entry_lines(text: str, count: int) -> list[int]:
    """The line each entry starts on, where it can be told (else 1)."""
    starts = []
    position = text.find('"entries"')
    for _ in range(count):
        position = text.find('"request"', position + 1)
        starts.append(text.count("\n", 0, position) + 1 if position >= 0 else 1)
    return starts


def _har_headers(message: dict[str, Any]) -> list[tuple[str, str]]:
    return [(str(h["name"]), str(h["value"])) for h in message.get("headers") or []]


def _har_body(content: dict[str, Any] | None) -> tuple[Any, str | None, bytes | None]:
    """A HAR `postData` or `content` as (JSON value, text, raw)."""
    if not content or content.get("text") in (None, ""):
        return None, None, None
    text = str(content["text"])
    if content.get("encoding") == "base64":
        raw = base64.b64decode(text)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None, None, raw
    try:
        return json.loads(text), None, None
    except ValueError:
        return None, text, None
