"""Reading configuration files (JSON or YAML) so mistakes can name `file:line`.

YAML mappings and lists come back as `LineDict` / `LineList`: plain dicts and lists that
also remember the line they start on and, for dicts, the line of each key. JSON files
are parsed by the json module (exact decimals are not needed in config files) and
carry no lines; their errors name the item instead.

YAML is read by libyaml (PyYAML's C loader) where PyYAML was built with it, else by the
pure-Python loader; both give the same lines. What a tenant sends (`parse_sent`: a
control call's YAML body) is read more strictly than the operator's own files: no
aliases (`*name`), which let a few hundred bytes stand for gigabytes once written out,
and no `!!set` or `!!binary` values, which JSON cannot carry back (docs/hosting.md,
"Inputs a tenant sends"). Every YAML document nests at most `MAX_DEPTH` levels.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

#: How deep YAML mappings and lists may nest: as deep as a JSON body may
#: (`edge.jsonio.MAX_DEPTH`), far more than any configuration file needs.
MAX_DEPTH = 64
#: Strings up to this length are interned as they are read.
_INTERNED = 32
#: libyaml where PyYAML has it (`yaml.__with_libyaml__`): it reads YAML ten times
#: faster than the pure-Python parser, with the same marks.
_BASE_LOADER: type[yaml.SafeLoader] = (
    yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader  # type: ignore[assignment]
)


class ConfigError(Exception):
    """One or more problems in a configuration file, each `file:line: reason`."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class LineDict(dict):
    """A mapping read from YAML, with its line and its keys' lines. Slots, not a
    `__dict__`: a sandbox keeps the scenario documents it was sent (docs/hosting.md,
    "Sizing")."""

    __slots__ = ("line", "key_lines")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.line: int | None = None
        self.key_lines: dict[Any, int] = {}

    def line_of(self, key: str) -> int | None:
        return self.key_lines.get(key, self.line)


class LineList(list):
    __slots__ = ("line",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.line: int | None = None


class _Refused(yaml.YAMLError):
    """Valid YAML that the server does not take, at a line."""

    def __init__(self, reason: str, mark: Any) -> None:
        super().__init__(reason)
        self.reason, self.mark = reason, mark


class _LineLoader(_BASE_LOADER):  # type: ignore[valid-type, misc]
    """The safe loader, keeping lines (`LineDict`, `LineList`) and refusing duplicate
    keys and nesting deeper than `MAX_DEPTH`."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.depth = 0

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> LineDict:
        self._enter(node)
        mapping = LineDict()
        mapping.line = node.start_mark.line + 1
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in mapping:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            if type(key) is str:
                key = sys.intern(key)  # one string for every step's `status`
            mapping[key] = self.construct_object(value_node, deep=True)
            mapping.key_lines[key] = key_node.start_mark.line + 1
        self.depth -= 1
        return mapping

    def construct_sequence(self, node: yaml.SequenceNode, deep: bool = False) -> LineList:
        self._enter(node)
        items = LineList(self.construct_object(child, deep=True) for child in node.value)
        items.line = node.start_mark.line + 1
        self.depth -= 1
        return items

    def construct_yaml_str(self, node: yaml.ScalarNode) -> str:
        """Short strings are interned: a scenario's hundred steps share one
        `processing`, one `1s` (docs/hosting.md, "Sizing")."""
        value = self.construct_scalar(node)
        return sys.intern(value) if len(value) <= _INTERNED else value

    def _enter(self, node: yaml.Node) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Refused(f"nested deeper than {MAX_DEPTH} levels", node.start_mark)


class _SentLoader(_LineLoader):
    """What a tenant sends: `_LineLoader` without aliases, `!!set` or `!!binary`."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.nodes_seen: set[int] = set()

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # An alias is the node it names, met a second time; nodes live as long as the
        # load, so their ids are theirs throughout.
        if id(node) in self.nodes_seen:
            raise _Refused(
                "YAML aliases (*name) are not accepted in a document sent to the server: "
                "write out the value anchored here instead",
                node.start_mark,
            )
        self.nodes_seen.add(id(node))
        return super().construct_object(node, deep)

    def refuse_tag(self, node: yaml.Node) -> Any:
        tag = node.tag.replace("tag:yaml.org,2002:", "!!")
        raise _Refused(
            f"{tag} values are not accepted in a document sent to the server "
            "(only what JSON can hold)",
            node.start_mark,
        )


_LineLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _LineLoader.construct_mapping
)
_LineLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _LineLoader.construct_sequence
)
_LineLoader.add_constructor("tag:yaml.org,2002:str", _LineLoader.construct_yaml_str)
for _tag in ("tag:yaml.org,2002:set", "tag:yaml.org,2002:binary"):
    _SentLoader.add_constructor(_tag, _SentLoader.refuse_tag)


def parse_text(text: str, source: str, *, json_first: bool = False) -> Any:
    """Parse JSON or YAML text; syntax errors become a `ConfigError` with the line."""
    if json_first:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError([f"{source}:{exc.lineno}: invalid JSON: {exc.msg}"]) from exc
    return _load_yaml(text, source, _LineLoader)


def parse_sent(text: str, source: str) -> Any:
    """Parse YAML a tenant sent: as `parse_text`, but aliases, `!!set` and `!!binary`
    are refused with their line (docs/hosting.md, "Inputs a tenant sends")."""
    return _load_yaml(text, source, _SentLoader)


def _load_yaml(text: str, source: str, loader: type[_LineLoader]) -> Any:
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - SafeLoader-based
    except _Refused as exc:
        line = f":{exc.mark.line + 1}" if exc.mark else ""
        raise ConfigError([f"{source}{line}: {exc.reason}"]) from exc
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise ConfigError([f"{source}{line}: invalid YAML: {exc.problem or exc}"]) from exc
    except yaml.YAMLError as exc:
        raise ConfigError([f"{source}: invalid YAML: {exc}"]) from exc
    except (ValueError, OverflowError) as exc:
        # A scalar the loader cannot make a value of: an integer of over 4300 digits
        # (Python's bound on reading one), a date such as 2026-02-30.
        raise ConfigError([f"{source}: invalid YAML: a value cannot be read: {exc}"]) from exc


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
