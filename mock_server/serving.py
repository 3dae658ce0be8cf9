"""How an `App` is served, the same way by every server: the CLI, the pytest plugin's
thread, `conformance`, the test suite and the benchmarks.

aiohttp's low-level server (`web.Server`, run by a `web.ServerRunner`) runs the app's
request edge as its one handler; the app starts before the server listens and stops
after it has closed its connections.
"""

from __future__ import annotations

from ssl import SSLContext
from typing import Any

from aiohttp import web

from .app import App


class Serving:
    """`app` served on `host:port` (port 0: any free port); `options` are aiohttp's
    server's (access log, timeouts)."""

    def __init__(
        self,
        app: App,
        host: str,
        port: int,
        *,
        ssl_context: SSLContext | None = None,
        shutdown_timeout: float = 0.5,
        **options: Any,
    ) -> None:
        self.app = app
        self._host = host
        self._port = port
        self._ssl_context = ssl_context
        self._shutdown_timeout = shutdown_timeout
        self._options = options
        self._runner: web.ServerRunner | None = None
        self._started = False

    async def start(self) -> tuple[str, int]:
        """Start the app, then listen; returns the address listened on. An address that
        cannot be listened on raises the `OSError`, with everything stopped again."""
        await self.app.start()
        self._started = True
        server = web.Server(self.app.edge, **self._options)
        self._runner = runner = web.ServerRunner(
            server, handle_signals=False, shutdown_timeout=self._shutdown_timeout
        )
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._host, self._port, ssl_context=self._ssl_context)
            await site.start()
        except OSError:
            await self.stop()
            raise
        host, port = runner.addresses[0][:2]
        return host, port

    @property
    def url(self) -> str:
        """The URL listened on, as a client on this machine calls it."""
        if self._runner is None:
            raise RuntimeError("not serving")
        host, port = self._runner.addresses[0][:2]
        scheme = "https" if self._ssl_context is not None else "http"
        return f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}"

    async def stop(self) -> None:
        """Stop listening, end open event streams, close connections, stop the app; once
        (a second call does nothing)."""
        if not self._started:
            return
        self._started = False
        runner, self._runner = self._runner, None
        self.app.end_streams()
        if runner is not None:
            await runner.cleanup()
        await self.app.stop()

    async def __aenter__(self) -> Serving:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()
