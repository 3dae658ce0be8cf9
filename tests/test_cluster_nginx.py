"""A cluster as an operator runs it (docs/cluster.md): three nodes, each its own process
with its own `--state` file, behind Debian's real nginx started from what
`mock-server cluster nginx-config` prints, unchanged. Sandboxes created through the
router land on several nodes and serve a merchant, a webhook and the live event stream
through their `base_url`; a node killed with SIGKILL answers 503 `node_unavailable`
while the others serve, and restarted on its state file it resumes its sandboxes.

Creations take turns over the nodes across all of nginx's worker processes (four of
them, each proxying some of the creations), so every node gets the same number; and the
router starts and routes as a user who may not open its standard output or error by
name (nobody, where the tests run as root)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from mock_server.testing import SandboxHandle, WebhookReceiver
from tests import services

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
        self.port = 0
        self.url = ""

    def start_nodes(self) -> None:
        for node in self.nodes.values():
            node.start()

    def print_config(self, *options: str) -> str:
        """What `mock-server cluster nginx-config` prints for these nodes, listening on
        a free port (self.port)."""
        self.port = _free_port()
        argv = [sys.executable, "-m", "mock_server", "cluster", "nginx-config"]
        argv += ["--listen", f"127.0.0.1:{self.port}", *options]
        for node in self.nodes.values():
            argv += ["--node", f"{node.node_id}=127.0.0.1:{node.port}"]
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout

    def start_router(self, *, workers: int | None = None) -> None:
        """nginx on the printed configuration, as the spec's section 17 runs it; `workers`
        instead of `worker_processes auto` (as many as the machine has cores)."""
        printed = self.print_config()
        if workers is not None:
            assert printed.count("worker_processes auto;") == 1
            printed = printed.replace("worker_processes auto;", f"worker_processes {workers};")
        config = self.work / "nginx.conf"
        config.write_text(printed)
        prefix = self.work / "router"
        prefix.mkdir()
        log = self.work / "nginx.log"
        with open(log, "wb") as stderr:
            self.run_router([NGINX, "-p", str(prefix), "-c", str(config)], stderr, log)

    def run_router(self, argv: list[str], stderr, log: Path, **popen) -> None:
        """Start nginx (`argv`) on the printed configuration; back once it listens."""
        popen.setdefault("stdout", subprocess.DEVNULL)
        self.router = subprocess.Popen(argv, stderr=stderr, **popen)
        _wait_for_port(self.port, self.router, log)
        self.url = f"http://127.0.0.1:{self.port}"

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
def cluster_nodes(tmp_path: Path) -> Iterator[Cluster]:
    """The nodes, running; the router is the test's to start."""
    services.require("nginx")  # skipped without it, failed in CI (tests/services.py)
    running = Cluster(tmp_path)
    try:
        running.start_nodes()
        yield running
    finally:
        running.stop()


@pytest.fixture
def cluster(cluster_nodes: Cluster) -> Cluster:
    cluster_nodes.start_router()
    return cluster_nodes


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


# -- One turn for all of nginx's workers ------------------------------------------------


def _workers(master: int) -> list[int]:
    """nginx's worker processes: its master's children."""
    workers = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):  # a process that has just ended
                stat = Path("/proc", entry, "stat").read_text()
                if int(stat.rpartition(")")[2].split()[1]) == master:
                    workers.append(int(entry))
    return workers


def _holders(port: int, workers: list[int]) -> dict[int, int]:
    """Each connection to `port` that a worker has accepted, by the client's port: the
    worker holding it (the kernel's table of TCP sockets, and each worker's files)."""
    clients = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
        if int(local.rpartition(":")[2], 16) == port and state == "01":  # established
            clients[f"socket:[{inode}]"] = int(remote.rpartition(":")[2], 16)
    held = {}
    for worker in workers:
        for fd in os.listdir(f"/proc/{worker}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{worker}/fd/{fd}")
                if target in clients:
                    held[clients[target]] = worker
    return held


def _one_connection_per_worker(
    cluster: Cluster, opened: list[http.client.HTTPConnection]
) -> list[http.client.HTTPConnection]:
    """Keep-alive connections to the router held by different workers, at least two:
    connections opened all at once, so that several workers wake to accept them, in
    batches until more than one worker holds some."""
    assert cluster.router is not None
    for _ in range(20):
        batch = [
            http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=10) for _ in range(16)
        ]
        opened += batch
        for connection in batch:  # all queued before nginx accepts any
            connection.connect()
        for connection in batch:  # answered, so accepted: by the worker that holds it
            connection.request("GET", "/_mock/health")
            response = connection.getresponse()
            assert response.status == 200, response.read()
            response.read()
        held = _holders(cluster.port, _workers(cluster.router.pid))
        by_worker: dict[int, http.client.HTTPConnection] = {}
        for connection in opened:
            assert connection.sock is not None
            by_worker.setdefault(held[connection.sock.getsockname()[1]], connection)
        if len(by_worker) > 1:
            return list(by_worker.values())
    raise AssertionError("one nginx worker accepted every connection")


def _create_on(connection: http.client.HTTPConnection) -> dict:
    connection.request(
        "POST", "/_mock/sandboxes", body=b"{}", headers={"Content-Type": "application/json"}
    )
    response = connection.getresponse()
    body = response.read()
    assert response.status == 201, body
    return json.loads(body)


def test_creations_take_turns_over_the_nodes_across_all_of_nginxs_workers(cluster_nodes):
    """Creation's turn is in the upstream's zone, one for all four workers: N creations
    put N/3 sandboxes on each node, whichever workers proxy them. (With a turn per worker,
    each starting at the first node, the first creation through one worker and the rest
    through the others would put 5 or 6 of 12 on the first node.)"""
    cluster = cluster_nodes
    cluster.start_router(workers=4)
    assert cluster.router is not None
    assert len(_workers(cluster.router.pid)) == 4
    opened: list[http.client.HTTPConnection] = []
    try:
        first, *others = _one_connection_per_worker(cluster, opened)
        each = 4
        created = [_create_on(first)]
        for index in range(each * len(NODE_IDS) - 1):
            created.append(_create_on(others[index % len(others)]))
    finally:
        for connection in opened:
            connection.close()
    by_node = {
        node_id: [c["id"] for c in created if node_of(c["id"]) == node_id] for node_id in NODE_IDS
    }
    assert {node_id: len(ids) for node_id, ids in by_node.items()} == dict.fromkeys(NODE_IDS, each)
    for node in cluster.nodes.values():  # each node holds its own, and only those
        listed = requests.get(f"http://127.0.0.1:{node.port}/_mock/sandboxes", timeout=10)
        ids = {s["id"] for s in listed.json()["sandboxes"]} - {"default"}
        assert ids == set(by_node[node.node_id])


def test_a_large_clusters_configuration_passes_nginx_t(tmp_path):
    """300 nodes: every line is a word nginx takes (under 4 KiB: the command echoed at
    the top is one option a line), and creation's zone holds every node."""
    services.require("nginx")  # skipped without it, failed in CI (tests/services.py)
    argv = [sys.executable, "-m", "mock_server", "cluster", "nginx-config"]
    argv += ["--listen", f"127.0.0.1:{_free_port()}", "--prefix", str(tmp_path)]
    for index in range(300):
        argv += ["--node", f"node-{index}=127.0.{index // 200}.{index % 200 + 1}:8080"]
    config = tmp_path / "nginx.conf"
    config.write_text(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
    tested = subprocess.run(
        [NGINX, "-t", "-c", str(config)], capture_output=True, text=True, timeout=30, check=False
    )
    assert tested.returncode == 0, tested.stderr
    assert "test is successful" in tested.stderr


# -- A router that runs as anyone -------------------------------------------------------


def _unprivileged() -> tuple[list[str], pwd.struct_passwd | None]:
    """How to run a command as a user who is not root: as nobody (with setpriv) where the
    tests run as root, else as the tests' own user."""
    if os.geteuid() != 0:
        return [], None
    nobody = pwd.getpwnam("nobody")
    setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
    return [
        setpriv,
        f"--reuid={nobody.pw_uid}",
        f"--regid={nobody.pw_gid}",
        "--clear-groups",
    ], nobody


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory any user can reach: pytest's tmp_path is under a directory of the
    tests' user's own (mode 0700)."""
    path = Path(tempfile.mkdtemp(prefix="mock-router-"))
    try:
        path.chmod(0o755)
        yield path
    finally:
        shutil.rmtree(path)


def _writable_by(path: Path, user: pwd.struct_passwd | None) -> Path:
    path.mkdir()
    if user is not None:
        os.chown(path, user.pw_uid, user.pw_gid)
    return path


def _unopenable(path: Path):
    """A file opened here for writing, that the router's user may not open by its name
    (/dev/stdout is /proc/self/fd/1, opened again): mode 0400, so nobody may not open
    root's, and a user other than root may not open their own for writing."""
    handle = open(path, "wb")  # noqa: SIM115 (the caller closes it)
    path.chmod(0o400)
    return handle


@pytest.mark.parametrize("how", ["nginx -p DIR", "--prefix and --access-log"])
def test_the_router_runs_as_a_user_who_may_not_open_its_output(cluster_nodes, open_dir, how):
    cluster = cluster_nodes
    as_user, user = _unprivileged()
    prefix = _writable_by(open_dir / "router", user)
    if how == "nginx -p DIR":
        printed = cluster.print_config()
        argv = [NGINX, "-p", str(prefix)]
    else:
        access_log = _writable_by(open_dir / "logs", user) / "access.log"
        printed = cluster.print_config("--prefix", str(prefix), "--access-log", str(access_log))
        argv = [NGINX, "-e", "stderr"]  # and from anywhere: the paths are whole
    directives = [line for line in printed.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in directives if "/dev/" in line]
    config = open_dir / "nginx.conf"
    config.write_text(printed)
    config.chmod(0o644)
    out_path, err_path = open_dir / "stdout", open_dir / "stderr"
    with _unopenable(out_path) as out, _unopenable(err_path) as err:
        # The check is a real one: this user may not open this output by name, as an
        # access log on /dev/stdout would.
        logging_to_stdout = open_dir / "stdout.conf"
        logging_to_stdout.write_text(printed.replace("access_log ", "access_log /dev/stdout; #"))
        logging_to_stdout.chmod(0o644)
        refused = subprocess.run(
            [*as_user, *argv, "-t", "-c", str(logging_to_stdout)],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            cwd="/",
            timeout=30,
            check=False,
        )
        assert refused.returncode != 0
        assert 'open() "/dev/stdout" failed (13: Permission denied)' in refused.stderr

        cluster.run_router([*as_user, *argv, "-c", str(config)], err, err_path, stdout=out, cwd="/")
    assert cluster.router is not None
    assert (prefix / "nginx.pid").read_text().strip() == str(cluster.router.pid)
    sandbox = cluster.create()
    order, _ = _merchant_order(sandbox["base_url"], sandbox["api_key"])
    node = cluster.nodes[node_of(sandbox["id"])]
    direct = requests.get(f"http://127.0.0.1:{node.port}/_mock/sandboxes", timeout=10)
    assert sandbox["id"] in {s["id"] for s in direct.json()["sandboxes"]}

    cluster.router.terminate()  # every request's log line is written by the time it exits
    assert cluster.router.wait(10) == 0
    assert out_path.read_bytes() == b""  # the router's output: never written, never opened
    errors = err_path.read_text()
    assert "start worker process" in errors  # nginx's log: the standard error it was given
    # Only a build whose own error log is a file (not Debian's) says, without -e, that it
    # could not open it, before it reads the configuration; it starts all the same.
    troubles = re.findall(r"^.*\[(?:alert|crit|emerg)\].*$", errors, re.M)
    assert [t for t in troubles if "could not open error log file" not in t] == [], errors
    if how == "--prefix and --access-log":
        lines = access_log.read_text().splitlines()
        assert any('"POST /_mock/sandboxes HTTP/1.1" 201 ' in line for line in lines), lines
        path = f"/_mock/sandboxes/{sandbox['id']}/api/v1/orders"
        assert any(f'"POST {path} HTTP/1.1" 201 ' in line for line in lines), lines
    else:
        assert not list(open_dir.rglob("*.log"))
    assert order["status"] == "pending"
