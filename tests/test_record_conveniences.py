"""The recorder's conveniences (docs/recording.md, "Record"): a private CA for an
`https://` upstream (`--upstream-ca`), the start-up probe, the warnings a run ends with,
a finished file that replaces an existing one only once it is scanned and ended, an
`--out` folder that does not exist, a scan hit named by event and field; and
`mock-server --help` and `mock-server recording show`.

Every server is on loopback: a sandbox server process (tests/processes.py), a small
HTTPS server of this file's own with a certificate from a `trustme` CA.
"""

from __future__ import annotations

import json
import signal
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import trustme

from mock_server.cli import COMMANDS
from mock_server.cli import main as cli_main
from mock_server.recording.recorder import record
from mock_server.recording.recorder.fileformat import read_lines
from mock_server.recording.recorder.proxy import Recorder
from mock_server.recording.recorder.redaction import scan
from tests.processes import (  # noqa: F401 - server_url, sandbox: fixtures
    DEADLINE,
    environment,
    sandbox,
    server_url,
)
from tests.test_compare import record as record_session
from tests.test_record import (  # noqa: F401 - recorder: a fixture
    call,
    free_port,
    record_argv,
    recorder,
)
from tests.test_recording_trust import one_order

# -- an HTTPS upstream whose certificate a private CA signed -------------------------------------


class HttpsUpstream:
    """Answers every GET with `{"secure": true}` over TLS, its certificate for
    127.0.0.1 signed by `ca` (which no system trusts)."""

    def __init__(self, ca: trustme.CA) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 - the stdlib's naming
                body = b'{"secure": true}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_HEAD = do_GET  # noqa: N815 - the probe

            def log_message(self, format: str, *args: Any) -> None:
                return

        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def private_ca(tmp_path: Path) -> Iterator[tuple[HttpsUpstream, Path]]:
    ca = trustme.CA()
    pem = tmp_path / "private-ca.pem"
    ca.cert_pem.write_to_path(str(pem))
    upstream = HttpsUpstream(ca)
    yield upstream, pem
    upstream.close()


def test_upstream_ca_trusts_a_private_ca_for_an_https_upstream(private_ca, recorder):
    upstream, pem = private_ca
    rec = recorder("--upstream", upstream.url, "--upstream-ca", str(pem))
    answer = call(rec.url, "GET", "/hello")
    assert (answer.status, answer.json) == (200, {"secure": True})

    untrusting = recorder("--upstream", upstream.url, name="untrusting.jsonl")
    answer = call(untrusting.url, "GET", "/hello")
    assert answer.status == 502 and answer.json["code"] == "upstream_unavailable"
    assert "CERTIFICATE_VERIFY_FAILED" in answer.json["detail"]
    warning = untrusting.wait_for("warning: ", stderr=True)
    assert f"the upstream {upstream.url} does not answer" in warning
    assert "--upstream-ca PATH trusts it" in warning


def test_an_upstream_ca_that_is_no_pem_file_is_exit_2(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.pem"
    bogus.write_text("not a certificate\n")
    for path, said in (
        (bogus, "not a PEM CA certificate"),
        (tmp_path / "none.pem", "--upstream-ca"),
    ):
        argv = record_argv(
            "--upstream", "https://127.0.0.1:1", "--out", str(tmp_path / "a.jsonl"),
            "--upstream-ca", str(path),
        )  # fmt: skip
        done = subprocess.run(
            argv, capture_output=True, text=True, env=environment(), timeout=DEADLINE
        )
        assert done.returncode == 2 and said in done.stderr, done.stderr


# -- the probe, and the warnings a run ends with -----------------------------------------------


def test_an_upstream_that_does_not_answer_is_said_at_start_and_at_the_end(recorder):
    upstream = f"http://127.0.0.1:{free_port()}"
    rec = recorder("--upstream", upstream)  # it starts all the same
    warning = rec.wait_for("warning: ", stderr=True)
    assert warning.startswith(f"warning: the upstream {upstream} does not answer")
    assert "check --upstream" in warning
    assert call(rec.url, "GET", "/api/v1/account/balance").status == 502
    assert rec.signal(signal.SIGTERM) == 0
    said = "the upstream answered none of the 1 requests"
    assert any(said in line for line in rec.err), rec.err
    end = json.loads(read_lines(rec.path)[-1])
    assert end["kind"] == "end" and any(said in w for w in end["warnings"])


async def _create_an_order(recording: Recorder, api_key: str) -> None:
    async with aiohttp.ClientSession() as client:
        async with client.post(
            recording.url + "/api/v1/auth/token/client", json={"api_key": api_key}
        ) as answer:
            token = (await answer.json())["access_token"]
        headers = {"Authorization": f"Bearer {token}"}
        body = {"item_id": 1001, "quantity": 1}
        async with client.post(recording.url + "/api/v1/orders", json=body, headers=headers) as a:
            assert a.status == 201


async def test_no_webhook_recorded_is_said_with_the_receiver_to_point_at(sandbox, tmp_path, capsys):
    recording = Recorder(sandbox.url, str(tmp_path / "quiet.jsonl"), port=0)
    await recording.start()
    try:
        await _create_an_order(recording, sandbox.api_key)
    finally:
        await recording.stop()
    assert record.conclude(recording) == 0
    err = capsys.readouterr().err
    assert (
        "warning: no webhook recorded: is the account's webhook URL the recorder's receiver, "
        f"{recording.webhook_url}" in err
    )


async def test_signatures_that_did_not_verify_are_said(tmp_path, capsys):
    out = tmp_path / "hooks.jsonl"
    upstream = f"http://127.0.0.1:{free_port()}"
    recording = Recorder(upstream, str(out), port=0, webhook_secret="whsec_not_the_account_s")
    await recording.start()
    try:
        async with aiohttp.ClientSession() as client:
            for signature in ("t=1,v1=00", "t=1,v1=11"):
                body = {"order_id": "o-1", "status": "completed"}
                headers = {"X-Webhook-Signature": signature}
                async with client.post(recording.webhook_url, json=body, headers=headers) as a:
                    assert a.status == 200
    finally:
        await recording.stop()
    assert record.conclude(recording) == 0
    err = capsys.readouterr().err
    assert "warning: 2 of 2 webhook signatures did not verify: is --webhook-secret" in err
    assert "warning: no exchange recorded: is your client's base URL the recorder's" in err
    end = json.loads(read_lines(out)[-1])
    assert end["webhooks"] == 2 and len(end["warnings"]) == 2


# -- the file: replaced only once finished -----------------------------------------------------


async def test_an_existing_file_is_untouched_until_the_run_is_finished(sandbox, tmp_path):
    out = tmp_path / "fixture.jsonl"
    out.write_text("the recording committed last month\n")
    recording = Recorder(sandbox.url, str(out), port=0)
    await recording.start()
    try:
        await _create_an_order(recording, sandbox.api_key)
        assert out.read_text() == "the recording committed last month\n"
        assert Path(recording.partial).exists()
    finally:
        await recording.stop()
    assert recording.finish() is None and recording.problem is None
    assert not Path(recording.partial).exists()
    lines = [json.loads(line) for line in read_lines(out)]
    assert lines[0]["format"] == "ordering-sandbox-recording"
    assert lines[-1] == {
        "kind": "end",
        "exchanges": 2,
        "orders": 1,
        "webhooks": 0,
        "scanned": True,
        "warnings": [
            "no webhook recorded: is the account's webhook URL the recorder's receiver, "
            f"{recording.webhook_url} (or the public URL that forwards to it)?"
        ],
    }


def test_out_in_a_folder_that_does_not_exist_says_to_create_it(tmp_path):
    folder = tmp_path / "recordings" / "ci"
    argv = record_argv("--upstream", "http://127.0.0.1:1", "--out", str(folder / "a.jsonl"))
    done = subprocess.run(argv, capture_output=True, text=True, env=environment(), timeout=DEADLINE)
    assert done.returncode == 2 and done.stdout == ""
    assert f"the folder {folder} does not exist: create it with mkdir -p {folder}" in done.stderr
    assert not folder.exists()


def test_a_scan_hit_names_the_event_and_the_field_never_the_value():
    secret = "tok-0123456789abcdef"
    line = {"seq": 7, "response": {"body": {"a/b": ["fine", f"echoed {secret}"]}}}
    text = '{"format": "ordering-sandbox-recording"}\n' + json.dumps(line) + "\n"
    leak = scan(text, {secret: "token"})
    assert (leak.kind, leak.line, leak.seq, leak.pointer) == (
        "token",
        2,
        7,
        "/response/body/a~1b/1",
    )
    assert leak.where() == "event seq 7 at /response/body/a~1b/1"
    assert secret not in leak.where()


# -- mock-server --help, recording show ----------------------------------------------------------


def test_help_lists_every_sub_command(capsys):
    with pytest.raises(SystemExit) as exited:
        cli_main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    listed = out[out.index("Sub-commands") :]
    for command in COMMANDS:
        assert f"\n  {command} " in listed, command
    for line in ("recording export --har FILE", "recording show FILE", "record --upstream URL"):
        assert line in listed


def test_recording_show_prints_each_order_s_life(tmp_path, capsys):
    session = record_session(tmp_path, one_order)
    path = session.write()
    assert cli_main(["recording", "show", str(path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[1] == "finished: end line present, scanned for secrets"
    (order,) = [line for line in lines if line.startswith("order ")]
    assert order.endswith("(item 1001, type key, quantity 1, price 20.0): completed, "
                          "delivered all, refunded none")  # fmt: skip
    assert "+0.0 s  pending           create (seq 2)" in out
    assert "completed         webhook, answered 200" in out

    killed = tmp_path / "killed.jsonl"
    killed.write_text("".join(json.dumps(line) + "\n" for line in session.lines()[:-1]))
    assert cli_main(["recording", "show", str(killed)]) == 0
    out = capsys.readouterr().out
    assert "unfinished: no end line" in out and f"warning: {killed}: no end line" in out
    assert cli_main(["recording", "export", "--har", str(killed)]) == 0
    assert f"warning: {killed}: no end line" in capsys.readouterr().err
    assert cli_main(["recording", "show", str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl:1: cannot read it" in capsys.readouterr().err
