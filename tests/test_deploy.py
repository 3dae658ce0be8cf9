"""deploy/ (deploy/README.md, docs/cluster.md): the Compose file and the Kubernetes
manifests that run a cluster of nodes behind nginx.

- Compose: its router configuration is exactly what `mock-server cluster nginx-config`
  prints; the file passes Debian's real `docker-compose config` (which rejects a broken
  one) and names three nodes, each with its own id and volume.
- Kubernetes: the manifests pass `kubernetes-validate` (Kubernetes' own schemas,
  offline, strict); the StatefulSet, its headless Service and the router agree on names,
  ports and paths; the router's template, rendered as the official nginx image renders
  it, passes Debian's real `nginx -t`, and routes real requests by DNS (a stand-in DNS
  server and stand-in nodes on 127.0.0.x) as the generated configuration does, creations
  in turn over the ready pods.

The tools are Debian's `docker-compose` and `nginx` (.ci/run installs them): without
them a test is skipped, saying so, and in CI it fails (tests/services.py). Nothing is
called outside the loopback.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import re
import shutil
import socket
import struct
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import kubernetes_validate
import pytest
import yaml
from aiohttp import web

from mock_server import cluster
from mock_server.domain.sandbox_ids import RANDOM_DIGITS, created_id
from tests import services

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
COMPOSE_FILE = DEPLOY / "compose.yaml"
COMPOSE_NGINX = DEPLOY / "compose" / "nginx.conf"
KUBERNETES = DEPLOY / "kubernetes"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
#: nginx re-resolves an upstream's server (`resolve`, which the router's creation upstream
#: uses) since 1.27.3; the image's nginx is 1.30. Debian 12's is 1.22: there the tests run
#: the template with that one server line replaced (`_runnable`).
RESOLVE_SINCE = (1, 27, 3)
#: The Compose router's arguments, as deploy/README.md gives them.
COMPOSE_NODES = ("node-1", "node-2", "node-3")
COMPOSE_ARGV = ["nginx-config", "--listen", "0.0.0.0:8080"]
for _name in COMPOSE_NODES:
    COMPOSE_ARGV += ["--node", f"{_name}={_name}:8080"]
#: The oldest Kubernetes the manifests are for; kubernetes-validate>=1.30 ships its
#: schemas (pyproject.toml's test extra).
KUBERNETES_VERSION = "1.30.0"
#: What the official nginx image's entrypoint defines for the template (envsubst
#: replaces only variables set in the environment).
TEMPLATE_VARIABLES = {"NGINX_LOCAL_RESOLVERS", "MOCK_NAMESPACE"}


def _tool(path: str, package: str) -> str:
    services.require(package)  # skipped without it, failed in CI (tests/services.py)
    found = shutil.which(path)
    if found is None:
        raise AssertionError(f"no {path}: install Debian's {package} (.ci/run does)")
    return found


# -- Compose ---------------------------------------------------------------------------


def test_the_compose_router_is_what_the_generator_prints(capsys):
    assert cluster.main(COMPOSE_ARGV) == 0
    printed = capsys.readouterr().out
    assert COMPOSE_NGINX.read_text() == printed, (
        "deploy/compose/nginx.conf is stale: regenerate it with "
        "`python -m mock_server cluster " + " ".join(COMPOSE_ARGV) + " > deploy/compose/nginx.conf`"
    )


def _docker_compose_config(compose_file: Path) -> subprocess.CompletedProcess:
    """`docker-compose -f FILE config -q`: Debian's docker-compose (1.29, Python) checks
    the file against the Compose Specification's schema, the references between its
    services and volumes, and the build context, with no engine (DOCKER_HOST points
    nowhere, so nothing is ever asked). Debian's later docker-compose (2.x, Go) takes
    the same command."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("COMPOSE_")}
    env["DOCKER_HOST"] = "unix:///nonexistent/docker.sock"
    return subprocess.run(
        [_tool("docker-compose", "docker-compose"), "-f", str(compose_file), "config", "-q"],
        capture_output=True,
        text=True,
        env=env,
        cwd=compose_file.parent,
        timeout=60,
        check=False,
    )


def test_the_compose_file_is_valid():
    completed = _docker_compose_config(COMPOSE_FILE)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == ""


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ("    environment:\n      MOCK_NODE_ID: node-2", "    enviroment:\n", "enviroment"),
        ("- node-3-data:/data", "- node-4-data:/data", "node-4-data"),
        ("      - node-1\n", "      - node-9\n", "node-9"),
        ('    ports:\n      - "8080:8080"\n', "    ports: 8080\n", "ports"),
    ],
    ids=["misspelt-key", "undeclared-volume", "unknown-dependency", "wrong-type"],
)
def test_the_compose_validator_rejects_a_broken_file(tmp_path, old, new, reason):
    """The check above can fail: a copy of deploy/ broken in one place does."""
    copy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, copy)
    text = COMPOSE_FILE.read_text()
    assert text.count(old) == 1
    (copy / "compose.yaml").write_text(text.replace(old, new))
    completed = _docker_compose_config(copy / "compose.yaml")
    assert completed.returncode != 0
    assert reason in completed.stderr


def test_the_compose_file_runs_three_nodes_behind_the_checked_in_router():
    compose = yaml.safe_load(COMPOSE_FILE.read_text())
    services = compose["services"]
    assert set(services) == {*COMPOSE_NODES, "nginx"}
    volumes = []
    for name in COMPOSE_NODES:
        node = services[name]
        assert (COMPOSE_FILE.parent / node["build"]).resolve() == ROOT
        assert (ROOT / "Dockerfile").is_file()
        assert node["image"] == "ordering-sandbox"
        env = node["environment"]
        assert env["MOCK_NODE_ID"] == name
        assert env["MOCK_STATE"] == "/data/state.db"
        # The router names the nodes at the image's port.
        assert "MOCK_PORT" not in env and "ports" not in node
        (volume,) = node["volumes"]
        source, target = volume.split(":")
        assert target == "/data" and source in compose["volumes"]
        volumes.append(source)
    assert len(set(volumes)) == len(COMPOSE_NODES)

    nginx = services["nginx"]
    assert re.fullmatch(r"nginx:\d+\.\d+(\.\d+)?-alpine", nginx["image"]), nginx["image"]
    assert nginx["ports"] == ["8080:8080"]
    assert sorted(nginx["depends_on"]) == list(COMPOSE_NODES)
    (mount,) = nginx["volumes"]
    source, target, mode = mount.split(":")
    assert (COMPOSE_FILE.parent / source).resolve() == COMPOSE_NGINX and mode == "ro"
    command = " ".join(nginx["command"])
    assert "mkdir -p /tmp/nginx" in command
    assert f"exec nginx -e stderr -p /tmp/nginx -c {target}" in command
    # ...and the checked-in router routes each node's sandboxes to that service.
    config = COMPOSE_NGINX.read_text()
    for name in COMPOSE_NODES:
        assert f"upstream mock_node_{name} {{\n        server {name}:8080 max_fails=0;" in config
        assert f'"~^[A-Z]+ /_mock/sandboxes/sbx-{name}-[0-9a-f]{{12}}(/|$)"' in config
    assert "listen 0.0.0.0:8080;" in config


# -- Kubernetes: the manifests ---------------------------------------------------------


def _manifests() -> dict[tuple[str, str], dict]:
    found = {}
    for path in sorted(KUBERNETES.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            key = (document["kind"], document["metadata"]["name"])
            assert key not in found, key
            found[key] = document
    return found


def test_the_kubernetes_manifests_are_valid():
    manifests = _manifests()
    assert set(manifests) == {
        ("Service", "mock-nodes"),
        ("StatefulSet", "mock"),
        ("ConfigMap", "mock-router"),
        ("Deployment", "mock-router"),
        ("Service", "mock-router"),
    }
    for key, document in manifests.items():
        try:
            used = kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            raise AssertionError(f"{key}: {exc.message} at {list(exc.absolute_path)}") from exc
        assert used == "1.30", key


@pytest.mark.parametrize(
    "break_it",
    [
        lambda spec: spec.update(servicename=spec.pop("serviceName")),
        lambda spec: spec.update(replicas="3"),
        lambda spec: spec["template"]["spec"]["containers"][0].update(livenesProbe={}),
    ],
    ids=["misspelt-key", "wrong-type", "misspelt-nested-key"],
)
def test_the_kubernetes_validator_rejects_a_broken_manifest(break_it):
    statefulset = _manifests()[("StatefulSet", "mock")]
    break_it(statefulset["spec"])
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(statefulset, KUBERNETES_VERSION, strict=True)


def _port(container: dict, port: int | str) -> int:
    """A probe's or a Service's port, by number or by the container port's name."""
    if isinstance(port, int):
        return port
    (number,) = [p["containerPort"] for p in container["ports"] if p["name"] == port]
    return number


def _env(container: dict) -> dict[str, dict]:
    return {variable["name"]: variable for variable in container["env"]}


def _template() -> str:
    (text,) = _manifests()[("ConfigMap", "mock-router")]["data"].values()
    return text


def test_the_statefulset_is_a_node_per_pod_with_its_own_volume():
    manifests = _manifests()
    service = manifests[("Service", "mock-nodes")]
    statefulset = manifests[("StatefulSet", "mock")]
    spec = statefulset["spec"]
    pod = spec["template"]
    (container,) = pod["spec"]["containers"]

    # The headless Service gives each ready pod its DNS name.
    assert spec["serviceName"] == service["metadata"]["name"]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is False
    assert spec["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    (service_port,) = service["spec"]["ports"]
    assert service_port["port"] == 8080
    assert _port(container, service_port["targetPort"]) == 8080
    assert spec["replicas"] == 3

    # The pod's name is the node's id; its state is on its own volume.
    assert container["image"] == "ordering-sandbox:latest"
    env = _env(container)
    assert env["MOCK_NODE_ID"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    (claim,) = spec["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "1Gi"
    mounts = {mount["name"]: mount["mountPath"] for mount in container["volumeMounts"]}
    state = Path(env["MOCK_STATE"]["value"])
    assert state == Path(mounts[claim["metadata"]["name"]]) / "state.db"
    assert pod["spec"]["enableServiceLinks"] is False  # no MOCK_NODES_PORT and the like

    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        check = container[probe]["httpGet"]
        assert check["path"] == "/_mock/health"
        assert _port(container, check["port"]) == 8080

    security = pod["spec"]["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["runAsUser"] == security["fsGroup"] == 10001
    resources = container["resources"]
    assert resources["requests"]["cpu"] == resources["limits"]["cpu"] == "1"
    assert pod["spec"]["terminationGracePeriodSeconds"] > 0
    # A read-only root: the image's MOCK_URL_FILE is on a volume of its own.
    if container["securityContext"].get("readOnlyRootFilesystem"):
        assert "/tmp" in mounts.values()


def test_the_router_resolves_a_sandbox_to_its_pod():
    manifests = _manifests()
    nodes = manifests[("Service", "mock-nodes")]["metadata"]["name"]
    statefulset = manifests[("StatefulSet", "mock")]
    configmap = manifests[("ConfigMap", "mock-router")]
    deployment = manifests[("Deployment", "mock-router")]
    router = manifests[("Service", "mock-router")]
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]

    # The official image, its templates from the ConfigMap.
    assert re.fullmatch(r"nginx:\d+\.\d+(\.\d+)?(-alpine)?", container["image"])
    assert deployment["spec"]["replicas"] == 2
    (name,) = configmap["data"]
    assert name.endswith(".template")
    (volume,) = pod["spec"]["volumes"]
    assert volume["configMap"]["name"] == configmap["metadata"]["name"]
    (mount,) = container["volumeMounts"]
    assert (mount["name"], mount["mountPath"]) == (volume["name"], "/etc/nginx/templates")
    env = _env(container)
    assert env["NGINX_ENTRYPOINT_LOCAL_RESOLVERS"]["value"] == "1"
    assert env["MOCK_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert "tcpSocket" in container["readinessProbe"] or "httpGet" in container["readinessProbe"]

    # The Service: port 80 to nginx's 8080, on the router's pods only.
    assert router["spec"]["type"] == "ClusterIP"
    (port,) = router["spec"]["ports"]
    assert port["port"] == 80 and _port(container, port["targetPort"]) == 8080
    labels = pod["metadata"]["labels"]
    assert router["spec"]["selector"].items() <= labels.items()
    node_labels = statefulset["spec"]["template"]["metadata"]["labels"]
    assert not router["spec"]["selector"].items() <= node_labels.items()

    # The routes: by the sandbox's id to its pod's stable name, creations to any pod,
    # the rest to the first pod.
    template = _template()
    domain = f"{nodes}.${{MOCK_NAMESPACE}}.svc.cluster.local:8080"
    first = f"{statefulset['metadata']['name']}-0"
    routes = dict(
        re.findall(r'^\s+("[^"]+"|default) (\S+);$', _map(template, "$mock_target"), re.M)
    )
    assert routes == {
        "default": f"{first}.{domain}",
        '"POST /_mock/sandboxes"': "mock_any_node",
        f'"~^[A-Z]+ /_mock/sandboxes/sbx-(?<node>{statefulset["metadata"]["name"]}-[0-9]+)'
        f'-[0-9a-f]{{{RANDOM_DIGITS}}}(/|$)"': f"$node.{domain}",
    }
    assert "resolver ${NGINX_LOCAL_RESOLVERS} valid=10s;" in template
    assert "proxy_pass http://$mock_target;" in template
    # Creations: the headless Service's name, every ready pod, re-resolved as the DNS
    # answer expires; one turn for all worker processes (the zone).
    assert _block(template, "upstream mock_any_node") == [
        "zone mock_any_node 1m;",
        f"server {domain} resolve;",
    ]
    # Every pod's sandboxes match the route to that pod.
    (pattern,) = [key for key in routes if key.startswith('"~')]
    regex = re.compile(pattern[2:-1].replace("(?<", "(?P<"))
    for index in range(statefulset["spec"]["replicas"] + 10):
        node_id = f"{statefulset['metadata']['name']}-{index}"
        for path in ("", "/orders", "/_mock/events"):
            sandbox = created_id(node_id, "0123456789ab")
            match = regex.match(f"GET /_mock/sandboxes/{sandbox}{path}")
            assert match and match["node"] == node_id


def _map(config: str, variable: str) -> str:
    """The body of the `map ... VARIABLE { ... }` block."""
    match = re.search(
        r"^\s*map [^\n]* " + re.escape(variable) + r" \{\n(.*?)^\s*\}$", config, re.M | re.S
    )
    assert match, f"no map to {variable}"
    return match[1]


def _block(config: str, opening: str) -> list[str]:
    """The directives of the block opened by the line `opening {`, comments left out."""
    lines = config.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == f"{opening} {{")
    end = next(i for i in range(start, len(lines)) if lines[i].strip() == "}")
    return [
        line.strip()
        for line in lines[start + 1 : end]
        if line.strip() and not line.strip().startswith("#")
    ]


def test_the_kubernetes_router_proxies_as_the_generated_configuration_does():
    """Same headers, buffering, timeouts and 503 as `mock-server cluster nginx-config`."""
    generated = cluster.nginx_config(
        "0.0.0.0:8080",
        [cluster.Node("mock-0", "127.0.0.1:8081"), cluster.Node("mock-1", "127.0.0.1:8082")],
    )
    template = _template()
    for opening in ("location /", "location @node_unavailable"):
        ours = [d for d in _block(template, opening) if not d.startswith("proxy_pass ")]
        theirs = [d for d in _block(generated, opening) if not d.startswith("proxy_pass ")]
        assert ours == theirs, opening
    assert "client_max_body_size 0;" in template
    # The 503's words: the first node's for the default route, the node's for a
    # sandbox, none for a creation.
    details = dict(re.findall(r'^\s+(\S+) (".*");$', _map(generated, "$mock_unavailable"), re.M))
    ours = dict(
        re.findall(r'^\s+("[^"]+"|default) (".*");$', _map(template, "$mock_unavailable"), re.M)
    )
    pattern = '"~^[A-Z]+ /_mock/sandboxes/sbx-(?<node>mock-[0-9]+)-[0-9a-f]{12}(/|$)"'
    assert ours == {
        "default": details["mock_node_mock-0"],
        '"POST /_mock/sandboxes"': details["default"],
        pattern: details["mock_node_mock-1"].replace("mock-1", "$node"),
    }


# -- Kubernetes: the router's template under a real nginx ----------------------------


def _render(template: str, env: dict[str, str]) -> str:
    """What the image's envsubst makes of the template: `$NAME` and `${NAME}` replaced
    for the variables set in its environment, every other `$` left as it is."""
    return re.sub(
        r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))",
        lambda match: env.get(match[1] or match[2], match[0]),
        template,
    )


def _main_config(work: Path, rendered: Path, *, daemon: bool = True) -> Path:
    """A main configuration around the http-level snippet, as the image's nginx.conf
    includes conf.d/*.conf; everything nginx writes goes under `work`."""
    main = work / "nginx.conf"
    main.write_text(
        ("daemon off;\n" if daemon else "")
        + f"pid {work}/nginx.pid;\n"
        + "error_log stderr notice;\n"
        + "events {\n    worker_connections 256;\n}\n"
        + "http {\n    access_log off;\n"
        + "".join(
            f"    {kind}_temp_path {work}/{kind}_temp;\n"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        + f"    include {rendered};\n}}\n"
    )
    return main


def test_the_template_uses_only_what_the_image_defines():
    """envsubst would replace an nginx variable that happens to be set in the pod's
    environment (HOSTNAME, NGINX_VERSION, ...): the template's own are lower case."""
    names = set(re.findall(r"\$\{?([A-Za-z_]\w*)", _template()))
    assert {name for name in names if not name.islower()} == TEMPLATE_VARIABLES
    rendered = _render(_template(), {"NGINX_LOCAL_RESOLVERS": "10.96.0.10", "MOCK_NAMESPACE": "ns"})
    assert "${" not in rendered
    assert "$node.mock-nodes.ns.svc.cluster.local:8080;" in rendered


def _nginx_version(nginx: str) -> tuple[int, ...]:
    banner = subprocess.run([nginx, "-v"], capture_output=True, text=True, check=True).stderr
    match = re.search(r"nginx/(\d+)\.(\d+)\.(\d+)", banner)
    assert match, banner
    return tuple(int(part) for part in match.groups())


def _runnable(rendered: str, nginx: str, addresses: list[str]) -> str:
    """The rendered template as `nginx` runs it: as it is where nginx has `resolve`
    (1.27.3 and later, as the image's); on an older nginx (Debian 12's), the creation
    upstream's server is replaced by `addresses`, what the DNS answers for it and so
    what `resolve` makes of it while those pods are ready."""
    if _nginx_version(nginx) >= RESOLVE_SINCE:
        return rendered
    replaced, count = re.subn(
        r"^( *)server \S+:(\d+) resolve;$",
        lambda line: "\n".join(f"{line[1]}server {a}:{line[2]};" for a in addresses),
        rendered,
        flags=re.M,
    )
    assert count == 1, rendered
    return replaced


def test_the_kubernetes_router_passes_nginx_t(tmp_path):
    nginx = _tool(NGINX, "nginx")
    rendered = tmp_path / "default.conf"
    template = _render(
        _template(), {"NGINX_LOCAL_RESOLVERS": "127.0.0.1", "MOCK_NAMESPACE": "default"}
    )
    rendered.write_text(_runnable(template, nginx, ["127.0.0.2", "127.0.0.3"]))
    main = _main_config(tmp_path, rendered, daemon=False)
    completed = subprocess.run(
        [nginx, "-t", "-e", "stderr", "-p", str(tmp_path), "-c", str(main)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert "test is successful" in completed.stderr
    assert "warn" not in completed.stderr


# -- Kubernetes: the router's template routing real requests --------------------------

NAMESPACE = "orders-ci"
#: Where the stand-in DNS server says each pod is (nothing listens on 127.0.0.5: a pod
#: that is ready but does not answer); mock-3 has no name (not ready).
POD_ADDRESSES = {
    "mock-0": "127.0.0.2",
    "mock-1": "127.0.0.3",
    "mock-2": "127.0.0.4",
    "mock-4": "127.0.0.5",
}
NODE_OF = {address: pod for pod, address in POD_ADDRESSES.items()}
LIVE = ("mock-0", "mock-1", "mock-2")


def _dns_name(host: str) -> str:
    return f"{host}.mock-nodes.{NAMESPACE}.svc.cluster.local"


class _Dns(asyncio.DatagramProtocol):
    """A DNS server as the cluster's: an A record per ready pod, and for the headless
    Service's name, every live pod; any other name does not exist. Counts the
    questions, by name."""

    def __init__(self) -> None:
        self.records = {_dns_name(pod): [address] for pod, address in POD_ADDRESSES.items()}
        self.records[f"mock-nodes.{NAMESPACE}.svc.cluster.local"] = [POD_ADDRESSES[p] for p in LIVE]
        self.asked: collections.Counter[str] = collections.Counter()
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr) -> None:
        ident, flags = struct.unpack("!HH", data[:4])
        labels, at = [], 12
        while data[at]:
            labels.append(data[at + 1 : at + 1 + data[at]].decode("ascii"))
            at += 1 + data[at]
        qtype = struct.unpack("!H", data[at + 1 : at + 3])[0]
        question = data[12 : at + 5]
        name = ".".join(labels).lower()
        self.asked[name] += 1
        addresses = self.records.get(name)
        answers = addresses if addresses is not None and qtype == 1 else []
        rcode = 3 if addresses is None else 0  # NXDOMAIN: no such name
        header = struct.pack(
            "!HHHHHH", ident, 0x8480 | (flags & 0x0100) | rcode, 1, len(answers), 0, 0
        )
        records = b"".join(
            struct.pack("!HHHIH", 0xC00C, 1, 1, 5, 4) + socket.inet_aton(a) for a in answers
        )
        assert self.transport is not None
        self.transport.sendto(header + question + records, addr)


class _Nodes:
    """Stand-in nodes, one per live pod's address on the same port: each answers with
    what it received (which node it is told by the address it was called on). Each is a
    server of its own, so that a stopped one closes its connections as a stopped pod's
    do (nginx 1.29.7 and later keep an upstream's connections open by default)."""

    def __init__(self) -> None:
        self.first_event_read = asyncio.Event()
        self.runners: dict[str, web.AppRunner] = {}
        self.port = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        node = NODE_OF[request.transport.get_extra_info("sockname")[0]]
        body = await request.read()
        if request.path == "/_mock/events":  # an event stream, one event at a time
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await response.write(b"data: first\n\n")
            await asyncio.wait_for(self.first_event_read.wait(), 10)
            await response.write(b"data: second\n\n")
            return response
        return web.json_response(
            {
                "node": node,
                "method": request.method,
                "target": request.raw_path,
                "host": request.headers.get("Host"),
                "forwarded_for": request.headers.get("X-Forwarded-For"),
                "connection": request.headers.get("Connection"),
                "body": len(body),
            }
        )

    async def start(self) -> None:
        sockets = _same_port([POD_ADDRESSES[pod] for pod in LIVE])
        self.port = sockets[0].getsockname()[1]
        for pod, sock in zip(LIVE, sockets, strict=True):
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", self.handle)
            self.runners[pod] = runner = web.AppRunner(app, handle_signals=False)
            await runner.setup()
            await web.SockSite(runner, sock).start()

    async def stop(self, pod: str) -> None:
        await self.runners.pop(pod).cleanup()

    async def close(self) -> None:
        for pod in list(self.runners):
            await self.stop(pod)


def _same_port(hosts: list[str]) -> list[socket.socket]:
    """Listening sockets on one port, one per host (127.0.0.x, all the loopback's)."""
    for _ in range(50):
        sockets: list[socket.socket] = []
        try:
            for host in hosts:
                sock = socket.socket()
                sockets.append(sock)
                sock.bind((host, sockets[0].getsockname()[1] if len(sockets) > 1 else 0))
                sock.listen(64)
            return sockets
        except OSError:
            for sock in sockets:
                sock.close()
    raise AssertionError(f"no port free on all of {hosts}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.asynccontextmanager
async def _router(work: Path, dns_port: int, node_port: int) -> AsyncIterator[str]:
    """The template rendered as the image renders it, run by a real nginx on the
    loopback. Only the ports change: nginx's (8080) and the nodes' (8080), to free ones."""
    nginx = _tool(NGINX, "nginx")
    rendered = _render(
        _template(), {"NGINX_LOCAL_RESOLVERS": f"127.0.0.1:{dns_port}", "MOCK_NAMESPACE": NAMESPACE}
    )
    port = _free_port()
    assert rendered.count("listen 8080;") == 1 and rendered.count(".svc.cluster.local:8080") == 3
    rendered = rendered.replace("listen 8080;", f"listen 127.0.0.1:{port};")
    rendered = rendered.replace(".svc.cluster.local:8080", f".svc.cluster.local:{node_port}")
    live = [POD_ADDRESSES[pod] for pod in LIVE]
    (work / "default.conf").write_text(_runnable(rendered, nginx, live))
    main = _main_config(work, work / "default.conf")
    log = work / "nginx.log"
    with open(log, "wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            nginx,
            "-e",
            "stderr",
            "-p",
            str(work),
            "-c",
            str(main),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        for _ in range(200):
            assert process.returncode is None, log.read_text()
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError(f"nginx does not listen: {log.read_text()}")
        yield f"http://127.0.0.1:{port}"
    finally:
        if process.returncode is None:
            process.terminate()
            await asyncio.wait_for(process.wait(), 10)


async def test_the_kubernetes_router_routes_by_pod_name(tmp_path):
    loop = asyncio.get_running_loop()
    transport, dns = await loop.create_datagram_endpoint(_Dns, local_addr=("127.0.0.1", 0))
    nodes = _Nodes()
    try:
        await nodes.start()
        dns_port = transport.get_extra_info("sockname")[1]
        async with (
            _router(tmp_path, dns_port, nodes.port) as url,
            aiohttp.ClientSession(url, timeout=aiohttp.ClientTimeout(total=15)) as client,
        ):
            await _check_routes(client, url, dns, nodes)
    finally:
        await nodes.close()
        transport.close()


async def _get(client: aiohttp.ClientSession, method: str, path: str, **kwargs) -> tuple[int, dict]:
    async with client.request(method, path, **kwargs) as response:
        return response.status, await response.json(content_type=None)


def _sandbox(pod: str, path: str = "") -> str:
    return f"/_mock/sandboxes/{created_id(pod, '0123456789ab')}{path}"


def _unavailable(pod: str | None) -> dict:
    if pod is None:
        detail = "No node of this cluster answered: a sandbox can be created once one is back"
    else:
        detail = (
            f"The node {pod} of this cluster did not answer: "
            "its sandboxes are unavailable until it is back"
        )
    return {"detail": detail, "code": "node_unavailable"}


async def _check_routes(client: aiohttp.ClientSession, url: str, dns: _Dns, nodes: _Nodes) -> None:
    host = url.removeprefix("http://")
    # A sandbox's paths go to the pod its id names, as the client sent them.
    for pod in LIVE:
        for path in ("", "/orders?limit=5&status=completed", "/oauth/token"):
            status, seen = await _get(client, "GET", _sandbox(pod, path))
            assert (status, seen["node"], seen["target"]) == (200, pod, _sandbox(pod, path))
        assert dns.asked[_dns_name(pod)] >= 1  # looked up at request time
    # The headers the nodes rely on.
    status, seen = await _get(
        client,
        "POST",
        _sandbox("mock-1", "/orders"),
        data=b"x" * 100_000,
        headers={"X-Forwarded-For": "203.0.113.9"},
    )
    assert (status, seen["node"], seen["body"]) == (200, "mock-1", 100_000)
    assert seen["host"] == host  # base_urls name the router
    assert seen["forwarded_for"] == "203.0.113.9, 127.0.0.1"
    assert seen["connection"] in (None, "")

    # Everything else to mock-0: the root paths, the rest of /_mock, ids that are not
    # a sandbox's.
    for method, path in [
        ("GET", "/orders"),
        ("POST", "/oauth/token"),
        ("GET", "/_mock/sandboxes"),
        ("POST", "/_mock/sandboxes/"),
        ("GET", "/_mock/ui"),
        ("GET", "/openapi.json"),
        ("GET", "/_mock/sandboxes/sbx-mock-1-0123456789abc"),  # 13 digits
        ("GET", "/_mock/sandboxes/sbx-mock-1-0123456789AB"),
        ("GET", "/_mock/sandboxes/sbx-mock-x-0123456789ab"),
        ("GET", "/v1/_mock/sandboxes/sbx-mock-1-0123456789ab"),
    ]:
        status, seen = await _get(client, method, path)
        assert (status, seen["node"], seen["target"]) == (200, "mock-0", path), (method, path)

    # Creating a sandbox: every live pod in turn, through the headless Service's name.
    created = collections.Counter()
    for _ in range(10 * len(LIVE)):
        status, seen = await _get(client, "POST", "/_mock/sandboxes", json={"name": "x"})
        assert (status, seen["target"]) == (200, "/_mock/sandboxes")
        created[seen["node"]] += 1
    assert created == {pod: 10 for pod in LIVE}, created
    if _nginx_version(_tool(NGINX, "nginx")) >= RESOLVE_SINCE:
        assert dns.asked[f"mock-nodes.{NAMESPACE}.svc.cluster.local"] >= 1

    # The event stream passes through event by event.
    async with client.get("/_mock/events") as response:
        assert response.status == 200
        assert await asyncio.wait_for(response.content.readuntil(b"\n\n"), 5) == b"data: first\n\n"
        nodes.first_event_read.set()
        assert await asyncio.wait_for(response.content.read(), 5) == b"data: second\n\n"

    # A pod that is not ready (no DNS name), or does not answer: 503 naming it.
    for pod in ("mock-3", "mock-4"):
        async with client.get(_sandbox(pod, "/orders")) as response:
            assert response.status == 503
            assert response.content_type == "application/json"
            assert await response.json() == _unavailable(pod)

    # mock-0 stops: its routes answer 503 naming it; creations go to the others.
    await nodes.stop("mock-0")
    for path in ("/orders", _sandbox("mock-0")):
        assert await _get(client, "GET", path) == (503, _unavailable("mock-0"))
    for _ in range(10):
        status, seen = await _get(client, "POST", "/_mock/sandboxes", json={})
        assert status == 200 and seen["node"] in ("mock-1", "mock-2")
    status, seen = await _get(client, "GET", _sandbox("mock-2"))
    assert (status, seen["node"]) == (200, "mock-2")

    # No pod answers: a creation's 503 names none.
    await nodes.stop("mock-1")
    await nodes.stop("mock-2")
    assert await _get(client, "POST", "/_mock/sandboxes", json={}) == (503, _unavailable(None))
