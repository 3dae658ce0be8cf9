"""A cluster as an operator runs it (docs/cluster.md): three nodes, each its own process
with its own `--state` file, behind Debian's real nginx started from what
`mock-server cluster nginx-config` prints, unchanged. Sandboxes created through the
router land on several nodes and serve a merchant, a webhook and the live event stream
through their `base_url`; a node killed with SIGKILL answers 503 `node_unavailable`
while the others serve, and restarted on its state file it resumes its sandboxes."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from mock_server.testing import SandboxHandle, WebhookReceiver

pytest_plugins = ["pytester"]

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
NODE_IDS = ("a", "b", "c-1")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, log: Path) -> None:
    """Until something accepts on `port` (nginx says nothing when it is ready)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"exited {process.returncode}: {log.read_text()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}: {log.read_text()}")


class Node:
    """`mock-server` as one node: `--node-id`, its own `--state` file, a manual clock."""

    def __init__(self, node_id: str, work: Path) -> None:
        self.node_id = node_id
        self.state = work / f"{node_id}.db"
        self.log = work / f"{node_id}.log"
        self.port = 0
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        argv = [sys.executable, "-m", "mock_server", "--host", "127.0.0.1"]
        argv += ["--port", str(self.port), "--node-id", self.node_id, "--state", str(self.state)]
        argv += ["--clock", "manual", "--seed", "7"]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        assert match, f"node {self.node_id} did not start: {line!r} {self.log.read_text()}"
        self.port = int(match[1])  # a restart listens on the same port
        threading.Thread(target=self.process.stdout.read, daemon=True).start()

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


class Cluster:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.nodes = {node_id: Node(node_id, work) for node_id in NODE_IDS}
        self.router: subprocess.Popen | None = None
        self.url = ""

    def start(self) -> None:
        for node in self.nodes.values():
            node.start()
        port = _free_port()
        argv = [sys.executable, "-m", "mock_server", "cluster", "nginx-config"]
        argv += ["--listen", f"127.0.0.1:{port}"]
        for node in self.nodes.values():
            argv += ["--node", f"{node.node_id}=127.0.0.1:{node.port}"]
        printed = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        config = self.work / "nginx.conf"
        config.write_text(printed)
        prefix = self.work / "router"
        prefix.mkdir()
        log = self.work / "nginx.log"
        with open(log, "wb") as stderr:
            self.router = subprocess.Popen(
                [NGINX, "-p", str(prefix), "-c", str(config)],
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        _wait_for_port(port, self.router, log)
        self.url = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        if self.router is not None and self.router.poll() is None:
            self.router.terminate()
            self.router.wait(10)
        for node in self.nodes.values():
            node.stop()

    def create(self, **body: object) -> dict:
        response = requests.post(f"{self.url}/_mock/sandboxes", json=body, timeout=10)
        assert response.status_code == 201, response.text
        return response.json()


def node_of(sandbox_id: str) -> str:
    match = re.fullmatch(r"sbx-([a-z0-9-]+)-[0-9a-f]{12}", sandbox_id)
    assert match, sandbox_id
    return match[1]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    assert os.access(NGINX, os.X_OK), "nginx (Debian's package) is needed: .ci/run installs it"
    running = Cluster(tmp_path)
    try:
        running.start()
        yield running
    finally:
        running.stop()


def _merchant_order(base_url: str, api_key: str) -> tuple[dict, str]:
    token = requests.post(
        f"{base_url}/api/v1/auth/token/client", json={"api_key": api_key}, timeout=10
    )
    assert token.status_code == 200, token.text
    auth = {"Authorization": f"Bearer {token.json()['access_token']}"}
    order = requests.post(
        f"{base_url}/api/v1/orders", json={"item_id": 1001}, headers=auth, timeout=10
    )
    assert order.status_code == 201, order.text
    return order.json(), auth["Authorization"]


def test_sandboxes_spread_over_the_nodes_and_serve_through_their_base_url(cluster):
    created = [cluster.create() for _ in range(6)]
    assert {node_of(c["id"]) for c in created} == set(NODE_IDS)  # in turn, each node
    for sandbox in created:
        assert sandbox["base_url"] == f"{cluster.url}/_mock/sandboxes/{sandbox['id']}"
        order, auth = _merchant_order(sandbox["base_url"], sandbox["api_key"])
        handle = SandboxHandle(sandbox["base_url"], admin_token=sandbox["control_token"])
        handle.advance(5)
        settled = requests.get(
            f"{sandbox['base_url']}/api/v1/orders/{order['id']}",
            headers={"Authorization": auth},
            timeout=10,
        ).json()
        assert settled["status"] == "completed"
        # Each node holds only its own sandboxes.
        node = cluster.nodes[node_of(sandbox["id"])]
        direct = requests.get(f"http://127.0.0.1:{node.port}/_mock/sandboxes", timeout=10)
        assert sandbox["id"] in {s["id"] for s in direct.json()["sandboxes"]}
    # What no sandbox owns goes to the first node: its default sandbox and its list.
    health = requests.get(f"{cluster.url}/_mock/health", timeout=10)
    assert health.status_code == 200
    listed = requests.get(f"{cluster.url}/_mock/sandboxes", timeout=10).json()["sandboxes"]
    assert {node_of(s["id"]) for s in listed if s["id"] != "default"} == {"a"}
    # An id naming no node of this router is the first node's to refuse.
    unknown = requests.get(f"{cluster.url}/_mock/sandboxes/sbx-zz-0123456789ab", timeout=10)
    assert unknown.status_code == 404 and unknown.json()["code"] == "not_found"


def test_a_webhook_and_the_live_event_stream_through_the_router(cluster):
    receiver = WebhookReceiver()
    try:
        for _ in range(len(NODE_IDS)):
            sandbox = cluster.create()
            handle = SandboxHandle(sandbox["base_url"], admin_token=sandbox["control_token"])
            receiver.secret = sandbox["webhook_secret"]
            handle.set_webhook_url(receiver.url)
            events = requests.get(
                f"{sandbox['base_url']}/_mock/events",
                headers={"Authorization": f"Bearer {sandbox['control_token']}"},
                stream=True,
                timeout=10,
            )
            assert events.status_code == 200
            assert events.headers["Content-Type"].startswith("text/event-stream")
            lines = events.iter_lines(decode_unicode=True)
            order, _ = _merchant_order(sandbox["base_url"], sandbox["api_key"])
            # The order's event arrives while the stream stays open: nginx buffers nothing.
            data = next(line for line in lines if line.startswith("data:") and order["id"] in line)
            assert json.loads(data[5:])
            events.close()
            handle.advance(5)
            delivered = handle.wait_for_webhook(order["id"], status="completed")
            assert delivered["status"] == "delivered"
        assert len(receiver.events) == len(NODE_IDS)
        assert all(event.verified for event in receiver.events)
    finally:
        receiver.close()


def test_a_killed_node_is_503_while_the_others_serve_then_resumes_on_its_state(cluster):
    created = [cluster.create() for _ in range(3)]
    by_node = {node_of(c["id"]): c for c in created}
    victim, survivor = by_node["b"], by_node["a"]
    receiver = WebhookReceiver(victim["webhook_secret"])
    receiver.respond_with(500)  # the first attempt fails: a retry is pending at the kill
    handle = SandboxHandle(victim["base_url"], admin_token=victim["control_token"])
    handle.set_webhook_url(receiver.url)
    order, auth = _merchant_order(victim["base_url"], victim["api_key"])
    before = handle.advance(5)
    assert handle.wait_for_webhook(order["id"], status="completed")["status"] == "retrying"

    cluster.nodes["b"].kill()
    down = requests.get(
        f"{victim['base_url']}/api/v1/orders/{order['id']}", headers={"Authorization": auth}
    )
    assert down.status_code == 503
    assert down.headers["Content-Type"].startswith("application/json")
    body = down.json()
    assert body["code"] == "node_unavailable" and "node b " in body["detail"]
    # The other nodes' sandboxes go on, and new sandboxes land on the nodes that answer.
    survivor_order, _ = _merchant_order(survivor["base_url"], survivor["api_key"])
    assert survivor_order["status"] == "pending"
    assert {node_of(cluster.create()["id"]) for _ in range(4)} <= {"a", "c-1"}

    cluster.nodes["b"].start()  # same port, same state file
    back = SandboxHandle(victim["base_url"], admin_token=victim["control_token"])
    assert back.now() == before  # its clock, as it was
    resumed = requests.get(
        f"{victim['base_url']}/api/v1/orders/{order['id']}",
        headers={"Authorization": auth},
        timeout=10,
    )
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["status"] == "completed"
    receiver.respond_with(200)
    back.advance(600)  # the pending retry, due on the sandbox's clock
    try:
        delivery = back.wait_for_webhook(order["id"], status="completed", delivery="delivered")
        assert [a["status_code"] for a in delivery["attempts"]][-2:] == [500, 200]
        assert receiver.events[-1].verified
    finally:
        receiver.close()


def test_the_pytest_plugin_under_xdist_against_the_router(cluster, pytester):
    pytester.makeini("[pytest]\nasyncio_mode = auto\n")
    pytester.makepyfile(
        """
        import pytest
        import requests

        @pytest.mark.parametrize("run", range(8))
        def test_isolated(mock_server, run):
            token = requests.post(f"{mock_server.url}/api/v1/auth/token/client",
                                  json={"api_key": mock_server.api_key}).json()
            auth = {"Authorization": f"Bearer {token['access_token']}"}
            order = requests.post(f"{mock_server.url}/api/v1/orders",
                                  json={"item_id": 1001}, headers=auth)
            assert order.status_code == 201
            mock_server.advance(run + 1)
            assert len(mock_server.orders()) == 1
            with open("ids.txt", "a") as ids:
                ids.write(mock_server.url.rsplit("/", 1)[1] + "\\n")
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "4", f"--mock-server-url={cluster.url}"
    )
    result.assert_outcomes(passed=8)
    used = (pytester.path / "ids.txt").read_text().split()
    assert len(set(used)) == 8 and len({node_of(i) for i in used}) > 1
    for node in cluster.nodes.values():  # every test's sandbox deleted at its teardown
        listed = requests.get(f"http://127.0.0.1:{node.port}/_mock/sandboxes", timeout=10)
        assert [s["id"] for s in listed.json()["sandboxes"]] == ["default"]


def test_a_listener_through_the_router_gets_its_sandboxs_webhooks(cluster):
    """`mock-server listen` on a sandbox's base_url through nginx: the stream and the
    reports pass the router, and the receiver gets a webhook whose signature an HMAC of
    another library (cryptography's) verifies."""
    from cryptography.hazmat.primitives import hashes, hmac

    sandbox = next(c for c in (cluster.create() for _ in range(3)) if node_of(c["id"]) == "b")
    receiver = WebhookReceiver(sandbox["webhook_secret"])
    listener = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "listen", "--base-url", sandbox["base_url"]]
        + ["--forward-to", receiver.url],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert listener.stdout is not None
        assert listener.stdout.readline().strip() == "ready"
        order, _ = _merchant_order(sandbox["base_url"], sandbox["api_key"])
        handle = SandboxHandle(sandbox["base_url"], admin_token=sandbox["control_token"])
        handle.advance(5)
        delivery = handle.wait_for_webhook(order["id"], status="completed")
        assert delivery["status"] == "delivered"
        assert delivery["attempts"][0]["via"] == "listener"
        (event,) = receiver.events
        mac = hmac.HMAC(sandbox["webhook_secret"].encode(), hashes.SHA256())
        mac.update(event.body)
        signature = event.headers.get("X-Webhook-Signature") or event.headers["X-Signature"]
        mac.verify(bytes.fromhex(signature.removeprefix("sha256=")))
        assert json.loads(event.body)["order_id"] == order["id"]
    finally:
        listener.terminate()
        assert listener.wait(10) == 0
        receiver.close()
