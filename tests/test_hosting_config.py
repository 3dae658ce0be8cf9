"""docs/hosting.md's public test mode runs as written: its bash block, run by bash with
only the address changed (to 127.0.0.1 and a free port, as every server in the tests),
starts a server that answers over HTTPS with the CA it wrote, guards control calls with
the admin token it was given (the same one when the block is run again), keeps webhooks
off loopback, limits a sandbox's rate and quotas, and keeps its state in the file it
names."""

from __future__ import annotations

import json
import os
import re
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from test_cli import ServerProcess, clean_env

DOC = Path(__file__).resolve().parents[1] / "docs" / "hosting.md"


def documented_block() -> str:
    """The bash block under "A public test mode"."""
    section = DOC.read_text("utf-8").split("## A public test mode", 1)[1]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


def as_run_here(block: str) -> str:
    """The block with the server on 127.0.0.1 and a free port; nothing else changed."""
    local = block.replace("--host 0.0.0.0 --port 8443", "--host 127.0.0.1 --port 0")
    assert local != block, "the documented command no longer names --host 0.0.0.0 --port 8443"
    # `exec`: the server is the process the test watches and stops.
    return local.replace("mock-server serve", "exec mock-server serve", 1)


def call(
    server: ServerProcess, context: ssl.SSLContext, method: str, path: str, **options: Any
) -> tuple[int, Any]:
    body = options.get("body")
    headers = {"Content-Type": "application/json", **options.get("headers", {})}
    request = urllib.request.Request(
        server.url + path,
        data=None if body is None else json.dumps(body).encode(),
        headers=headers,
        method=method,
    )
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def test_the_public_test_mode_runs_as_written(tmp_path: Path):
    env = clean_env(PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    # The block exports the token for the server; the test reads it back from the
    # environment the block gives, by asking bash to print it to a file first.
    script = as_run_here(documented_block()).replace(
        "exec mock-server serve",
        'printf %s "$MOCK_ADMIN_TOKEN" > seen-token; exec mock-server serve',
        1,
    )
    server = ServerProcess(["bash", "-c", script], env, tmp_path)
    try:
        server.wait_ready()
        assert server.scheme == "https"
        token = (tmp_path / "seen-token").read_text()
        assert len(token) == 64 and token == (tmp_path / "admin-token").read_text().strip()
        context = ssl.create_default_context(cafile=str(tmp_path / "sandbox-ca.pem"))
        admin = {"Authorization": f"Bearer {token}"}
        assert call(server, context, "GET", "/_mock/health")[0] == 200
        assert call(server, context, "GET", "/_mock/clock")[0] == 401
        status, created = call(
            server,
            context,
            "POST",
            "/_mock/sandboxes",
            body={"accounts": {"accounts": [{"email": "m@example.com", "api_key": "ak_m"}]}},
            headers=admin,
        )
        assert status == 201, created
        base = "/_mock/sandboxes/" + created["id"]
        own = {"Authorization": f"Bearer {created['control_token']}"}
        account = created["account_id"]
        # Webhooks stay off loopback: a loopback literal is refused where it is set.
        status, refused = call(
            server,
            context,
            "PATCH",
            f"{base}/_mock/accounts/{account}",
            body={"webhook_url": "http://127.0.0.1:9/hooks"},
            headers=own,
        )
        assert status == 400 and "--webhook-deny-private" in refused["detail"]
        # Quotas: at most 100 accounts in a created sandbox.
        many = [{"email": f"a{n}@example.com", "api_key": f"ak_a{n}"} for n in range(101)]
        status, refused = call(
            server, context, "PUT", f"{base}/_mock/accounts", body={"accounts": many}, headers=own
        )
        assert status == 429 and refused["code"] == "quota_exceeded"
        # At most 100 faults pending.
        fault = {"path": "/api/v1/orders/*", "status": 503}
        for _ in range(100):
            status, _ = call(
                server, context, "POST", f"{base}/_mock/faults", body=fault, headers=own
            )
            assert status == 201
        status, refused = call(
            server, context, "POST", f"{base}/_mock/faults", body=fault, headers=own
        )
        assert status == 429 and "--sandbox-max-faults" in refused["detail"]
        assert call(server, context, "DELETE", f"{base}/_mock/faults", headers=own)[0] == 200
        # The rate: 50 a second in bursts of 100, then 429 rate_limited (calls made
        # back to back outrun the refill well before 400). Only the sandbox's own
        # callers spend it: the calls carry its access token.
        status, exchanged = call(
            server,
            context,
            "POST",
            f"{base}/api/v1/auth/token/client",
            body={"api_key": "ak_m"},
        )
        assert status == 200, exchanged
        bearer = {"Authorization": f"Bearer {exchanged['access_token']}"}
        answers = []
        for _ in range(400):
            answers.append(
                call(server, context, "GET", f"{base}/api/v1/account/balance", headers=bearer)
            )
            if answers[-1][0] == 429:
                break
        assert len(answers) > 100 and answers[-1][1]["code"] == "rate_limited"
    finally:
        server.stop(within=5)
        server.kill()
    assert (tmp_path / "sandboxes.db").exists()


def test_running_the_block_again_keeps_the_admin_token(tmp_path: Path):
    """The block makes the admin token once and reuses it, readable by its owner only."""
    before_server = documented_block().split("mock-server serve", 1)[0]
    script = before_server + 'printf %s "$MOCK_ADMIN_TOKEN"'
    env = clean_env(PATH=os.environ["PATH"])

    def run() -> str:
        done = subprocess.run(
            ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    first = run()
    assert re.fullmatch(r"[0-9a-f]{64}", first)
    assert run() == first
    assert (tmp_path / "admin-token").stat().st_mode & 0o077 == 0
