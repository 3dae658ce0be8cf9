"""Settings: read once at the edge (CLI / env / fixture), frozen, passed inward.

`Settings`' field defaults are the server's defaults; `SERVE_OPTIONS` says how a user
sets each field (flag, environment variable, help), and the CLI, `mock-server --help`
and the README's configuration table all show the defaults from there
(tests/test_defaults.py holds the README to it).

`load_startup` turns the file paths in `Settings` into the checked `StartupState` the
sandbox starts from (and returns to on reset). Nothing below this module reads the
environment or a path of its own accord.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields
from importlib import resources
from typing import Any

from .domain.accounts import AccountSpec, default_accounts, load_accounts
from .domain.catalog import Catalog, load_catalog, parse_catalog
from .domain.destinations import DestinationError, DestinationRules
from .domain.quotas import CREATED_DEFAULTS, Quotas
from .domain.randomness import fresh_seed
from .domain.scenarios import builtin_scenarios, load_scenario_paths
from .domain.shapes import NO_SHAPES, load_shapes
from .domain.startup import StartupState
from .sourcefile import ConfigError, parse_text
from .tls import DEFAULT_CA_OUT, SELF_SIGNED

DEFAULT_PORT = 8080
MAX_BODY_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    catalog: str | None = None
    scenarios: tuple[str, ...] = ()
    #: Production's shapes file (docs/shapes.md), or None: the sandbox's own shapes.
    shapes: str | None = None
    accounts: str | None = None
    webhook_url: str | None = None
    clock: str = "real"
    time_scale: float = 1.0
    start_time: float | None = None
    seed: int | None = None
    admin_token: str | None = None
    log_format: str = "text"
    #: `--access-log off`: no line per request (start-up and errors still print).
    access_log: str = "on"
    cors_origin: str = "*"
    journal_size: int = 1000
    sandbox_ttl: float = 3600.0
    max_sandboxes: int = 1000
    #: Merchant calls per second per sandbox (bursts of twice that); None: no limit.
    sandbox_rate: float | None = None
    # What a sandbox may hold (docs/hosting.md, "Quotas"). None: not set, so a created
    # sandbox gets quotas.CREATED_DEFAULTS and the default sandbox none.
    sandbox_max_orders: int | None = None
    sandbox_max_codes: int | None = None
    sandbox_max_scenarios: int | None = None
    sandbox_max_accounts: int | None = None
    sandbox_max_catalog: int | None = None
    sandbox_max_faults: int | None = None
    sandbox_max_queue: int | None = None
    sandbox_max_tokens: int | None = None
    sandbox_max_api_keys: int | None = None
    sandbox_max_adjustments: int | None = None
    sandbox_max_redeliveries: int | None = None
    sandbox_max_streams: int | None = None
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
    # Where webhooks may go (docs/hosting.md): --webhook-allow, --webhook-deny-private.
    webhook_allow: str | None = None
    webhook_deny_private: bool = False
    #: `--url-file PATH`: once listening, the server writes the URL a local client
    #: calls there (the container's health check reads it: docs/docker.md).
    url_file: str | None = None
    # A cluster (docs/cluster.md): `--node-id` tags created sandboxes' ids with this
    # node; `--public-url` is the address clients use (the router's), for base URLs.
    node_id: str | None = None
    public_url: str | None = None

    @property
    def https(self) -> bool:
        return self.tls is not None or self.tls_cert is not None


_FIELD_DEFAULTS = {field.name: field.default for field in fields(Settings)}


@dataclass(frozen=True)
class Option:
    """One setting of `mock-server serve` as a user meets it.

    `name` is the `Settings` field it sets and spells the flag and the environment
    variable: `time_scale` is `--time-scale` and `MOCK_TIME_SCALE`. Its default is that
    field's, so nothing else repeats it.
    """

    name: str
    help: str
    #: What the value parses as: str, int or float; bool is a switch (no value).
    kind: type = str
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    #: The flag may be given again, adding a value; the variable is `os.pathsep`-separated.
    repeatable: bool = False
    #: The default in words, where the field's value is not what a user meets: no value
    #: (`None`: "embedded sample"), or one applied later (`--tls-ca-out`).
    default_text: str | None = None
    #: Only for an option that sets no `Settings` field: `--loop` (the event loop is
    #: chosen before there is an app to hand settings to).
    own_default: str | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return "MOCK_" + self.name.upper()

    @property
    def default(self) -> Any:
        """The value without the flag or its variable: the `Settings` field's default."""
        if self.own_default is not None:
            return self.own_default
        return _FIELD_DEFAULTS[self.name]

    @property
    def shown_default(self) -> str:
        """The default as `--help` and the README say it: the words the option carries,
        else the value as typed on the command line (`8080`, `1`), `none` for no value
        and `off` for a switch."""
        if self.default_text is not None:
            return self.default_text
        value = self.default
        if value is None:
            return "none"
        if isinstance(value, bool):
            return "on" if value else "off"
        if isinstance(value, float):
            return f"{value:g}"
        return str(value)


#: Every option of `mock-server serve`, in the order `--help` lists them.
SERVE_OPTIONS: tuple[Option, ...] = (
    Option("host", "bind address"),
    Option("port", "port, 0 picks a free one", kind=int),
    Option(
        "catalog",
        "catalog snapshot JSON/YAML",
        metavar="PATH",
        default_text="embedded sample",
    ),
    Option(
        "scenarios",
        "scenario file or folder, added to the built-in set",
        metavar="PATH",
        repeatable=True,
        default_text="built-in set",
    ),
    Option("accounts", "accounts YAML", metavar="PATH", default_text="one default account"),
    Option(
        "shapes",
        "production's shapes of answers and events (docs/shapes.md)",
        metavar="PATH",
        default_text="none: the sandbox's own",
    ),
    Option("webhook_url", "webhook URL of the default account", metavar="URL"),
    Option("clock", "clock mode", choices=("real", "manual")),
    Option(
        "time_scale",
        "real clock: virtual time runs X times faster",
        kind=float,
        metavar="X",
    ),
    Option("start_time", "virtual clock start, ISO 8601", metavar="ISO", default_text="now"),
    Option(
        "seed",
        "makes ids, codes and tokens reproducible",
        kind=int,
        metavar="N",
        default_text="random (shown in the banner)",
    ),
    Option("admin_token", "require 'Authorization: Bearer T' on /_mock", metavar="T"),
    Option("log_format", "one line per request", choices=("text", "json")),
    Option(
        "access_log",
        "the line per request: off writes none (start-up and errors still print)",
        choices=("on", "off"),
    ),
    Option(
        "loop",
        "event loop: auto (uvloop when installed), uvloop or asyncio",
        own_default="auto",
    ),
    Option(
        "cors_origin",
        "origins allowed from a browser, comma-separated",
        metavar="ORIGIN",
    ),
    Option("journal_size", "merchant calls kept in the request journal", kind=int, metavar="N"),
    Option(
        "sandbox_ttl",
        "idle seconds before a created sandbox expires",
        kind=float,
        metavar="S",
    ),
    Option("max_sandboxes", "most sandboxes created and alive at once", kind=int, metavar="N"),
    Option(
        "sandbox_rate",
        "each sandbox's merchant calls at most R per second, bursts of 2R",
        kind=float,
        metavar="R",
        default_text="off",
    ),
    *(
        Option(
            f"sandbox_max_{quota}",
            f"most {what} a sandbox holds",
            kind=int,
            metavar="N",
            default_text=f"{CREATED_DEFAULTS[quota]} per created sandbox, none for the default one",
        )
        for quota, what in (
            ("orders", "orders"),
            ("codes", "key units in orders (delivered codes)"),
            ("scenarios", "scenarios loaded at run time"),
            ("accounts", "accounts"),
            ("catalog", "catalog items"),
            ("faults", "injected faults pending"),
            ("queue", "scenario queue entries"),
            ("tokens", "unexpired access tokens"),
            ("api_keys", "API keys"),
            ("adjustments", "ledger adjustments"),
            ("redeliveries", "manual webhook redeliveries"),
            ("streams", "open event and listen streams"),
        )
    ),
    Option(
        "state",
        "keep every sandbox's state in this file and resume from it",
        metavar="PATH",
        default_text="none (memory only)",
    ),
    Option(
        "tls",
        "serve HTTPS with a certificate from a local CA made at start",
        metavar=SELF_SIGNED,
        default_text="off (plain HTTP)",
    ),
    Option(
        "tls_ca_out",
        "--tls self-signed: write the CA here",
        metavar="PATH",
        default_text=f"./{DEFAULT_CA_OUT}",
    ),
    Option("tls_cert", "serve HTTPS with this PEM certificate (chain)", metavar="PATH"),
    Option("tls_key", "the PEM private key of --tls-cert", metavar="PATH"),
    Option(
        "webhook_ca",
        "also trust this CA for https:// webhook receivers",
        metavar="PATH",
        default_text="system trust store",
    ),
    Option(
        "webhook_insecure",
        "do not verify https:// webhook receivers' certificates",
        kind=bool,
    ),
    Option(
        "webhook_allow",
        "reach only these webhook hosts: names, *.suffix, CIDR blocks, comma-separated",
        metavar="LIST",
        default_text="any host but link-local addresses",
    ),
    Option(
        "webhook_deny_private",
        "also refuse loopback, private, shared and unspecified webhook addresses",
        kind=bool,
    ),
    Option(
        "url_file",
        "once listening, write the URL served (for a local client) here",
        metavar="PATH",
    ),
    Option(
        "node_id",
        "in a cluster: created sandboxes' ids are sbx-ID-..., so a router finds this node",
        metavar="ID",
    ),
    Option(
        "public_url",
        "the address clients use (a router's): base URLs and the banner name it",
        metavar="URL",
        default_text="the address a request came to",
    ),
)


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
        rules = webhook_rules(settings)
    except DestinationError as exc:
        raise ConfigError([str(exc)]) from exc
    try:
        catalog = load_catalog(settings.catalog) if settings.catalog else embedded_catalog()
    except ConfigError as exc:
        problems.extend(exc.problems)
    try:
        accounts = _accounts(settings, rules)
    except ConfigError as exc:
        problems.extend(exc.problems)
    try:
        scenarios = _scenarios(settings)
    except ConfigError as exc:
        problems.extend(exc.problems)
    shapes = NO_SHAPES
    try:
        shapes = load_shapes(settings.shapes) if settings.shapes else NO_SHAPES
    except ConfigError as exc:
        problems.extend(exc.problems)
    if problems:
        raise ConfigError(problems)
    assert catalog is not None and accounts is not None and scenarios is not None
    return StartupState(
        webhook_rules=rules,
        catalog=catalog,
        accounts=accounts,
        scenarios=scenarios,
        seed=settings.seed if settings.seed is not None else fresh_seed(),
        clock_mode=settings.clock,
        time_scale=settings.time_scale,
        start_time=settings.start_time,
        journal_size=settings.journal_size,
        shapes=shapes,
    )


def created_quotas(settings: Settings) -> Quotas:
    """What each created sandbox may hold: what is set, else quotas.CREATED_DEFAULTS."""
    return Quotas(**{q: _quota(settings, q, default) for q, default in CREATED_DEFAULTS.items()})


def default_quotas(settings: Settings) -> Quotas:
    """What the default sandbox may hold: only what is set."""
    return Quotas(**{q: _quota(settings, q, None) for q in CREATED_DEFAULTS})


def _quota(settings: Settings, quota: str, otherwise: int | None) -> int | None:
    value = getattr(settings, f"sandbox_max_{quota}")
    return otherwise if value is None else value


def webhook_rules(settings: Settings) -> DestinationRules:
    """`--webhook-allow` and `--webhook-deny-private`; raises `DestinationError`."""
    return DestinationRules.parse(
        settings.webhook_allow, deny_private=settings.webhook_deny_private
    )


def _accounts(settings: Settings, rules: DestinationRules) -> tuple[AccountSpec, ...]:
    if settings.accounts:
        return load_accounts(settings.accounts, rules)
    refused = rules.literal_refusal(settings.webhook_url) if settings.webhook_url else None
    if refused:
        raise ConfigError([f"--webhook-url is refused: {refused}"])
    return default_accounts(settings.webhook_url)


def _scenarios(settings: Settings) -> tuple:
    merged = {s.name: s for s in builtin_scenarios()}
    for scenario in load_scenario_paths(settings.scenarios):
        merged[scenario.name] = scenario  # a file may redefine a built-in, e.g. happy_path
    return tuple(merged.values())
