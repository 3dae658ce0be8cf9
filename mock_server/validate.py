"""`mock-server validate PATH...`: check catalog, accounts, scenario and state files.

The kind of each file is read from its shape: a mapping with `format` is a state
document (`GET /_mock/state`); one with `accounts` is an accounts
file; one with `scenarios` or `steps` (or a list of mappings with `steps`) holds
scenarios; anything else is checked as a catalog. Folders are checked as scenario
folders. Exit 0 when all is well, else 1 with one `file:line: reason` per problem.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .domain.accounts import parse_accounts
from .domain.catalog import parse_catalog
from .domain.scenarios import load_scenario_paths, parse_scenarios
from .sourcefile import ConfigError, read_file


def kind_of(data: Any) -> str:
    if isinstance(data, dict):
        if "format" in data:
            return "state"
        if "accounts" in data:
            return "accounts"
        if "scenarios" in data or "steps" in data:
            return "scenarios"
        return "catalog"
    if isinstance(data, list) and data and all(isinstance(x, dict) and "steps" in x for x in data):
        return "scenarios"
    return "catalog"


def check(path: str) -> tuple[str, list[str]]:
    """(kind, problems) for one path."""
    if Path(path).is_dir():
        try:
            load_scenario_paths([path])
        except ConfigError as exc:
            return "scenarios", exc.problems
        return "scenarios", []
    try:
        data = read_file(path)
        kind = kind_of(data)
        parse = {
            "accounts": parse_accounts,
            "scenarios": parse_scenarios,
            "catalog": parse_catalog,
            "state": _check_state,
        }[kind]
        parse(data, path)
    except ConfigError as exc:
        return "file", exc.problems
    return kind, []


def _check_state(data: Any, path: str) -> None:
    """A state document is checked by building it, as `PUT /_mock/state` does, against
    a sandbox on the embedded defaults. No server flag is needed: the document carries
    its catalog, its accounts and every scenario beyond the built-in set, those its
    server started with included (`scenarios_loaded`, docs/state.md)."""
    from .config import Settings, load_startup
    from .domain import state_document
    from .domain.sandbox import Sandbox
    from .errors import ApiError

    sandbox = Sandbox(load_startup(Settings(clock="manual", seed=0)))
    try:
        state_document.restore(sandbox, data)
    except ApiError as error:
        raise ConfigError([f"{path}: {error.detail}"]) from error


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="mock-server validate",
        description="Check catalog, accounts, scenario and state files without serving.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH")
    args = parser.parse_args(list(argv))
    failed = False
    for path in args.paths:
        kind, problems = check(path)
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            failed = True
        else:
            print(f"{path}: ok ({kind})")
    return 1 if failed else 0
