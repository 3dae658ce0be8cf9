"""`mock-server recording export --har FILE [--out PATH]`: a recording as HAR 1.2
(docs/recording.md, "HAR"), to stdout without `--out`.

Each exchange is a HAR entry as browsers and proxies write them (request URL on the
recorded upstream, headers, query, body; the answer's status, headers and content);
each webhook delivery is an entry marked `"_direction": "inbound"` (with
`"_signature_valid"`), its request the delivery and its response the receiver's
answer (status 0 where none was recorded, HAR's "no answer"), which `reading.py` reads
back as webhooks. Entries are in `seq` order, so the file reads back as the same
session. Placeholders stay placeholders: nothing redacted comes back. HAR has no end
line: exporting a file without its own says so on stderr (`trust.file_warnings`).

`mock-server recording show FILE` prints each recorded order's life (`show`).
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from .reading import Exchange, Message, Recording, RecordingError, Webhook, read_recording
from .trust import file_warnings

#: Where a webhook came in: the recorder's receiver (its address is not recorded).
INBOUND_URL = "http://recorder.invalid/_record/webhook"
_REASONS = {
    200: "OK",
    201: "Created",
    204: "No Content",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    409: "Conflict",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


def to_har(recording: Recording) -> dict[str, Any]:
    upstream = urlsplit(recording.upstream or "http://upstream.invalid")
    origin = f"{upstream.scheme or 'http'}://{upstream.netloc or 'upstream.invalid'}"
    entries = []
    for event in recording.events():
        if isinstance(event, Exchange):
            entries.append(_exchange(event, origin))
        else:
            entries.append(_webhook(event))
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "mock-server recording export", "version": _version()},
            "pages": [],
            "entries": entries,
            "comment": f"exported from {Path(recording.path).name} ({recording.kind}); "
            f"upstream {recording.upstream}",
        }
    }


def _exchange(exchange: Exchange, origin: str) -> dict[str, Any]:
    url = origin + exchange.path + (f"?{exchange.query}" if exchange.query else "")
    request: dict[str, Any] = {
        "method": exchange.method,
        "url": url,
        "httpVersion": "HTTP/1.1",
        "cookies": [],
        "headers": _headers(exchange.request.headers),
        "queryString": [{"name": n, "value": v} for n, v in parse_qsl(exchange.query, True)],
        "headersSize": -1,
        "bodySize": -1,
    }
    posted = _content(exchange.request)
    if posted is not None:
        request["postData"] = posted
        request["bodySize"] = len(posted["text"])
    content = _content(exchange.response) or {"mimeType": "", "text": ""}
    return {
        "startedDateTime": _time(exchange.at),
        "time": exchange.ms,
        "request": request,
        "response": {
            "status": exchange.status,
            "statusText": _REASONS.get(exchange.status, ""),
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": _headers(exchange.response.headers),
            "content": {"size": len(content["text"]), **content},
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": len(content["text"]),
        },
        "cache": {},
        "timings": {"send": 0, "wait": exchange.ms, "receive": 0},
    }


def _webhook(webhook: Webhook) -> dict[str, Any]:
    posted = _content(webhook.message) or {"mimeType": "application/json", "text": ""}
    answered = webhook.answered or 0
    return {
        "_direction": "inbound",
        "_signature_valid": webhook.signature_valid,
        "startedDateTime": _time(webhook.at),
        "time": 0,
        "request": {
            "method": "POST",
            "url": INBOUND_URL,
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": _headers(webhook.message.headers),
            "queryString": [],
            "postData": posted,
            "headersSize": -1,
            "bodySize": len(posted["text"]),
        },
        "response": {
            "status": answered,
            "statusText": _REASONS.get(answered, ""),
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": [],
            "content": {"size": 0, "mimeType": "", "text": ""},
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": 0,
        },
        "cache": {},
        "timings": {"send": 0, "wait": 0, "receive": 0},
    }


def _headers(headers: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name, value in headers]


def _content(message: Message) -> dict[str, Any] | None:
    """A body as HAR's `postData` / `content`: JSON as compact text, text as it is,
    bytes in base64."""
    mime = message.header("Content-Type") or ""
    if message.body is not None:
        text = json.dumps(message.body, ensure_ascii=False, separators=(",", ":"))
        return {"mimeType": mime or "application/json", "text": text}
    if message.text is not None:
        return {"mimeType": mime or "text/plain", "text": message.text}
    if message.raw is not None:
        return {
            "mimeType": mime or "application/octet-stream",
            "text": base64.b64encode(message.raw).decode("ascii"),
            "encoding": "base64",
        }
    return None


def _time(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _version() -> str:
    try:
        return metadata.version("ordering-sandbox")
    except metadata.PackageNotFoundError:
        return "0"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mock-server recording", description="Work with recorded sessions."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    export = commands.add_parser(
        "export",
        help="write a recording in another format",
        description="Write a recording as HAR 1.2 (webhooks as entries marked "
        '"_direction": "inbound"), to stdout without --out.',
    )
    export.add_argument("file", metavar="FILE", help="a recording (or a HAR file)")
    export.add_argument("--har", action="store_true", help="HAR 1.2 (the one format)")
    export.add_argument("--out", metavar="PATH", help="write here instead of stdout")
    shown = commands.add_parser(
        "show",
        help="each recorded order's life and deliveries",
        description="Print whether a recording is finished, then each recorded order's "
        "observed life (creation, polls, client codes) and the webhook deliveries that "
        "carried its id: what to read before committing a recording.",
    )
    shown.add_argument("file", metavar="FILE", help="a recording (or a HAR file)")
    return parser


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:  # --help is 0, a bad flag 2
        return exc.code if isinstance(exc.code, int) else 2
    if args.command == "show":
        return _show(args.file)
    if not args.har:
        print("mock-server recording export: choose the format: --har", file=sys.stderr)
        return 2
    try:
        recording = read_recording(args.file)
    except RecordingError as exc:
        print(exc, file=sys.stderr)
        return 2
    for warning in file_warnings(recording):  # HAR has no end line to carry this
        print(f"warning: {warning}", file=sys.stderr)
    text = json.dumps(to_har(recording), indent=2, ensure_ascii=False) + "\n"
    if args.out is None:
        sys.stdout.write(text)
        return 0
    try:
        Path(args.out).write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"{args.out}: cannot write it ({exc.strerror or exc})", file=sys.stderr)
        return 2
    return 0


def _show(path: str) -> int:
    from .show import show

    try:
        recording = read_recording(path)
    except RecordingError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(show(recording))
    return 0
