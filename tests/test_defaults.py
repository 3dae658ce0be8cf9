"""One source for the server's defaults: `config.SERVE_OPTIONS` (its defaults are the
`Settings` fields'), read by the CLI and `--help`, and the README's configuration table
held to it.

The rule for a README row: each flag in its flag cell is an option of `mock-server`,
the variable beside it in the env cell is the option's, and the default cell, read as
plain text (code marks dropped), equals `Option.shown_default` — the value as typed on
the command line (`8080`, `1`, `*`), `none` for no value, `off` for a switch, or, for a
default that is no value (`embedded sample`, `now`, `system trust store`), the words the
option carries in `SERVE_OPTIONS`. A new default or a new phrasing is made there, and
the README cell follows it.

docs/docker.md's table of variables is held to the same options: every option's
variable is in it, it names no other, and its "default in the image" cell is the
Dockerfile's `ENV` value for a variable the image sets, else the option's default.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from mock_server.cli import parse_settings, serve_parser
from mock_server.config import SERVE_OPTIONS, Option, Settings

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCKER_DOCS = ROOT / "docs" / "docker.md"
DOCKERFILE = ROOT / "Dockerfile"
DOCKER_TABLE_HEADER = "| env | default in the image | meaning |"
OPTIONS_BY_FLAG = {option.flag: option for option in SERVE_OPTIONS}
TABLE_HEADER = "| flag | env | default | meaning |"
CELL_SEPARATOR = re.compile(r"(?<!\\)\|")  # `real\|manual` is one cell
FLAG = re.compile(r"--[a-z][a-z-]*")
VARIABLE = re.compile(r"MOCK_[A-Z_]+")


def configuration_rows() -> list[tuple[str, str, str]]:
    """(flag, variable, default cell) for each flag of the README's configuration table;
    a row naming two flags (`--tls-cert`, `--tls-key`) gives two, sharing its default."""
    lines = README.read_text(encoding="utf-8").splitlines()
    start = lines.index(TABLE_HEADER) + 2  # past the header and its |---| line
    rows: list[tuple[str, str, str]] = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        flag_cell, variable_cell, default_cell = CELL_SEPARATOR.split(line)[1:4]
        flags, variables = FLAG.findall(flag_cell), VARIABLE.findall(variable_cell)
        assert len(flags) == len(variables), f"flags and variables do not pair up: {line}"
        plain_default = default_cell.replace("`", "").strip()
        for flag, variable in zip(flags, variables, strict=True):
            rows.append((flag, variable, plain_default))
    return rows


README_ROWS = configuration_rows()


def docker_rows() -> dict[str, str]:
    """variable -> default cell (plain text) of docs/docker.md's table of variables; a row
    naming two variables (`MOCK_TLS_CERT`, `MOCK_TLS_KEY`) gives two."""
    lines = DOCKER_DOCS.read_text(encoding="utf-8").splitlines()
    start = lines.index(DOCKER_TABLE_HEADER) + 2
    rows: dict[str, str] = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        variable_cell, default_cell = CELL_SEPARATOR.split(line)[1:3]
        variables = VARIABLE.findall(variable_cell)
        assert variables, f"a row of docs/docker.md's table names no variable: {line}"
        for variable in variables:
            assert variable not in rows, f"{variable} is in two rows of docs/docker.md"
            rows[variable] = default_cell.replace("`", "").strip()
    return rows


def image_env() -> dict[str, str]:
    """The MOCK_* variables the Dockerfile's ENV sets, with their values."""
    return dict(re.findall(r"\b(MOCK_[A-Z_]+)=(\S+)", DOCKERFILE.read_text("utf-8")))


def cli_flags() -> set[str]:
    """The long flags the real parser accepts, read from its usage line."""
    return set(re.findall(r"\[(--[a-z][a-z-]*)", serve_parser().format_usage()))


def help_entries() -> dict[str, str]:
    """`--help`'s text per flag, on one line (argparse wraps it to the terminal)."""
    text = serve_parser().format_help().partition("options:")[2]
    entries = re.split(r"\n  (?=-)", text)
    return {entry.split()[0].rstrip(","): " ".join(entry.split()) for entry in entries[1:]}


@pytest.fixture
def no_mock_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith("MOCK_"):
            monkeypatch.delenv(name)
    return monkeypatch


def test_no_flag_is_in_two_readme_rows():
    flags = [flag for flag, _, _ in README_ROWS]
    assert sorted(flag for flag in set(flags) if flags.count(flag) > 1) == []


@pytest.mark.parametrize(("flag", "variable", "default"), README_ROWS, ids=lambda v: v)
def test_readme_row_agrees_with_the_cli(flag: str, variable: str, default: str):
    assert flag in cli_flags(), f"{flag} is in the README but mock-server has no such flag"
    option = OPTIONS_BY_FLAG[flag]
    assert variable == option.env
    assert default == option.shown_default, (
        f"README says {flag} defaults to {default!r}; config.SERVE_OPTIONS says "
        f"{option.shown_default!r}"
    )


def test_every_cli_option_is_in_the_readme_table():
    documented = {flag for flag, _, _ in README_ROWS}
    assert cli_flags() - documented == set()


def test_docker_docs_list_the_variable_of_every_option_and_no_other():
    documented = set(docker_rows())
    variables = {option.env for option in SERVE_OPTIONS}
    assert sorted(variables - documented) == [], "missing from docs/docker.md's table"
    assert sorted(documented - variables) == [], "in docs/docker.md's table, not an option"


@pytest.mark.parametrize("option", SERVE_OPTIONS, ids=lambda option: option.env)
def test_docker_docs_give_each_variables_default_in_the_image(option: Option):
    cell = docker_rows().get(option.env)
    assert cell is not None, f"{option.env} is not in docs/docker.md's table"
    expected = image_env().get(option.env, option.shown_default)
    # The value, then words about it in the image: `auto (uvloop, installed in the image)`.
    assert cell == expected or cell.startswith(f"{expected} "), (
        f"docs/docker.md says {option.env} defaults to {cell!r} in the image; expected "
        f"{expected!r} ({'the Dockerfile sets it' if option.env in image_env() else 'the option'})"
    )


def test_the_image_sets_only_what_the_docker_docs_say_it_sets():
    text = DOCKER_DOCS.read_text(encoding="utf-8")
    said = re.search(r"The image sets only (.*?); everything", text, re.S)
    assert said, "docs/docker.md no longer says which variables the image sets"
    assert sorted(VARIABLE.findall(said[1])) == sorted(image_env())


@pytest.mark.parametrize("option", SERVE_OPTIONS, ids=lambda option: option.flag)
def test_help_shows_the_variable_and_the_default(option: Option):
    entry = help_entries()[option.flag]
    assert option.env in entry
    assert f"default: {option.shown_default}]" in entry


def test_without_flags_or_variables_the_cli_gives_the_settings_defaults(no_mock_env):
    assert parse_settings([]) == Settings()


@pytest.mark.parametrize("option", SERVE_OPTIONS, ids=lambda option: option.env)
def test_the_cli_reads_each_options_variable(no_mock_env, option: Option):
    if option.repeatable:
        no_mock_env.setenv(option.env, os.pathsep.join(["a.yaml", "b.yaml"]))
        assert getattr(parse_settings([]), option.name) == ("a.yaml", "b.yaml")
    elif option.kind is bool:
        no_mock_env.setenv(option.env, "yes")
        assert getattr(parse_settings([]), option.name) is True
    else:
        no_mock_env.setenv(option.env, "7")
        assert serve_parser().get_default(option.name) == "7"
