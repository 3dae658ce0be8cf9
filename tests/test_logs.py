"""The access-log sink: each request's line rendered as it is noted, written out in
batches (rendering a batch at once stalled every request in flight); and
`--access-log on|off`, as a server started by the CLI writes it."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from mock_server.logs import BATCH, JsonAccessLog, LineSink, TextAccessLog, access_log_options

TEXT_LINE = "127.0.0.1 GET /api/v1/orders/o-1 200 1.2ms"


def test_lines_wait_for_a_flush_until_a_batch_is_full():
    stream = io.StringIO()
    sink = LineSink(stream)
    for _ in range(BATCH - 1):
        sink.write(TEXT_LINE)
    assert stream.getvalue() == ""
    sink.write("a plain line")
    lines = stream.getvalue().splitlines()
    assert len(lines) == BATCH
    assert lines[0] == TEXT_LINE
    assert lines[-1] == "a plain line"
    sink.write(TEXT_LINE)
    sink.flush()
    assert stream.getvalue().endswith(f"a plain line\n{TEXT_LINE}\n")
    sink.flush()  # nothing waiting: nothing written
    assert len(stream.getvalue().splitlines()) == BATCH + 1


def note(log_format: str, sink: LineSink, seconds: float) -> None:
    """One request noted the way aiohttp's server notes it, with the writer
    `access_log_options` chooses for `log_format`."""
    options = access_log_options(sink, log_format)
    writer = options["access_log_class"](options["access_log"], options["access_log_format"])
    request = make_mocked_request(
        "GET", "/api/v1/orders/o-1", transport=FakeTransport(("127.0.0.1", 51234))
    )
    writer.log(request, web.Response(status=200), seconds)


class FakeTransport:
    """What a request reads its peer's address from."""

    def __init__(self, peer: tuple[str, int]) -> None:
        self.peer = peer

    def get_extra_info(self, name: str, default: object = None) -> object:
        return self.peer if name == "peername" else default


def test_a_text_line_is_rendered_as_its_request_is_noted():
    stream = io.StringIO()
    sink = LineSink(stream)
    note("text", sink, 0.00125)
    assert stream.getvalue() == ""  # written at the next flush, not per request
    sink.flush()
    assert stream.getvalue() == TEXT_LINE + "\n"


def test_json_lines_carry_the_wall_time_the_request_ended(monkeypatch):
    monkeypatch.setattr("mock_server.logs.time.time", lambda: 0.0)
    stream = io.StringIO()
    sink = LineSink(stream)
    note("json", sink, 0.00125)
    monkeypatch.setattr("mock_server.logs.time.time", lambda: 86_400.0)
    sink.flush()  # a flush a day later still writes the time the request ended
    line = json.loads(stream.getvalue())
    assert line == {
        "time": "1970-01-01T00:00:00Z",
        "method": "GET",
        "path": "/api/v1/orders/o-1",
        "status": 200,
        "duration_ms": 1.25,
        "remote": "127.0.0.1",
    }


def test_the_format_picks_the_writer():
    sink = LineSink(io.StringIO())
    assert access_log_options(sink, "text")["access_log_class"] is TextAccessLog
    assert access_log_options(sink, "json")["access_log_class"] is JsonAccessLog
    assert access_log_options(None, "text") == {"access_log": None}


LISTENING = re.compile(r"^listening on (http://127\.0\.0\.1:\d+)$")
HEALTH_LINE = re.compile(r"^127\.0\.0\.1 GET /_mock/health 200 [\d.]+ms$", re.M)


def serve_one_request(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """A server started as the CLI starts it, asked `GET /_mock/health` once, then
    stopped with SIGTERM (which flushes any access line): its whole stderr."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_")}
    environment.update(env or {})
    stderr_path = tmp_path / "stderr.txt"
    with stderr_path.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mock_server", "--port", "0", "--clock", "manual", *args],
            stdout=subprocess.PIPE,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            text=True,
            env=environment,
        )
        try:
            assert proc.stdout is not None
            listening = LISTENING.match(proc.stdout.readline().rstrip("\n"))
            assert listening, stderr_path.read_text()
            # The banner prints either way; the server is stopped once it has.
            banner = ""
            while "dashboard" not in banner:
                line = proc.stdout.readline()
                assert line, stderr_path.read_text()
                banner += line
            with urllib.request.urlopen(f"{listening[1]}/_mock/health", timeout=10) as answer:
                assert answer.status == 200
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=10)
            assert proc.returncode == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return stderr_path.read_text()


def test_the_access_log_is_on_by_default(tmp_path):
    written = serve_one_request(tmp_path)
    assert len(HEALTH_LINE.findall(written)) == 1, written


@pytest.mark.parametrize(
    ("args", "env"),
    [(("--access-log", "off"), None), ((), {"MOCK_ACCESS_LOG": "off"})],
    ids=["flag", "variable"],
)
def test_access_log_off_writes_no_request_line(tmp_path, args, env):
    written = serve_one_request(tmp_path, *args, env=env)
    assert written == "", written


def test_access_log_on_writes_a_json_line_in_json_format(tmp_path):
    written = serve_one_request(tmp_path, "--access-log", "on", "--log-format", "json")
    line = json.loads(written)
    assert (line["method"], line["path"], line["status"]) == ("GET", "/_mock/health", 200)
