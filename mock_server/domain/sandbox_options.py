"""The body of `POST /_mock/sandboxes` turned into a checked `StartupState`.

Every key is optional; an unset one comes from the server's own startup state. The
content keys (`catalog`, `accounts`, `scenarios`, `shapes`) take what the `--catalog`,
`--accounts`, `--scenarios` and `--shapes` files hold, as JSON (`shapes`: the
`{KIND: RULES}` mapping), and are checked by the same parsers,
so a sandbox refuses exactly what the server would refuse at start-up. Nothing is built
until everything has passed.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any

from ..clock import ClockError, parse_iso
from ..errors import validation_error
from ..sourcefile import ConfigError
from .accounts import AccountSpec, parse_accounts
from .catalog import parse_catalog
from .policy import refuse_reserved
from .randomness import MAX_SEED
from .scenarios import parse_scenarios
from .shapes import parse_kinds
from .startup import StartupState

#: The longest idle time a sandbox may ask for: thirty days.
MAX_TTL = 30 * 86400.0
OPTION_KEYS = (
    "seed",
    "start_time",
    "clock",
    "time_scale",
    "catalog",
    "accounts",
    "scenarios",
    "shapes",
    "ttl",
)


@dataclass(frozen=True)
class SandboxOptions:
    startup: StartupState
    ttl: float | None  # None: the server's --sandbox-ttl
    #: True when `accounts` was sent: its API keys are kept as written. Otherwise the
    #: server's accounts are copied with keys of the sandbox's own
    #: (see `with_own_credentials`).
    accounts_given: bool


def parse_sandbox_options(
    body: dict[str, Any], base: StartupState, *, restoring: bool = False
) -> SandboxOptions:
    """Check the whole body against `base` (the server's startup state); raise a
    `validation_error` naming the first key that is wrong and why. `restoring`: a body
    accepted by an earlier run, whose webhook URLs are not checked again (the rules may
    be stricter now; every attempt is still checked where it connects)."""
    unknown = sorted(set(body) - set(OPTION_KEYS))
    if unknown:
        raise validation_error(
            f"unknown sandbox option {unknown[0]!r}; known: {', '.join(OPTION_KEYS)}"
        )
    startup = base
    if body.get("seed") is not None:
        startup = replace(startup, seed=_seed(body["seed"]))
    if body.get("start_time") is not None:
        startup = replace(startup, start_time=_start_time(body["start_time"]))
    if body.get("clock") is not None:
        if body["clock"] not in ("manual", "real"):
            raise validation_error(f"clock must be 'manual' or 'real', got {body['clock']!r}")
        startup = replace(startup, clock_mode=body["clock"])
    if body.get("time_scale") is not None:
        startup = replace(startup, time_scale=_positive("time_scale", body["time_scale"]))
    if body.get("catalog") is not None:
        startup = replace(startup, catalog=_content(parse_catalog, body["catalog"], "catalog"))
    accounts_given = body.get("accounts") is not None
    if accounts_given:
        parse = functools.partial(parse_accounts, rules=None if restoring else base.webhook_rules)
        accounts = _content(parse, body["accounts"], "accounts")
        if not restoring:  # docs/hosting.md, "What a tenant can see"
            refuse_reserved(key for spec in accounts for key in spec.api_keys)
        startup = replace(startup, accounts=accounts)
    if body.get("scenarios") is not None:
        loaded = _content(parse_scenarios, body["scenarios"], "scenarios")
        merged = {s.name: s for s in startup.scenarios} | {s.name: s for s in loaded}
        startup = replace(startup, scenarios=tuple(merged.values()))
    if body.get("shapes") is not None:
        startup = replace(startup, shapes=_content(parse_kinds, body["shapes"], "shapes"))
    ttl = None
    if body.get("ttl") is not None:
        ttl = _positive("ttl", body["ttl"])
        if ttl > MAX_TTL:
            raise validation_error(f"ttl is at most {MAX_TTL:.0f} seconds (30 days), got {ttl:g}")
    return SandboxOptions(startup, ttl, accounts_given)


def with_own_credentials(
    accounts: tuple[AccountSpec, ...], keys: list[str]
) -> tuple[AccountSpec, ...]:
    """The server's accounts with one new API key each (`keys`, in order) and no webhook
    secret, so that the sandbox draws its own: a sandbox that did not bring its own
    accounts must not share `ak_test_default` with the default sandbox (that key would
    stop working on the root token endpoint), nor a webhook secret with anyone (who would
    then forge its webhooks)."""
    return tuple(
        replace(spec, api_keys=(key,), webhook_secret=None)
        for spec, key in zip(accounts, keys, strict=True)
    )


def _seed(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
        raise validation_error(f"seed must be an integer from 0 to {MAX_SEED}")
    return value


def _start_time(value: Any) -> float:
    if not isinstance(value, str):
        raise validation_error("start_time must be an ISO 8601 string")
    try:
        return parse_iso(value)
    except ClockError as exc:
        raise validation_error(f"start_time: {exc}") from exc


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise validation_error(f"{name} must be a number > 0")
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise validation_error(f"{name} must be a finite number > 0, got {value}")
    return number


def _content(parse: Any, data: Any, source: str) -> Any:
    try:
        return parse(data, source)
    except ConfigError as exc:
        raise validation_error("; ".join(exc.problems)) from exc
