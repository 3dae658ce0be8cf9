"""`--url-file` and `python -m mock_server.health`: the check follows the port served.

The container's HEALTHCHECK is this pair (docs/docker.md); tests/test_image.py runs it
inside a real container, these run it beside real server processes (tests/test_cli.py's
helpers), every one on 127.0.0.1 with `--port 0`.
"""

from __future__ import annotations

import subprocess
import sys

from mock_server.cli import local_host
from tests.test_cli import MANUAL, clean_env, launch  # noqa: F401 - `launch` is the fixture

CHECK = [sys.executable, "-m", "mock_server.health"]


def health(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CHECK, *args], env=env, capture_output=True, text=True, timeout=10, check=False
    )


def test_the_url_file_holds_the_url_a_local_client_calls(launch, tmp_path):
    url_file = tmp_path / "served.url"
    server = launch(*MANUAL, "--port", "0", "--url-file", str(url_file))
    port = server.wait_ready()
    assert url_file.read_text() == f"http://127.0.0.1:{port}\n"


def test_a_wildcard_bind_is_called_on_loopback():
    assert local_host("0.0.0.0") == "127.0.0.1"
    assert local_host("::") == "[::1]"
    assert local_host("127.0.0.2") == "127.0.0.2"
    assert local_host("fe80::1") == "[fe80::1]"


def test_the_check_follows_a_port_set_by_flag_though_the_variable_says_another(launch, tmp_path):
    url_file = tmp_path / "served.url"
    env = clean_env(MOCK_PORT="1", MOCK_URL_FILE=str(url_file))  # port 1: nothing there
    server = launch(*MANUAL, "--port", "0", env=env)
    server.wait_ready()
    checked = health(env=env)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout == checked.stderr == ""


def test_the_check_fails_before_the_server_listens_and_after_it_stops(launch, tmp_path):
    url_file = tmp_path / "served.url"
    env = clean_env(MOCK_URL_FILE=str(url_file))
    before = health(env=env)
    assert before.returncode == 1
    assert before.stderr == f"unhealthy: not listening yet: {url_file} does not exist\n"
    server = launch(*MANUAL, "--port", "0", env=env)
    port = server.wait_ready()
    assert health(env=env).returncode == 0
    assert server.stop()[0] == 0
    assert not url_file.exists()  # a clean stop takes it away
    after = health(f"http://127.0.0.1:{port}", env=env)
    assert after.returncode == 1 and after.stderr.startswith("unhealthy: "), after.stderr


def test_a_url_file_that_cannot_be_written_stops_the_start(launch, tmp_path):
    missing = tmp_path / "no-such-folder" / "served.url"
    server = launch(*MANUAL, "--port", "0", "--url-file", str(missing))
    assert server.finish() == 1
    assert f"cannot write the URL file {missing}: " in server.stderr()
    assert "Traceback" not in server.stderr()
    assert not any("listening" in line for line in server.stdout_seen)


def test_the_check_without_a_url_or_a_file_says_what_it_needs():
    checked = health(env=clean_env())
    assert checked.returncode == 1
    assert "MOCK_URL_FILE" in checked.stderr


def test_the_check_names_a_non_health_answer(tmp_path):
    """Something else on the port (here: nothing but a closed one) is unhealthy."""
    (tmp_path / "served.url").write_text("http://127.0.0.1:1\n")
    env = clean_env(MOCK_URL_FILE=str(tmp_path / "served.url"))
    checked = health(env=env)
    assert checked.returncode == 1
    assert checked.stderr.startswith("unhealthy: http://127.0.0.1:1/_mock/health: ")
