"""`create_app()`: the one way an application is built, and `App`, what it builds.

An `App` is every sandbox the server holds, the one request edge (`edge.server.Edge`)
that answers every request, and the app's start and stop. Every server runs it the same
way, with `serving.Serving`: the CLI, the pytest plugin's thread, `conformance`, the
test suite and the benchmarks.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from ssl import SSLContext
from typing import TYPE_CHECKING

from aiohttp import web

from . import openapi
from .clock import Clock
from .config import MAX_BODY_BYTES, Settings, created_quotas, default_quotas, load_startup
from .control import accounts as control_accounts
from .control import coverage as control_coverage
from .control import events as control_events
from .control import handlers as control
from .control import listen as control_listen
from .control import sandboxes as control_sandboxes
from .control import scripting as control_scripting
from .control import state_document as control_state
from .control import ui as control_ui
from .control.calls import ControlCalls
from .domain.events import EventHub
from .domain.quotas import NO_QUOTAS, Quotas
from .domain.sandbox import Sandbox
from .domain.sandbox_ids import DEFAULT_ID
from .domain.sandboxes import Sandboxes
from .domain.startup import StartupState
from .edge.cors import Cors
from .edge.jsonio import OrderRenderings, dumps
from .edge.server import Edge
from .merchant.api import MerchantApi
from .merchant.calls import MerchantCalls
from .merchant.rate_guard import RateGuard
from .merchant.table import MerchantTable
from .tls import webhook_ssl
from .webhooks import WebhookSender

if TYPE_CHECKING:  # sqlite3 is imported only when a state file is used
    from .state_file import StateFile

#: The control API and the documents: each module's table of root paths.
CONTROL_ROUTES = (
    control.routes,
    control_accounts.routes,
    control_scripting.routes,
    control_events.routes,
    control_listen.routes,
    control_coverage.routes,
    control_state.routes,
    control_ui.routes,
    openapi.routes,
)
#: How often idle sandboxes are looked for (they also expire when next addressed).
EXPIRY_SWEEP_SECONDS = 30.0


@dataclass(eq=False)
class App:
    """One application: its sandboxes, its request edge, its start and stop."""

    settings: Settings
    sandboxes: Sandboxes
    #: The `--state` file, when there is one.
    state_file: StateFile | None
    #: The merchant API's table and handlers (`MerchantApi.routes()`).
    merchant_api: MerchantApi
    #: The control API and the documents, on root paths only.
    control_router: web.UrlDispatcher
    #: The handler of every request (aiohttp's low-level server runs it).
    edge: Edge
    _sweeper: asyncio.Task[None] | None = field(default=None, init=False, repr=False)

    @property
    def sandbox(self) -> Sandbox:
        """The default sandbox."""
        return self.sandboxes.default.sandbox

    async def start(self) -> None:
        """Before the first request: every saved sandbox back from the state file, the
        default sandbox running (its real-clock loop, if any), idle sandboxes swept out."""
        if self.state_file is not None:
            self.state_file.attach(self.sandboxes)
        self.sandbox.start()
        self._sweeper = asyncio.create_task(_sweep(self.sandboxes))

    def end_streams(self) -> None:
        """Before the server stops: open event and listener streams would hold the
        shutdown up."""
        for entry in self.sandboxes.entries():
            entry.sandbox.events.close()
            entry.sandbox.listeners.close()

    async def stop(self) -> None:
        """After the server stopped: every sandbox stops (the state file first: stopping
        is not deleting)."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
        if self.state_file is not None:
            self.state_file.close()
        await self.sandboxes.close_all()


def create_app(
    settings: Settings | None = None,
    *,
    clock: Clock | None = None,
    startup: StartupState | None = None,
    wall: Callable[[], float] = time.time,
) -> App:
    """Build the application. `startup` skips reading files (already loaded by the
    caller); `clock` injects the default sandbox's clock and `wall` the wall clock that
    sandbox expiry is measured on (tests)."""
    settings = settings or Settings()
    startup = startup or load_startup(settings)
    # One context for every sandbox's sender: loading a trust store is not free.
    sender_ssl = webhook_ssl(settings.webhook_ca, insecure=settings.webhook_insecure)
    # One cache of order renderings: the answer to a creation and its `order` event
    # share one encoding.
    renderings = OrderRenderings()
    events = functools.partial(EventHub, dumps, order_body=renderings.body)
    default = make_sandbox(
        startup,
        clock=clock,
        webhook_ssl=sender_ssl,
        events=events(),
        quotas=default_quotas(settings),
    )
    state_file = None
    if settings.state:
        from .state_file import StateFile  # sqlite3 is imported only when it is used

        state_file = StateFile(settings.state)  # refuses a locked or unusable file
    sandboxes = Sandboxes(
        default,
        make=lambda startup, sandbox_id, quotas: make_sandbox(
            startup, sandbox_id=sandbox_id, webhook_ssl=sender_ssl, events=events(), quotas=quotas
        ),
        ttl=settings.sandbox_ttl,
        limit=settings.max_sandboxes,
        quotas=created_quotas(settings),
        node_id=settings.node_id,
        public_url=settings.public_url.rstrip("/") if settings.public_url else None,
        secret=state_file.server_secret() if state_file is not None else None,
        wall=wall,
    )
    merchant_api = MerchantApi(renderings)
    control_router = web.UrlDispatcher()
    for routes in CONTROL_ROUTES:
        control_router.add_routes(routes)
    control_sandboxes.add_routes(control_router, sandboxes)
    edge = Edge(
        Cors(settings.cors_origin),
        MerchantTable(merchant_api.routes()),
        MerchantCalls(
            sandboxes,
            state_file,
            MAX_BODY_BYTES,
            RateGuard(settings.sandbox_rate) if settings.sandbox_rate else None,
        ),
        ControlCalls(
            control_router,
            sandboxes,
            state_file,
            admin_token=settings.admin_token,
            max_body=MAX_BODY_BYTES,
        ),
    )
    return App(settings, sandboxes, state_file, merchant_api, control_router, edge)


def make_sandbox(
    startup: StartupState,
    *,
    clock: Clock | None = None,
    sandbox_id: str = DEFAULT_ID,
    webhook_ssl: SSLContext | bool = True,
    events: EventHub | None = None,
    quotas: Quotas = NO_QUOTAS,
) -> Sandbox:
    """A sandbox wired to its own webhook sender (its own pooled HTTP client, so one
    sandbox's hanging receivers never hold another's deliveries); `webhook_ssl` is how
    it verifies `https://` receivers (`tls.webhook_ssl`)."""
    events = events or EventHub(dumps)
    sandbox = Sandbox(startup, clock=clock, sandbox_id=sandbox_id, events=events, quotas=quotas)
    sender = WebhookSender(sandbox, ssl=webhook_ssl)
    sandbox.webhooks = sender
    sandbox.settled_hooks.append(sender.order_settled)
    return sandbox


async def _sweep(sandboxes: Sandboxes) -> None:
    while True:
        await asyncio.sleep(EXPIRY_SWEEP_SECONDS)
        sandboxes.expire_idle()
