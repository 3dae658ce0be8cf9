"""A real container engine for the image's tests (tests/test_image.py).

The engine is the machine's `docker` (Debian's `docker.io`; `.ci/run` installs it and
starts `dockerd`). Image registries may be out of reach: then the Dockerfile's base is
stood in for by an image of the same name built from Debian's packages (debootstrap),
and the test session's summary says which base was used. The Dockerfile itself is built
unchanged. Without an engine (or, when the base must be stood in for, without
debootstrap) the image's tests skip, saying so; in CI they fail (tests/services.py).

Only loopback is ever called: containers publish their ports on 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from tests import services
from tests.steady_network import interfaces_steady

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
#: The tag the tests build the Dockerfile as.
IMAGE_TAG = "ordering-sandbox:test"
#: Locally added CAs, Debian's way: a network that intercepts TLS has its CA here, and
#: the build's pip needs it (the Dockerfile's EXTRA_CA_CERTS, docs/docker.md).
LOCAL_CAS = Path("/usr/local/share/ca-certificates")
#: Label on a stand-in base, so a later run can tell it from a pulled one.
STAND_IN_LABEL = "org.ordering-sandbox.stand-in"
#: python:3.11-slim stands in as Debian 12's Python (3.11, as the tag says), with what
#: the slim image has and the Dockerfile uses: venv, `python`, the CA store.
STAND_IN_SUITE = "bookworm"
STAND_IN_PACKAGES = "python3,python3-venv,python-is-python3,ca-certificates"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
#: What tests/conftest.py prints in the session's summary: the engine, the base used.
NOTES: list[str] = []


class EngineError(AssertionError):
    """The engine refused what it was asked: the test asking fails. (An engine that is
    not there at all is `services.require("docker")`'s: skipped, or failed in CI.)"""


#: The commands that add or remove a container's network interfaces, which a browser
#: loading a page meanwhile takes for a changed network (tests/steady_network.py).
CHANGING_INTERFACES = frozenset({"build", "run", "start", "restart", "stop", "kill", "rm"})


def docker(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    if shutil.which("docker") is None:
        raise EngineError("no `docker` on PATH: .ci/run installs Debian's docker.io")
    turn = interfaces_steady() if args[0] in CHANGING_INTERFACES else nullcontext()
    with turn:
        completed = subprocess.run(
            ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False
        )
    if check and completed.returncode != 0:
        raise EngineError(
            f"docker {' '.join(args[:3])}... exited {completed.returncode}:\n"
            f"{completed.stderr[-3000:]}"
        )
    return completed


def require_engine() -> str:
    """The engine's version; fails (never skips) when none answers."""
    completed = docker("version", "--format", "{{.Server.Version}}", check=False, timeout=30)
    if completed.returncode != 0:
        raise EngineError(
            "no container engine answers (`docker version`): .ci/run installs docker.io "
            f"and starts dockerd.\n{completed.stderr.strip()}"
        )
    return completed.stdout.strip()


def base_image() -> str:
    """The `FROM` of the Dockerfile's stages: one base for the build and the image."""
    bases = {
        line.split()[1]
        for line in DOCKERFILE.read_text("utf-8").splitlines()
        if line.upper().startswith("FROM ")
    }
    assert len(bases) == 1, f"expected one base image, found {sorted(bases)}"
    return bases.pop()


@dataclass
class Base:
    name: str
    how: str  # said in the session's summary
    made_here: bool = False  # a stand-in this session built: removed at the end


def provide_base(name: str) -> Base:
    """The base image: present, pulled, or a stand-in built from Debian's packages."""
    present = docker("image", "inspect", name, check=False)
    if present.returncode == 0:
        labels = json.loads(present.stdout)[0]["Config"].get("Labels") or {}
        if STAND_IN_LABEL in labels:
            return Base(
                name, f"{name}: a stand-in left by an earlier run ({labels[STAND_IN_LABEL]})"
            )
        return Base(name, f"{name}: the real base, already in the engine")
    pulled = docker("pull", name, check=False, timeout=300)
    if pulled.returncode == 0:
        return Base(name, f"{name}: the real base, pulled")
    reason = (pulled.stderr.strip().splitlines() or ["no reason given"])[-1]
    build_stand_in(name)
    return Base(
        name,
        f"{name}: a STAND-IN built from Debian {STAND_IN_SUITE} ({STAND_IN_PACKAGES}) "
        f"with debootstrap, because pulling the real base failed: {reason}",
        made_here=True,
    )


def build_stand_in(name: str) -> None:
    """debootstrap a minimal Debian with Python into a folder and import it as `name`."""
    services.require("debootstrap")  # skips the image's tests without it (fails in CI)
    with tempfile.TemporaryDirectory(prefix="stand-in-") as folder:
        root = Path(folder) / "root"
        completed = subprocess.run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={STAND_IN_PACKAGES}",
                STAND_IN_SUITE,
                str(root),
                DEBIAN_MIRROR,
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if completed.returncode != 0:
            raise EngineError(
                f"debootstrap failed:\n{completed.stdout[-2000:]}{completed.stderr[-2000:]}"
            )
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for entry in (root / cache).glob("*"):
                if entry.is_file():
                    entry.unlink()
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        try:
            imported = subprocess.run(
                [
                    "docker",
                    "import",
                    "--change",
                    f"LABEL {STAND_IN_LABEL}=debootstrap-{STAND_IN_SUITE}",
                    "--change",
                    "ENV LANG=C.UTF-8",
                    "--change",
                    'CMD ["python3"]',
                    "-",
                    name,
                ],
                stdin=tar.stdout,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
        finally:
            assert tar.stdout is not None
            tar.stdout.close()
            tar.wait(timeout=60)
        if imported.returncode != 0:
            raise EngineError(f"docker import failed: {imported.stderr}")


def extra_cas() -> str:
    """The machine's locally added CAs (PEM), for the build's pip; '' when none."""
    if not LOCAL_CAS.is_dir():
        return ""
    return "".join(path.read_text("ascii") for path in sorted(LOCAL_CAS.glob("**/*.crt")))


def build_image(tag: str) -> str:
    """Build the repository's Dockerfile as it is; answers what the summary says of it."""
    cas = extra_cas()
    args = ["build", "--tag", tag]
    if cas:
        args += ["--build-arg", f"EXTRA_CA_CERTS={cas}"]
    started = time.monotonic()
    docker(*args, str(ROOT), timeout=900)
    took = time.monotonic() - started
    given = (
        f"{cas.count('BEGIN CERTIFICATE')} extra CA(s) from {LOCAL_CAS}" if cas else "no extra CA"
    )
    return f"{tag}: built from Dockerfile in {took:.0f} s, {given} passed as EXTRA_CA_CERTS"


# -- one image per test session, prepared beside the other tests ----------------------------


class _Preparation:
    """Engine, base and build in a thread of their own, started as soon as the session
    knows it will run the image's tests (tests/conftest.py): the other tests run while
    the base is made and the image built. Its failure fails those tests."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        #: Whether an engine answered: only then is there anything to clean up.
        self.engine = False
        self.base: Base | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="image-build", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        missing = services.missing("docker")
        if missing is not None:  # `prepared_image` skips (or fails) the tests on it
            NOTES.append(f"engine: none, the image's tests did not run ({missing})")
            return
        self.engine = True
        try:
            NOTES.append(f"engine: docker {require_engine()}")
            self.base = provide_base(base_image())
            NOTES.append(f"base: {self.base.how}")
            NOTES.append(f"image: {build_image(self.tag)}")
        except BaseException as error:  # re-raised in the test that asks for the image
            self.error = error


_preparation: _Preparation | None = None


def start_preparing(tag: str) -> None:
    global _preparation
    if _preparation is None:
        _preparation = _Preparation(tag)


def prepared_image(tag: str) -> str:
    """The image `tag`, built from the Dockerfile (waiting for the build if need be).
    Without an engine the test asking is skipped, or failed in CI (tests/services.py)."""
    services.require("docker")
    start_preparing(tag)
    assert _preparation is not None and _preparation.tag == tag
    _preparation.thread.join()
    if _preparation.error is not None:
        raise _preparation.error
    return tag


def clean_up() -> None:
    """At the session's end: remove the image, and the stand-in base this session made
    (the next run builds both again: nothing is cached)."""
    if _preparation is None:
        return
    _preparation.thread.join()
    if not _preparation.engine:
        return
    docker("rmi", "--force", _preparation.tag, check=False)
    if _preparation.base is not None and _preparation.base.made_here:
        docker("rmi", "--force", _preparation.base.name, check=False)
        # The build stage's image, untagged, carries the stand-in's label: it goes too.
        docker("image", "prune", "--force", "--filter", f"label={STAND_IN_LABEL}", check=False)


# -- running containers ------------------------------------------------------------------


@dataclass
class Container:
    id: str
    ports: dict[int, int] = field(default_factory=dict)  # container port -> 127.0.0.1 port

    def url(self, port: int = 8080, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.ports[port]}"

    def logs(self) -> tuple[str, str]:
        completed = docker("logs", self.id)
        return completed.stdout, completed.stderr

    def inspect(self) -> dict:
        return json.loads(docker("inspect", self.id).stdout)[0]

    def health(self) -> str:
        return self.inspect()["State"].get("Health", {}).get("Status", "none")


def start(
    image: str, *args: str, publish: tuple[int, ...] = (8080,), options: tuple[str, ...] = ()
) -> Container:
    """`docker run -d` with each port published on 127.0.0.1 (a free host port)."""
    publishing = [f"--publish=127.0.0.1::{port}" for port in publish]
    container_id = docker("run", "--detach", *publishing, *options, image, *args).stdout.strip()
    container = Container(container_id)
    container.ports = {port: host_port(container_id, port) for port in publish}
    return container


def host_port(container_id: str, port: int) -> int:
    shown = docker("port", container_id, f"{port}/tcp").stdout.split()
    assert shown, f"port {port} is not published"
    return int(shown[0].rsplit(":", 1)[1])


def remove(container: Container) -> None:
    docker("rm", "--force", "--volumes", container.id, check=False)


@contextmanager
def running(image: str, *args: str, **kwargs) -> Iterator[Container]:
    container = start(image, *args, **kwargs)
    try:
        yield container
    finally:
        remove(container)


def wait_for(condition, what: str, timeout: float) -> None:
    """Poll `condition` (a real engine's real time: these are not the sandbox's clock)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)


def wait_listening(container: Container, timeout: float = 30) -> str:
    """The first line of the container's output once it has printed one."""
    lines: list[str] = []

    def printed() -> bool:
        out, _ = container.logs()
        lines[:] = out.splitlines()
        if not lines and container.inspect()["State"]["Status"] == "exited":
            raise AssertionError(f"the container exited: {container.logs()}")
        return bool(lines)

    wait_for(printed, "the listening line", timeout)
    return lines[0]


def call(
    url: str,
    method: str = "GET",
    body: object = None,
    headers: dict[str, str] | None = None,
    context=None,
) -> tuple[int, object]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as error:
        raw = error.read()
        return error.code, json.loads(raw) if raw else None


LISTENING = re.compile(r"^listening on (https?)://0\.0\.0\.0:(\d+)$")
