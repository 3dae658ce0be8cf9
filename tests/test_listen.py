"""`mock-server listen`, end to end as a developer runs it (docs/webhooks.md, "Webhooks to
your own machine"): a server process with a manual clock, the listener as a process of
its own, forwarding to a receiver on 127.0.0.1; then the wire itself, the failure modes,
and the pytest plugin's `--mock-server-listen`."""

from __future__ import annotations

import contextlib
import http.client
import json
import signal
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

# Imported here so every in-process inner run shares one `requests` (as
# tests/test_pytest_plugin.py does).
import requests  # noqa: F401

from mock_server.config import Settings
from mock_server.listen import main as listen_main
from mock_server.testing import SandboxError, SandboxHandle, ServerThread, WebhookReceiver
from mock_server.webhooks import verify
from tests.processes import Process, sandbox, server_url, start_server  # noqa: F401 - fixtures

pytest_plugins = ["pytester"]

GONE = "the listener disconnected before it reported"


# -- servers, sandboxes, listeners -----------------------------------------------------------


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver()
    yield receiver
    receiver.close()


@pytest.fixture
def listen() -> Iterator[Callable[..., Process]]:
    """Start `mock-server listen ARGS`; by default wait for its `ready`."""
    started: list[Process] = []

    def start(*args: str, ready: bool = True, env: dict[str, str] | None = None) -> Process:
        process = Process("listen", *args, env=env)
        started.append(process)
        if ready:
            process.wait_for("webhook secret ")
        return process

    yield start
    for process in started:
        process.kill()


@pytest.fixture
def background() -> Iterator[Callable[..., Future[Any]]]:
    """Run a blocking call (an `advance` that waits for a listener) in another thread."""
    with ThreadPoolExecutor(2) as pool:
        yield pool.submit


class SilentReceiver:
    """Accepts connections and reads requests, and never answers."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}/hooks"
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = self._socket.accept()
                self.connections.append(connection)

    def wait_for_connections(self, count: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.connections) < count:
            assert time.monotonic() < deadline, f"{len(self.connections)} of {count} came"
            time.sleep(0.01)

    def close(self) -> None:
        self._socket.close()
        for connection in self.connections:
            connection.close()


@pytest.fixture
def silent() -> Iterator[SilentReceiver]:
    receiver = SilentReceiver()
    yield receiver
    receiver.close()


def call(url: str, body: Any, token: str | None = None, context: Any = None) -> Any:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        return json.loads(response.read())


def place_order(base_url: str, api_key: str, context: Any = None) -> dict[str, Any]:
    token = call(f"{base_url}/api/v1/auth/token/client", {"api_key": api_key}, None, context)
    return call(f"{base_url}/api/v1/orders", {"item_id": 1001}, token["access_token"], context)


def line_of(process: Process, order_id: str, attempt: int) -> str:
    return process.wait_for(f" {order_id} completed attempt {attempt}")


# -- the developer's path ----------------------------------------------------------------------


def test_forwards_signed_webhooks_of_a_whole_server(server_url, receiver, listen):
    root = SandboxHandle(server_url)
    listener = listen("--base-url", server_url, "--forward-to", receiver.url)
    assert listener.out[:3] == [
        "ready",
        f"account {root.account_id}",
        f"webhook secret {root.webhook_secret}",
    ]
    receiver.secret = listener.out[2].removeprefix("webhook secret ")

    order = place_order(server_url, "ak_test_default")
    root.advance(5)

    (event,) = receiver.events
    assert event.verified and verify(receiver.secret, event.body, event.headers["X-Signature"])
    assert event.json["order_id"] == order["id"] and event.json["status"] == "completed"
    (delivery,) = root.webhooks(order["id"])
    assert delivery["status"] == "delivered" and delivery["url"] == "listener"
    (attempt,) = delivery["attempts"]
    assert attempt["via"] == "listener" and attempt["status_code"] == 200
    assert event.body == delivery["body"].encode(), "the very bytes the sandbox signed"
    assert listener.wait_for(order["id"]) == f"200 {order['id']} completed attempt 1"
    assert listener.err == []


def test_a_failed_answer_is_retried_on_the_clock_through_the_listener(sandbox, receiver, listen):
    listener = listen("--base-url", sandbox.url, "--forward-to", receiver.url)
    receiver.secret = sandbox.webhook_secret  # a created sandbox's own
    receiver.respond_with(500)
    order = place_order(sandbox.url, sandbox.api_key)
    sandbox.advance(5)
    assert line_of(listener, order["id"], 1) == f"500 {order['id']} completed attempt 1"
    assert sandbox.webhooks(order["id"])[0]["status"] == "retrying"

    receiver.respond_with(200)
    sandbox.advance(60)
    assert line_of(listener, order["id"], 2) == f"200 {order['id']} completed attempt 2"
    (delivery,) = sandbox.webhooks(order["id"])
    assert delivery["status"] == "delivered"
    assert [(a["status_code"], a["via"]) for a in delivery["attempts"]] == [
        (500, "listener"),
        (200, "listener"),
    ]
    assert len(receiver.events) == 2 and all(event.verified for event in receiver.events)


def test_a_receiver_that_never_answers_is_a_timeout(sandbox, silent, listen):
    listener = listen(
        "--base-url", sandbox.url, "--forward-to", silent.url, "--forward-timeout", "0.5"
    )
    first, second = (place_order(sandbox.url, sandbox.api_key) for _ in range(2))
    sandbox.advance(5)  # returns once both reports came: the two waited side by side
    assert len(silent.connections) == 2
    for order in (first, second):
        (attempt,) = sandbox.webhooks(order["id"])[0]["attempts"]
        assert attempt["status_code"] is None
        assert attempt["error"] == "TimeoutError: no complete answer within 0.5 s"
        assert line_of(listener, order["id"], 1).startswith("TimeoutError: no complete answer")


def test_a_killed_listener_loses_no_attempt(sandbox, silent, receiver, listen, background):
    doomed = listen("--base-url", sandbox.url, "--forward-to", silent.url)
    order = place_order(sandbox.url, sandbox.api_key)
    advancing = background(sandbox.advance, 5)
    silent.wait_for_connections(1)  # the attempt is in flight, in the listener's hands
    doomed.popen.send_signal(signal.SIGKILL)
    doomed.popen.wait(10)
    advancing.result(timeout=15)
    (delivery,) = sandbox.webhooks(order["id"])
    (failed,) = delivery["attempts"]
    assert (failed["status_code"], failed["error"], failed["via"]) == (None, GONE, "listener")
    assert delivery["status"] == "retrying"

    again = listen("--base-url", sandbox.url, "--forward-to", receiver.url)
    receiver.secret = sandbox.webhook_secret
    sandbox.advance(60)
    assert line_of(again, order["id"], 2) == f"200 {order['id']} completed attempt 2"
    (delivery,) = sandbox.webhooks(order["id"])
    assert delivery["status"] == "delivered"
    assert [a["error"] for a in delivery["attempts"]] == [GONE, None], "none counted twice"
    (event,) = receiver.events
    assert event.verified


def test_two_listeners_forward_each_attempt_exactly_once(sandbox, receiver, listen):
    one = listen("--base-url", sandbox.url, "--forward-to", receiver.url)
    two = listen("--base-url", sandbox.url, "--forward-to", receiver.url)
    orders = [place_order(sandbox.url, sandbox.api_key)["id"] for _ in range(8)]
    sandbox.advance(5)
    assert sorted(event.json["order_id"] for event in receiver.events) == sorted(orders)
    for order_id in orders:
        (delivery,) = sandbox.webhooks(order_id)
        assert delivery["status"] == "delivered" and len(delivery["attempts"]) == 1
    forwarded = [line for process in (one, two) for line in process.out[3:]]
    assert sorted(line.split()[1] for line in forwarded) == sorted(orders)
    assert len(one.out) > 3 and len(two.out) > 3, "both listeners took a share"


# -- the wire ----------------------------------------------------------------------------------


class Stream:
    """A bare `GET /_mock/listen` as a listener in another language would hold it."""

    def __init__(self, base_url: str, query: str = "") -> None:
        parts = urllib.parse.urlsplit(base_url)
        self._connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=15)
        self._connection.request("GET", f"{parts.path}/_mock/listen{query}")
        self.response = self._connection.getresponse()

    def frame(self) -> tuple[str, dict[str, Any]]:
        name, data = "message", []
        while True:
            line = self.response.readline().decode().rstrip("\r\n")
            if line.startswith(":"):
                continue
            if not line:
                if data:
                    return name, json.loads("\n".join(data))
                continue
            field, _, value = line.partition(": ")
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)

    def close(self) -> None:
        self._connection.close()


def report(handle: SandboxHandle, body: Any) -> tuple[int, Any]:
    try:
        return 200, handle.control("POST", "/_mock/listen/reports", body)
    except SandboxError as exc:
        return exc.status, exc.body


def test_the_wire_and_reports_for_other_sandboxes(server_url, sandbox, background):
    stream = Stream(sandbox.url)
    try:
        assert stream.response.status == 200
        assert stream.response.getheader("Content-Type").startswith("text/event-stream")
        name, ready = stream.frame()
        assert name == "ready"
        assert ready["account_id"] == sandbox.account_id
        assert ready["webhook_secret"] == sandbox.webhook_secret
        assert ready["report_path"] == "/_mock/listen/reports"
        assert ready["timeout_seconds"] == 10 and ready["listener_id"].startswith("lst_")

        order = place_order(sandbox.url, sandbox.api_key)
        advancing = background(sandbox.advance, 5)
        name, attempt = stream.frame()
        assert name == "attempt"
        assert attempt["order_id"] == order["id"] and attempt["order_status"] == "completed"
        assert attempt["attempt"] == 1 and attempt["attempt_id"].startswith("att_")
        assert verify(
            ready["webhook_secret"], attempt["body"].encode(), attempt["headers"]["X-Signature"]
        )

        other = SandboxHandle(server_url)  # the default sandbox: another one
        assert report(other, {"attempt_id": attempt["attempt_id"], "status_code": 200})[0] == 404
        for bad in (
            {"attempt_id": attempt["attempt_id"]},
            {"attempt_id": attempt["attempt_id"], "status_code": 200, "error": "x"},
            {"attempt_id": attempt["attempt_id"], "status_code": "200"},
        ):
            status, body = report(sandbox, bad)
            assert (status, body["code"]) == (400, "validation_error"), bad
        taken = {"attempt_id": attempt["attempt_id"], "status_code": 204}
        assert report(sandbox, taken) == (
            200,
            {"attempt_id": attempt["attempt_id"], "accepted": True},
        )
        advancing.result(timeout=15)
        status, body = report(sandbox, taken)
        assert (status, body["code"]) == (409, "already_decided")
        assert report(sandbox, {"attempt_id": "att_nope", "error": "x"})[0] == 404
        (delivery,) = sandbox.webhooks(order["id"])
        assert delivery["attempts"][0]["status_code"] == 204 and delivery["status"] == "retrying"
    finally:
        stream.close()
    assert Stream(sandbox.url, "?account=nope").response.status == 404


# -- starting, stopping, refusing ------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_it_cleanly(sandbox, receiver, listen, sig):
    listener = listen("--base-url", sandbox.url, "--forward-to", receiver.url)
    listener.popen.send_signal(sig)
    assert listener.finish() == 0
    assert listener.err == [], "no traceback"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--forward-to", "http://127.0.0.1:1/h"], "--base-url"),
        (["--base-url", "http://127.0.0.1:1"], "--forward-to"),
        (["--base-url", "ftp://127.0.0.1", "--forward-to", "http://x/h"], "not an http"),
        (["--base-url", "http://127.0.0.1:1", "--forward-to", "localhost:4242"], "not an http"),
        (["--base-url", "http://h", "--forward-to", "http://x", "--ca", "/no/such.pem"], "--ca"),
        (["--base-url", "http://h", "--forward-to", "http://x", "--forward-timeout", "0"], "0"),
    ],
)
def test_bad_flags_exit_2(args, message, capsys):
    with pytest.raises(SystemExit) as exited:
        listen_main(args)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_bad_flags_exit_2_from_the_command_line(listen):
    process = listen("--base-url", "ws://127.0.0.1:1", "--forward-to", "http://x/", ready=False)
    assert process.finish() == 2
    assert any("not an http:// or https:// URL" in line for line in process.err)


def test_refused_for_good_exits_1_with_the_servers_detail(sandbox, receiver, listen):
    unknown = listen(
        "--base-url", sandbox.url, "--forward-to", receiver.url, "--account", "nope", ready=False
    )
    assert unknown.finish() == 1
    assert "404 not_found: No account nope in this sandbox" in unknown.err[-1]
    assert unknown.out == []

    guarded = ServerThread(Settings(port=0, clock="manual", seed=1, admin_token="s3cret")).start()
    try:
        denied = listen("--base-url", guarded.url, "--forward-to", receiver.url, ready=False)
        assert denied.finish() == 1
        assert "401 not_authenticated" in denied.err[-1]
        by_flag = listen(
            "--base-url", guarded.url, "--forward-to", receiver.url, "--control-token", "s3cret"
        )
        by_env = listen(
            "--base-url",
            guarded.url,
            "--forward-to",
            receiver.url,
            env={"MOCK_CONTROL_TOKEN": "s3cret"},
        )
        assert by_flag.out[0] == by_env.out[0] == "ready"
    finally:
        guarded.stop()


def test_a_dropped_stream_is_reopened_and_a_vanished_sandbox_ends_it(server_url, receiver, listen):
    root = SandboxHandle(server_url)
    created = root.control("POST", "/_mock/sandboxes", {"clock": "manual"})
    listener = listen("--base-url", created["base_url"], "--forward-to", receiver.url)
    root.control("DELETE", f"/_mock/sandboxes/{created['id']}")  # its streams end
    assert "dropped" in listener.wait_for("reconnecting in 0.5 s", stderr=True)
    assert listener.finish() == 1
    assert "404 not_found" in listener.err[-1]


def test_it_waits_for_a_server_that_is_not_there_yet(receiver, listen):
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # free once closed; the server takes it below
    url = f"http://127.0.0.1:{port}"
    listener = listen("--base-url", url, "--forward-to", receiver.url, ready=False)
    listener.wait_for("reconnecting in 0.5 s", stderr=True)
    listener.wait_for("reconnecting in 1 s", stderr=True)
    assert "cannot listen at" in listener.err[0] and "ClientConnectorError" in listener.err[0]
    server = Process("--host", "127.0.0.1", "--port", str(port), "--clock", "manual")
    try:
        server.wait_for("listening on ")
        listener.wait_for("webhook secret ", timeout=15)
    finally:
        server.kill()


def test_over_https_with_a_private_ca(tmp_path, receiver, listen):
    ca = tmp_path / "ca.pem"
    server, url = start_server("--tls", "self-signed", "--tls-ca-out", str(ca))
    try:
        assert url.startswith("https://")
        untrusted = listen("--base-url", url, "--forward-to", receiver.url, ready=False)
        assert "CERTIFICATE_VERIFY_FAILED" in untrusted.wait_for("cannot listen", stderr=True)
        untrusted.kill()

        listener = listen("--base-url", url, "--forward-to", receiver.url, "--ca", str(ca))
        context = ssl.create_default_context(cafile=str(ca))
        order = place_order(url, "ak_test_default", context)
        SandboxHandle(url, ca_path=str(ca)).advance(5)
        assert line_of(listener, order["id"], 1) == f"200 {order['id']} completed attempt 1"
        (event,) = receiver.events
        assert event.verified
    finally:
        server.kill()


# -- the pytest plugin -------------------------------------------------------------------------


@pytest.fixture
def running_server() -> Iterator[ServerThread]:
    server = ServerThread(Settings(clock="manual", port=0, seed=1)).start()
    yield server
    server.stop()


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
    )
    return pytester


def test_pytest_plugin_listens_for_a_remote_sandbox(suite, running_server):
    suite.makepyfile(
        """
        import requests

        def test_listened(mock_server, webhook_receiver):
            token = requests.post(f"{mock_server.url}/api/v1/auth/token/client",
                                  json={"api_key": mock_server.api_key}).json()["access_token"]
            order = requests.post(f"{mock_server.url}/api/v1/orders", json={"item_id": 1001},
                                  headers={"Authorization": f"Bearer {token}"}).json()
            (account,) = mock_server.control("GET", "/_mock/accounts")["accounts"]
            assert account["webhook_url"] is None, "the server could not reach it anyway"
            mock_server.advance(5)
            delivery = mock_server.wait_for_webhook(order["id"], status="completed")
            assert delivery["status"] == "delivered" and delivery["url"] == "listener"
            assert delivery["attempts"][0]["via"] == "listener"
            (event,) = webhook_receiver.events
            assert event.verified and event.json["order_id"] == order["id"]

        def test_without_a_receiver(mock_server):
            assert mock_server.webhooks() == []
        """
    )
    result = suite.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--mock-server-url={running_server.url}", "--mock-server-listen"
    )
    result.assert_outcomes(passed=2)
    root = SandboxHandle(running_server.url)
    assert [s["id"] for s in root.control("GET", "/_mock/sandboxes")["sandboxes"]] == ["default"]


def test_pytest_plugin_listen_needs_a_server_url(suite):
    suite.makepyfile("def test_nothing(): pass")
    result = suite.runpytest("-p", "no:cacheprovider", "--mock-server-listen")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--mock-server-listen needs --mock-server-url*"])
