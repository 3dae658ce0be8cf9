"""`mock-server`: serve (the default), validate config files, generate a catalog.

Every flag has an environment variable (the README's configuration table); a flag beats
its variable. Flags, variables, help and defaults all come from `config.SERVE_OPTIONS`.
Configuration problems exit 1 with one `file:line: reason` per problem on stderr.
"""

from __future__ import annotations

# ruff: noqa: E402 - the collector is switched off before the imports below.
import gc

# `mock-server` imports everything it serves with (aiohttp, the domain) before `main`
# runs: objects that live as long as the process, in which the cyclic collector finds
# nothing, at a cost of ~10 ms of each start (bench/FINDINGS.md section 17). It is off
# while they load, and back as it was once they have.
_COLLECTING = gc.isenabled()
gc.disable()

import argparse
import asyncio
import contextlib
import dataclasses
import importlib
import json
import math
import os
import signal
import ssl
import sys
import urllib.parse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import loops, tls
from .clock import ClockError, parse_iso
from .config import SERVE_OPTIONS, Option, Settings, load_startup, webhook_rules
from .domain.destinations import DestinationError, DestinationRules
from .domain.sandbox_ids import NODE_ID
from .domain.sandbox_options import MAX_TTL
from .domain.startup import StartupState
from .errors import StateFileError
from .logs import FLUSH_INTERVAL, LineSink, access_log_options, configure_logging
from .sourcefile import ConfigError

if _COLLECTING:
    gc.enable()

if TYPE_CHECKING:
    from .app import App
    from .serving import Serving

COMMANDS = (
    "serve",
    "validate",
    "catalog",
    "conformance",
    "cluster",
    "listen",
    "record",
    "compare",
    "calibrate",
    "recording",
)
#: The commands of recorded sessions (docs/recording.md): `mock_server.recording`'s
#: module that holds each one's `main`.
RECORDING_COMMANDS = {
    "record": "recorder.record",
    "compare": "analysis.compare",
    "calibrate": "analysis.calibrate",
    "recording": "analysis.har",
}
#: `mock-server --help`'s list: every command of `COMMANDS`, one line each.
SUB_COMMANDS = """\
  serve (the default)   the sandbox server: the options below
  validate PATH...      check config files (file:line: reason)
  catalog generate      write a catalog snapshot
  conformance --base-url URL --api-key KEY
                        probe a server's answers against the spec
  cluster nginx-config --listen HOST:PORT --node ID=HOST:PORT...
                        the proxy configuration of a cluster
  listen --base-url URL --forward-to URL
                        bring a hosted sandbox's webhooks to this machine
  record --upstream URL --out FILE
                        record a client's traffic with the provider
  compare FILE...       replay recordings against a sandbox: what would differ
  calibrate FILE... [--out PATH]
                        scenarios (and shapes) that behave like recordings
  recording export --har FILE
                        write a recording as HAR 1.2
  recording show FILE   each recorded order's life and deliveries
"""
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
_OPTIONS_BY_NAME = {option.name: option for option in SERVE_OPTIONS}


def _env(name: str, default: Any = None) -> Any:
    value = os.environ.get(name)
    return value if value not in (None, "") else default


def serve_parser() -> argparse.ArgumentParser:
    """The parser of `mock-server [serve]`, one argument per `config.SERVE_OPTIONS`."""
    parser = argparse.ArgumentParser(
        prog="mock-server",
        description="A high-fidelity sandbox of the digital-goods ordering service.\n\n"
        "Sub-commands (mock-server COMMAND --help says more):\n" + SUB_COMMANDS,
        # Each help line as written, unwrapped: a wrapped one could break a path or a
        # flag at its hyphen (`./mock-server-ca.pem`), and lines are short anyway.
        formatter_class=argparse.RawTextHelpFormatter,
    )
    for option in SERVE_OPTIONS:
        parser.add_argument(option.flag, **_argument(option))
    return parser


def _argument(option: Option) -> dict[str, Any]:
    """`add_argument`'s keywords for `option`. A switch and a repeatable option read
    their variable after parsing (`_switch`, `_scenarios`); any other takes
    its variable, else the source's default, as argparse's default."""
    argument: dict[str, Any] = {"help": _help(option)}
    if option.kind is bool:
        return {**argument, "action": "store_true", "default": None}
    argument["metavar"] = option.metavar
    if option.repeatable:
        return {**argument, "action": "append", "default": None}
    argument["default"] = _env(option.env, option.default)
    if option.kind is not str:
        argument["type"] = option.kind
    if option.choices:
        argument["choices"] = option.choices
    return argument


def _help(option: Option) -> str:
    """`--help`'s line: what the option does, its variable and its default."""
    if option.kind is bool:
        variable = f"{option.env}={_TRUE[0]}"
    elif option.repeatable:
        variable = f"repeatable; {option.env}, '{os.pathsep}'-separated"
    else:
        variable = option.env
    text = f"{option.help} [{variable}; default: {option.shown_default}]"
    return text.replace("%", "%%")  # argparse formats help with %


def parse_settings(argv: Sequence[str]) -> Settings:
    """argv + environment -> Settings; bad values exit 2 with argparse's message."""
    return parse_serve(argv)[0]


def parse_serve(argv: Sequence[str]) -> tuple[Settings, str]:
    """argv + environment -> (Settings, the event loop to serve on: uvloop or asyncio)."""
    parser = serve_parser()
    _refuse_malformed_env(parser)
    args = parser.parse_args(list(argv))
    scenarios = _scenarios(args.scenarios)
    start_time = _start_time(parser, args.start_time)
    _check_ranges(parser, args)
    try:
        loop = loops.resolve(args.loop)
    except loops.LoopError as exc:
        parser.error(str(exc))
    webhook_insecure = _switch(parser, args.webhook_insecure, "webhook_insecure")
    _check_tls(parser, args, webhook_insecure)
    deny_private, _ = _webhook_rules(parser, args)
    # Every option names its `Settings` field (`config.Option`); these few are read
    # further than argparse reads them.
    read = {
        "scenarios": scenarios,
        "start_time": start_time,
        "seed": int(args.seed) if args.seed is not None else None,
        "tls_ca_out": (args.tls_ca_out or tls.DEFAULT_CA_OUT) if args.tls else None,
        "webhook_insecure": webhook_insecure,
        "webhook_deny_private": deny_private,
    }
    fields = {field.name for field in dataclasses.fields(Settings)}
    given = {o.name: getattr(args, o.name) for o in SERVE_OPTIONS if o.name in fields}
    settings = Settings(**(given | read))
    return settings, loop


#: The options of `mock-server serve` that `mock-server validate` takes too: a file is
#: checked against the webhook rules a server started with them applies.
VALIDATE_OPTIONS = ("webhook_allow", "webhook_deny_private")


def validate_parser() -> argparse.ArgumentParser:
    """The parser of `mock-server validate PATH...`: the webhook rules' options are
    serve's own (`config.SERVE_OPTIONS`: same flags, variables and defaults)."""
    parser = argparse.ArgumentParser(
        prog="mock-server validate",
        description="Check catalog, accounts, scenario and state files without serving.\n"
        "With --webhook-allow/--webhook-deny-private (or their variables), a webhook_url\n"
        "is checked as a server started with them checks it.",
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH")
    for name in VALIDATE_OPTIONS:
        option = _OPTIONS_BY_NAME[name]
        parser.add_argument(option.flag, **_argument(option))
    return parser


def parse_validate(argv: Sequence[str]) -> tuple[list[str], DestinationRules]:
    """argv + environment -> (the paths to check, the webhook rules to check them
    against); bad values exit 2 with argparse's message, as serve's do."""
    parser = validate_parser()
    args = parser.parse_args(list(argv))
    _, rules = _webhook_rules(parser, args)
    return args.paths, rules


def _webhook_rules(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> tuple[bool, DestinationRules]:
    """`--webhook-deny-private` (flag or variable) and the rules it and `--webhook-allow`
    make, built as a server builds them (`config.webhook_rules`); an entry of the list
    that is no host name, `*.suffix` or CIDR block exits 2."""
    deny_private = _switch(parser, args.webhook_deny_private, "webhook_deny_private")
    server = Settings(webhook_allow=args.webhook_allow, webhook_deny_private=deny_private)
    try:
        return deny_private, webhook_rules(server)
    except DestinationError as exc:
        parser.error(str(exc))


def _refuse_malformed_env(parser: argparse.ArgumentParser) -> None:
    """A variable that does not parse, or names no allowed choice, is reported even
    when a flag overrides it: argparse checks neither in a default it was given."""
    for option in SERVE_OPTIONS:
        value = _env(option.env)
        if value is None:
            continue
        if option.kind in (int, float):
            try:
                option.kind(value)
            except ValueError:
                parser.error(f"{option.env}: invalid {option.kind.__name__} value {value!r}")
        if option.choices and value not in option.choices:
            allowed = ", ".join(option.choices)
            parser.error(f"{option.env}: invalid choice {value!r} (choose from {allowed})")


def _scenarios(flags: list[str] | None) -> tuple[str, ...]:
    """`--scenarios`, given any number of times; else `MOCK_SCENARIOS`'s paths."""
    if flags is not None:
        return tuple(flags)
    option = _OPTIONS_BY_NAME["scenarios"]
    paths = _env(option.env)
    if paths is None:
        return option.default
    return tuple(path for path in paths.split(os.pathsep) if path)


def _start_time(parser: argparse.ArgumentParser, text: str | None) -> float | None:
    if not text:
        return None
    try:
        return parse_iso(text)
    except ClockError as exc:
        parser.error(f"--start-time: {exc}")


def _check_ranges(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if not math.isfinite(args.time_scale) or args.time_scale <= 0:
        parser.error("--time-scale must be a finite number > 0")
    if not 0 <= args.port <= 65535:
        parser.error("--port must be 0..65535")
    if args.journal_size < 0:
        parser.error("--journal-size must be >= 0")
    if not math.isfinite(args.sandbox_ttl) or not 0 < args.sandbox_ttl <= MAX_TTL:
        parser.error(
            f"--sandbox-ttl must be a number of seconds > 0 and <= {MAX_TTL:.0f} (30 days)"
        )
    if args.max_sandboxes < 0:
        parser.error("--max-sandboxes must be >= 0")
    for option in SERVE_OPTIONS:
        value = getattr(args, option.name, None)
        if option.name.startswith("sandbox_max_") and value is not None and value < 0:
            parser.error(f"{option.flag} must be >= 0")
    if args.sandbox_rate is not None and not (
        math.isfinite(args.sandbox_rate) and args.sandbox_rate > 0
    ):
        parser.error("--sandbox-rate must be a number of calls per second > 0")
    if args.node_id is not None and not NODE_ID.fullmatch(args.node_id):
        parser.error("--node-id must be 1 to 40 lower-case letters, digits and '-'")
    if args.public_url is not None and not _is_server_url(args.public_url):
        parser.error("--public-url must be an http:// or https:// URL with a host")


def _is_server_url(text: str) -> bool:
    """An http(s) URL naming a host, with no query or fragment (base URLs extend it)."""
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return False
    return (
        parts.scheme in ("http", "https")
        and bool(parts.hostname)
        and not (parts.query or parts.fragment or "?" in text or "#" in text)
    )


def _check_tls(
    parser: argparse.ArgumentParser, args: argparse.Namespace, webhook_insecure: bool
) -> None:
    problem = tls.flag_problem(
        mode=args.tls,
        cert=args.tls_cert,
        key=args.tls_key,
        ca_out=args.tls_ca_out,
        webhook_ca=args.webhook_ca,
        webhook_insecure=webhook_insecure,
    )
    if problem:
        parser.error(problem)


def _switch(parser: argparse.ArgumentParser, flag: bool | None, name: str) -> bool:
    """A switch: on if its flag is given, else as its variable says (1/true/yes...)."""
    if flag:
        return True
    option = _OPTIONS_BY_NAME[name]
    value = _env(option.env)
    if value is None:
        return option.default
    value = value.strip().lower()
    if value not in _TRUE + _FALSE:
        parser.error(f"{option.env}: {value!r} is neither of {_TRUE + _FALSE}")
    return value in _TRUE


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and argv[0] in COMMANDS else "serve"
    if argv and argv[0] in COMMANDS:
        argv = argv[1:]
    if command == "serve":
        return _serve(argv)
    try:
        status = _command(command, argv)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader of a piped report stopped (`| head`): end quietly, as Unix tools do
        # (Python's `signal` documentation, "Note on SIGPIPE").
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return status


def _command(command: str, argv: list[str]) -> int:
    if command == "validate":
        from .validate import run as validate

        return validate(*parse_validate(argv))
    if command == "catalog":
        from .catalog_gen import main as catalog_main

        return catalog_main(argv)
    if command == "conformance":
        from .conformance import main as conformance_main

        return conformance_main(argv)
    if command == "cluster":
        from .cluster import main as cluster_main

        return cluster_main(argv)
    if command == "listen":
        from .listen import main as listen_main

        return listen_main(argv)
    if command in RECORDING_COMMANDS:
        module = importlib.import_module(f".recording.{RECORDING_COMMANDS[command]}", __package__)
        return module.main(argv)
    raise AssertionError(f"no such command: {command}")  # pragma: no cover - COMMANDS


def _serve(argv: list[str]) -> int:
    settings, loop = parse_serve(argv)
    try:
        try:
            startup = load_startup(settings)
        except ConfigError as exc:
            for problem in exc.problems:
                print(problem, file=sys.stderr)
            return 1
        configure_logging()
        with asyncio.Runner(loop_factory=loops.factory(loop)) as runner:
            runner.run(serve(settings, startup))
    except KeyboardInterrupt:
        pass
    except StateFileError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


async def serve(settings: Settings, startup: StartupState) -> None:
    """Serve until SIGTERM or SIGINT, then stop cleanly."""
    # Start-up (the app's modules, a state file's restore above all) builds objects that
    # live as long as the process and frees almost none: no cyclic collection until it
    # is over.
    gc.disable()
    from .app import create_app
    from .serving import Serving

    app = create_app(settings, startup=startup)
    # `--access-log off`: aiohttp's server is given no access log at all (the README's
    # configuration table).
    access_lines = LineSink() if settings.access_log == "on" else None
    serving = Serving(
        app,
        settings.host,
        settings.port,
        ssl_context=_server_ssl(settings),
        **access_log_options(access_lines, settings.log_format),
    )
    try:
        host, port = await serving.start()
    except OSError as exc:
        print(f"cannot listen on {settings.host}:{settings.port}: {exc.strerror}", file=sys.stderr)
        raise SystemExit(1) from exc
    scheme = "https" if settings.https else "http"
    if settings.url_file:
        await _write_url_file(serving, settings.url_file, local_url(settings, host, port))
    print(f"listening on {scheme}://{_url_host(host)}:{port}", flush=True)
    print(banner(app, banner_url(settings, host, port)), flush=True)
    _settle_garbage_collector()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    # Access lines wait in `access_lines` (logs.LineSink): written every FLUSH_INTERVAL,
    # and the last ones once the server has stopped, however it stops.
    flush_every = FLUSH_INTERVAL if access_lines is not None else None
    try:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), flush_every)
            if access_lines is not None:
                access_lines.flush()
        if settings.url_file:
            with contextlib.suppress(OSError):
                os.remove(settings.url_file)
        await serving.stop()
    finally:
        if access_lines is not None:
            access_lines.flush()


async def _write_url_file(serving: Serving, path: str, url: str) -> None:
    """`--url-file`: the URL a client on this machine calls, written whole (a reader
    never sees half of it); a file that cannot be written stops the start, exit 1."""
    partial = f"{path}.{os.getpid()}.tmp"
    try:
        with open(partial, "w", encoding="utf-8") as file:
            file.write(url + "\n")
        os.replace(partial, path)
    except OSError as exc:
        print(f"cannot write the URL file {path}: {exc.strerror}", file=sys.stderr)
        await serving.stop()
        raise SystemExit(1) from exc


def _server_ssl(settings: Settings) -> ssl.SSLContext | None:
    """The HTTPS context to listen with (None: plain HTTP). The flags were checked at
    parse time; what still fails here (a file changed since, the CA not writable) stops
    the start with one line naming the file, exit 1."""
    try:
        if settings.tls_cert and settings.tls_key:
            return tls.server_context(settings.tls_cert, settings.tls_key)
        if settings.tls and settings.tls_ca_out:
            return tls.self_signed(settings.host, settings.tls_ca_out)
    except (tls.TlsError, OSError) as exc:
        print(f"cannot serve HTTPS: {exc}", file=sys.stderr)
        raise SystemExit(1) from exc
    return None


def _settle_garbage_collector() -> None:
    """Everything built at start-up (a restored state included) lives as long as the
    process: move it out of the collector's way, frozen as it is (a collection first
    would find almost no garbage, at a cost that grows with the state restored). Then
    collect young objects often and in small steps: orders live on, so each young
    collection's time is its survivors. A large first generation made each pause long
    and would have built a second generation slow to collect; 2,000 and 5 keep each
    pause short at the same total cost (bench/FINDINGS.md section 7). Full collections
    stay rare: what a request allocates is almost all freed by reference counting (an
    order and its delivery, which refer to each other, live on anyway)."""
    gc.freeze()
    gc.set_threshold(2_000, 5, 1_000)
    gc.enable()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def local_host(host: str) -> str:
    """Where a client on this machine reaches a server bound to `host`: loopback for
    the wildcard addresses, the address itself otherwise."""
    return _url_host({"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host))


def local_url(settings: Settings, host: str, port: int) -> str:
    """The URL a client on this machine calls a server bound to `host` and `port` at."""
    return f"{'https' if settings.https else 'http'}://{local_host(host)}:{port}"


def banner_url(settings: Settings, host: str, port: int) -> str:
    """What the banner's dashboard link and ready-to-paste curl call: `--public-url`, else
    `local_url`. A wildcard bind (`0.0.0.0`, `::`) is no address to call, and no
    certificate names it: the one `--tls self-signed` makes always names loopback
    (`tls.LOOPBACK_NAMES`), so the banner's curl verifies against its CA as printed."""
    return (settings.public_url or local_url(settings, host, port)).rstrip("/")


WEBHOOK_INSECURE_WARNING = (
    "  WARNING      --webhook-insecure: certificates of https:// webhook receivers are NOT verified"
)


def banner(app: App, url: str) -> str:
    sandbox = app.sandbox
    settings = app.settings
    account = next(iter(sandbox.state.accounts.values()))
    ca_path = os.path.abspath(settings.tls_ca_out) if settings.tls_ca_out else None
    cacert = f"--cacert {ca_path} " if ca_path else ""
    token_call = (
        f"curl -s {cacert}-X POST {url}/api/v1/auth/token/client "
        f"-H 'Content-Type: application/json' -d '{json.dumps({'api_key': account.api_keys[0]})}'"
    )
    clock = sandbox.clock
    scale = f" x{clock.time_scale:g}" if clock.mode == "real" and clock.time_scale != 1 else ""
    return "\n".join(
        [
            f"  account      {account.email} (id {account.id})",
            f"  api key      {account.api_keys[0]}",
            f"  webhook      {account.webhook_url or 'none'} (secret {account.webhook_secret})",
            f"  catalog      {len(sandbox.state.catalog)} items",
            f"  scenarios    {len(sandbox.scenarios)} ({', '.join(sandbox.scenarios)})",
            f"  clock        {clock.mode}{scale}, seed {sandbox.seed}",
            f"  loop         {loops.running_loop_name()}",
            *([f"  node         {settings.node_id}"] if settings.node_id else []),
            *([f"  ca           {ca_path}"] if ca_path else []),
            *([WEBHOOK_INSECURE_WARNING] if settings.webhook_insecure else []),
            f"  dashboard    {url}/_mock/ui/",
            *([f"  state        {app.state_file.path}"] if app.state_file else []),
            f"  try          {token_call}",
        ]
    )
