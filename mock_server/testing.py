"""Driving a sandbox from tests: a server thread, a handle, and a webhook receiver.

The pytest plugin (`mock_server.pytest_plugin`) is built from these, and they work
without pytest too:

* `ServerThread` runs an app on 127.0.0.1 (free port) in its own thread and event loop
  (uvloop when it is installed), so synchronous clients (`requests`, `httpx`) and any
  event loop can call it.
* `SandboxHandle` drives a sandbox through its control API, whether it runs in this
  process or elsewhere (a container): the same calls either way.
* `WebhookReceiver` is a local endpoint (stdlib threads, no event loop) that records
  deliveries and verifies their signatures.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from . import loops, tls
from .config import Settings
from .domain.startup import StartupState
from .domain.statuses import STATUSES, TERMINAL
from .webhooks import verify

if TYPE_CHECKING:
    from .serving import Serving

#: What `wait_for_webhook` can wait for: the order status an event carries, and the
#: delivery's own state.
EVENT_STATUSES = tuple(status for status in STATUSES if status in TERMINAL)
DELIVERY_STATES = ("pending", "retrying", "delivered", "failed", "dropped")


def _check_choice(name: str, value: str | None, valid: tuple[str, ...]) -> None:
    if value is not None and value not in valid:
        raise ValueError(f"{name}={value!r} is not one of {', '.join(valid)}")


class SandboxError(AssertionError):
    """A control call the sandbox refused (status and its error envelope)."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"sandbox answered {status}: {body}")
        self.status = status
        self.body = body


class ServerThread:
    """A sandbox served from a background thread; `start()` returns once it listens.

    `loop` is as the CLI's `--loop`: `auto` (uvloop when installed), `uvloop`, `asyncio`.
    """

    def __init__(
        self, settings: Settings, *, startup: StartupState | None = None, loop: str = "auto"
    ) -> None:
        self.settings = settings
        self._startup = startup
        self._loop_choice = loops.resolve(loop)  # a bad name or missing uvloop: refused now
        self._loop: asyncio.AbstractEventLoop | None = None
        self._serving: Serving | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.url = ""

    def start(self) -> ServerThread:
        self._thread = threading.Thread(target=self._run, name="mock-server", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    @property
    def loop_name(self) -> str:
        """`uvloop` or `asyncio`: the loop the server runs on."""
        return self._loop_choice

    def _run(self) -> None:
        loop = loops.new_event_loop(self._loop_choice)
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # noqa: BLE001 - handed to the starting thread
            self._error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            if self._serving is not None:
                loop.run_until_complete(self._serving.stop())
            loop.close()

    async def _serve(self) -> None:
        from .app import create_app
        from .serving import Serving

        ssl_context = None
        if self.settings.tls == tls.SELF_SIGNED and self.settings.tls_ca_out:
            # HTTPS from a local CA, written where the settings say (the handle's ca_path)
            ssl_context = tls.self_signed("127.0.0.1", self.settings.tls_ca_out)
        app = create_app(self.settings, startup=self._startup)
        self._serving = Serving(app, "127.0.0.1", 0, ssl_context=ssl_context, access_log=None)
        await self._serving.start()
        self.url = self._serving.url


class SandboxHandle:
    """Control a sandbox at `url` through `/_mock`, as the first account of its state."""

    def __init__(
        self, url: str, *, admin_token: str | None = None, ca_path: str | None = None
    ) -> None:
        self.url = url.rstrip("/")
        self.admin_token = admin_token
        #: The CA that signed an `https://` sandbox's certificate: give it to `requests`
        #: (`verify=ca_path`) or `httpx` (`verify=ssl.create_default_context(cafile=...)`).
        self.ca_path = ca_path
        self._ssl = ssl.create_default_context(cafile=ca_path) if ca_path else None
        self._account: dict[str, Any] = {}
        self._clock_mode = ""

    # -- the default account --------------------------------------------------------------

    @property
    def api_key(self) -> str:
        return self._default_account()["api_keys"][0]

    @property
    def webhook_secret(self) -> str:
        return self._default_account()["webhook_secret"]

    @property
    def account_id(self) -> str:
        return self._default_account()["id"]

    def _default_account(self) -> dict[str, Any]:
        if not self._account:
            self._account = self.control("GET", "/_mock/accounts")["accounts"][0]
        return self._account

    # -- time and scenarios ----------------------------------------------------------------

    @property
    def clock_mode(self) -> str:
        if not self._clock_mode:
            self._clock_mode = self.control("GET", "/_mock/clock")["mode"]
        return self._clock_mode

    def now(self) -> str:
        return self.control("GET", "/_mock/clock")["now"]

    def advance(self, seconds: float) -> str:
        """Move the clock; everything due (steps, webhook attempts) has run on return."""
        return self.control("POST", "/_mock/clock/advance", {"seconds": seconds})["now"]

    def use_scenario(self, name: str, count: int | None = None) -> None:
        """Orders of the default account get `name`: the next `count`, or all from now."""
        body = {"scenario": name, "account_id": self.account_id, "count": count, "replace": True}
        self.control("POST", "/_mock/scenarios/next", body)

    # -- reading state ---------------------------------------------------------------------

    def orders(self, **filters: str) -> list[dict[str, Any]]:
        query = "&".join(f"{k}={urllib.request.quote(str(v))}" for k, v in filters.items())
        return self.control("GET", "/_mock/orders" + (f"?{query}" if query else ""))["orders"]

    def order(self, order_id: str) -> dict[str, Any]:
        """Control-plane detail: order, scenario, history, deliveries."""
        return self.control("GET", f"/_mock/orders/{order_id}")

    def webhooks(self, order_id: str | None = None) -> list[dict[str, Any]]:
        path = "/_mock/webhooks" + (f"?order_id={order_id}" if order_id else "")
        return self.control("GET", path)["deliveries"]

    def wait_for_webhook(
        self,
        order_id: str,
        status: str | None = None,
        timeout: float = 10.0,
        *,
        delivery: str | None = None,
    ) -> dict[str, Any]:
        """The order's webhook delivery (as `webhooks()` shows it), once it has been sent.

        `status` is the order status the event carries (`completed`, `partial`,
        `failed`): `wait_for_webhook(order["id"], status="completed")` is the webhook
        that tells the merchant the order completed. `delivery` is the delivery's own
        state (`pending`, `retrying`, `delivered`, `failed`, `dropped`); without it, a
        delivery counts once its first attempt has been made. Under the manual clock
        nothing changes by waiting: the delivery is returned at once, or an
        AssertionError says to advance the clock. Under a real clock this polls until
        `timeout` seconds have passed.
        """
        _check_choice("status", status, EVENT_STATUSES)
        _check_choice("delivery", delivery, DELIVERY_STATES)

        def wanted(found: dict[str, Any]) -> bool:
            if delivery is None and not found["attempts"]:
                return False
            if delivery is not None and found["status"] != delivery:
                return False
            return status is None or json.loads(found["body"]).get("status") == status

        deadline = time.monotonic() + timeout
        while True:
            deliveries = self.webhooks(order_id)
            found = next((d for d in deliveries if wanted(d)), None)
            if found is not None:
                return found
            if self.clock_mode == "manual" or time.monotonic() >= deadline:
                asked = [f"{k}={v!r}" for k, v in (("status", status), ("delivery", delivery)) if v]
                seen = [
                    f"event {json.loads(d['body']).get('status')}, delivery {d['status']}, "
                    f"{len(d['attempts'])} attempt(s)"
                    for d in deliveries
                ]
                raise AssertionError(
                    f"no webhook sent for order {order_id}"
                    + (f" with {', '.join(asked)}" if asked else "")
                    + f" (deliveries: {'; '.join(seen) or 'none'})"
                    + ("; advance the clock first" if self.clock_mode == "manual" else "")
                )
            time.sleep(0.02)

    def job_failures(self) -> list[dict[str, Any]]:
        """Scheduled jobs that raised (a sandbox bug): each with job, owner, due, error."""
        return self.control("GET", "/_mock/jobs")["failures"]

    # -- changing state --------------------------------------------------------------------

    def set_balance(self, amount: float) -> None:
        self.control("PATCH", f"/_mock/accounts/{self.account_id}", {"balance": amount})

    def set_webhook_url(self, url: str | None) -> None:
        self.control("PATCH", f"/_mock/accounts/{self.account_id}", {"webhook_url": url})

    def reset(self, *, seed: int | None = None, start_time: str | None = None) -> None:
        """Back to the startup state (ids and codes re-seeded)."""
        body = {k: v for k, v in (("seed", seed), ("start_time", start_time)) if v is not None}
        self.control("POST", "/_mock/reset", body)
        self.refresh()

    def refresh(self) -> None:
        """Forget what the handle cached (the default account) after accounts changed."""
        self._account = {}

    # -- transport -------------------------------------------------------------------------

    def control(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", content_type)
        if self.admin_token:
            request.add_header("Authorization", f"Bearer {self.admin_token}")
        try:
            with urllib.request.urlopen(request, timeout=60, context=self._ssl) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                payload = json.loads(raw)
            except ValueError:
                payload = raw.decode("utf-8", "replace")
            raise SandboxError(exc.code, payload) from None


@dataclass
class WebhookEvent:
    headers: dict[str, str]
    body: bytes
    json: Any
    verified: bool


class WebhookReceiver:
    """Records POSTs on 127.0.0.1 (free port) and checks their signatures."""

    def __init__(self, secret: str = "whsec_test_default") -> None:
        self.secret = secret
        self.events: list[WebhookEvent] = []
        self._status = 200
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's naming
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                receiver._record(dict(self.headers.items()), body)
                self.send_response(receiver._status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        host, port = self._server.server_address[:2]
        self.url = f"http://{host}:{port}/webhooks"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.02},  # how soon close() is noticed
            daemon=True,
            name="webhook-receiver",
        )
        self._thread.start()

    def respond_with(self, status: int) -> None:
        """Answer every later delivery with `status` (200 is the only success)."""
        self._status = status

    def _record(self, headers: dict[str, str], body: bytes) -> None:
        signature = headers.get("X-Webhook-Signature") or headers.get("X-Signature")
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        event = WebhookEvent(headers, body, parsed, verify(self.secret, body, signature))
        with self._lock:
            self.events.append(event)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
