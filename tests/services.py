"""What the service tests need from the machine, and what happens when it lacks it.

Some tests drive real programs that pip cannot install: a container engine (the
image's tests), Chromium (the dashboard's), nginx and docker-compose (the cluster's
router, deploy/), debootstrap (a stand-in base image), curl (the README's walkthrough).
On a developer's machine without one of them, the tests that need it are skipped, the
reason naming what is missing and how to get it. In CI they are required: `.ci/run`
sets `MOCK_SERVER_TEST_SERVICES=required`, and then a missing service fails the test
instead (a browser or service test that cannot run in CI fails, never skips).

A test (or a fixture) says what it needs with `require("docker")`; each service's
check is one function below, its answer kept for the session.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Callable

import pytest

#: Set by .ci/run: `required` makes a missing service fail its tests instead of skipping.
REQUIRED_VARIABLE = "MOCK_SERVER_TEST_SERVICES"
REQUIRED = "required"
#: Debian's Chromium, which Playwright drives (its own browser downloads are out of reach
#: in CI); DASHBOARD_CHROMIUM points at another binary.
CHROMIUM = os.environ.get("DASHBOARD_CHROMIUM", "/usr/bin/chromium")
#: Debian's nginx (the cluster's router and deploy/'s are run and checked with it).
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def required() -> bool:
    """Whether a missing service fails the tests that need it (CI) instead of skipping."""
    return os.environ.get(REQUIRED_VARIABLE, "").strip().lower() == REQUIRED


# -- one check per service: None when it is there, else what is missing -------------------


@functools.cache
def docker() -> str | None:
    """A container engine that answers `docker version` (client and server)."""
    if shutil.which("docker") is None:
        return "no `docker` command on PATH"
    try:
        completed = subprocess.run(
            ["docker", "version", "--format", "{{.Server.Version}}"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "`docker version` got no answer from the engine within 30 s"
    if completed.returncode != 0:
        said = (completed.stderr.strip().splitlines() or ["no reason given"])[-1]
        return f"no container engine answers `docker version` ({said})"
    return None


@functools.cache
def chromium() -> str | None:
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM}"
    return None


@functools.cache
def nginx() -> str | None:
    if not os.access(NGINX, os.X_OK):
        return f"no nginx at {NGINX}"
    return None


def _on_path(command: str) -> str | None:
    return None if shutil.which(command) else f"no `{command}` command on PATH"


@functools.cache
def debootstrap() -> str | None:
    return _on_path("debootstrap")


@functools.cache
def docker_compose() -> str | None:
    return _on_path("docker-compose")


@functools.cache
def curl() -> str | None:
    return _on_path("curl")


#: Each service: its check, and how to get it (Debian's packages, as .ci/run installs them).
SERVICES: dict[str, tuple[Callable[[], str | None], str]] = {
    "docker": (
        docker,
        "install Debian's docker.io and start dockerd (`sudo dockerd &`); .ci/run does both",
    ),
    "chromium": (
        chromium,
        "`sudo apt-get install chromium`, or set DASHBOARD_CHROMIUM to a Chromium binary",
    ),
    "nginx": (nginx, "`sudo apt-get install nginx`"),
    "debootstrap": (
        debootstrap,
        "`sudo apt-get install debootstrap` (needed when the base image cannot be pulled)",
    ),
    "docker-compose": (docker_compose, "`sudo apt-get install docker-compose`"),
    "curl": (curl, "`sudo apt-get install curl`"),
}


def missing(service: str) -> str | None:
    """Why `service` cannot be used here (what is missing and how to get it), or None."""
    check, how = SERVICES[service]
    lacking = check()
    return None if lacking is None else f"{service}: {lacking}; {how}"


def require(service: str) -> None:
    """Return when `service` is there; else skip the test asking for it, or, when
    MOCK_SERVER_TEST_SERVICES=required (CI), fail it."""
    reason = missing(service)
    if reason is None:
        return
    if required():
        pytest.fail(
            f"{reason} ({REQUIRED_VARIABLE}={REQUIRED}: a service test that cannot run "
            "fails here, it does not skip)",
            pytrace=False,
        )
    pytest.skip(f"{reason} (without it this test is skipped; CI requires it)")
