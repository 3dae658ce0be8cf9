"""What `mock-server serve` imports up to its first answer: only what serving needs.

The other commands' modules (recorded sessions, `conformance`, `catalog generate` and
Faker, `validate`, `cluster`, `listen`), the OpenAPI document's schemas, HTTPS
certificates and the state file's SQLite are imported when first used, never by a plain
start: each would lengthen every start (bench/README.md, "The bars": start-up within
1.5× a bare aiohttp app's).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.request

#: Modules (and their submodules) a plain `serve` must not import before its first answer.
DEFERRED = (
    "mock_server.recording",
    "mock_server.conformance",
    "mock_server.catalog_gen",
    "mock_server.validate",
    "mock_server.cluster",
    "mock_server.listen",
    "mock_server.state_file",
    "mock_server.openapi.document",
    "mock_server.openapi.schemas",
    "faker",
    "trustme",
    "cryptography",
    "httptools",
    "sqlite3",
)
IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", re.M)


def modules_imported_to_first_answer(*args: str) -> set[str]:
    """Every module `python -m mock_server` imports from its start to its answer to
    `GET /_mock/health` (and its stop), as `-X importtime` lists them."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_")}
    proc = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "mock_server", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=environment,
    )
    try:
        assert proc.stdout is not None
        listening = re.match(r"^listening on (http://\S+)$", proc.stdout.readline().rstrip())
        assert listening, proc.stderr.read() if proc.stderr else ""
        with urllib.request.urlopen(f"{listening[1]}/_mock/health", timeout=10) as answer:
            assert answer.status == 200
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=10)
        assert proc.returncode == 0, stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return set(IMPORTED.findall(stderr))


def test_serve_imports_no_other_commands_modules_before_its_first_answer():
    imported = modules_imported_to_first_answer("--clock", "manual")
    assert "mock_server.app" in imported  # the listing is read right
    early = sorted(
        name
        for name in imported
        if any(name == deferred or name.startswith(deferred + ".") for deferred in DEFERRED)
    )
    assert early == []
