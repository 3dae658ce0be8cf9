"""`python -m mock_server ARGS` as a child process whose output lines are collected as
they come: the servers, listeners and recorders the command-line tests start; and the
shared server process with a sandbox of each test's own (`server_url`, `sandbox`)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mock_server.testing import SandboxError, SandboxHandle

#: How long a test waits for a line or an exit before it fails.
DEADLINE = 15.0


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without its `MOCK_*` settings (a child configures
    itself by its arguments alone), plus `extra`."""
    own = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_")}
    return own | (extra or {})


class Process:
    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "mock_server", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=environment(env),
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self._pumps = [
            threading.Thread(target=self._pump, args=(stream, lines), daemon=True)
            for stream, lines in ((self.popen.stdout, self.out), (self.popen.stderr, self.err))
        ]
        for pump in self._pumps:
            pump.start()

    @staticmethod
    def _pump(stream: Any, lines: list[str]) -> None:
        for line in stream:
            lines.append(line.rstrip("\n"))

    def wait_for(self, wanted: str, *, stderr: bool = False, timeout: float = DEADLINE) -> str:
        """The first line (of stdout, or stderr) containing `wanted`, once printed."""
        lines = self.err if stderr else self.out
        deadline = time.monotonic() + timeout
        while True:
            found = next((line for line in list(lines) if wanted in line), None)
            if found is not None:
                return found
            exited = self.popen.poll() is not None and not any(p.is_alive() for p in self._pumps)
            if exited or time.monotonic() > deadline:
                raise AssertionError(
                    f"no line with {wanted!r} (exit status {self.popen.poll()}); "
                    f"stdout: {self.out}; stderr: {self.err}"
                )
            time.sleep(0.01)

    def signal(self, sig: int) -> int:
        """Send `sig` and wait for the exit: the exit status."""
        self.popen.send_signal(sig)
        return self.finish()

    def finish(self, timeout: float = DEADLINE) -> int:
        status = self.popen.wait(timeout)
        for pump in self._pumps:
            pump.join(timeout)
        return status

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait(10)


def start_server(*args: str) -> tuple[Process, str]:
    """A sandbox server process on a free port, manual clock, seed 1: it and its URL."""
    server = Process(
        "--host", "127.0.0.1", "--port", "0", "--clock", "manual", "--seed", "1", *args
    )
    line = server.wait_for("listening on ")
    return server, line.split("listening on ", 1)[1].strip()


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    """One server process for a test module (production's stand-in, or a hosted one)."""
    server, url = start_server()
    yield url
    server.signal(signal.SIGTERM)


@pytest.fixture
def sandbox(server_url: str) -> Iterator[SandboxHandle]:
    """A sandbox of this test's own on the module's server, deleted afterwards."""
    root = SandboxHandle(server_url)
    created = root.control("POST", "/_mock/sandboxes", {"clock": "manual", "seed": 1})
    yield SandboxHandle(created["base_url"], admin_token=created["control_token"])
    with contextlib.suppress(SandboxError):
        root.control("DELETE", f"/_mock/sandboxes/{created['id']}")
