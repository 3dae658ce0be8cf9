"""`mock-server listen`: a sandbox's webhooks forwarded to this machine, the way `stripe
listen --forward-to` does it for the real service (docs/webhooks.md, "Webhooks to your own
machine").

    mock-server listen --base-url URL --forward-to URL [--account ID]
                       [--control-token T] [--ca PATH] [--forward-timeout S]

The listener holds `GET <base-url>/_mock/listen` open (Server-Sent Events). On `ready` it
prints `ready`, `account <id>` and `webhook secret <whsec_...>`, one per line; for each
`attempt` frame it POSTs the frame's body, with the frame's headers (the signature
included), to `--forward-to`, reports the receiver's status code or connection error to
`<base-url>/_mock/listen/reports`, and prints `<status or error> <order_id>
<order_status> attempt <N>`. Attempts run concurrently, one task each, so a slow
receiver holds up nothing else.

* `--base-url`: a sandbox's `base_url` (`http://h:p/_mock/sandboxes/sbx-...`) or a
  server's root (its default sandbox). `--account`: default the sandbox's first account.
* `--control-token` (or the variable `MOCK_CONTROL_TOKEN`): the sandbox's control token
  or the server's admin token, sent as `Authorization: Bearer` on both calls.
* `--ca PATH`: a PEM CA certificate trusted on top of the system store, for an
  `https://` base URL (the server's `--tls-ca-out`) and for an `https://` `--forward-to`
  alike (a local receiver's `mkcert`/`trustme` CA).
* `--forward-timeout S`: how long the receiver has to answer completely; by default,
  and at most, one second less than the server's `timeout_seconds` (so that the report
  still arrives in time). A receiver that takes longer is reported as
  `TimeoutError: no complete answer within S s`.

A stream that cannot be opened or drops is reopened, 0.5 s later, then 1, 2, 4 and 5 s
apart (a line on stderr each time; `ready` and the account lines again once it is
back). 401, 403 and 404 when opening it are final: the server's detail on stderr, exit
status 1. SIGINT and SIGTERM stop it with exit status 0; attempts still in flight then
fail on the server's side and are retried on schedule. Bad flags exit 2.

`ListenerThread` runs the same client in a background thread for in-process use (the
pytest plugin's `--mock-server-listen`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import ssl
import sys
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from . import tls
from .arguments import http_url
from .webhooks import post_event

LISTEN_PATH = "/_mock/listen"
TOKEN_ENV = "MOCK_CONTROL_TOKEN"
#: Reconnecting: the first wait, doubled after each failure up to the last.
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 5.0
#: The server writes a keep-alive comment after 15 s of quiet (docs/webhooks.md): a
#: stream silent three times that long is a dead (half-open) connection: reopen it.
STREAM_IDLE_TIMEOUT = 45.0
CONNECT_TIMEOUT = 10.0
REPORT_TIMEOUT = 10.0
#: The receiver's answer is given up on this much sooner than the server's timeout.
FORWARD_MARGIN = 1.0
#: Answers to opening the stream that another try would not change.
FATAL_STATUSES = (401, 403, 404)
#: As the sandbox's own sender says it, so a receiver sees the same requests either way.
USER_AGENT = "ordering-sandbox-webhooks/1"


class ListenError(Exception):
    """The sandbox refused the listener for good (401, 403, 404, or not a sandbox)."""


class _StreamEnded(Exception):
    """The stream could not be opened or ended; the listener reconnects."""


@dataclass(frozen=True)
class Ready:
    """The `ready` frame: who this listener is and what it listens for."""

    listener_id: str
    account_id: str
    webhook_secret: str
    report_path: str
    timeout_seconds: float


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _print_out(line: str) -> None:
    print(line, flush=True)


def _print_err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Listener:
    """The client, on the running event loop: `await run()` listens until cancelled and
    raises `ListenError` when the sandbox refuses it for good."""

    def __init__(
        self,
        base_url: str,
        forward_to: str,
        *,
        account: str | None = None,
        control_token: str | None = None,
        ssl_context: ssl.SSLContext | bool = True,
        forward_timeout: float | None = None,
        echo: Callable[[str], None] = _print_out,
        warn: Callable[[str], None] = _print_err,
        on_ready: Callable[[Ready], None] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.forward_to = forward_to
        self.account = account
        self.control_token = control_token
        self.ssl_context = ssl_context
        self.forward_timeout = forward_timeout
        self.echo = echo
        self.warn = warn
        self.on_ready = on_ready
        #: The latest `ready` frame (kept while reconnecting); `connected` says if it is live.
        self.ready: Ready | None = None
        self.connected = False
        self._attempts: set[asyncio.Task[None]] = set()
        self._server: aiohttp.ClientSession | None = None
        self._receiver: aiohttp.ClientSession | None = None

    @property
    def listen_url(self) -> str:
        return self.base_url + LISTEN_PATH

    async def run(self) -> None:
        headers = {"Authorization": f"Bearer {self.control_token}"} if self.control_token else {}
        server = aiohttp.ClientSession(
            headers=headers,
            cookie_jar=aiohttp.DummyCookieJar(),
            connector=aiohttp.TCPConnector(ssl=self.ssl_context),
        )
        receiver = aiohttp.ClientSession(
            cookie_jar=aiohttp.DummyCookieJar(),
            connector=aiohttp.TCPConnector(ssl=self.ssl_context),
            skip_auto_headers=("User-Agent",),
            headers={"User-Agent": USER_AGENT},
        )
        self._server, self._receiver = server, receiver
        try:
            backoff = BACKOFF_FIRST
            while True:
                try:
                    await self._stream()
                except _StreamEnded as exc:
                    problem = str(exc)
                except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                    problem = _describe(exc)
                finally:
                    was_up, self.connected = self.connected, False
                if was_up:
                    backoff = BACKOFF_FIRST  # it was up: the first retry comes soon
                    what = f"the stream from {self.listen_url} dropped"
                else:
                    what = f"cannot listen at {self.listen_url}"
                self.warn(f"{what}: {problem}; reconnecting in {backoff:g} s")
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX)
        finally:
            for task in list(self._attempts):
                task.cancel()
            if self._attempts:
                await asyncio.gather(*self._attempts, return_exceptions=True)
            await server.close()
            await receiver.close()

    async def _stream(self) -> None:
        assert self._server is not None
        params = {"account": self.account} if self.account else None
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=CONNECT_TIMEOUT, sock_read=STREAM_IDLE_TIMEOUT
        )
        async with self._server.get(
            self.listen_url,
            params=params,
            timeout=timeout,
            headers={"Accept": "text/event-stream"},
        ) as response:
            if response.status != 200:
                refusal = f"{response.status} {await _detail(response)}"
                if response.status in FATAL_STATUSES:
                    raise ListenError(f"cannot listen at {self.listen_url}: {refusal}")
                raise _StreamEnded(refusal)
            if response.content_type != "text/event-stream":
                raise ListenError(
                    f"cannot listen at {self.listen_url}: it answered 200 "
                    f"{response.content_type}, not an event stream: is it a sandbox's "
                    "base_url or a mock-server's root?"
                )
            async for name, data in _events(response.content):
                if name == "ready":
                    self._on_ready(data)
                elif name == "attempt" and self.connected and self.ready is not None:
                    self._start_attempt(self.ready, data)
        raise _StreamEnded("the server ended it")

    def _on_ready(self, data: str) -> None:
        try:
            frame = json.loads(data)
            ready = Ready(
                listener_id=str(frame["listener_id"]),
                account_id=str(frame["account_id"]),
                webhook_secret=str(frame["webhook_secret"]),
                report_path=str(frame["report_path"]),
                timeout_seconds=float(frame["timeout_seconds"]),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ListenError(f"{self.listen_url}: an unreadable ready frame ({exc})") from None
        self.ready, self.connected = ready, True
        self.echo("ready")
        self.echo(f"account {ready.account_id}")
        self.echo(f"webhook secret {ready.webhook_secret}")
        if self.on_ready is not None:
            self.on_ready(ready)

    def _start_attempt(self, ready: Ready, data: str) -> None:
        task = asyncio.get_running_loop().create_task(self._attempt(ready, data))
        self._attempts.add(task)
        task.add_done_callback(self._attempts.discard)

    async def _attempt(self, ready: Ready, data: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ready.timeout_seconds
        try:
            frame = json.loads(data)
            attempt_id = frame["attempt_id"]
            body = frame["body"].encode("utf-8")
            headers = {str(k): str(v) for k, v in (frame.get("headers") or {}).items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            self.warn(f"ignored an unreadable attempt frame ({_describe(exc)}): {data[:200]}")
            return
        try:
            status_code, error = await self._forward(body, headers, self._timeout(ready))
            refused = await self._report(ready, attempt_id, status_code, error, deadline)
        except Exception as exc:  # noqa: BLE001 - one attempt's trouble ends only it
            self.warn(f"attempt {attempt_id}: {_describe(exc)}")
            return
        order = f"{frame.get('order_id')} {frame.get('order_status')}"
        self.echo(
            f"{status_code if error is None else error} {order} attempt {frame.get('attempt')}"
        )
        if refused:
            self.warn(
                f"the report of attempt {frame.get('attempt')} of {frame.get('order_id')} "
                f"changed nothing: {refused}"
            )

    def _timeout(self, ready: Ready) -> float:
        server = ready.timeout_seconds
        limit = server - FORWARD_MARGIN if server > 2 * FORWARD_MARGIN else server / 2
        return limit if self.forward_timeout is None else min(self.forward_timeout, limit)

    async def _forward(
        self, body: bytes, headers: dict[str, str], timeout: float
    ) -> tuple[int | None, str | None]:
        """The receiver's status code (None, error): redirects not followed."""
        assert self._receiver is not None
        try:
            async with asyncio.timeout(timeout):
                return await post_event(self._receiver, self.forward_to, body, headers), None
        except TimeoutError:
            return None, f"TimeoutError: no complete answer within {timeout:g} s"
        except aiohttp.ClientConnectorCertificateError as exc:
            return None, f"{_describe(exc)}; trust the receiver's CA with --ca"
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            return None, _describe(exc)

    async def _report(
        self,
        ready: Ready,
        attempt_id: str,
        status_code: int | None,
        error: str | None,
        deadline: float,
    ) -> str | None:
        """Report an outcome; None once accepted, else why not. Connection trouble and
        5xx answers are retried until the attempt's time is up."""
        assert self._server is not None
        outcome: dict[str, Any] = (
            {"status_code": status_code} if error is None else {"error": error}
        )
        payload = {"attempt_id": attempt_id, **outcome}
        url = self.base_url + ready.report_path
        loop = asyncio.get_running_loop()
        while True:
            try:
                async with self._server.post(
                    url, json=payload, timeout=aiohttp.ClientTimeout(total=REPORT_TIMEOUT)
                ) as response:
                    if response.status == 200:
                        await response.read()
                        return None
                    problem = f"{response.status} {await _detail(response)}"
                    if response.status < 500:
                        return problem
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                problem = f"not reported: {_describe(exc)}"
            if loop.time() >= deadline:
                return problem
            await asyncio.sleep(min(0.5, max(0.0, deadline - loop.time())))


async def _detail(response: aiohttp.ClientResponse) -> str:
    """`code: detail` of an error envelope, or the start of whatever else came."""
    raw = await response.read()
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict) and "detail" in body:
        return f"{body.get('code', 'error')}: {body['detail']}"
    text = raw.decode("utf-8", "replace").strip()
    return text[:300] or response.reason or ""


async def _events(content: aiohttp.StreamReader) -> AsyncIterator[tuple[str, str]]:
    """(event name, data) of each Server-Sent Events frame; comments skipped."""
    pending = b""
    name, data = "message", []
    async for chunk in content.iter_any():
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        for raw in lines:
            line = raw.rstrip(b"\r").decode("utf-8", "replace")
            if not line:
                if data:
                    yield name, "\n".join(data)
                name, data = "message", []
            elif line.startswith(":"):
                continue
            else:
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "event":
                    name = value
                elif field == "data":
                    data.append(value)


async def _until_stopped(listener: Listener) -> int:
    """Run until SIGINT/SIGTERM (0) or a final refusal (1)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # Windows: KeyboardInterrupt
            loop.add_signal_handler(sig, stop.set)
    running = loop.create_task(listener.run())
    stopping = loop.create_task(stop.wait())
    await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if running.done():
        try:
            running.result()
        except ListenError as exc:
            listener.warn(str(exc))
            return 1
        return 0
    running.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await running
    return 0


class ListenerThread:
    """The listener in a daemon thread with its own event loop, for in-process use.

    `start()` returns once the sandbox said `ready` (`account_id`, `webhook_secret` are
    then set), or raises: `ListenError` when refused, `TimeoutError` when not ready within
    `timeout`. `stop()` ends it. `lines` keeps what it printed; `echo` (default `print`)
    gets each line too, stderr ones included.
    """

    def __init__(
        self,
        base_url: str,
        forward_to: str,
        *,
        account: str | None = None,
        control_token: str | None = None,
        ca_path: str | None = None,
        forward_timeout: float | None = None,
        echo: Callable[[str], None] | None = print,
    ) -> None:
        self.lines: list[str] = []
        self._echo = echo
        self._listener = Listener(
            base_url,
            forward_to,
            account=account,
            control_token=control_token,
            ssl_context=tls.webhook_ssl(ca_path),
            forward_timeout=forward_timeout,
            echo=self._line,
            warn=self._line,
            on_ready=self._on_ready,
        )
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready_seen = threading.Event()
        self._error: BaseException | None = None

    @property
    def ready(self) -> Ready | None:
        """The latest `ready` frame: kept while the stream is being reopened."""
        return self._listener.ready

    @property
    def connected(self) -> bool:
        """Whether the stream is open now (False while reconnecting)."""
        return self._listener.connected

    @property
    def account_id(self) -> str:
        return self._ready().account_id

    @property
    def webhook_secret(self) -> str:
        return self._ready().webhook_secret

    @property
    def listener_id(self) -> str:
        return self._ready().listener_id

    def _ready(self) -> Ready:
        ready = self._listener.ready
        if ready is None:
            raise RuntimeError("the listener is not connected (start() it first)")
        return ready

    def start(self, timeout: float = 10.0) -> ListenerThread:
        self._thread = threading.Thread(target=self._run, name="mock-server-listen", daemon=True)
        self._thread.start()
        if not self._ready_seen.wait(timeout):
            self.stop()
            said = f": {self.lines[-1]}" if self.lines else ""
            raise TimeoutError(
                f"no ready from {self._listener.listen_url} within {timeout:g} s{said}"
            )
        if self._error is not None:
            self.stop()
            raise self._error
        return self

    def stop(self, timeout: float = 5.0) -> None:
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop has just finished
                loop.call_soon_threadsafe(task.cancel)
        if self._thread is not None:
            self._thread.join(timeout)

    def _line(self, line: str) -> None:
        self.lines.append(line)
        if self._echo is not None:
            self._echo(line)

    def _on_ready(self, ready: Ready) -> None:
        self._ready_seen.set()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        task = loop.create_task(self._listener.run())
        self._loop, self._task = loop, task
        try:
            loop.run_until_complete(task)
        except asyncio.CancelledError:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the starting thread
            self._error = exc
        finally:
            self._ready_seen.set()
            loop.close()


def _positive(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    if not number > 0 or number == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number of seconds")
    return number


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mock-server listen",
        description="Forward a sandbox's webhooks to a receiver on this machine,\n"
        "like `stripe listen --forward-to` (docs/webhooks.md).",
        # Help lines as written: a wrapped one could break a flag at its hyphen.
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument(
        "--base-url",
        required=True,
        type=http_url,
        metavar="URL",
        help="a sandbox's base_url (.../_mock/sandboxes/sbx-...)\nor a server's root",
    )
    parser.add_argument(
        "--forward-to",
        required=True,
        type=http_url,
        metavar="URL",
        help="where each webhook is POSTed,\ne.g. http://localhost:4242/webhook",
    )
    parser.add_argument(
        "--account", metavar="ID", help="the account to listen for (default: the first)"
    )
    parser.add_argument(
        "--control-token",
        metavar="T",
        default=os.environ.get(TOKEN_ENV) or None,
        help=f"the sandbox's control token or the server's admin token\n[{TOKEN_ENV}]",
    )
    parser.add_argument(
        "--ca",
        metavar="PATH",
        help="a PEM CA certificate trusted besides the system store,\n"
        "for an https:// --base-url (the server's --tls-ca-out)\n"
        "and an https:// --forward-to",
    )
    parser.add_argument(
        "--forward-timeout",
        type=_positive,
        metavar="S",
        help="seconds the receiver has to answer\n"
        "[default and at most: the server's timeout_seconds - 1]",
    )
    return parser


def main(argv: Sequence[str]) -> int:
    arguments = parser()
    args = arguments.parse_args(list(argv))
    ssl_context: ssl.SSLContext | bool = True
    if args.ca:
        try:
            ssl_context = tls.webhook_ssl(args.ca)
        except tls.TlsError as exc:
            arguments.error(f"--ca: {exc}")
    listener = Listener(
        args.base_url,
        args.forward_to,
        account=args.account,
        control_token=args.control_token,
        ssl_context=ssl_context,
        forward_timeout=args.forward_timeout,
    )
    try:
        return asyncio.run(_until_stopped(listener))
    except KeyboardInterrupt:  # before the handlers were installed, or on Windows
        return 0
