"""Settings: read once at the edge (CLI / env / fixture), frozen, passed inward.

`load_startup` turns the file paths in `Settings` into the checked `StartupState` the
sandbox starts from (and returns to on reset). Nothing below this module reads the
environment or a path of its own accord.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

from .domain.accounts import AccountSpec, default_accounts, load_accounts
from .domain.catalog import Catalog, load_catalog, parse_catalog
from .domain.randomness import fresh_seed
from .domain.sandbox import StartupState
from .scenarios import builtin_scenarios, load_scenario_paths
from .sourcefile import ConfigError, parse_text

DEFAULT_PORT = 8080
MAX_BODY_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    catalog: str | None = None
    scenarios: tuple[str, ...] = ()
    accounts: str | None = None
    webhook_url: str | None = None
    clock: str = "real"
    time_scale: float = 1.0
    start_time: float | None = None
    seed: int | None = None
    admin_token: str | None = None
    log_format: str = "text"
    cors_origin: str = "*"
    journal_size: int = 1000
    sandbox_ttl: float = 3600.0
    max_sandboxes: int = 1000
    #: `--state PATH`: keep every sandbox's state in this SQLite file (docs/state.md).
    state: str | None = None
    # HTTPS (the README's configuration table): either `tls="self-signed"` (CA written
    # to `tls_ca_out`) or a `tls_cert` + `tls_key` pair; none of them serves plain HTTP.
    tls: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_ca_out: str | None = None
    # Trust for `https://` webhook receivers: the system store, plus `webhook_ca`;
    # `webhook_insecure` turns verification off.
    webhook_ca: str | None = None
    webhook_insecure: bool = False
    #: `--url-file PATH`: once listening, the server writes the URL a local client
    #: calls there (the container's health check reads it: docs/docker.md).
    url_file: str | None = None

    @property
    def https(self) -> bool:
        return self.tls is not None or self.tls_cert is not None


@functools.cache
def embedded_catalog() -> Catalog:
    """Parsed once per process; every sandbox state works on its own deep copy."""
    source = "<built-in>/catalog.json"
    text = (resources.files("mock_server") / "data" / "catalog.json").read_text("utf-8")
    return parse_catalog(parse_text(text, source, json_first=True), source)


def load_startup(settings: Settings) -> StartupState:
    """Read every configured file; raise `ConfigError` listing all problems found."""
    problems: list[str] = []
    catalog = accounts = scenarios = None
    try:
        catalog = load_catalog(settings.catalog) if settings.catalog else embedded_catalog()
    except ConfigError as exc:
        problems.extend(exc.problems)
    try:
        accounts = _accounts(settings)
    except ConfigError as exc:
        problems.extend(exc.problems)
    try:
        scenarios = _scenarios(settings)
    except ConfigError as exc:
        problems.extend(exc.problems)
    if problems:
        raise ConfigError(problems)
    assert catalog is not None and accounts is not None and scenarios is not None
    return StartupState(
        catalog=catalog,
        accounts=accounts,
        scenarios=scenarios,
        seed=settings.seed if settings.seed is not None else fresh_seed(),
        clock_mode=settings.clock,
        time_scale=settings.time_scale,
        start_time=settings.start_time,
        journal_size=settings.journal_size,
    )


def _accounts(settings: Settings) -> tuple[AccountSpec, ...]:
    if settings.accounts:
        return load_accounts(settings.accounts)
    return default_accounts(settings.webhook_url)


def _scenarios(settings: Settings) -> tuple:
    merged = {s.name: s for s in builtin_scenarios()}
    for scenario in load_scenario_paths(settings.scenarios):
        merged[scenario.name] = scenario  # a file may redefine a built-in, e.g. happy_path
    return tuple(merged.values())
