"""`mock-server validate PATH...`: check catalog, accounts, scenario, shapes and state
files.

The kind of each file is read from its shape: a mapping with `format` is a state
document (`GET /_mock/state`); one with `accounts` is an accounts
file; one with `scenarios` or `steps` (or a list of mappings with `steps`) holds
scenarios; one with `shapes` is a shapes file (docs/shapes.md); anything else is
checked as a catalog. Folders are checked as scenario
folders. Exit 0 when all is well, else 1 with one `file:line: reason` per problem.

A server refuses, where it is set, a `webhook_url` its webhook rules refuse
(docs/hosting.md, "Webhook destinations"). `--webhook-allow LIST` and
`--webhook-deny-private` (or `MOCK_WEBHOOK_ALLOW`, `MOCK_WEBHOOK_DENY_PRIVATE`), read as
`mock-server serve` reads them (`cli.parse_validate`), check the accounts of accounts
files and state documents against the rules such a server applies; without them, the
rules of a server started without them.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .domain.accounts import parse_accounts
from .domain.catalog import parse_catalog
from .domain.destinations import DEFAULT_RULES, DestinationRules
from .domain.scenarios import load_scenario_paths, parse_scenarios
from .domain.shapes import parse_shapes
from .sourcefile import ConfigError, read_file


def kind_of(data: Any) -> str:
    if isinstance(data, dict):
        if "format" in data:
            return "state"
        if "accounts" in data:
            return "accounts"
        if "scenarios" in data or "steps" in data:
            return "scenarios"
        if "shapes" in data:
            return "shapes"
        return "catalog"
    if isinstance(data, list) and data and all(isinstance(x, dict) and "steps" in x for x in data):
        return "scenarios"
    return "catalog"


def check(path: str, rules: DestinationRules = DEFAULT_RULES) -> tuple[str, list[str]]:
    """(kind, problems) for one path; webhook URLs are checked against `rules`."""
    if Path(path).is_dir():
        try:
            load_scenario_paths([path])
        except ConfigError as exc:
            return "scenarios", exc.problems
        return "scenarios", []
    try:
        data = read_file(path)
        kind = kind_of(data)
        if kind == "accounts":
            parse_accounts(data, path, rules)
        elif kind == "state":
            _check_state(data, path, rules)
        else:
            parsers = {"scenarios": parse_scenarios, "shapes": parse_shapes}
            parsers.get(kind, parse_catalog)(data, path)
    except ConfigError as exc:
        return "file", exc.problems
    return kind, []


def _check_state(data: Any, path: str, rules: DestinationRules = DEFAULT_RULES) -> None:
    """A state document is checked by loading it, as `PUT /_mock/state` does, into a
    sandbox on the embedded defaults whose server has the webhook `rules`. No other
    server flag is needed: the document carries its catalog, its accounts and every
    scenario beyond the built-in set, those its server started with included
    (`scenarios_loaded`, docs/state.md)."""
    from .config import Settings, load_startup
    from .domain.sandbox import Sandbox
    from .errors import ApiError

    startup = load_startup(Settings(clock="manual", seed=0))
    sandbox = Sandbox(dataclasses.replace(startup, webhook_rules=rules))
    try:
        sandbox.load_state(data)
    except ApiError as error:
        raise ConfigError([f"{path}: {error.detail}"]) from error


def run(paths: Sequence[str], rules: DestinationRules = DEFAULT_RULES) -> int:
    """`mock-server validate PATH...` once its arguments are read (`cli.parse_validate`):
    each file's problems on stderr, `ok` lines on stdout; 1 when any has a problem."""
    failed = False
    for path in paths:
        kind, problems = check(path, rules)
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            failed = True
        else:
            print(f"{path}: ok ({kind})")
    return 1 if failed else 0
