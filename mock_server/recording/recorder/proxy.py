"""The recording proxy behind `mock-server record` (docs/recording.md, "Record").

`Recorder` listens on `host:port` (`listener.Listener`, HTTP/1.1) and passes every
request, on any path (`/api/v1`, `/v1`, the plant demo's `/v3/plant`, anything else),
to the upstream (`upstream.Upstream`): method, target, body bytes and headers unchanged,
hop-by-hop headers and `Host` excepted, and nothing added (a body goes with the
`Content-Length` it needs). The upstream's status, reason, headers (hop-by-hop
excepted) and body bytes come back unchanged: compressed bodies stay compressed
(nothing is decoded on the way), and no `Date`, `Server` or `Content-Type` is added. An
upstream that cannot be reached, or gives no whole answer within `UPSTREAM_TIMEOUT`
seconds, is answered with 502 in the spec's error envelope (section 2.6), code
`upstream_unavailable`.

`POST /_record/webhook` is a webhook receiver (spec section 6): each delivery is
recorded; with `forward_to` it is POSTed on, same body and headers, and answered with
that receiver's status (502 when it cannot be reached), so production's retries happen
as they would; without, it is answered 200. With `webhook_secret` the signature is
checked on the raw body with `mock_server.webhooks.verify`.

Each exchange's line is redacted (`redaction`) and written (`fileformat`) before its
answer goes out: a client that got its answer finds the exchange in the file, even if
the recorder is killed the next instant. The file is `FILE.partial` until `finish` has
scanned it and written its end line; only then is it renamed FILE, so an existing FILE
is untouched until a run succeeds, and a file without its end line was never vouched
for (docs/recording.md, "The file").

`probe` asks the upstream once at start whether it answers; `warnings` names, after a
run, what a user has likely got wrong (no webhook, signatures that did not verify, an
upstream that answered nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import ssl
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any

import aiohttp
from multidict import CIMultiDict

from ...webhooks import verify
from .fileformat import (
    RecordingWriter,
    append_end,
    body_fields,
    end_line,
    partial_path,
    read_bytes,
    wall_iso,
)
from .http1 import has_field, may_have_body
from .listener import Listener, Reply, Request, envelope
from .redaction import RULES, Leak, Redactor, scan
from .upstream import Upstream, UpstreamError, UpstreamTimeout

WEBHOOK_PATH = "/_record/webhook"
#: The variable that gives `--webhook-secret` (named in a warning).
SECRET_ENV_NAME = "MOCK_RECORD_WEBHOOK_SECRET"
#: Seconds the upstream (and a webhook's receiver) has to answer whole.
UPSTREAM_TIMEOUT = 30.0
#: Seconds the start-up probe waits for the upstream's answer.
PROBE_TIMEOUT = 5.0
#: The probe's `User-Agent`: an upstream's log can tell it from the merchant's traffic.
PROBE_AGENT = "mock-server-record (start-up probe)"
#: How long a stop waits for the exchanges in flight: each may wait for the upstream.
SHUTDOWN_GRACE = UPSTREAM_TIMEOUT + 5.0
#: Connection-level headers (RFC 9110 section 7.6.1), never passed on; `Expect` is
#: answered here (the body is read before the upstream is called).
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "expect",
    }
)
#: Not passed on to the upstream: it gets its own `Host`, and the body's length.
_REQUEST_ONLY = HOP_BY_HOP | {"host", "content-length"}
#: An order's answer (spec 4.3, 4.4): its `id` counts as a recorded order.
_ORDER_PATH = re.compile(r"/v1/orders(?:/[^/]+)?/?$")
_SIGNATURE_HEADERS = ("x-webhook-signature", "x-signature")
_NO_AUTO_HEADERS = ("User-Agent", "Accept", "Accept-Encoding", "Content-Type")


def _print_err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def passed_on(
    headers: list[tuple[str, str]], skipped: frozenset[str] = HOP_BY_HOP
) -> list[tuple[str, str]]:
    """`headers` less those named in `skipped` (lower case) and those the `Connection`
    header names; order, case and repeats kept."""
    kept = []
    named = []
    for name, value in headers:
        lowered = name.lower()
        if lowered not in skipped:
            kept.append((name, value))
        elif lowered == "connection":
            named += [t.strip().lower() for t in value.split(",")]
    if named:
        kept = [(name, value) for name, value in kept if name.lower() not in named]
    return kept


def _one_case(headers: list[tuple[str, str]]) -> CIMultiDict[str]:
    """A header repeated under names that differ in case goes out under its first name:
    aiohttp's client keeps only the last of such names' values otherwise (its session
    merges header names case-sensitively). Names are case-insensitive (RFC 9110 5.1)."""
    first: dict[str, str] = {}
    return CIMultiDict((first.setdefault(name.lower(), name), value) for name, value in headers)


def _message(headers: list[tuple[str, str]], body: bytes) -> dict[str, Any]:
    """A message's `headers` and `<body>` as the file holds them (`fileformat`), before
    redaction (which changes the header pairs in place: they are copies)."""
    recorded: dict[str, Any] = {"headers": [list(pair) for pair in headers]}
    if body:
        recorded.update(body_fields(body, _content_encoding(headers)))
    return recorded


def _content_encoding(pairs: Iterable[tuple[str, str]]) -> str | None:
    codings = [value for name, value in pairs if name.lower() == "content-encoding"]
    return ", ".join(codings) or None


def _header(pairs: list[tuple[str, str]], names: Iterable[str]) -> str | None:
    """The first value of the first of `names` (lower case) present."""
    for wanted in names:
        for name, value in pairs:
            if name.lower() == wanted:
                return value
    return None


class Recorder:
    """The proxy: `await start()` listens (returns the address), `await stop()` lets the
    exchanges in flight finish and closes the file, `finish()` scans it (and removes it
    on a leak). `rules` names the redaction rules applied (default: all of them)."""

    def __init__(
        self,
        upstream: str,
        out: str,
        *,
        host: str = "127.0.0.1",
        port: int = 8090,
        webhook_forward_to: str | None = None,
        webhook_secret: str | None = None,
        rules: Iterable[str] = RULES,
        upstream_timeout: float = UPSTREAM_TIMEOUT,
        upstream_ssl: ssl.SSLContext | None = None,
        warn: Callable[[str], None] = _print_err,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.out = out
        #: Where the file is written until it is finished (`finish`).
        self.partial = partial_path(out)
        self.upstream_ssl = upstream_ssl
        self.host = host
        self.port = port
        self.webhook_forward_to = webhook_forward_to
        self.webhook_secret = webhook_secret
        self.redactor = Redactor(rules)
        if webhook_secret:
            # Never sent by anyone, but should a receiver or the upstream echo it, the
            # scan finds it like any secret seen.
            self.redactor.secrets[webhook_secret] = "webhook_secret"
        self.upstream_timeout = upstream_timeout
        self.warn = warn
        self.exchanges = 0
        #: Exchanges the upstream answered (not the recorder's own 502).
        self.answered = 0
        self.webhooks = 0
        #: Deliveries whose signature did not verify with `webhook_secret`.
        self.unverified = 0
        self.order_ids: set[str] = set()
        #: Why an event could not be recorded (the recording is then incomplete, and
        #: `failed` is set: the command stops); None while all is well.
        self.problem: str | None = None
        self.failed = asyncio.Event()
        self._seq = 0
        self._writer: RecordingWriter | None = None
        #: The upstream's client; webhooks are forwarded by `_session`'s.
        self._upstream: Upstream | None = None
        self._session: aiohttp.ClientSession | None = None
        self._listener: Listener | None = None
        self._address: tuple[str, int] | None = None

    @property
    def orders(self) -> int:
        return len(self.order_ids)

    @property
    def url(self) -> str:
        if self._address is None:
            raise RuntimeError("not listening")
        host, port = self._address
        host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
        return f"http://{f'[{host}]' if ':' in host else host}:{port}"

    @property
    def shown_upstream(self) -> str:
        """The upstream as printed and written: without a password, if it had one."""
        return _shown_url(self.upstream)

    @property
    def webhook_url(self) -> str:
        return self.url + WEBHOOK_PATH

    # -- lifecycle ----------------------------------------------------------------------------

    def open(self) -> None:
        """Create the file and write its header (raises the `OSError` of an unwritable
        path). `start` opens it when this was not called."""
        if self._writer is None:
            self._writer = RecordingWriter(
                self.partial,
                upstream=self.shown_upstream,
                redaction=self.redactor.names,
                gzipped=self.out.endswith(".gz"),
            )

    async def start(self) -> tuple[str, int]:
        self.open()
        self._upstream = Upstream(
            self.upstream, timeout=self.upstream_timeout, ssl_context=self.upstream_ssl
        )
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,
            skip_auto_headers=_NO_AUTO_HEADERS,
            timeout=aiohttp.ClientTimeout(total=self.upstream_timeout),
        )
        self._listener = Listener(self._handle, warn=self.warn)
        try:
            self._address = await self._listener.start(self.host, self.port)
        except OSError:
            await self._close()
            self.discard()
            raise
        return self._address

    async def stop(self) -> None:
        """Stop listening, let the exchanges in flight finish, close the file."""
        await self._close()

    async def _close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.close(SHUTDOWN_GRACE)
        session, self._session = self._session, None
        if session is not None:
            await session.close()
        upstream, self._upstream = self._upstream, None
        if upstream is not None:
            await upstream.close()
        if self._writer is not None:
            self._writer.close()

    def discard(self) -> None:
        """Remove the unfinished file (a start that failed, a leak); FILE is untouched."""
        if self._writer is not None:
            self._writer.close()
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.partial)

    def finish(self) -> Leak | None:
        """After `stop`: scan the closed file for every secret value seen; on a hit it is
        removed and the leak returned (its kind, line and field, never the value).
        Otherwise, unless a `problem` left it incomplete, its end line is written and it
        is renamed FILE. A file that cannot be read back, or finished, is a `problem`:
        nothing vouches for it, and it stays `FILE.partial`."""
        try:
            text = read_bytes(self.partial).decode("utf-8", "replace")
        except OSError as exc:
            self.problem = self.problem or f"cannot read it back to scan it: {_describe(exc)}"
            return None
        leak = scan(text, self.redactor.secrets)
        if leak is not None:
            self.discard()
            return leak
        if self.problem is not None:
            return None
        end = end_line(self.exchanges, self.orders, self.webhooks, self.warnings())
        try:
            append_end(self.partial, end, gzipped=self.out.endswith(".gz"))
            os.replace(self.partial, self.out)
        except OSError as exc:
            self.problem = f"cannot finish it: {_describe(exc)}"
        return None

    def warnings(self) -> list[str]:
        """What a user has likely got wrong, seen from the run's counts, each naming
        the fix."""
        found = []
        if not self.exchanges:
            found.append(
                f"no exchange recorded: is your client's base URL the recorder's, {self.url}?"
            )
        elif not self.answered:
            found.append(
                f"the upstream answered none of the {self.exchanges} requests (each got 502 "
                f"upstream_unavailable): check --upstream {self.shown_upstream} and that it "
                "can be reached from here"
            )
        if self.orders and not self.webhooks:
            found.append(
                "no webhook recorded: is the account's webhook URL the recorder's receiver, "
                f"{self.webhook_url} (or the public URL that forwards to it)?"
            )
        if self.unverified:
            found.append(
                f"{self.unverified} of {self.webhooks} webhook signatures did not verify: is "
                f"--webhook-secret (or {SECRET_ENV_NAME}) the account's whsec_ signing secret?"
            )
        return found

    async def probe(self, timeout: float = PROBE_TIMEOUT) -> str | None:
        """Ask the upstream once (`HEAD` of its base URL: any answer will do, a refusal
        too, and nothing is recorded): None when it answers, else a warning naming the
        fix."""
        upstream = Upstream(self.upstream, timeout=timeout, ssl_context=self.upstream_ssl)
        try:
            await upstream.request("HEAD", "/", [("User-Agent", PROBE_AGENT)], b"")
        except UpstreamTimeout:
            why = f"no answer within {timeout:g} s"
        except UpstreamError as exc:
            why = str(exc)
        else:
            return None
        finally:
            await upstream.close()
        hint = ""
        if "CERTIFICATE_VERIFY_FAILED" in why:
            hint = " (a private CA? --upstream-ca PATH trusts it)"
        return (
            f"the upstream {self.shown_upstream} does not answer: {why}{hint}; check "
            "--upstream (the recorder runs all the same: your client gets 502 "
            "upstream_unavailable until it answers)"
        )

    # -- requests -----------------------------------------------------------------------------

    async def _handle(self, request: Request) -> Reply:
        started = time.perf_counter()
        path, _, query = request.target.partition("?")
        if path == WEBHOOK_PATH:
            if request.method != "POST":
                return envelope(
                    405, f"{WEBHOOK_PATH} takes POST (a webhook delivery)", "method_not_allowed"
                )
            self._seq += 1
            return await self._webhook(request, self._seq)
        self._seq += 1
        seq = self._seq
        reply, from_upstream = await self._pass_on(request)
        elapsed = (time.perf_counter() - started) * 1000
        sent = {"method": request.method, "path": path, "query": query}
        sent.update(_message(request.headers, request.body))
        answered = {"status": reply.status}
        answered.update(_message(reply.headers, reply.body))
        event = {
            "seq": seq,
            "at": wall_iso(request.arrived),
            "kind": "exchange",
            "request": sent,
            "response": answered,
            "ms": round(elapsed, 3),
        }
        self._count_order(path, reply.status, answered.get("body"))
        self._record(event)
        self.exchanges += 1
        self.answered += from_upstream
        return reply

    async def _pass_on(self, request: Request) -> tuple[Reply, bool]:
        """The upstream's answer, and True; or the recorder's own 502, and False."""
        assert self._upstream is not None
        # The client's own framing goes: the body goes on whole, framed by its length.
        headers = passed_on(request.headers, _REQUEST_ONLY)
        try:
            answer = await self._upstream.request(
                request.method, request.target, headers, request.body
            )
        except UpstreamTimeout:
            return envelope(
                502,
                f"the upstream {self.shown_upstream} gave no whole answer within "
                f"{self.upstream_timeout:g} s",
                "upstream_unavailable",
            ), False
        except UpstreamError as exc:
            return envelope(
                502,
                f"the upstream {self.shown_upstream} cannot be reached: {exc}",
                "upstream_unavailable",
            ), False
        headers = passed_on(answer.headers)
        if may_have_body(request.method, answer.status) and not has_field(
            headers, "content-length"
        ):
            headers.append(("Content-Length", str(len(answer.body))))  # it came chunked
        return Reply(answer.status, headers, answer.body, answer.reason), True

    async def _webhook(self, request: Request, seq: int) -> Reply:
        body, pairs = request.body, request.headers
        valid = None
        if self.webhook_secret is not None:
            valid = verify(self.webhook_secret, body, _header(pairs, _SIGNATURE_HEADERS))
        if self.webhook_forward_to is None:
            answer = Reply(200)
        else:
            answer = await self._forward(body, pairs)
        event = {
            "seq": seq,
            "at": wall_iso(request.arrived),
            "kind": "webhook",
            "headers": [list(pair) for pair in pairs],
            **body_fields(body, _content_encoding(pairs)),
            "answered": answer.status,
            "signature_valid": valid,
        }
        parsed = event.get("body")
        if isinstance(parsed, dict) and isinstance(parsed.get("order_id"), str):
            self.order_ids.add(parsed["order_id"])
        self._record(event)
        self.webhooks += 1
        self.unverified += valid is False
        return answer

    async def _forward(self, body: bytes, pairs: list[tuple[str, str]]) -> Reply:
        """POST the delivery on to the merchant's receiver: its status, or 502."""
        assert self._session is not None and self.webhook_forward_to is not None
        try:
            async with self._session.post(
                self.webhook_forward_to,
                data=body,
                headers=_one_case(passed_on(pairs, HOP_BY_HOP | {"host"})),
                allow_redirects=False,  # a redirect is the receiver's answer (spec 6)
            ) as answer:
                await answer.read()
                return Reply(answer.status)
        except (aiohttp.ClientError, OSError, ValueError, TimeoutError) as exc:
            return envelope(
                502,
                f"the webhook receiver {self.webhook_forward_to} did not answer: {_describe(exc)}",
                "receiver_unavailable",
            )

    # -- the file -----------------------------------------------------------------------------

    def _count_order(self, path: str, status: int, body: Any) -> None:
        if status in (200, 201) and isinstance(body, dict) and _ORDER_PATH.search(path):
            order_id = body.get("id")
            if isinstance(order_id, str):
                self.order_ids.add(order_id)

    def _record(self, event: dict[str, Any]) -> None:
        """Redact the event and write its line. Anything that stops that leaves the
        recording incomplete: it is said once, and the command stops (`failed`)."""
        writer = self._writer
        if writer is None or writer.closed or self.problem is not None:
            return
        try:
            self.redactor.redact(event)
            writer.write(event)
        except OSError as exc:
            self._fail(f"cannot write {self.out}: {exc.strerror or exc}")
        except Exception as exc:  # noqa: BLE001 - the client has its answer all the same
            self._fail(f"cannot record event {event.get('seq')}: {_describe(exc)}")

    def _fail(self, problem: str) -> None:
        self.problem = problem
        self.warn(f"record: {problem}; stopping")
        self.failed.set()


def _shown_url(url: str) -> str:
    """`url` without a password (the header is written to be shared)."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    userinfo, _, host_port = parts.netloc.rpartition("@")
    netloc = f"{userinfo.partition(':')[0]}:***@{host_port}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
