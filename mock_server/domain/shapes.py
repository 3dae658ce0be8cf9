"""Production's shapes (docs/shapes.md): how merchant answers and webhook events are
reshaped, so that a merchant's client meets in the sandbox the shapes production sends.

A shapes file is `shapes: {KIND: RULES}`. Each kind names one kind of answer (`token`,
`token_error`, `balance`, `account`, `order`, `order.webhook`, `error` and
`error.CODE`, `event`, `plant`); its rules are applied to the answer's top-level fields
in a fixed order: `add` (every copy reads the unshaped answer), `values`, `as`, `drop`.
What the spec defines and the sandbox decides (an order's ids, `status`, money values
and `codes`; an error's `code`; the seven event fields of spec section 6) is refused at
load, with `file:line: reason`.

This module only parses and applies rules, on plain dicts; the HTTP layer decides which
answer is which kind and hands in the facts (`Facts`) a rule may copy.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from ..clock import iso
from ..sourcefile import ConfigError, read_file, where

#: Every kind of answer a rule may shape; `error.CODE` (an error code) too.
KINDS = (
    "token",
    "token_error",
    "balance",
    "account",
    "order",
    "order.webhook",
    "error",
    "event",
    "plant",
)
_ERROR_KIND = re.compile(r"^error\.[a-z][a-z0-9_]{0,63}$")
_RULE_KEYS = {"add", "drop", "as", "values", "choice_fields"}
_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")

#: What the spec defines and the sandbox decides, per kind: never added, changed or
#: dropped (docs/shapes.md, "What a rule may not touch").
PROTECTED = {
    "order": frozenset({"id", "merchant_order_id", "status", "price", "refund_amount", "codes"}),
    "event": frozenset(
        {
            "order_id",
            "status",
            "merchant_order_id",
            "quantity",
            "delivered_quantity",
            "codes",
            "refund_amount",
        }
    ),
    "error": frozenset({"code"}),
}

#: Named facts a `copy` may read besides the answer's own fields, and the kinds that
#: have them (docs/shapes.md, "Named facts").
FACTS = {
    "delivery.url": ("order.webhook", "event"),
    "delivery.status": ("order.webhook", "event"),
    "delivery.attempts": ("order.webhook", "event"),
    "delivery.last_attempt_at": ("order.webhook", "event"),
    "delivery.last_status_code": ("order.webhook", "event"),
    "delivery.next_attempt_at": ("order.webhook", "event"),
    "token.expires_in": ("token",),
}
#: `copy: order.FIELD` reads a field of the order an event or webhook object is about.
_ORDER_FACT = "order."
_ORDER_FACT_KINDS = ("order.webhook", "event")

#: The conversions of `as`.
CONVERSIONS = ("decimal_string", "int_string", "number")
#: The most decimals `decimal_string` writes.
MAX_PLACES = 8
#: The most rules one kind may hold: a shapes file is small.
MAX_RULES = 200
#: The most a shapes document may hold, written as JSON: a calibrated file is a few KiB;
#: this bounds what a sandbox keeps of one (docs/hosting.md, "Sizing").
MAX_SHAPES_BYTES = 64 * 1024


@dataclass(slots=True)
class Facts:
    """What the sandbox knows about one answer beyond its fields."""

    #: The virtual clock, in seconds since the epoch.
    now: float = 0.0
    #: Named facts (`FACTS`) of this answer; `order` for `copy: order.FIELD`.
    named: Mapping[str, Any] = field(default_factory=dict)
    order: Mapping[str, Any] | None = None
    #: Per choice field of the order's item: option label -> id (`choice_fields: id`).
    choices: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    #: Seeded draws for `uuid` and `int`.
    rng: random.Random = field(default_factory=lambda: random.Random(0))


Producer = Callable[[Mapping[str, Any], Facts], Any]


@dataclass(frozen=True)
class KindRules:
    add: tuple[tuple[str, Producer], ...] = ()
    values: tuple[tuple[str, Mapping[Any, Any]], ...] = ()
    convert: tuple[tuple[str, Callable[[Any], Any]], ...] = ()
    drop: tuple[str, ...] = ()
    choice_fields: str | None = None
    #: Whether a rule makes a new value each time (`uuid`, `int`, `now`): otherwise the
    #: same answer and facts always shape the same.
    varies: bool = False
    #: What of `Facts` its rules read: named facts, `order` (for `order.FIELD`),
    #: `choices` (for `choice_fields: id`). Facts nothing reads are not worked out.
    reads: frozenset[str] = frozenset()

    def apply(self, body: dict[str, Any], facts: Facts) -> dict[str, Any]:
        shaped = dict(body)
        for name, produce in self.add:
            value = produce(body, facts)
            if value is not _ABSENT:
                shaped[name] = value
        for name, mapping in self.values:
            value = shaped.get(name)
            if _hashable(value) and value in mapping:
                shaped[name] = mapping[value]
        for name, convert in self.convert:
            if name in shaped:
                shaped[name] = convert(shaped[name])
        for name in self.drop:
            shaped.pop(name, None)
        if self.choice_fields == "id" and isinstance(shaped.get("fields"), dict):
            shaped["fields"] = _choices_as_ids(shaped["fields"], facts.choices)
        return shaped


@dataclass(frozen=True)
class Shapes:
    """A parsed shapes file: `document` as given (for `GET /_mock/shapes` and the state
    file), `rules` compiled per kind."""

    document: Mapping[str, Any]
    rules: Mapping[str, KindRules]
    #: `varies` per kind, worked out once (it is asked on every answer).
    _varies: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)
    _reads: dict[str, frozenset[str]] = field(default_factory=dict, compare=False, repr=False)
    _applies: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def applies(self, kind: str) -> bool:
        """Whether any rule may change an answer of `kind` (an error's per-code rules
        and an order's `webhook` object included)."""
        known = self._applies.get(kind)
        if known is None:
            rules = self.rules
            if kind == "error":
                known = any(name == "error" or name.startswith("error.") for name in rules)
            elif kind == "order":
                known = "order" in rules or "order.webhook" in rules
            else:
                known = kind in rules
            self._applies[kind] = known
        return known

    def varies(self, kind: str) -> bool:
        """Whether a rule that may shape a `kind` answer makes a new value each time
        (`uuid`, `int`, `now`): if not, the same answer and facts always shape the same,
        and a shaped answer may be kept and sent again."""
        known = self._varies.get(kind)
        if known is None:
            if kind == "error":
                rules = [r for n, r in self.rules.items() if n.split(".")[0] == "error"]
            else:
                names = (kind, "order.webhook") if kind == "order" else (kind,)
                rules = [self.rules[n] for n in names if n in self.rules]
            known = self._varies[kind] = any(r.varies for r in rules)
        return known

    def reads(self, kind: str) -> frozenset[str]:
        """What of `Facts` the rules that may shape a `kind` answer read."""
        found = self._reads.get(kind)
        if found is None:
            names = (kind, "order.webhook") if kind == "order" else (kind,)
            found = frozenset().union(*(self.rules[n].reads for n in names if n in self.rules))
            self._reads[kind] = found
        return found

    def shape(self, kind: str, body: Any, facts: Facts | None = None) -> Any:
        """`body` as production shapes a `kind` answer; as it is where no rule applies.
        For an error envelope, `error` applies, then `error.CODE`; for an order, `order`,
        then `order.webhook` on its `webhook` object."""
        if not isinstance(body, dict):
            return body
        facts = facts or Facts()
        shaped = body
        rules = self.rules.get(kind)
        if rules is not None:
            shaped = rules.apply(shaped, facts)
        if kind == "error" and isinstance(body.get("code"), str):
            rules = self.rules.get(f"error.{body['code']}")
            if rules is not None:
                shaped = rules.apply(shaped, facts)
        webhook = self.rules.get("order.webhook") if kind == "order" else None
        if webhook is not None and isinstance(shaped.get("webhook"), dict):
            if shaped is body:  # `apply` copies; the answer given is only read
                shaped = dict(body)
            shaped["webhook"] = webhook.apply(shaped["webhook"], facts)
        return shaped


NO_SHAPES = Shapes({}, {})

_TOKEN_PATH = re.compile(r"^(?:/api)?/v1/auth/token/client$")
_ORDER_PATH = re.compile(r"^(?:/api)?/v1/orders(?:/[^/]+(?:/client-code)?)?$")
_KIND_OF_PATH = {
    "/v1/account/balance": "balance",
    "/api/v1/account/balance": "balance",
    "/v1/account/me": "account",
    "/api/v1/account/me": "account",
    "/v3/plant": "plant",
}


def answer_kind(path: str, status: int, body: Any) -> str | None:
    """The kind of a merchant answer to `path` (both prefixes, spec 4), or None where
    no kind names it: `token` or `token_error` at the token endpoint, `error` for any
    other refusal in the spec's envelope, else by path."""
    if not isinstance(body, dict):
        return None
    if _TOKEN_PATH.match(path):
        return "token" if status == 200 else "token_error"
    if status >= 400:
        return "error" if "code" in body else None
    if _ORDER_PATH.match(path):
        return "order"
    return _KIND_OF_PATH.get(path)


def parse_shapes(data: Any, source: str) -> Shapes:
    """A shapes document, `{"shapes": {KIND: RULES}}`; every mistake is a `ConfigError`
    of `file:line: reason` lines."""
    if data is None:
        return NO_SHAPES
    if not isinstance(data, dict) or set(data) - {"shapes"}:
        extra = sorted(set(data) - {"shapes"}) if isinstance(data, dict) else None
        reason = (
            f"unknown key {extra[0]!r}" if extra else "a shapes file is {shapes: {KIND: RULES}}"
        )
        raise ConfigError([f"{where(source, data)}: {reason}"])
    return parse_kinds(data.get("shapes") or {}, source)


def load_shapes(path: str | Path) -> Shapes:
    """A shapes file (YAML, or JSON by its `.json` suffix): `--shapes`, `validate`."""
    return parse_shapes(read_file(path), str(path))


def parse_kinds(kinds: Any, source: str) -> Shapes:
    """The `{KIND: RULES}` mapping (a created sandbox's `shapes`, `PUT /_mock/shapes`)."""
    if not isinstance(kinds, dict):
        raise ConfigError([f"{where(source, kinds)}: 'shapes' is a mapping of kind to rules"])
    size = len(json.dumps(kinds, separators=(",", ":"), default=str))
    if size > MAX_SHAPES_BYTES:
        raise ConfigError(
            [
                f"{where(source, kinds)}: a shapes document is at most {MAX_SHAPES_BYTES} "
                f"bytes written as JSON, this one is {size}"
            ]
        )
    problems: list[str] = []
    compiled: dict[str, KindRules] = {}
    for kind, rules in kinds.items():
        at = where(source, kinds, kind)
        if not isinstance(kind, str) or not (kind in KINDS or _ERROR_KIND.match(kind)):
            problems.append(f"{at}: unknown kind {kind!r}; kinds: {', '.join(KINDS)}, error.CODE")
            continue
        try:
            compiled[kind] = _parse_rules(kind, rules, source)
        except ConfigError as exc:
            problems += exc.problems
    if problems:
        raise ConfigError(problems)
    return Shapes(_plain(kinds), compiled)


def _parse_rules(kind: str, rules: Any, source: str) -> KindRules:
    if not isinstance(rules, dict):
        raise ConfigError([f"{where(source, rules)}: the rules of {kind!r} are a mapping"])
    problems: list[str] = []

    def problem(node: Any, key: str | None, reason: str) -> None:
        problems.append(f"{where(source, node, key)}: {kind}: {reason}")

    for key in rules:
        if key not in _RULE_KEYS or (key == "choice_fields" and kind != "order"):
            known = sorted(_RULE_KEYS if kind == "order" else _RULE_KEYS - {"choice_fields"})
            problem(rules, key, f"unknown rule {key!r}; rules: {', '.join(known)}")
    protected = _protected(kind)
    add: list[tuple[str, Producer]] = []
    for name, rule in _mapping(rules, "add", problem).items():
        if _field_problem(rules.get("add"), name, protected, "add", problem):
            continue
        try:
            add.append((name, _producer(kind, rule)))
        except ValueError as exc:
            problem(rules.get("add"), name, f"add {name!r}: {exc}")
    values: list[tuple[str, Mapping[Any, Any]]] = []
    for name, mapping in _mapping(rules, "values", problem).items():
        if _field_problem(rules.get("values"), name, protected, "values", problem):
            continue
        if not isinstance(mapping, dict) or not all(map(_hashable, mapping)):
            problem(rules.get("values"), name, f"values {name!r} is a mapping {{OURS: THEIRS}}")
            continue
        values.append((name, _plain(mapping)))
    convert: list[tuple[str, Callable[[Any], Any]]] = []
    for name, how in _mapping(rules, "as", problem).items():
        if _field_problem(rules.get("as"), name, protected, "as", problem):
            continue
        try:
            convert.append((name, _converter(how)))
        except ValueError as exc:
            problem(rules.get("as"), name, f"as {name!r}: {exc}")
    drop = rules.get("drop", [])
    if not isinstance(drop, list) or not all(isinstance(name, str) for name in drop):
        problem(rules, "drop", "drop is a list of field names")
        drop = []
    for name in drop:
        _field_problem(rules, name, protected, "drop", problem, key="drop")
    choice = rules.get("choice_fields")
    if choice is not None and choice not in ("label", "id"):
        problem(rules, "choice_fields", f"choice_fields is 'label' or 'id', not {choice!r}")
    if sum(len(rules.get(k) or ()) for k in ("add", "values", "as", "drop")) > MAX_RULES:
        problem(rules, None, f"more than {MAX_RULES} rules")
    if problems:
        raise ConfigError(problems)
    return KindRules(
        tuple(add),
        tuple(values),
        tuple(convert),
        tuple(n for n in drop if n not in protected),
        choice,
        varies=any(map(_varies, _mapping(rules, "add", problem).values())),
        reads=_reads(_mapping(rules, "add", problem).values(), choice),
    )


def _reads(rules: Any, choice: Any) -> frozenset[str]:
    """The facts `add` rules copy (`order` for any `order.FIELD`), and `choices`."""
    found = {"choices"} if choice == "id" else set()
    for rule in rules:
        source = rule.get("copy") if isinstance(rule, dict) else None
        if isinstance(source, str):
            found.add(source if source in FACTS else "order" if source.startswith("order.") else "")
    return frozenset(found - {""})


def _varies(rule: Any) -> bool:
    """Whether an `add` rule makes a new value each time it is applied."""
    if isinstance(rule, dict):
        return bool(rule.keys() & {"uuid", "now", "int"})
    return rule in ("uuid", "now")


def _protected(kind: str) -> frozenset[str]:
    base = kind.split(".", 1)[0] if kind.startswith("error.") else kind
    return PROTECTED.get(base, frozenset())


def _mapping(rules: dict[str, Any], key: str, problem: Callable[..., None]) -> dict[str, Any]:
    found = rules.get(key)
    if found is None:
        return {}
    if not isinstance(found, dict):
        problem(rules, key, f"{key} is a mapping of field names")
        return {}
    return found


def _field_problem(
    node: Any,
    name: Any,
    protected: frozenset[str],
    rule: str,
    problem: Callable[..., None],
    *,
    key: str | None = None,
) -> bool:
    if not isinstance(name, str) or not _FIELD.match(name):
        problem(
            node, key or (name if isinstance(name, str) else None), f"{name!r} is no field name"
        )
        return True
    if name in protected:
        problem(
            node,
            key or name,
            f"{rule} {name!r}: the spec defines {name!r} and the sandbox decides it; a "
            "shapes file may not change or drop it",
        )
        return True
    return False


# -- rules ---------------------------------------------------------------------------------

_ABSENT = object()


def _producer(kind: str, rule: Any) -> Producer:
    """An `add` rule: `{const: V}`, `uuid`, `now` / `{now: FORMAT}`, `{copy: SOURCE}`,
    `{int: [LO, HI]}`."""
    if rule == "uuid" or rule == {"uuid": True}:
        return lambda body, facts: str(uuid.UUID(int=facts.rng.getrandbits(128), version=4))
    if rule == "now":
        return lambda body, facts: iso(facts.now)
    if not isinstance(rule, dict) or len(rule) != 1:
        raise ValueError(
            "a rule is {const: V}, uuid, now, {now: FORMAT}, {copy: SOURCE} or {int: [LO, HI]}"
        )
    ((how, argument),) = rule.items()
    if how == "const":
        value = _plain(argument)
        return lambda body, facts: value
    if how == "now":
        return _now(argument)
    if how == "copy":
        return _copy(kind, argument)
    if how == "int":
        if (
            not isinstance(argument, list)
            or len(argument) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in argument)
            or argument[0] > argument[1]
        ):
            raise ValueError("int is [LO, HI], two integers with LO <= HI")
        low, high = argument
        return lambda body, facts: facts.rng.randint(low, high)
    raise ValueError(f"unknown rule {how!r}: const, uuid, now, copy or int")


def _now(form: Any) -> Producer:
    if form in ("unix", "unix_ms"):
        scale = 1000 if form == "unix_ms" else 1
        return lambda body, facts: int(facts.now * scale)
    if not isinstance(form, str) or "%" not in form:
        raise ValueError("now takes unix, unix_ms or a strftime format such as '%Y-%m-%d %H:%M:%S'")
    return lambda body, facts: datetime.fromtimestamp(facts.now, UTC).strftime(form)


def _copy(kind: str, source: Any) -> Producer:
    if not isinstance(source, str) or not source:
        raise ValueError("copy names a field of the answer or a named fact")
    if source in FACTS:
        if kind not in FACTS[source]:
            raise ValueError(f"{source} is a fact of {' and '.join(FACTS[source])} answers only")
        return lambda body, facts: facts.named.get(source)
    if source.startswith(_ORDER_FACT) and kind in _ORDER_FACT_KINDS:
        name = source[len(_ORDER_FACT) :]
        return lambda body, facts: (facts.order or {}).get(name, _ABSENT)
    if source.startswith("delivery.") or source.startswith("token."):
        raise ValueError(f"unknown fact {source!r}; facts: {', '.join(FACTS)}, order.FIELD")
    return lambda body, facts: body.get(source, _ABSENT)


def _converter(how: Any) -> Callable[[Any], Any]:
    places = 2
    if isinstance(how, dict) and len(how) == 1 and "decimal_string" in how:
        places = how["decimal_string"]
        if not isinstance(places, int) or isinstance(places, bool) or not 0 <= places <= MAX_PLACES:
            raise ValueError(f"decimal_string takes 0 to {MAX_PLACES} decimals")
        how = "decimal_string"
    if how == "decimal_string":
        step = Decimal(1).scaleb(-places)
        return lambda value: _decimal_string(value, step)
    if how == "int_string":
        return _int_string
    if how == "number":
        return _number
    raise ValueError(f"as is one of {', '.join(CONVERSIONS)} (or {{decimal_string: N}})")


def _decimal_string(value: Any, step: Decimal) -> Any:
    number = _decimal(value)
    return value if number is None else str(number.quantize(step, rounding=ROUND_HALF_UP))


def _int_string(value: Any) -> Any:
    number = _decimal(value)
    if number is None or number != number.to_integral_value():
        return value
    return str(int(number))


def _number(value: Any) -> Any:
    number = _decimal(value)
    if number is None or not isinstance(value, str):
        return value
    return (
        int(number) if number == number.to_integral_value() and "." not in value else float(number)
    )


def _decimal(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def _choices_as_ids(fields: dict[str, Any], choices: Mapping[str, Mapping[str, int]]) -> dict:
    return {
        name: choices.get(name, {}).get(value, value) if isinstance(value, str) else value
        for name, value in fields.items()
    }


def _hashable(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or value is None


def _plain(value: Any) -> Any:
    """A parsed YAML value without its line bookkeeping: what `GET /_mock/shapes` shows."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value
