"""Serving a small aiohttp app until SIGTERM/SIGINT: shared by the bench's bare app and
its webhook receiver."""

from __future__ import annotations

import asyncio
import signal

from aiohttp import web


async def serve_until_signalled(app: web.Application, host: str, port: int) -> None:
    """Serve `app`, print `listening on http://HOST:PORT`, stop cleanly on a signal."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    print(f"listening on http://{host}:{runner.addresses[0][1]}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()
