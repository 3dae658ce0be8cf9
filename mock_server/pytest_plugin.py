"""pytest plugin (entry point `pytest11`): the `mock_server` and `webhook_receiver`
fixtures, the `mock_server` marker and the `--mock-server-url` option (docs/pytest.md).

In-process (the default), each test gets a fresh sandbox on a free port, in its own
thread and event loop, with a manual clock. With `--mock-server-url URL` the same
fixtures drive an already running server: each test gets a sandbox of its own there
(docs/pytest.md, "Against a running instance"), created with the marker's options and
deleted at teardown, so parallel workers (`pytest -n 8`) sharing one server never see
each other's orders or clocks. With `--mock-server-listen` too, a test's `webhook_receiver`
gets the sandbox's webhooks through a `mock-server listen` client (`ListenerThread`)
instead of a webhook URL the server would have to reach (docs/pytest.md).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.version import InvalidVersion, Version

from . import loops, pytest_coverage
from .clock import parse_iso
from .config import Settings
from .listen import ListenerThread
from .sourcefile import read_file
from .testing import SandboxHandle, ServerThread, WebhookReceiver

MARKER_OPTIONS = ("catalog", "scenarios", "accounts", "clock", "seed", "tls")
SANDBOXES_PATH = "/_mock/sandboxes"
DEFAULT_START = "2026-01-01T00:00:00Z"


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    group = parser.getgroup("mock-server", "ordering sandbox")
    group.addoption(
        "--mock-server-url", default=None, help="run mock_server tests against this running sandbox"
    )
    group.addoption(
        "--mock-server-admin-token",
        default=None,
        help="admin token of the running sandbox (--admin-token)",
    )
    group.addoption(
        "--mock-server-ca",
        default=None,
        help="CA certificate of a running sandbox served over https:// (its --tls-ca-out)",
    )
    group.addoption(
        "--mock-server-listen",
        action="store_true",
        default=False,
        help="with --mock-server-url: webhook_receiver gets each test sandbox's webhooks "
        "through a `mock-server listen` connection, for a server that cannot reach this "
        "machine (no webhook URL is set)",
    )
    group.addoption(
        "--mock-server-loop",
        default="auto",
        choices=loops.CHOICES,
        help="event loop of in-process sandboxes: auto (uvloop when installed), uvloop, asyncio",
    )
    pytest_coverage.add_options(group)
    if _asyncio_takes_fixture_scope():
        pluginmanager.register(_AsyncioFixtureLoopScope(parser), "mock-server-asyncio-loop-scope")


# -- pytest-asyncio's fixture loop scope (docs/pytest.md, "Async tests") -------------------
#
# pytest-asyncio comes with pytest-aiohttp (the test extra) and is then loaded into every
# pytest run of the environment. When the project's configuration leaves its
# `asyncio_default_fixture_loop_scope` option unset, it prints a PytestDeprecationWarning
# at every run, whether or not the project has an async fixture: a user who only wrote a
# test with the `mock_server` fixture (which is synchronous, its server on a thread of its
# own) saw it on every run. Unset, an async fixture's event loop is as wide as the
# fixture's own scope; pytest-asyncio 1.5 names that behaviour `fixture-scope` and takes
# it as the option's value without a warning. So this plugin makes `fixture-scope` the
# option's default (`Parser.addini`, registering the option again with that default):
# nothing runs differently, and a value the project sets, in its configuration file or
# with `-o`, is still the one used. An older pytest-asyncio knows no such value; there
# nothing is changed.

#: pytest-asyncio's option, and the value that keeps what an unset option does.
ASYNCIO_LOOP_SCOPE_OPTION = "asyncio_default_fixture_loop_scope"
ASYNCIO_FIXTURE_SCOPE = "fixture-scope"
#: The first pytest-asyncio that takes `fixture-scope`.
_ASYNCIO_WITH_FIXTURE_SCOPE = Version("1.5")


def _asyncio_takes_fixture_scope() -> bool:
    """Whether the installed pytest-asyncio (if any) takes `fixture-scope`."""
    try:
        return Version(importlib.metadata.version("pytest-asyncio")) >= _ASYNCIO_WITH_FIXTURE_SCOPE
    except (importlib.metadata.PackageNotFoundError, InvalidVersion):
        return False


class _AsyncioFixtureLoopScope:
    """Gives pytest-asyncio's option its default once pytest-asyncio has declared it:
    `pytest_plugin_registered` is called for the plugins registered before this one too,
    so the order in which pytest loads the two plugins does not matter."""

    def __init__(self, parser: pytest.Parser) -> None:
        self.parser = parser

    def pytest_plugin_registered(self, plugin: object) -> None:
        if getattr(plugin, "__name__", None) != "pytest_asyncio.plugin":
            return
        self.parser.addini(
            ASYNCIO_LOOP_SCOPE_OPTION,
            help="default scope of the asyncio event loop used to execute async fixtures "
            f"(default: {ASYNCIO_FIXTURE_SCOPE}, each fixture's own scope, as when unset; "
            "the ordering-sandbox plugin sets this default)",
            type="string",
            default=ASYNCIO_FIXTURE_SCOPE,
        )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--mock-server-listen") and not config.getoption("--mock-server-url"):
        raise pytest.UsageError(
            "--mock-server-listen needs --mock-server-url: it forwards the webhooks of a "
            "running server's sandboxes (in-process sandboxes reach webhook_receiver as they are)"
        )
    pytest_coverage.configure(config)
    config.addinivalue_line(
        "markers",
        "mock_server(catalog=None, scenarios=None, accounts=None, clock='manual', seed=0, "
        "tls=False): "
        "configure the sandbox of the mock_server fixture",
    )


def _marker_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    marker = request.node.get_closest_marker("mock_server")
    options = dict(marker.kwargs) if marker else {}
    unknown = sorted(set(options) - set(MARKER_OPTIONS))
    if unknown:
        raise pytest.UsageError(
            f"unknown mock_server marker option {unknown[0]!r}; known: {', '.join(MARKER_OPTIONS)}"
        )
    return options


def _paths(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str | Path):
        return (str(value),)
    return tuple(str(v) for v in value)


@pytest.fixture
def webhook_receiver() -> Iterator[WebhookReceiver]:
    """A local endpoint recording webhook deliveries and verifying their signatures."""
    receiver = WebhookReceiver()
    yield receiver
    receiver.close()


@pytest.fixture
def mock_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SandboxHandle]:
    """A sandbox for this test; see `mock_server.testing.SandboxHandle` for the handle."""
    options = _marker_options(request)
    url = request.config.getoption("--mock-server-url")
    with contextlib.ExitStack() as cleanup:
        if url:
            handle = _remote(request, url, options, cleanup)
        else:
            settings = _local_settings(options, tmp_path)
            loop = request.config.getoption("--mock-server-loop")
            server = ServerThread(settings, loop=loop).start()
            cleanup.callback(server.stop)
            handle = SandboxHandle(server.url, ca_path=settings.tls_ca_out)
        if "webhook_receiver" in request.fixturenames:
            receiver: WebhookReceiver = request.getfixturevalue("webhook_receiver")
            receiver.secret = handle.webhook_secret
            if url and request.config.getoption("--mock-server-listen"):
                # The server may not reach this machine: the webhooks come to the receiver
                # through a listener connected from here. Stopped before the sandbox goes.
                listener = ListenerThread(
                    handle.url,
                    receiver.url,
                    account=handle.account_id,
                    control_token=handle.admin_token,
                    ca_path=handle.ca_path,
                )
                listener.start()
                cleanup.callback(listener.stop)
            else:
                handle.set_webhook_url(receiver.url)
        yield handle
        pytest_coverage.record(request.config, lambda: handle.control("GET", "/_mock/coverage"))
        # Like pytest-httpserver: what broke on the server's side fails the test.
        failures = handle.job_failures()
        if failures:
            pytest.fail(f"the sandbox's background jobs failed: {failures}", pytrace=False)


def _local_settings(options: dict[str, Any], tmp_path: Path) -> Settings:
    catalog = options.get("catalog")
    if isinstance(catalog, list):  # item dicts given inline
        path = tmp_path / "mock-server-catalog.json"
        path.write_text(json.dumps({"items": catalog}))
        catalog = str(path)
    return Settings(
        host="127.0.0.1",
        port=0,
        catalog=str(catalog) if catalog else None,
        scenarios=_paths(options.get("scenarios")),
        accounts=str(options["accounts"]) if options.get("accounts") else None,
        clock=options.get("clock", "manual"),
        seed=options.get("seed", 0),
        start_time=parse_iso(DEFAULT_START) if options.get("clock", "manual") == "manual" else None,
        # tls=True: HTTPS from a local CA whose certificate is the handle's `ca_path`
        tls="self-signed" if options.get("tls") else None,
        tls_ca_out=str(tmp_path / "mock-server-ca.pem") if options.get("tls") else None,
    )


def _remote(
    request: pytest.FixtureRequest,
    url: str,
    options: dict[str, Any],
    cleanup: contextlib.ExitStack,
) -> SandboxHandle:
    """A sandbox of this test's own on the server at `url` (a server's root, or any
    sandbox's base URL on it), deleted when the test ends."""
    ca_path = request.config.getoption("--mock-server-ca")
    server = SandboxHandle(
        url.rstrip("/").partition(SANDBOXES_PATH)[0],
        admin_token=request.config.getoption("--mock-server-admin-token"),
        ca_path=ca_path,
    )
    clock = options.get("clock", "manual")
    body: dict[str, Any] = {"seed": options.get("seed", 0), "clock": clock}
    if clock == "manual":
        body["start_time"] = DEFAULT_START
    catalog = options.get("catalog")
    if catalog is not None:
        body["catalog"] = {"items": catalog} if isinstance(catalog, list) else read_file(catalog)
    if options.get("accounts"):
        body["accounts"] = read_file(options["accounts"])
    created = server.control("POST", SANDBOXES_PATH, body)
    cleanup.callback(server.control, "DELETE", f"{SANDBOXES_PATH}/{created['id']}")
    handle = SandboxHandle(
        created["base_url"], admin_token=created["control_token"], ca_path=ca_path
    )
    # Scenario files go one by one through the control API, so that a mistake in one is
    # reported with its own file's line numbers.
    for path in _paths(options.get("scenarios")):
        folder = Path(path)
        files = sorted(folder.iterdir()) if folder.is_dir() else [folder]
        for file in files:
            if file.suffix in (".yaml", ".yml", ".json"):
                kind = "application/json" if file.suffix == ".json" else "application/yaml"
                handle.control("POST", "/_mock/scenarios", file.read_bytes(), kind)
    return handle
