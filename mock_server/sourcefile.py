"""Reading configuration files (JSON or YAML) so mistakes can name `file:line`.

YAML mappings and lists come back as `LineDict` / `LineList`: plain dicts and lists that
also remember the line they start on and, for dicts, the line of each key. JSON files
are parsed by the json module (exact decimals are not needed in config files) and
carry no lines; their errors name the item instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml


class ConfigError(Exception):
    """One or more problems in a configuration file, each `file:line: reason`."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class LineDict(dict):
    line: int | None = None
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int | None:
        return getattr(self, "key_lines", {}).get(key, self.line)


class LineList(list):
    line: int | None = None


class _LineLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> LineDict:
        mapping = LineDict()
        mapping.line = node.start_mark.line + 1
        mapping.key_lines = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in mapping:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            mapping[key] = self.construct_object(value_node, deep=True)
            mapping.key_lines[key] = key_node.start_mark.line + 1
        return mapping

    def construct_sequence(self, node: yaml.SequenceNode, deep: bool = False) -> LineList:
        items = LineList(self.construct_object(child, deep=True) for child in node.value)
        items.line = node.start_mark.line + 1
        return items


_LineLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _LineLoader.construct_mapping
)
_LineLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _LineLoader.construct_sequence
)


def parse_text(text: str, source: str, *, json_first: bool = False) -> Any:
    """Parse JSON or YAML text; syntax errors become a `ConfigError` with the line."""
    if json_first:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError([f"{source}:{exc.lineno}: invalid JSON: {exc.msg}"]) from exc
    try:
        return yaml.load(text, Loader=_LineLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise ConfigError([f"{source}{line}: invalid YAML: {exc.problem or exc}"]) from exc
    except yaml.YAMLError as exc:
        raise ConfigError([f"{source}: invalid YAML: {exc}"]) from exc


def read_file(path: str | Path) -> Any:
    """Read and parse one configuration file; JSON by `.json` suffix, else YAML."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([f"{file}: cannot read: {exc}"]) from exc
    return parse_text(text, str(file), json_first=file.suffix.lower() == ".json")


def where(source: str, node: Any, key: str | None = None) -> str:
    """`file:line` for a parsed node (and key), or just `file` when lines are unknown."""
    line = None
    if isinstance(node, LineDict):
        line = node.line_of(key) if key is not None else node.line
    elif isinstance(node, LineList):
        line = node.line
    return f"{source}:{line}" if line else source
