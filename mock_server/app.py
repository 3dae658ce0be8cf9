"""`create_app()`: the one way an application is built (CLI, tests, pytest plugin)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncIterator, Callable
from ssl import SSLContext

from aiohttp import web

from . import openapi
from .api import merchant
from .api.cors import Cors
from .api.jsonio import OrderRenderings, dumps
from .api.merchant_calls import MerchantCalls
from .api.middleware import make_middlewares
from .api.routing import mirror_under_sandboxes
from .app_keys import (
    CORS,
    MERCHANT_API,
    MERCHANT_CALLS,
    SANDBOX,
    SANDBOXES,
    SETTINGS,
    STATE_FILE,
    WEBHOOKS,
)
from .clock import Clock
from .config import MAX_BODY_BYTES, Settings, load_startup
from .control import accounts as control_accounts
from .control import coverage as control_coverage
from .control import events as control_events
from .control import handlers as control
from .control import sandboxes as control_sandboxes
from .control import scripting as control_scripting
from .control import state_document as control_state
from .control import ui as control_ui
from .domain.events import EventHub
from .domain.sandbox import Sandbox
from .domain.sandbox_ids import DEFAULT_ID
from .domain.sandboxes import Sandboxes
from .domain.startup import StartupState
from .tls import webhook_ssl
from .webhooks import WebhookSender


def create_app(
    settings: Settings | None = None,
    *,
    clock: Clock | None = None,
    startup: StartupState | None = None,
    wall: Callable[[], float] = time.time,
) -> web.Application:
    """Build the application. `startup` skips reading files (already loaded by the
    caller); `clock` injects the default sandbox's clock and `wall` the wall clock that
    sandbox expiry is measured on (tests)."""
    settings = settings or Settings()
    startup = startup or load_startup(settings)
    cors = Cors(settings.cors_origin)
    app = web.Application(
        client_max_size=MAX_BODY_BYTES,
        middlewares=make_middlewares(
            cors=cors, admin_token=settings.admin_token, max_body=MAX_BODY_BYTES
        ),
    )
    app[SETTINGS] = settings
    app[CORS] = cors
    # One context for every sandbox's sender: loading a trust store is not free.
    sender_ssl = webhook_ssl(settings.webhook_ca, insecure=settings.webhook_insecure)
    # One cache of order renderings: the answer to a creation and its `order` event
    # share one encoding.
    renderings = OrderRenderings()
    events = functools.partial(EventHub, dumps, order_body=renderings.body)
    default = make_sandbox(startup, clock=clock, webhook_ssl=sender_ssl, events=events())
    app[SANDBOX] = default
    app[WEBHOOKS] = default.webhooks
    app[SANDBOXES] = Sandboxes(
        default,
        make=lambda startup, sandbox_id: make_sandbox(
            startup, sandbox_id=sandbox_id, webhook_ssl=sender_ssl, events=events()
        ),
        ttl=settings.sandbox_ttl,
        limit=settings.max_sandboxes,
        wall=wall,
    )
    app[MERCHANT_API] = merchant_api = merchant.MerchantApi(renderings)
    merchant.add_routes(app, merchant_api)
    control.add_routes(app)
    control_accounts.add_routes(app)
    control_scripting.add_routes(app)
    control_events.add_routes(app)
    control_coverage.add_routes(app)
    control_state.add_routes(app)
    control_ui.add_routes(app)
    openapi.add_routes(app)
    mirror_under_sandboxes(app.router)  # every route so far, under each sandbox's base path
    control_sandboxes.add_routes(app)
    if settings.state:
        from .state_file import StateFile  # sqlite3 is imported only when it is used

        app[STATE_FILE] = StateFile(settings.state)  # refuses a locked or unusable file
    app[MERCHANT_CALLS] = MerchantCalls(app[SANDBOXES], app.get(STATE_FILE), MAX_BODY_BYTES)
    app.cleanup_ctx.append(_run_sandboxes)
    app.on_shutdown.append(_end_event_streams)
    return app


def make_sandbox(
    startup: StartupState,
    *,
    clock: Clock | None = None,
    sandbox_id: str = DEFAULT_ID,
    webhook_ssl: SSLContext | bool = True,
    events: EventHub | None = None,
) -> Sandbox:
    """A sandbox wired to its own webhook sender (its own pooled HTTP client, so one
    sandbox's hanging receivers never hold another's deliveries); `webhook_ssl` is how
    it verifies `https://` receivers (`tls.webhook_ssl`)."""
    events = events or EventHub(dumps)
    sandbox = Sandbox(startup, clock=clock, sandbox_id=sandbox_id, events=events)
    sender = WebhookSender(sandbox, ssl=webhook_ssl)
    sandbox.webhooks = sender
    sandbox.settled_hooks.append(sender.order_settled)
    return sandbox


#: How often idle sandboxes are looked for (they also expire when next addressed).
EXPIRY_SWEEP_SECONDS = 30.0


async def _run_sandboxes(app: web.Application) -> AsyncIterator[None]:
    """The default sandbox runs from start-up (its real-clock loop, if any); idle
    sandboxes are swept out; at shutdown every sandbox stops."""
    sandboxes = app[SANDBOXES]
    state_file = app.get(STATE_FILE)
    if state_file is not None:
        state_file.attach(sandboxes)  # every saved sandbox back, before any request
    sandboxes.default.sandbox.start()
    sweeper = asyncio.create_task(_sweep(sandboxes))
    yield
    sweeper.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await sweeper
    if state_file is not None:
        state_file.close()  # before the sandboxes stop: stopping is not deleting
    await sandboxes.close_all()


async def _end_event_streams(app: web.Application) -> None:
    """Open event streams would hold the shutdown up: end them first."""
    for entry in app[SANDBOXES].entries():
        entry.sandbox.events.close()


async def _sweep(sandboxes: Sandboxes) -> None:
    while True:
        await asyncio.sleep(EXPIRY_SWEEP_SECONDS)
        sandboxes.expire_idle()
