"""What the dashboard's browser tests share: launching Debian's Chromium, a sandbox per test,
merchant calls, and a console recorder that fails a test on any error the page logs."""

from __future__ import annotations

import http.client
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.sync_api import ConsoleMessage, Page

from mock_server.testing import SandboxHandle

# The browser is Debian's Chromium (apt-get install chromium), or DASHBOARD_CHROMIUM:
# Playwright's own browser downloads are not reachable from CI, so Playwright drives the
# system browser through `executable_path` (tests/services.CHROMIUM). Without it the
# browser tests skip, or fail in CI (tests/services.py).
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: Where `screenshot` saves: the committed pictures with UPDATE_SCREENSHOTS=1, else a
#: scratch folder (a test run leaves the working tree as it found it).
SCREENSHOTS = (
    Path(__file__).resolve().parent.parent / "docs" / "screenshots"
    if os.environ.get("UPDATE_SCREENSHOTS") == "1"
    else Path(tempfile.gettempdir()) / "sandbox-screenshots"
)
DESKTOP = {"width": 1280, "height": 800}
NARROW = {"width": 420, "height": 800}


class Console:
    """Every console error and uncaught exception of a page, to be asserted empty.

    Chromium logs a failed HTTP answer as a console error ("Failed to load resource: the
    server responded with a status of 400"). A test that provokes one on purpose (a
    refused token, a broken scenario) names the status with `expect_status`.
    """

    def __init__(self, page: Page) -> None:
        self.errors: list[str] = []
        self.expected_statuses: set[int] = set()
        page.on("console", self._on_console)
        page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))

    def _on_console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(f"{message.text} at {message.location.get('url')}")

    def expect_status(self, status: int) -> None:
        self.expected_statuses.add(status)

    def unexpected(self) -> list[str]:
        allowed = tuple(
            f"the server responded with a status of {status}" for status in self.expected_statuses
        )
        return [error for error in self.errors if not any(text in error for text in allowed)]


class Merchant:
    """The merchant API as a shop calls it, with the default account's key."""

    def __init__(self, handle: SandboxHandle) -> None:
        self.handle = handle
        answer = handle.control("POST", "/api/v1/auth/token/client", {"api_key": handle.api_key})
        self.token = answer["access_token"]

    def create(self, body: dict[str, Any], scenario: str | None = None) -> dict[str, Any]:
        parts = urlsplit(self.handle.url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        connection.request("POST", "/api/v1/orders", json.dumps(body), self._headers(scenario))
        response = connection.getresponse()
        payload = json.loads(response.read())
        assert response.status == 201, payload
        return payload

    def create_many(self, count: int, threads: int = 8) -> None:
        """`count` orders of item 1001 (`bulk-N`), over kept-alive connections in parallel."""

        def create_range(first: int, last: int) -> None:
            parts = urlsplit(self.handle.url)
            connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
            for number in range(first, last):
                body = json.dumps({"item_id": 1001, "merchant_order_id": f"bulk-{number}"})
                connection.request("POST", "/api/v1/orders", body, self._headers(None))
                response = connection.getresponse()
                response.read()
                assert response.status == 201

        share = count // threads
        workers = [
            threading.Thread(target=create_range, args=(i * share, (i + 1) * share))
            for i in range(threads)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()

    def _headers(self, scenario: str | None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        if scenario:
            headers["X-Mock-Scenario"] = scenario
        return headers


def screenshot(page: Page, name: str) -> None:
    """A 1280×800 picture of the view (for docs/screenshots: see SCREENSHOTS)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size(DESKTOP)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def horizontal_overflow(page: Page) -> int:
    """How many pixels the document is wider than the window (0: no sideways scrolling)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
