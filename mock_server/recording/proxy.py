"""The recording proxy behind `mock-server record` (docs/recording.md, "Record").

`Recorder` listens on `host:port` with aiohttp's low-level server (as `serving.py`
serves the sandbox) and passes every request, on any path (`/api/v1`, `/v1`, the plant
demo's `/v3/plant`, anything else), to the upstream: method, path, query, body bytes
and headers unchanged, hop-by-hop headers and `Host` excepted, and nothing added by the
HTTP client (no `User-Agent`, `Accept`, `Accept-Encoding` or `Content-Type` of its own;
a body is sent with the framing it needs). The upstream's status, reason, headers
(hop-by-hop excepted) and body bytes come back unchanged: compressed bodies stay
compressed (nothing is decoded on the way) and the server adds no `Date`, `Server` or
`Content-Type` the upstream did not send. An upstream that cannot be reached, or gives
no whole answer within `UPSTREAM_TIMEOUT` seconds, is answered with 502 in the spec's
error envelope (section 2.6), code `upstream_unavailable`.

`POST /_record/webhook` is a webhook receiver (spec section 6): each delivery is
recorded; with `forward_to` it is POSTed on, same body and headers, and answered with
that receiver's status (502 when it cannot be reached), so production's retries happen
as they would; without, it is answered 200. With `webhook_secret` the signature is
checked on the raw body with `mock_server.webhooks.verify`.

Each exchange's line is redacted (`redaction`) and written (`fileformat`) before its
answer goes out: a client that got its answer finds the exchange in the file, even if
the recorder is killed the next instant.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any

import aiohttp
import orjson
from aiohttp import hdrs, web
from multidict import CIMultiDict

from ..webhooks import verify
from .fileformat import RecordingWriter, body_fields, read_bytes, wall_iso
from .redaction import RULES, Leak, Redactor, scan
from .upstream import Upstream, UpstreamError

WEBHOOK_PATH = "/_record/webhook"
#: Seconds the upstream (and a webhook's receiver) has to answer whole.
UPSTREAM_TIMEOUT = 30.0
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
#: The headers aiohttp's server would add to an answer that lacks them.
_SERVER_DEFAULTS = (hdrs.CONTENT_TYPE, hdrs.DATE, hdrs.SERVER)
#: An order's answer (spec 4.3, 4.4): its `id` counts as a recorded order.
_ORDER_PATH = re.compile(r"/v1/orders(?:/[^/]+)?/?$")
_SIGNATURE_HEADERS = ("X-Webhook-Signature", "X-Signature")
_NO_AUTO_HEADERS = (hdrs.USER_AGENT, hdrs.ACCEPT, hdrs.ACCEPT_ENCODING, hdrs.CONTENT_TYPE)


def _print_err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def passed_on(headers: Iterable[tuple[str, str]], *, drop: Iterable[str] = ()) -> CIMultiDict[str]:
    """`headers` less the hop-by-hop ones (and those the `Connection` header names), and
    less `drop`; order, case and repeats kept."""
    pairs = list(headers)
    named = {
        token.strip().lower()
        for name, value in pairs
        if name.lower() == "connection"
        for token in value.split(",")
    }
    skipped = HOP_BY_HOP | named | {name.lower() for name in drop}
    return CIMultiDict((name, value) for name, value in pairs if name.lower() not in skipped)


def _one_case(headers: CIMultiDict[str]) -> CIMultiDict[str]:
    """A header repeated under names that differ in case goes out under its first name:
    aiohttp's client keeps only the last of such names' values otherwise (its session
    merges header names case-sensitively). Names are case-insensitive (RFC 9110 5.1)."""
    first: dict[str, str] = {}
    return CIMultiDict(
        (first.setdefault(name.lower(), name), value) for name, value in headers.items()
    )


class _Passthrough(web.Response):
    """A response whose headers go out as given: aiohttp's server adds no `Date`,
    `Server` or `Content-Type` that the upstream did not send (its connection framing,
    `Connection` and `Content-Length`, it still sets)."""

    async def _prepare_headers(self) -> None:
        given = [name for name in _SERVER_DEFAULTS if name in self.headers]
        await super()._prepare_headers()
        for name in _SERVER_DEFAULTS:
            if name not in given:
                self.headers.popall(name, None)


def envelope(status: int, detail: str, code: str) -> web.Response:
    """An error in the spec's envelope (section 2.6), with every header set here, so the
    recorded headers are exactly those the client gets."""
    body = orjson.dumps({"detail": detail, "code": code})
    headers = CIMultiDict(
        {
            hdrs.CONTENT_TYPE: "application/json; charset=utf-8",
            hdrs.CONTENT_LENGTH: str(len(body)),
            hdrs.DATE: time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime()),
        }
    )
    return _Passthrough(status=status, headers=headers, body=body)


def _pairs(headers: Any) -> list[list[str]]:
    return [[name, value] for name, value in headers.items()]


def _content_encoding(pairs: Iterable[tuple[str, str]]) -> str | None:
    codings = [value for name, value in pairs if name.lower() == "content-encoding"]
    return ", ".join(codings) or None


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
        warn: Callable[[str], None] = _print_err,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.out = out
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
        self.webhooks = 0
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
        self._runner: web.ServerRunner | None = None
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
                self.out, upstream=self.shown_upstream, redaction=self.redactor.names
            )

    async def start(self) -> tuple[str, int]:
        self.open()
        self._upstream = Upstream(self.upstream)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,
            skip_auto_headers=_NO_AUTO_HEADERS,
            timeout=aiohttp.ClientTimeout(total=self.upstream_timeout),
        )
        server = web.Server(self._handle, auto_decompress=False, access_log=None)
        self._runner = web.ServerRunner(
            server, handle_signals=False, shutdown_timeout=SHUTDOWN_GRACE
        )
        await self._runner.setup()
        try:
            await web.TCPSite(self._runner, self.host, self.port).start()
        except OSError:
            await self._close()
            self.discard()
            raise
        host, port = self._runner.addresses[0][:2]
        self._address = (host, port)
        return host, port

    async def stop(self) -> None:
        """Stop listening, let the exchanges in flight finish, close the file."""
        await self._close()

    async def _close(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        session, self._session = self._session, None
        if session is not None:
            await session.close()
        upstream, self._upstream = self._upstream, None
        if upstream is not None:
            await upstream.close()
        if self._writer is not None:
            self._writer.close()

    def discard(self) -> None:
        """Remove the file (a start that failed, a leak)."""
        if self._writer is not None:
            self._writer.close()
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.out)

    def finish(self) -> Leak | None:
        """After `stop`: scan the finished file for every secret value seen; on a hit the
        file is removed and the leak returned (its kind and line, never the value). A
        file that cannot be read back is a `problem`: nothing vouches for it."""
        try:
            text = read_bytes(self.out).decode("utf-8", "replace")
        except OSError as exc:
            self.problem = self.problem or f"cannot read it back to scan it: {_describe(exc)}"
            return None
        leak = scan(text, self.redactor.secrets)
        if leak is not None:
            self.discard()
        return leak

    # -- requests -----------------------------------------------------------------------------

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        arrived, started = time.time(), time.perf_counter()
        path, _, query = request.raw_path.partition("?")
        if path == WEBHOOK_PATH:
            if request.method != "POST":
                return envelope(
                    405, f"{WEBHOOK_PATH} takes POST (a webhook delivery)", "method_not_allowed"
                )
            self._seq += 1
            return await self._webhook(request, self._seq, arrived)
        self._seq += 1
        seq = self._seq
        if request.headers.get(hdrs.EXPECT, "").lower() == "100-continue":
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = await request.content.read()
        response = await self._pass_on(request, body)
        elapsed = (time.perf_counter() - started) * 1000
        request_pairs = list(request.headers.items())
        event = {
            "seq": seq,
            "at": wall_iso(arrived),
            "kind": "exchange",
            "request": {
                "method": request.method,
                "path": path,
                "query": query,
                "headers": [list(pair) for pair in request_pairs],
                **body_fields(body, _content_encoding(request_pairs)),
            },
            "response": {
                "status": response.status,
                "headers": _pairs(response.headers),
                **body_fields(response.body or b"", _content_encoding(response.headers.items())),
            },
            "ms": round(elapsed, 3),
        }
        self._count_order(path, response.status, event["response"].get("body"))
        self._record(event)
        self.exchanges += 1
        return response

    async def _pass_on(self, request: web.BaseRequest, body: bytes) -> web.Response:
        assert self._upstream is not None
        # The client's own framing goes: the body goes on whole, framed by its length.
        headers = passed_on(request.headers.items(), drop=(hdrs.HOST, hdrs.CONTENT_LENGTH))
        try:
            async with asyncio.timeout(self.upstream_timeout):
                answer = await self._upstream.request(
                    request.method, request.raw_path, list(headers.items()), body
                )
        except TimeoutError:
            return envelope(
                502,
                f"the upstream {self.shown_upstream} gave no whole answer within "
                f"{self.upstream_timeout:g} s",
                "upstream_unavailable",
            )
        except UpstreamError as exc:
            return envelope(
                502,
                f"the upstream {self.shown_upstream} cannot be reached: {exc}",
                "upstream_unavailable",
            )
        headers = passed_on(answer.headers)
        if hdrs.CONTENT_LENGTH not in headers and _may_have_body(request.method, answer.status):
            headers[hdrs.CONTENT_LENGTH] = str(len(answer.body))  # it came chunked
        return _Passthrough(
            status=answer.status, reason=answer.reason, headers=headers, body=answer.body
        )

    async def _webhook(self, request: web.BaseRequest, seq: int, arrived: float) -> web.Response:
        body = await request.content.read()
        pairs = list(request.headers.items())
        valid = None
        if self.webhook_secret is not None:
            signature = next(
                (request.headers[n] for n in _SIGNATURE_HEADERS if n in request.headers), None
            )
            valid = verify(self.webhook_secret, body, signature)
        if self.webhook_forward_to is None:
            answer = web.Response(status=200)
        else:
            answer = await self._forward(body, pairs)
        event = {
            "seq": seq,
            "at": wall_iso(arrived),
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
        return answer

    async def _forward(self, body: bytes, pairs: list[tuple[str, str]]) -> web.Response:
        """POST the delivery on to the merchant's receiver: its status, or 502."""
        assert self._session is not None and self.webhook_forward_to is not None
        try:
            async with self._session.post(
                self.webhook_forward_to,
                data=body,
                headers=_one_case(passed_on(pairs, drop=(hdrs.HOST,))),
                allow_redirects=False,  # a redirect is the receiver's answer (spec 6)
            ) as answer:
                await answer.read()
                return web.Response(status=answer.status)
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


def _may_have_body(method: str, status: int) -> bool:
    return method != "HEAD" and status >= 200 and status not in (204, 304)


def _shown_url(url: str) -> str:
    """`url` without a password (the header is written to be shared)."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    userinfo, _, host_port = parts.netloc.rpartition("@")
    netloc = f"{userinfo.partition(':')[0]}:***@{host_port}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
