"""The recording file (docs/recording.md, "Record"): JSON Lines, written gzipped when the
path ends in `.gz`; read back gzipped or not by what it holds, whatever its name
(`read_bytes`).

The first line is the header:

    {"format": "ordering-sandbox-recording", "version": 1, "upstream": URL,
     "started_at": "2026-01-01T00:00:00.123Z", "redaction": [rule names]}

Then one event per line, each written and flushed when its exchange ends (so lines may
stand out of `seq` order when exchanges overlap):

    {"seq", "at", "kind": "exchange",
     "request": {"method", "path", "query", "headers", <body>},
     "response": {"status", "headers", <body>}, "ms"}
    {"seq", "at", "kind": "webhook", "headers", <body>, "answered", "signature_valid"}

* `seq` numbers the events (both kinds) 1, 2, ... in the order their requests arrived;
  `at` is the wall time each arrived (`wall_iso`).
* `query` is the raw query string without `?` ("" when none); `headers` are `[name,
  value]` pairs in the order received (a repeated header stays repeated).
* `<body>` is what `body_fields` gives: `"body"` (a JSON value) when the body parses as
  JSON, `"body_text"` when it is UTF-8 text that is not, `"body_base64"` otherwise, no
  key when it is empty. A body sent with a `Content-Encoding` is recorded decoded (the
  header stays in `headers`); one in an encoding this machine cannot decode is not
  recorded at all: `"body_omitted": "content-encoding <name>"` stands in its place, since
  bytes that cannot be read cannot be redacted (`redaction`).
* `ms`: from the request's arrival to the upstream's whole answer (float).
  `answered`: the status the recorder answered a delivery with; `signature_valid`:
  whether its signature matched `--webhook-secret` (null without one).

For a `.gz` path every line ends a zlib sync-flush block, so a file whose recorder was
killed decompresses up to its last whole line (`read_bytes`, `read_lines`).

A finished file ends with one more line, written once the file is closed and scanned
for secrets (`append_end`; gzipped, a gzip member of its own):

    {"kind": "end", "exchanges", "orders", "webhooks", "scanned": true, "warnings": [...]}

The recorder writes `FILE.partial` (`partial_path`) and renames it to FILE only after
the end line, so a file without one was never scanned and may end early
(docs/recording.md, "The file").
"""

from __future__ import annotations

import base64
import functools
import gzip
import io
import json
import os
import time
import zlib
from collections.abc import Iterable
from typing import Any, BinaryIO

import orjson

#: What the header line says the file is (`reading.py` refuses any other).
FORMAT = "ordering-sandbox-recording"
VERSION = 1
#: The `kind` of the last line of a finished recording.
END = "end"
#: What a recording is called until it is finished.
PARTIAL_SUFFIX = ".partial"
#: The first two bytes of every gzip stream (RFC 1952, 2.3.1); a recording's JSON Lines
#: begin with `{`.
GZIP_MAGIC = b"\x1f\x8b"

try:  # Optional: aiohttp decodes `br` only with it too.
    import brotli  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the machine
    brotli = None


def wall_iso(ts: float) -> str:
    """Wall time as ISO 8601 UTC with milliseconds and `Z`: `2026-01-01T00:00:00.123Z`."""
    seconds, ms = divmod(int(round(ts * 1000)), 1000)
    return f"{_iso_second(seconds)}.{ms:03d}Z"


@functools.lru_cache(maxsize=4)
def _iso_second(seconds: int) -> str:
    """One second's part of `wall_iso`: a recorder writes many events per second."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


def decode_content(raw: bytes, encoding: str | None) -> bytes | None:
    """`raw` with its `Content-Encoding` undone (None: an encoding not decodable here).
    Several codings (`gzip, br`) are undone last first, as RFC 9110 8.4 orders them."""
    if not raw or not encoding:
        return raw
    data = raw
    for coding in reversed([c.strip().lower() for c in encoding.split(",") if c.strip()]):
        try:
            if coding in ("gzip", "x-gzip"):
                data = zlib.decompress(data, wbits=47)  # gzip or zlib, auto-detected
            elif coding == "deflate":
                try:
                    data = zlib.decompress(data)
                except zlib.error:  # raw deflate, as some servers send it
                    data = zlib.decompress(data, wbits=-15)
            elif coding == "br" and brotli is not None:
                data = brotli.decompress(data)
            elif coding != "identity":
                return None
        except Exception:  # noqa: BLE001 - any decoder's complaint: not decodable
            return None
    return data


def body_fields(raw: bytes, content_encoding: str | None = None) -> dict[str, Any]:
    """The `<body>` of a recorded message: one key (see the module's docstring), or none
    for an empty body."""
    data = decode_content(raw, content_encoding)
    if data is None:
        return {"body_omitted": f"content-encoding {content_encoding}"}
    if not data:
        return {}
    try:
        return {"body": orjson.loads(data)}
    except orjson.JSONDecodeError:
        pass
    try:
        return {"body_text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"body_base64": base64.b64encode(data).decode("ascii")}


def encode_line(record: dict[str, Any]) -> bytes:
    """One line of the file: compact JSON, UTF-8, newline-terminated."""
    try:
        return orjson.dumps(record) + b"\n"
    except TypeError:  # an integer beyond 64 bits: the standard library writes any
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        return text.encode("utf-8") + b"\n"


class RecordingWriter:
    """Writes a recording to `path`: the header at once, then `write(event)` per event,
    each line on disk (in the operating system's hands) when `write` returns.

    Opening raises the `OSError` of a path that cannot be written."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        upstream: str,
        redaction: Iterable[str],
        started_at: float | None = None,
        gzipped: bool | None = None,
    ) -> None:
        self.path = os.fspath(path)
        #: Gzipped when asked, else when the path ends in `.gz`.
        self.gzipped = self.path.endswith(".gz") if gzipped is None else gzipped
        self.lines = 0
        self._raw: BinaryIO = open(self.path, "wb", buffering=0)  # noqa: SIM115 - closed in close()
        self._gzip: gzip.GzipFile | None = None
        if self.gzipped:
            # No name and no time in the gzip header: the same events, the same bytes.
            self._gzip = gzip.GzipFile(filename="", mode="wb", fileobj=self._raw, mtime=0)
        self.closed = False
        header = {
            "format": FORMAT,
            "version": VERSION,
            "upstream": upstream,
            "started_at": wall_iso(time.time() if started_at is None else started_at),
            "redaction": list(redaction),
        }
        try:
            self._put(encode_line(header))
        except BaseException:
            self.close()
            raise

    def write(self, event: dict[str, Any]) -> None:
        self._put(encode_line(event))
        self.lines += 1

    def _put(self, line: bytes) -> None:
        if self._gzip is not None:
            self._gzip.write(line)
            # Ends a deflate block on a byte boundary and hands it to the file: what is
            # written so far decompresses without the stream's end.
            self._gzip.flush(zlib.Z_SYNC_FLUSH)
        else:
            view = memoryview(line)
            while view:  # an unbuffered file may take part of it
                written = self._raw.write(view)
                view = view[written or 0 :]

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            if self._gzip is not None:
                self._gzip.close()  # the stream's end and its CRC
        finally:
            self._raw.close()


def partial_path(path: str) -> str:
    """Where the recorder writes FILE until it is finished: `FILE.partial`."""
    return path + PARTIAL_SUFFIX


def end_line(
    exchanges: int, orders: int, webhooks: int, warnings: Iterable[str] = ()
) -> dict[str, Any]:
    """The last line of a finished recording: its counts, that it was scanned, and the
    warnings its run ended with."""
    return {
        "kind": END,
        "exchanges": exchanges,
        "orders": orders,
        "webhooks": webhooks,
        "scanned": True,
        "warnings": list(warnings),
    }


def end_line_of(events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The end line of a file holding `events` (its lines after the header, as dicts):
    what a tool that writes recordings of its own (a test's stand-in) ends them with.
    `orders` counts the distinct ids of order answers and webhook bodies, as the
    recorder counts them."""
    counts = {"exchange": 0, "webhook": 0}
    orders: set[Any] = set()
    for event in events:
        kind = event.get("kind")
        if kind not in counts:
            continue
        counts[kind] += 1
        if kind == "webhook":
            orders.add(_field(event.get("body"), "order_id"))
            continue
        request, response = event.get("request") or {}, event.get("response") or {}
        if response.get("status") in (200, 201) and "/orders" in str(request.get("path")):
            orders.add(_field(response.get("body"), "id"))
    orders.discard(None)
    return end_line(counts["exchange"], len(orders), counts["webhook"])


def _field(body: Any, name: str) -> Any:
    value = body.get(name) if isinstance(body, dict) else None
    return value if isinstance(value, str) else None


def append_end(path: str | os.PathLike[str], end: dict[str, Any], *, gzipped: bool) -> None:
    """Append the end line to a closed recording: plain, or as a gzip member of its own
    (a gzip file may hold several, read back as one stream: RFC 1952, 2.2)."""
    line = encode_line(end)
    if gzipped:
        line = gzip.compress(line, mtime=0)
    with open(path, "ab") as file:
        file.write(line)
        file.flush()
        os.fsync(file.fileno())


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The file's content, decompressed when it is gzipped: when it begins with the gzip
    magic bytes, whatever its name. A gzip stream cut short (a killed recorder) gives
    what it holds up to where it stops; one that cannot be decompressed from its start
    raises `gzip.BadGzipFile` (an `OSError`, as a file that cannot be read does)."""
    with open(path, "rb") as file:
        data = file.read()
    if data[:2] != GZIP_MAGIC:
        return data
    out = io.BytesIO()
    first = True
    while data:
        inflater = zlib.decompressobj(wbits=31)
        try:
            out.write(inflater.decompress(data))
        except zlib.error as exc:
            if first:
                raise gzip.BadGzipFile(f"not a readable gzip stream ({exc})") from exc
            break  # after a whole stream, bytes that are no gzip member: keep the stream
        if not inflater.eof:
            break  # cut short: no end of stream
        data = inflater.unused_data  # another gzip member may follow
        first = False
    return out.getvalue()


def read_lines(path: str | os.PathLike[str]) -> list[str]:
    """The file's whole lines (the header first); a last line without its newline (the
    recorder was killed while writing it) is left out."""
    text = read_bytes(path).decode("utf-8", "replace")
    lines = text.split("\n")
    lines.pop()  # "" after the last newline, or the unfinished line
    return lines
