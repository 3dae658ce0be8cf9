"""The command line as a user meets it (the README's "Configuration"): real processes,
real signals.

Every server binds 127.0.0.1 with `--port 0` and is read line by line against a
deadline; no test sleeps for a fixed time. Leftover processes are killed by the
`launch` fixture whatever happens in the test.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mock_server.catalog_gen import generate
from mock_server.cli import main as cli_main
from mock_server.domain.catalog import parse_catalog
from tests import services

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PACKAGE_DIR = ROOT / "mock_server"
EMBEDDED_CATALOG = PACKAGE_DIR / "data" / "catalog.json"
BUILTIN_SCENARIOS = PACKAGE_DIR / "data" / "scenarios"
START_TIME = "2026-01-01T00:00:00Z"
MANUAL = ("--port", "0", "--clock", "manual", "--seed", "1")
LISTENING = re.compile(r"^listening on (https?)://127\.0\.0\.1:(\d+)$")
# Generous: only a hung or crashed server ever waits this long.
STARTUP_DEADLINE = 10.0
BANNER_END = "curl"


def clean_env(**overrides: str) -> dict[str, str]:
    """The current environment without any MOCK_* variable, plus `overrides`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_")}
    env.update(overrides)
    return env


class ServerProcess:
    """One `python -m mock_server ...` child; stdout read by a thread into a queue."""

    def __init__(self, args: list[str], env: dict[str, str], workdir: Path) -> None:
        self.stderr_path = workdir / f"stderr-{id(self)}.txt"
        self._stderr_file = self.stderr_path.open("w")
        self.proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=self._stderr_file,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=workdir,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stdout_seen: list[str] = []
        self.port: int | None = None
        self.scheme = "http"
        self.banner: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def next_line(self, deadline: float) -> str | None:
        """The next stdout line, None at EOF; fails the test past the deadline."""
        remaining = deadline - time.monotonic()
        try:
            line = self.lines.get(timeout=max(remaining, 0.0))
        except queue.Empty:
            pytest.fail(f"no stdout line in time; so far: {self.stdout_seen!r}")
        if line is not None:
            self.stdout_seen.append(line)
        return line

    def wait_ready(self, timeout: float = STARTUP_DEADLINE) -> int:
        """Read the `listening on` line and the banner after it; returns the port."""
        deadline = time.monotonic() + timeout
        first = self.next_line(deadline)
        assert first is not None, f"server exited before listening: {self.stderr()}"
        found = LISTENING.match(first)
        assert found, f"first line was {first!r}"
        self.scheme, self.port = found.group(1), int(found.group(2))
        while True:
            line = self.next_line(deadline)
            assert line is not None, f"stdout closed inside the banner: {self.stdout_seen!r}"
            self.banner.append(line)
            if BANNER_END in line:
                return self.port

    @property
    def url(self) -> str:
        assert self.port is not None
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def stderr(self) -> str:
        self._stderr_file.flush()
        return self.stderr_path.read_text()

    def stop(self, sig: int = signal.SIGTERM, within: float = 1.0) -> tuple[int, float]:
        """Send `sig`; the exit status and how long the exit took (fails past `within`)."""
        started = time.monotonic()
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=within)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {within} s after signal {sig}")
        return code, time.monotonic() - started

    def finish(self, timeout: float = STARTUP_DEADLINE) -> int:
        """For runs expected to exit on their own."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail("the process did not exit on its own")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)
        self._stderr_file.close()


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Any]:
    """Start `mock_server` children; every one is killed at teardown."""
    started: list[ServerProcess] = []

    def start(
        *args: str, env: dict[str, str] | None = None, command: list[str] | None = None
    ) -> ServerProcess:
        argv = (command or [sys.executable, "-m", "mock_server"]) + list(args)
        server = ServerProcess(argv, env if env is not None else clean_env(), tmp_path)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 30):
    """Run a command that ends on its own (validate, catalog generate, bad flags).

    A run that serves instead of exiting is killed at `timeout` and reported as such.
    """
    try:
        return subprocess.run(
            [sys.executable, "-m", "mock_server", *args],
            capture_output=True,
            text=True,
            env=env if env is not None else clean_env(),
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"still running after {timeout} s (serving?): {exc.stdout!r}")


def post_json(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - local URL
        return response.status, json.loads(response.read())


def token_of(server: ServerProcess, api_key: str = "ak_test_default") -> str:
    status, body = post_json(f"{server.url}/api/v1/auth/token/client", {"api_key": api_key})
    assert status == 200, body
    return body["access_token"]


def banner_value(server: ServerProcess, label: str) -> str:
    for line in server.banner:
        if line.strip().startswith(label):
            return line.strip()[len(label) :].strip()
    raise AssertionError(f"no {label!r} line in banner {server.banner!r}")


# -- serving ------------------------------------------------------------------------------


def test_first_line_is_listening_with_the_real_port(launch):
    server = launch(*MANUAL)
    port = server.wait_ready()
    assert 0 < port <= 65535
    assert server.stdout_seen[0] == f"listening on http://127.0.0.1:{port}"


def test_banner_names_key_secret_catalog_size_clock_and_a_curl_command(launch):
    server = launch(*MANUAL)
    server.wait_ready()
    banner = "\n".join(server.banner)
    assert "ak_test_default" in banner
    assert "whsec_test_default" in banner
    assert "7 items" in banner
    assert "manual" in banner
    assert "10" in banner_value(server, "scenarios")
    curl = next(line for line in server.banner if "curl" in line)
    assert f"{server.url}/api/v1/auth/token/client" in curl


def test_banner_curl_command_targets_the_listening_port(launch):
    server = launch(*MANUAL)
    server.wait_ready()
    curl = next(line for line in server.banner if "curl" in line)
    assert f"127.0.0.1:{server.port}/" in curl
    assert "ak_test_default" in curl


def test_listening_port_answers_token_exchange(launch):
    server = launch(*MANUAL)
    server.wait_ready()
    status, body = post_json(
        f"{server.url}/api/v1/auth/token/client", {"api_key": "ak_test_default"}
    )
    assert status == 200
    assert isinstance(body["access_token"], str) and body["access_token"]
    assert body["token_type"] == "Bearer"


def test_sigterm_stops_cleanly_within_a_second(launch):
    server = launch(*MANUAL)
    server.wait_ready()
    token_of(server)
    code, took = server.stop(signal.SIGTERM, within=1.0)
    assert code == 0
    assert took < 1.0
    assert "Traceback" not in server.stderr()


def test_sigint_stops_cleanly_within_a_second(launch):
    server = launch(*MANUAL)
    server.wait_ready()
    token_of(server)
    code, took = server.stop(signal.SIGINT, within=1.0)
    assert code == 0
    assert took < 1.0
    stderr = server.stderr()
    assert "Traceback" not in stderr
    assert "KeyboardInterrupt" not in stderr


def test_sigterm_stops_within_a_second_with_idle_and_half_sent_connections(launch):
    server = launch(*MANUAL)
    server.wait_ready()
    keep_alive = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    half_sent = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        keep_alive.sendall(b"GET /_mock/health HTTP/1.1\r\nHost: sandbox\r\n\r\n")
        assert keep_alive.recv(1024).startswith(b"HTTP/1.1 200")
        half_sent.sendall(b"GET /_mock/health HTTP/1.1\r\nHost: sand")
        code, took = server.stop(signal.SIGTERM, within=1.0)
    finally:
        keep_alive.close()
        half_sent.close()
    assert code == 0
    assert took < 1.0
    assert "Traceback" not in server.stderr()


def test_client_hanging_up_mid_request_logs_no_traceback(launch):
    server = launch(*MANUAL)
    server.wait_ready()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as hang_up:
        hang_up.sendall(
            b"POST /api/v1/auth/token/client HTTP/1.1\r\nHost: sandbox\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        )
    token_of(server)  # it keeps serving
    # Wait until both requests are logged: one line for the hang-up, one access line.
    deadline = time.monotonic() + 2.0
    while len(server.stderr().splitlines()) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    code, _ = server.stop(signal.SIGTERM)
    assert code == 0
    stderr = server.stderr()
    assert "Traceback" not in stderr
    assert len(stderr.splitlines()) == 2, stderr


def test_env_vars_configure_port_clock_and_seed(launch):
    server = launch(env=clean_env(MOCK_PORT="0", MOCK_CLOCK="manual", MOCK_SEED="7"))
    server.wait_ready()
    clock = banner_value(server, "clock")
    assert clock.startswith("manual")
    assert "seed 7" in clock
    assert banner_value(server, "dashboard") == f"{server.url}/_mock/ui/"
    token_of(server)


def test_flag_beats_its_env_var(launch):
    server = launch(
        "--clock",
        "manual",
        "--seed",
        "2",
        "--port",
        "0",
        env=clean_env(MOCK_CLOCK="real", MOCK_SEED="1", MOCK_PORT="1"),
    )
    port = server.wait_ready()
    assert port != 1
    clock = banner_value(server, "clock")
    assert clock.startswith("manual")
    assert "seed 2" in clock


def test_mock_catalog_env_var_loads_that_catalog(launch, tmp_path):
    catalog = tmp_path / "two.json"
    catalog.write_text(
        json.dumps(
            [
                {"id": 1, "name": "Key", "product_type": "key", "price": 100},
                {"id": 2, "name": "Gems", "product_type": "topup", "price": 5},
            ]
        )
    )
    server = launch(*MANUAL, env=clean_env(MOCK_CATALOG=str(catalog)))
    server.wait_ready()
    assert banner_value(server, "catalog") == "2 items"


def test_scenarios_flag_adds_to_the_builtin_set(launch, tmp_path):
    extra = tmp_path / "extra.yaml"
    extra.write_text("name: my_own\nsteps:\n  - status: completed\n")
    server = launch(*MANUAL, "--scenarios", str(extra))
    server.wait_ready()
    scenarios = banner_value(server, "scenarios")
    assert scenarios.startswith("11 ")
    assert "my_own" in scenarios and "happy_path" in scenarios


def test_python_dash_m_without_subcommand_serves(launch):
    server = launch(*MANUAL)
    server.wait_ready()
    token_of(server)


def test_serve_subcommand_serves(launch):
    server = launch("serve", *MANUAL)
    server.wait_ready()
    token_of(server)


def test_console_script_serve_subcommand_serves(launch):
    script = Path(sys.executable).with_name("mock-server")
    if not script.exists():
        found = shutil.which("mock-server")
        if found is None:
            pytest.skip("the mock-server console script is not installed beside this Python")
        script = Path(found)
    server = launch("serve", *MANUAL, command=[str(script)])
    server.wait_ready()
    token_of(server)


def test_bad_catalog_exits_1_with_file_line_item_reason_and_never_listens(launch, tmp_path):
    catalog = tmp_path / "bad.yaml"
    catalog.write_text(
        "items:\n"
        "  - id: 1\n"
        "    name: Fine key\n"
        "    product_type: key\n"
        "    price: 100\n"
        "  - id: 2\n"
        "    name: Broken\n"
        "    product_type: gadget\n"
        "    price: 100\n"
    )
    server = launch("--catalog", str(catalog), *MANUAL)
    assert server.finish() == 1
    stderr = server.stderr()
    assert re.search(rf"^{re.escape(str(catalog))}:8: item 2: .*product_type", stderr, re.M)
    assert "Traceback" not in stderr
    deadline = time.monotonic() + STARTUP_DEADLINE
    while server.next_line(deadline) is not None:
        pass
    assert not any("listening" in line for line in server.stdout_seen)


def test_bad_json_catalog_exits_1_naming_file_and_item(tmp_path):
    catalog = tmp_path / "bad.json"
    catalog.write_text(json.dumps({"items": [{"id": 1, "name": "K", "product_type": "key"}]}))
    result = run_cli("--catalog", str(catalog), *MANUAL)
    assert result.returncode == 1
    assert re.search(rf"^{re.escape(str(catalog))}(:\d+)?: item 1: .*price", result.stderr, re.M)
    assert "listening" not in result.stdout
    assert "Traceback" not in result.stderr


def test_every_config_problem_is_reported_before_exiting(tmp_path):
    catalog = tmp_path / "bad.json"
    catalog.write_text(json.dumps([{"id": 1, "name": "K", "product_type": "gizmo", "price": 1}]))
    accounts = tmp_path / "accounts.yaml"
    accounts.write_text("accounts:\n  - email: a@example.com\n    api_key: nope\n")
    result = run_cli("--catalog", str(catalog), "--accounts", str(accounts), *MANUAL)
    assert result.returncode == 1
    assert f"{catalog}: item 1:" in result.stderr
    assert f"{accounts}:3:" in result.stderr
    assert "listening" not in result.stdout


@pytest.mark.parametrize(
    "flags",
    [
        ("--start-time", "yesterday"),
        ("--start-time", "2026-13-45T99:00:00Z"),
        ("--time-scale", "0"),
        ("--time-scale", "-2"),
        ("--clock", "sundial"),
        ("--seed", "abc"),
    ],
    ids=[
        "start-time-words",
        "start-time-impossible",
        "scale-zero",
        "scale-negative",
        "clock",
        "seed",
    ],
)
def test_bad_flag_values_exit_2_with_usage(flags):
    result = run_cli("--port", "0", *flags)
    assert result.returncode == 2
    assert "usage:" in result.stderr
    assert "Traceback" not in result.stderr
    assert "listening" not in result.stdout


@pytest.mark.parametrize("scale", ["nan", "inf"])
def test_non_finite_time_scale_exits_2(launch, scale):
    server = launch("--port", "0", "--time-scale", scale)
    first = server.next_line(time.monotonic() + STARTUP_DEADLINE)
    assert first is None, f"it served: {first!r}"  # stdout closed without listening
    assert server.finish() == 2
    assert "usage:" in server.stderr()


def test_bad_seed_in_env_exits_2_with_usage():
    result = run_cli("--port", "0", env=clean_env(MOCK_SEED="abc"))
    assert result.returncode == 2
    assert "usage:" in result.stderr


@pytest.mark.parametrize("name", ["MOCK_PORT", "MOCK_TIME_SCALE", "MOCK_JOURNAL_SIZE"])
def test_malformed_number_in_env_exits_2_without_traceback(name):
    result = run_cli("--port", "0", env=clean_env(**{name: "abc"}))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert name in result.stderr or "invalid" in result.stderr


@pytest.mark.parametrize(("name", "value"), [("MOCK_CLOCK", "bogus"), ("MOCK_LOG_FORMAT", "xml")])
def test_a_variable_naming_no_allowed_choice_exits_2_without_traceback(name, value):
    result = run_cli("--port", "0", env=clean_env(**{name: value}))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert f"{name}: invalid choice {value!r}" in result.stderr


def test_same_seed_clock_and_start_time_give_the_same_token(launch):
    args = ("--port", "0", "--clock", "manual", "--seed", "3", "--start-time", START_TIME)
    first, second = launch(*args), launch(*args)
    first.wait_ready()
    second.wait_ready()
    assert token_of(first) == token_of(second)
    assert banner_value(first, "account") == banner_value(second, "account")


def test_different_seed_gives_a_different_token(launch):
    base = ("--port", "0", "--clock", "manual", "--start-time", START_TIME)
    first, second = launch(*base, "--seed", "3"), launch(*base, "--seed", "4")
    first.wait_ready()
    second.wait_ready()
    assert token_of(first) != token_of(second)


def readme_walkthrough() -> str:
    """The bash block of the README's "A first integration, by hand"."""
    text = README.read_text("utf-8")
    section = text.split("\n## A first integration, by hand\n", 1)
    assert len(section) == 2, "README.md has no '## A first integration, by hand'"
    found = re.search(r"```bash\n(.*?)```", section[1], re.S)
    assert found, "no ```bash block in the README's first integration"
    return found[1]


def test_the_readmes_first_integration_runs_as_written_and_shows_the_charge(launch):
    """The walkthrough pasted into bash (real curl) against a server on its port: the
    balance before and after the order, the order pending, the advance, the order
    completed with its codes, its control-plane view."""
    services.require("curl")
    block = readme_walkthrough()
    assert "BASE=http://127.0.0.1:8080\n" in block
    # The README's `mock-server`, on a free port, its clock manual so that nothing moves
    # between the calls but the walkthrough's own advance.
    server = launch(*MANUAL)
    server.wait_ready()
    script = block.replace("BASE=http://127.0.0.1:8080", f"BASE={server.url}", 1)
    # `python3` as the README's reader has it: this interpreter, first on PATH.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    ran = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(PATH=path),
        stdin=subprocess.DEVNULL,
    )
    assert ran.returncode == 0, ran.stderr
    before, created, after, advanced, settled, detail = map(json.loads, ran.stdout.splitlines())
    assert before == {"balance": 1000.0, "currency": "USD"}
    assert created["status"] == "pending" and created["price"] == 40.0
    assert after == {"balance": 960.0, "currency": "USD"}  # charged at creation
    assert "now" in advanced
    assert settled["id"] == created["id"]
    assert settled["status"] == "completed" and len(settled["codes"]) == 2
    assert [step["status"] for step in detail["history"]] == [
        "pending",
        "processing",
        "completed",
    ]


# -- validate -----------------------------------------------------------------------------


def test_validate_accepts_embedded_catalog_and_builtin_scenarios():
    result = run_cli("validate", str(EMBEDDED_CATALOG), str(BUILTIN_SCENARIOS))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert f"{EMBEDDED_CATALOG}: ok" in result.stdout
    assert f"{BUILTIN_SCENARIOS}: ok" in result.stdout


def test_validate_accepts_a_good_accounts_file(tmp_path):
    accounts = tmp_path / "accounts.yaml"
    accounts.write_text(
        "accounts:\n"
        "  - email: shop@example.com\n"
        "    api_key: ak_shop_1\n"
        "    balance: 250.00\n"
        "    webhook_secret: whsec_shop_1\n"
    )
    result = run_cli("validate", str(accounts))
    assert result.returncode == 0, result.stderr
    assert "ok (accounts)" in result.stdout


def test_validate_reports_file_line_reason_for_a_bad_accounts_value(tmp_path):
    accounts = tmp_path / "accounts.yaml"
    accounts.write_text(
        "accounts:\n"
        "  - email: shop@example.com\n"
        "    api_key: ak_shop_1\n"
        "    webhook_secret: secret_without_prefix\n"
    )
    result = run_cli("validate", str(accounts))
    assert result.returncode == 1
    assert re.search(rf"^{re.escape(str(accounts))}:4: .*whsec_", result.stderr, re.M)
    assert "Traceback" not in result.stderr


def test_validate_reports_file_line_for_broken_yaml_syntax(tmp_path):
    accounts = tmp_path / "accounts.yaml"
    accounts.write_text(
        "accounts:\n"
        "  - email: shop@example.com\n"
        "    api_key: [ak_shop_1\n"
        "    balance: 10\n"
        "  - email: other@example.com\n"
    )
    result = run_cli("validate", str(accounts))
    assert result.returncode == 1
    assert re.search(rf"^{re.escape(str(accounts))}:\d+: ", result.stderr, re.M)
    assert "Traceback" not in result.stderr


def test_validate_checks_every_path_and_fails_if_any_is_bad(tmp_path):
    accounts = tmp_path / "accounts.yaml"
    accounts.write_text("accounts:\n  - email: shop@example.com\n    api_key: key_1\n")
    result = run_cli("validate", str(EMBEDDED_CATALOG), str(accounts))
    assert result.returncode == 1
    assert f"{EMBEDDED_CATALOG}: ok" in result.stdout
    assert f"{accounts}:3: " in result.stderr


def _accounts_with_webhooks(folder: Path, *urls: str) -> Path:
    """An accounts file whose accounts' webhook_url are `urls`, each on line 4 + 3n."""
    accounts = folder / "accounts.yaml"
    lines = ["accounts:"]
    for number, url in enumerate(urls, start=1):
        lines += [
            f"  - email: shop{number}@example.com",
            f"    api_key: ak_shop_{number}",
            f"    webhook_url: {url}",
        ]
    accounts.write_text("\n".join(lines) + "\n")
    return accounts


def test_validate_checks_webhook_urls_against_deny_private_as_the_server_does(tmp_path):
    accounts = _accounts_with_webhooks(
        tmp_path, "http://hooks.example.com/in", "http://10.1.2.3:9000/hooks"
    )
    assert run_cli("validate", str(accounts)).returncode == 0  # no rules: a server takes it
    checked = run_cli("validate", "--webhook-deny-private", str(accounts))
    assert checked.returncode == 1
    (problem,) = checked.stderr.splitlines()
    assert problem.startswith(f"{accounts}:7: ")  # the second account's webhook_url line
    assert "10.1.2.3" in problem and "--webhook-deny-private" in problem
    # A server started with the same rules refuses the file at start with the same line.
    served = run_cli("--accounts", str(accounts), "--webhook-deny-private", *MANUAL)
    assert served.returncode == 1
    assert problem in served.stderr.splitlines()
    assert "listening" not in served.stdout


def test_validate_checks_webhook_urls_against_an_allow_list(tmp_path):
    accounts = _accounts_with_webhooks(tmp_path, "https://hooks.example.com/in", "http://10.9.8.7/")
    args = ("validate", "--webhook-allow", "*.example.com,192.168.0.0/16", str(accounts))
    checked = run_cli(*args)
    assert checked.returncode == 1
    (problem,) = checked.stderr.splitlines()
    assert problem.startswith(f"{accounts}:7: ")
    assert "10.9.8.7" in problem and "--webhook-allow" in problem
    allowed = run_cli("validate", "--webhook-allow", "*.example.com,10.0.0.0/8", str(accounts))
    assert allowed.returncode == 0, allowed.stderr
    assert f"{accounts}: ok (accounts)" in allowed.stdout


def test_validate_reads_the_webhook_rules_variables_as_serve_does(tmp_path):
    accounts = _accounts_with_webhooks(tmp_path, "http://192.168.1.20/hooks")
    for env in (
        clean_env(MOCK_WEBHOOK_DENY_PRIVATE="1"),
        clean_env(MOCK_WEBHOOK_ALLOW="hooks.example.com"),
    ):
        checked = run_cli("validate", str(accounts), env=env)
        assert checked.returncode == 1, env
        assert checked.stderr.startswith(f"{accounts}:4: "), checked.stderr
    off = run_cli("validate", str(accounts), env=clean_env(MOCK_WEBHOOK_DENY_PRIVATE="no"))
    assert off.returncode == 0, off.stderr
    # The flag beats a variable that allows it: the allow list is the flag's.
    beaten = run_cli(
        "validate",
        "--webhook-allow",
        "10.0.0.0/8",
        str(accounts),
        env=clean_env(MOCK_WEBHOOK_ALLOW="192.168.0.0/16"),
    )
    assert beaten.returncode == 1


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (("--webhook-allow", "not a host"), {}, "--webhook-allow: 'not a host'"),
        ((), {"MOCK_WEBHOOK_ALLOW": "10.0.0.0/33"}, "--webhook-allow: '10.0.0.0/33'"),
        ((), {"MOCK_WEBHOOK_DENY_PRIVATE": "maybe"}, "MOCK_WEBHOOK_DENY_PRIVATE: 'maybe'"),
    ],
    ids=["flag", "allow-variable", "deny-private-variable"],
)
def test_validate_refuses_bad_webhook_rules_as_serve_does(tmp_path, args, env, message):
    accounts = _accounts_with_webhooks(tmp_path, "http://hooks.example.com/in")
    for command in (("validate", *args, str(accounts)), (*args, *MANUAL)):
        result = run_cli(*command, env=clean_env(**env))
        assert result.returncode == 2, command
        assert "usage:" in result.stderr and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_validate_help_lists_the_webhook_rules_with_their_variables():
    result = run_cli("validate", "--help")
    assert result.returncode == 0
    assert "--webhook-allow LIST" in result.stdout and "MOCK_WEBHOOK_ALLOW" in result.stdout
    assert "--webhook-deny-private" in result.stdout
    assert "MOCK_WEBHOOK_DENY_PRIVATE=1" in result.stdout


# -- catalog generate ---------------------------------------------------------------------


def test_catalog_generate_prints_a_valid_varied_reproducible_catalog(tmp_path):
    command = [sys.executable, "-m", "mock_server", "catalog", "generate"]
    runs = [  # two at once: same seed, same bytes
        subprocess.Popen(
            [*command, "--items", "12", "--seed", "5"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=clean_env(),
        )
        for _ in range(2)
    ]
    try:
        (first_out, first_err), (second_out, _) = (run.communicate(timeout=30) for run in runs)
    finally:
        for run in runs:
            run.kill()
    assert runs[0].returncode == 0, first_err
    assert first_out == second_out
    feed = json.loads(first_out)
    catalog = parse_catalog(feed, "<generated>")
    assert len(catalog) == 12
    assert {item.product_type for item in catalog.items.values()} == {"key", "topup", "service"}
    generated = tmp_path / "generated.json"
    generated.write_text(first_out)
    assert cli_main(["validate", str(generated)]) == 0  # what `mock-server validate` runs


def test_generated_catalog_loads_as_the_server_catalog(launch, tmp_path):
    generated = tmp_path / "generated.json"
    # The same document `catalog generate --items 12 --seed 5` prints, made in-process.
    generated.write_text(json.dumps({"items": generate(12, seed=5)}))
    server = launch("--catalog", str(generated), *MANUAL)
    server.wait_ready()
    assert banner_value(server, "catalog") == "12 items"


def test_catalog_generate_rejects_zero_items():
    result = run_cli("catalog", "generate", "--items", "0")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_a_report_piped_to_a_reader_that_stopped_ends_quietly():
    """`mock-server ... | head`: the reader is gone before the report is written. No
    traceback, no "Exception ignored" at exit: exit status 1 and nothing on stderr."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader stopped before a byte was written
    try:
        finished = subprocess.run(
            [sys.executable, "-m", "mock_server", "catalog", "generate", "--items", "2000"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert (finished.returncode, finished.stderr) == (1, "")
