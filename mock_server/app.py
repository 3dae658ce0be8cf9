"""`create_app()`: the one way an application is built (CLI, tests, pytest plugin)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from aiohttp import web

from . import openapi
from .api import merchant
from .api.merchant import SANDBOX, WEBHOOKS
from .api.middleware import make_middlewares
from .clock import Clock
from .config import MAX_BODY_BYTES, Settings, load_startup
from .control import accounts as control_accounts
from .control import handlers as control
from .control import scripting as control_scripting
from .domain.sandbox import Sandbox, StartupState
from .webhooks import WebhookSender

SETTINGS = web.AppKey("settings", Settings)


def create_app(
    settings: Settings | None = None,
    *,
    clock: Clock | None = None,
    startup: StartupState | None = None,
) -> web.Application:
    """Build the application. `startup` skips reading files (already loaded by the
    caller); `clock` injects a clock (tests)."""
    settings = settings or Settings()
    startup = startup or load_startup(settings)
    app = web.Application(
        client_max_size=MAX_BODY_BYTES,
        middlewares=make_middlewares(
            cors_origin=settings.cors_origin,
            admin_token=settings.admin_token,
            max_body=MAX_BODY_BYTES,
        ),
    )
    app[SETTINGS] = settings
    sandbox = Sandbox(startup, clock=clock)
    sender = WebhookSender(sandbox)
    sandbox.settled_hooks.append(sender.order_settled)
    app[SANDBOX] = sandbox
    app[WEBHOOKS] = sender
    merchant.add_routes(app)
    control.add_routes(app)
    control_accounts.add_routes(app)
    control_scripting.add_routes(app)
    openapi.add_routes(app)
    app.cleanup_ctx.append(_run_scheduler)
    return app


async def _run_scheduler(app: web.Application) -> AsyncIterator[None]:
    """Under a real clock, a background task runs jobs as they fall due."""
    sandbox = app[SANDBOX]
    task = None
    if sandbox.clock.mode == "real":
        task = asyncio.create_task(sandbox.scheduler.run_forever())
    yield
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    sandbox.scheduler.reset(sandbox.clock)
    await app[WEBHOOKS].close()
