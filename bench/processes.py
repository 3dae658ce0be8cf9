"""The processes a bench starts, and what starting them takes: where they run
(`Placement`), a server that says where it listens (`Server`), the sandbox's command
line and its one account, a set-up client, a webhook receiver (`receiver.py`).

bench.py and memory.py both use these (and the side benches, through bench.py), so they
live here, apart from either: memory.py is imported by bench.py.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
PYTHON = sys.executable

API_KEY = "ak_bench"
WEBHOOK_SECRET = "whsec_bench"
HUGE_BALANCE = 1_000_000_000_000  # major units: creation never runs out of money


@dataclass(frozen=True)
class Placement:
    server: list[str]  # command prefix for servers and in-process measurements
    load: list[str]  # command prefix for wrk and webhook receivers
    note: str


def placement() -> Placement:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2 and shutil.which("taskset"):
        server, load = str(cpus[0]), str(cpus[1])
        return Placement(
            ["taskset", "-c", server],
            ["taskset", "-c", load],
            f"server and in-process measurements pinned to CPU {server}; "
            f"wrk and webhook receivers pinned to CPU {load} (taskset)",
        )
    why = "one core available" if len(cpus) < 2 else "taskset not found"
    return Placement([], [], f"{why}: servers, wrk and receivers run unpinned, sharing it")


class Server:
    """A subprocess that prints `listening on http://HOST:PORT` on stdout when ready."""

    def __init__(self, argv: list[str], name: str, log_dir: Path, timeout: float = 30) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.stderr.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=self._log, text=True, cwd=REPO
        )
        line = _readline(self.proc, timeout)
        match = re.search(r"listening on (https?)://([^\s:]+|\[[^\]]+\]):(\d+)", line)
        if not match:
            self.stop()
            tail = self.log_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{name} did not start: {line!r}\n{tail}")
        scheme, self.host, self.port = match.group(1), match.group(2), int(match.group(3))
        self.url = f"{scheme}://{self.host}:{self.port}"
        # Drain the rest of stdout (the banner) so the child never blocks on a full pipe.
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def _readline(proc: subprocess.Popen, timeout: float) -> str:
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return box[0] if box else ""


#: Extra arguments for every sandbox server (`--sandbox-loop asyncio` adds `--loop asyncio`).
SANDBOX_EXTRA: list[str] = []


def sandbox_argv(pin: Placement, accounts: Path | None) -> list[str]:
    argv = pin.server + [PYTHON, "-m", "mock_server", "--clock", "manual", "--port", "0"]
    argv += ["--seed", "1", *SANDBOX_EXTRA]
    if accounts is not None:
        argv += ["--accounts", str(accounts)]
    return argv


def write_accounts(path: Path, webhook_url: str | None = None) -> Path:
    lines = [
        "accounts:",
        "  - email: bench@example.com",
        f"    api_key: {API_KEY}",
        f"    balance: {HUGE_BALANCE}",
        f"    webhook_secret: {WEBHOOK_SECRET}",
    ]
    if webhook_url:
        lines.append(f"    webhook_url: {webhook_url}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class Client:
    """A keep-alive HTTP/1.1 client for set-up calls (stdlib only)."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port), timeout=120)

    def call(
        self, method: str, path: str, body: Any = None, token: str | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        headers = {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.conn.request(method, path, body=data, headers=headers)
        response = self.conn.getresponse()
        raw = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, raw

    def json(self, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
        status, _, raw = self.call(method, path, body, token)
        if status >= 400:
            raise RuntimeError(f"{method} {path} answered {status}: {raw[:300]!r}")
        return json.loads(raw)

    def close(self) -> None:
        self.conn.close()


@contextlib.contextmanager
def receiver(pin: Placement, status: int, work: Path) -> Iterator[str]:
    argv = pin.load + [PYTHON, str(BENCH / "receiver.py"), "--status", str(status)]
    server = Server(argv, f"receiver-{status}", work)
    try:
        yield server.url + "/hooks"
    finally:
        server.stop()
