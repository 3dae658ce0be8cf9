"""The shapes a recording shows (docs/recording.md, "Calibrate the shapes"): from pairs
of answers, production's as recorded and the sandbox's to the same request, one rule of
a shapes file (docs/shapes.md) per consistent difference.

Each kind of answer (`token`, `balance`, `order`, `order.webhook`, `event`, ...) is
looked at field by field, top level only:

- a field production sends and the sandbox lacks becomes an `add`: a `copy` where its
  value is always another field's of the sandbox's answer, or a named fact (the
  recorder's own webhook receiver URL is the delivery's `url`); `const` where it never
  changes; `uuid`, `now` (ISO 8601, Unix seconds or milliseconds) or `int: [LO, HI]`
  where its values look so;
- a field the sandbox sends and production never does becomes a `drop`;
- another JSON type (a number sent as a string) becomes an `as`;
- a string value spelt otherwise, consistently, becomes a `values` mapping; so does a
  value that is always the same and differs from the sandbox's (a currency);
- an order's choice field echoed as its id where the sandbox echoes the label becomes
  `choice_fields: id`.

What the spec defines and the sandbox decides (`shapes.PROTECTED`) is never a rule, and
a difference no rule can express is listed in a comment, not guessed. Each rule's
comment says how many answers show it, and warns where one decides.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ...domain.shapes import PROTECTED
from .findings import PLACEHOLDER, same

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")
_DECIMAL = re.compile(r"^-?\d+(\.(\d+))?$")
#: An enum's value: a word, no spaces (texts such as `detail` are not enums).
_ENUM = re.compile(r"^[A-Za-z0-9_.:/-]{1,64}$")
#: The most values a `values` rule maps: more is data, not an enum.
MAX_ENUM = 20
#: Unix times a recording of this century holds, in seconds and in milliseconds.
_UNIX_SECONDS = (10**9, 10**10)
_UNIX_MILLISECONDS = (10**12, 10**13)


@dataclass
class Pair:
    """One answer of `kind`, as production gave it and as the sandbox did; `facts` are
    the named facts a `copy` may read (docs/shapes.md), as the sandbox knew them."""

    kind: str
    recorded: dict[str, Any]
    sandbox: dict[str, Any]
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass
class Rule:
    """One rule to write: `section` (add, drop, as, values, choice_fields), the field
    and its YAML text, with the number of answers that show it."""

    section: str
    name: str
    text: str
    shown: int


@dataclass
class KindFindings:
    rules: list[Rule] = field(default_factory=list)
    #: Differences no rule can express: written as comments.
    unexpressed: list[str] = field(default_factory=list)


def infer(pairs: Iterable[Pair]) -> dict[str, KindFindings]:
    """The rules each kind's pairs show, kinds in the order first seen."""
    by_kind: dict[str, list[Pair]] = {}
    for pair in pairs:
        by_kind.setdefault(pair.kind, []).append(pair)
    found = {}
    for kind, members in by_kind.items():
        result = _kind(kind, members)
        if result.rules or result.unexpressed:
            found[kind] = result
    return found


def _kind(kind: str, pairs: list[Pair]) -> KindFindings:
    result = KindFindings()
    protected = PROTECTED.get(kind.split(".")[0] if kind.startswith("error.") else kind, set())
    names: dict[str, None] = {}
    for pair in pairs:
        names.update(dict.fromkeys(pair.recorded))
        names.update(dict.fromkeys(pair.sandbox))
    for name in names:
        recorded = [p for p in pairs if name in p.recorded]
        sandbox = [p for p in pairs if name in p.sandbox]
        if name in protected:
            if len(recorded) != len(pairs) or len(sandbox) != len(pairs):
                result.unexpressed.append(
                    f"{name}: sent by one side only; the spec defines it, so no rule changes it"
                )
            continue
        if recorded and not sandbox:
            _added(name, recorded, result)
        elif sandbox and not recorded:
            result.rules.append(Rule("drop", name, name, len(sandbox)))
        elif recorded and sandbox:
            _compared(
                kind, name, [p for p in pairs if name in p.recorded and name in p.sandbox], result
            )
    return result


def _added(name: str, pairs: list[Pair], result: KindFindings) -> None:
    values = [p.recorded[name] for p in pairs]
    shown = len(pairs)
    if any(_redacted(v) for v in values):
        result.unexpressed.append(
            f"{name}: production sends it ({_answers(shown)}), redacted in the recording: "
            "its values are not known, so none is guessed"
        )
        return
    copied = _copy_source(name, pairs)
    if copied is not None:
        result.rules.append(Rule("add", name, f"{{copy: {copied}}}", shown))
    elif all(_same(v, values[0]) for v in values) and (shown > 1 or not _looks_made(values[0])):
        result.rules.append(Rule("add", name, f"{{const: {_yaml(values[0])}}}", shown))
    elif all(isinstance(v, str) and _UUID.match(v) for v in values):
        result.rules.append(Rule("add", name, "uuid", shown))
    elif all(isinstance(v, str) and _ISO.match(v) for v in values):
        result.rules.append(Rule("add", name, "now", shown))
    elif all(_is_int(v) and _UNIX_SECONDS[0] <= v < _UNIX_SECONDS[1] for v in values):
        result.rules.append(Rule("add", name, "{now: unix}", shown))
    elif all(_is_int(v) and _UNIX_MILLISECONDS[0] <= v < _UNIX_MILLISECONDS[1] for v in values):
        result.rules.append(Rule("add", name, "{now: unix_ms}", shown))
    elif all(_is_int(v) for v in values):
        result.rules.append(Rule("add", name, f"{{int: [{min(values)}, {max(values)}]}}", shown))
    else:
        result.unexpressed.append(
            f"{name}: production sends it ({_answers(shown)}, e.g. {_short(values[0])}); no "
            "rule makes such values, so none is guessed"
        )


def _copy_source(name: str, pairs: list[Pair]) -> str | None:
    """A sandbox field or named fact whose value is always the recorded one (and not
    always one constant, which `const` says better), else None."""
    candidates: list[str] = []
    first = pairs[0]
    candidates += [f for f in first.facts if _fact_is(f, first.facts[f], first.recorded[name])]
    candidates += [f for f in first.sandbox if _same(first.sandbox[f], first.recorded[name])]
    for source in candidates:
        values = [
            (p.facts if source in p.facts else p.sandbox).get(source, _MISSING) for p in pairs
        ]
        if any(v is _MISSING for v in values):
            continue
        if not all(
            _fact_is(source, v, p.recorded[name]) for v, p in zip(values, pairs, strict=True)
        ):
            continue
        varies = any(not _same(v, values[0]) for v in values)
        if varies or source in first.facts:
            return source
    return None


_MISSING = object()
#: The path of the recorder's own webhook receiver (docs/recording.md, "Record"): where
#: the merchant pointed production's webhooks while recording.
RECORDER_HOOK = "/_record/webhook"


def _fact_is(source: str, mine: Any, recorded: Any) -> bool:
    """Whether a recorded value is what `source` (a fact or field) holds in the sandbox.
    The recorder's receiver URL is the delivery's URL, whatever the replay's receiver
    is: the recording's webhooks went there because the merchant set it."""
    if source == "delivery.url" and isinstance(recorded, str):
        # A webhook's URL in production's answers is where the delivery goes: the
        # recorder's receiver, or wherever the session pointed it.
        return urlsplit(recorded).scheme in ("http", "https")
    return _same(mine, recorded)


def _compared(kind: str, name: str, pairs: list[Pair], result: KindFindings) -> None:
    # Null on one side is timing (a field set later, a retry not yet planned), not shape.
    pairs = [p for p in pairs if p.recorded[name] is not None and p.sandbox[name] is not None]
    if not pairs:
        return
    shown = len(pairs)
    recorded = [p.recorded[name] for p in pairs]
    sandbox = [p.sandbox[name] for p in pairs]
    if kind == "order" and name == "fields":
        if _choices_as_ids(recorded, sandbox):
            result.rules.append(Rule("choice_fields", name, "id", shown))
        return
    if kind == "order" and name == "webhook":
        return  # the `order.webhook` kind's own pairs
    if all(same(r, s) for r, s in zip(recorded, sandbox, strict=True)):
        return  # a redacted placeholder (`<token:...>`) matches what it stands for
    if all(_shape(r) == _shape(s) for r, s in zip(recorded, sandbox, strict=True)) and (
        isinstance(recorded[0], dict | list) or any(_redacted(r) for r in recorded)
    ):
        return  # the same structure holding each side's own data
    if all(_looks_made(v) for v in recorded + sandbox):
        if {_form(v) for v in recorded} != {_form(v) for v in sandbox}:
            result.unexpressed.append(
                f"{name}: written otherwise (production {_short(recorded[0])}, the sandbox "
                f"{_short(sandbox[0])}); no rule rewrites an id or a time the sandbox makes"
            )
        return  # ids and times the two sides made on their own
    conversion = _conversion(recorded, sandbox)
    if conversion is not None:
        result.rules.append(Rule("as", name, conversion, shown))
        return
    if all(isinstance(v, str) for v in recorded + sandbox) and not all(
        map(_ENUM.match, recorded + sandbox)
    ):
        result.unexpressed.append(
            f"{name}: production's texts differ ({_answers(shown)}); texts are not shapes"
        )
        return
    if all(isinstance(v, str) for v in recorded + sandbox):
        mapping: dict[str, str] = {}
        for mine, theirs in zip(sandbox, recorded, strict=True):
            if mapping.setdefault(mine, theirs) != theirs:
                break
        else:
            changed = {k: v for k, v in mapping.items() if k != v}
            if changed and len(mapping) <= MAX_ENUM:
                text = "{" + ", ".join(f"{_yaml(k)}: {_yaml(v)}" for k, v in changed.items()) + "}"
                result.rules.append(Rule("values", name, text, shown))
                return
    if all(_is_number(v) for v in recorded + sandbox):
        return  # amounts and counts: each side's own data (a replay's balances are its own)
    if all(_same(r, recorded[0]) for r in recorded) and not isinstance(recorded[0], dict | list):
        result.rules.append(Rule("add", name, f"{{const: {_yaml(recorded[0])}}}", shown))
        return
    if isinstance(recorded[0], dict | list) or isinstance(sandbox[0], dict | list):
        result.unexpressed.append(
            f"{name}: its content differs ({_answers(shown)}); rules reshape top-level fields "
            "only, so none is guessed"
        )
        return
    result.unexpressed.append(
        f"{name}: values differ ({_answers(shown)}, e.g. production {_short(recorded[0])}, "
        f"the sandbox {_short(sandbox[0])}) with no rule that maps one to the other"
    )


def _conversion(recorded: list[Any], sandbox: list[Any]) -> str | None:
    """`decimal_string`, `int_string` or `number` where production sends the same value
    as another JSON type, else None."""
    if all(isinstance(r, str) and _is_number(s) for r, s in zip(recorded, sandbox, strict=True)):
        matches = [_DECIMAL.match(r) for r in recorded]
        if not all(matches):
            return None
        decimals = {len(m.group(2) or "") for m in matches if m}
        if decimals == {0} and all(_is_int(s) or float(s).is_integer() for s in sandbox):
            return "int_string"
        if len(decimals) == 1:
            places = decimals.pop()
            return "decimal_string" if places == 2 else f"{{decimal_string: {places}}}"
        return None
    if all(_is_number(r) and isinstance(s, str) for r, s in zip(recorded, sandbox, strict=True)):
        return "number"
    return None


def _choices_as_ids(recorded: list[Any], sandbox: list[Any]) -> bool:
    """Whether production echoes a choice field's id where the sandbox echoes its label:
    some field a number in production's answers and a string in the sandbox's."""
    for theirs, mine in zip(recorded, sandbox, strict=True):
        if isinstance(theirs, dict) and isinstance(mine, dict):
            for key, value in theirs.items():
                if _is_int(value) and isinstance(mine.get(key), str):
                    return True
    return False


# -- writing ----------------------------------------------------------------------------------

_SECTIONS = ("add", "values", "as", "drop", "choice_fields")


def render(found: dict[str, KindFindings], header: list[str]) -> str:
    """The shapes file: YAML with a comment on each rule."""
    lines = [f"# {line}" for line in header]
    if not any(k.rules for k in found.values()):
        lines.append("# No difference a rule expresses: the sandbox already answers so.")
    lines.append("shapes:" if any(k.rules for k in found.values()) else "shapes: {}")
    for kind, result in found.items():
        if not result.rules:
            for note in result.unexpressed:
                lines.append(f"# {kind}: not expressed: {note}")
            continue
        lines.append(f"  {_key(kind)}:")
        for note in result.unexpressed:
            lines.append(f"    # not expressed: {note}")
        for section in _SECTIONS:
            rules = [r for r in result.rules if r.section == section]
            if not rules:
                continue
            if section == "choice_fields":
                count = rules[0].shown
                lines.append(
                    f"    # {count} answer{'s' if count != 1 else ''}: a choice field as its id"
                )
                lines.append("    choice_fields: id")
                continue
            if section == "drop":
                for rule in rules:
                    lines.append(
                        f"    # {rule.name}: production never sends it (the sandbox: "
                        f"{_answers(rule.shown)})"
                    )
                    lines += _warning(rule, "    ")
                names = ", ".join(_key(r.name) for r in rules)
                lines.append(f"    drop: [{names}]")
                continue
            lines.append(f"    {section}:")
            for rule in rules:
                lines.append(f"      # {_shown(rule.shown)}")
                lines += _warning(rule, "      ")
                lines.append(f"      {_key(rule.name)}: {rule.text}")
    return "\n".join(lines) + "\n"


def _answers(count: int) -> str:
    return f"{count} answer{'s' if count != 1 else ''}"


def _shown(count: int) -> str:
    return f"{count} answer{'s' if count != 1 else ''} show{'s' if count == 1 else ''} it"


def _warning(rule: Rule, indent: str) -> list[str]:
    return [f"{indent}# warning: one answer decides this rule"] if rule.shown == 1 else []


def _key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", name) else json.dumps(name)


def _yaml(value: Any) -> str:
    """A value as YAML reads it: JSON, which YAML's flow style is a superset of."""
    return json.dumps(value, ensure_ascii=False)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _same(left: Any, right: Any) -> bool:
    return type(left) is type(right) and left == right


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _shape(value: Any) -> Any:
    """A value's structure: its JSON type, and for objects and lists their members'."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return "number" if _is_number(value) else type(value).__name__


def _redacted(value: Any) -> bool:
    """Whether the recorder replaced (part of) a value by a placeholder."""
    return isinstance(value, str) and bool(PLACEHOLDER.search(value))


def _form(value: str) -> str:
    """A made value's form: `uuid`, or a time's digits as 9 (`9999-99-99T99:99:99Z`)."""
    return "uuid" if _UUID.match(value) else re.sub(r"\d", "9", value)


def _looks_made(value: Any) -> bool:
    """A value one answer cannot tell from a drawn one (an id, a time)."""
    return isinstance(value, str) and bool(_UUID.match(value) or _ISO.match(value))
