"""Scenarios: fulfillment scripts as data (docs/scenarios.md).

A scenario is a list of timed steps that drive one order through the lifecycle engine.
This module turns YAML into validated, immutable `Scenario` objects and refuses, with
`file:line: reason`, every script the spec forbids. The engine that plays them is
`domain.lifecycle`; there is no second mechanism.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
import re2

from ..sourcefile import ConfigError, parse_text, read_file, where
from .statuses import STATUSES, TERMINAL

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_ERROR_CODE = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")
_SCENARIO_KEYS = {"name", "description", "match", "steps", "pricing", "weight"}
_STEP_KEYS = {"after", "status", "deliver", "error", "error_message", "expect_code", "webhook"}
_MATCH_KEYS = {"merchant_order_id", "item_id", "product_type", "quantity_min"}
_WEBHOOK_KEYS = {"duplicate", "delay", "drop", "retry"}
#: The gaps between attempts after a non-200 (spec 6: up to 3 retries, 60 s apart).
SPEC_RETRY = (60.0, 60.0, 60.0)
MAX_RETRIES = len(SPEC_RETRY)
#: The largest `weight`: weights are relative, and the bound keeps any sum of them finite.
MAX_WEIGHT = 10**15
#: Steps a scenario may list: each is played on the one event loop that serves every
#: sandbox (docs/hosting.md, "Inputs a tenant sends"); the longest built-in has 4.
MAX_STEPS = 100
#: The most a scenario may weigh, written as compact JSON: what a sandbox keeps of it
#: (and saves with `--state`) is bounded by this times the scenarios quota. A scenario
#: of 100 short steps is about 4 KiB.
MAX_SCENARIO_BYTES = 8 * 1024
#: How `match.merchant_order_id` is run: by RE2, in time linear in the text, so no
#: pattern can stall the server (docs/scenarios.md, "Selecting one"). Only whether it
#: matches is asked (no groups captured), and each pattern may take at most 256 KiB
#: for its program and its cache of states (docs/hosting.md, "Sizing").
RE2_OPTIONS = re2.Options()
RE2_OPTIONS.never_capture = True
RE2_OPTIONS.max_mem = 256 * 1024
RE2_OPTIONS.log_errors = False
#: RE2's reasons for the Perl syntax it leaves out, in words.
_UNSUPPORTED = (
    (re.compile(r"invalid escape sequence: \\[1-9]"), "backreferences (\\1) are not RE2 syntax"),
    (re.compile(r"invalid perl operator: \(\?P$"), "backreferences (?P=name) are not RE2 syntax"),
    (re.compile(r"invalid perl operator: \(\?[=!]"), "lookahead is not RE2 syntax"),
    (re.compile(r"invalid perl operator: \(\?<[=!]"), "lookbehind is not RE2 syntax"),
    (re.compile(r"pattern too large"), "it needs more than RE2's 256 KiB for a pattern"),
)


@dataclass(frozen=True, slots=True)
class Deliver:
    """How much a `partial` step delivers: `units` of quantity, or a `percent` of it."""

    units: Decimal | None = None
    percent: Decimal | None = None


@dataclass(frozen=True, slots=True)
class WebhookChaos:
    duplicate: int = 0
    delay: float = 0.0
    drop: bool = False
    #: The gap before each retry after a non-200 answer; as many retries as gaps.
    retry: tuple[float, ...] = SPEC_RETRY


@dataclass(frozen=True, slots=True)
class Step:
    after: float
    status: str
    deliver: Deliver | None = None
    error: str = ""
    error_message: str = ""
    expect_code: str | None = None
    webhook: WebhookChaos | None = None


@dataclass(frozen=True, slots=True)
class Match:
    #: An RE2 pattern (`compile_pattern`), searched for anywhere in the id.
    merchant_order_id: Any = None
    #: The items it holds for: one id, or several (`item_id: [1001, 1002]`).
    item_id: frozenset[int] | None = None
    product_type: str | None = None
    quantity_min: Decimal | None = None

    def holds(
        self,
        *,
        merchant_order_id: str | None,
        item_id: int,
        product_type: str,
        quantity: int | Decimal,
    ) -> bool:
        return (
            self.first_failure(
                merchant_order_id=merchant_order_id,
                item_id=item_id,
                product_type=product_type,
                quantity=quantity,
            )
            is None
        )

    def first_failure(
        self,
        *,
        merchant_order_id: str | None,
        item_id: int,
        product_type: str,
        quantity: int | Decimal,
    ) -> tuple[str, str] | None:
        """The first key that does not hold, and why in words; None when all hold."""
        pattern = self.merchant_order_id
        if pattern is not None:
            if merchant_order_id is None:
                return "merchant_order_id", f"no merchant_order_id to match {pattern.pattern!r}"
            if not pattern.search(merchant_order_id):
                return (
                    "merchant_order_id",
                    f"merchant_order_id {merchant_order_id!r} does not match {pattern.pattern!r}",
                )
        if self.item_id is not None and item_id not in self.item_id:
            return "item_id", f"item_id {item_id} is not {_items(self.item_id)}"
        if self.product_type is not None and self.product_type != product_type:
            return "product_type", f"product_type {product_type!r} is not {self.product_type!r}"
        if self.quantity_min is not None and quantity < self.quantity_min:
            return "quantity_min", f"quantity {quantity} is below {self.quantity_min}"
        return None

    def describe(self) -> str:
        """The keys that must hold, in words: `merchant_order_id ~ '^timeout-'`."""
        parts = []
        if self.merchant_order_id is not None:
            parts.append(f"merchant_order_id ~ {self.merchant_order_id.pattern!r}")
        if self.item_id is not None:
            parts.append(f"item_id = {_items(self.item_id)}")
        if self.product_type is not None:
            parts.append(f"product_type = {self.product_type}")
        if self.quantity_min is not None:
            parts.append(f"quantity >= {self.quantity_min}")
        return ", ".join(parts)


@dataclass(frozen=True, slots=True)
class Pricing:
    """The price actually charged differs from the catalog (how `price_mismatch` is made)."""

    delta_percent: Decimal | None = None
    unit_price: int | None = None

    def apply(self, catalog_unit_price: int) -> int:
        if self.unit_price is not None:
            return self.unit_price
        assert self.delta_percent is not None
        adjusted = Decimal(catalog_unit_price) * (100 + self.delta_percent) / 100
        return max(0, int(adjusted.to_integral_value(rounding=ROUND_HALF_UP)))


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    description: str
    steps: tuple[Step, ...]
    match: Match | None = None
    pricing: Pricing | None = None
    source: str = ""
    #: Its weight in the draw among weighted scenarios (docs/scenarios.md, "Weighted
    #: selection"): a positive number; None for a scenario that is never drawn.
    weight: float | None = None
    #: The mapping it was read from, kept so a saved state can carry the scenario
    #: (`domain.state_document`): a state document refers to no scenario it does not hold.
    record: Any = field(default=None, compare=False, repr=False)


# -- loading ------------------------------------------------------------------------------


def parse_duration(value: Any) -> float:
    """`500ms`, `2s`, `5m`, `1h` or a number of seconds -> seconds."""
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"a duration is >= 0, got {value}")
        return float(value)
    if isinstance(value, str) and (found := _DURATION.match(value)):
        return float(found.group(1)) * _UNIT_SECONDS[found.group(2)]
    raise ValueError(f"not a duration: {value!r} (use 500ms, 2s, 5m, 1h or seconds)")


class _Problem(Exception):
    def __init__(self, node: Any, key: str | None, reason: str) -> None:
        super().__init__(reason)
        self.node, self.key = node, key


def parse_scenarios(data: Any, source: str) -> list[Scenario]:
    """Validate a parsed scenario document: `{scenarios: [...]}`, a list, or one scenario."""
    if isinstance(data, dict) and "scenarios" in data:
        if set(data) != {"scenarios"}:
            extra = sorted(set(data) - {"scenarios"})[0]
            raise ConfigError([f"{where(source, data, extra)}: unknown key {extra!r}"])
        records = data["scenarios"]
    elif isinstance(data, dict):
        records = [data]
    else:
        records = data
    if not isinstance(records, list) or not records:
        raise ConfigError(
            [
                f"{where(source, data)}: expected a scenario, a list of them, "
                "or a mapping with a 'scenarios' list"
            ]
        )
    problems: list[str] = []
    scenarios: list[Scenario] = []
    names: dict[str, str] = {}
    for record in records:
        try:
            scenario = _parse_scenario(record, source)
        except _Problem as problem:
            problems.append(f"{where(source, problem.node, problem.key)}: {problem}")
            continue
        if scenario.name in names:
            problems.append(
                f"{where(source, record, 'name')}: scenario {scenario.name!r} is "
                f"already defined at {names[scenario.name]}"
            )
            continue
        names[scenario.name] = where(source, record, "name")
        scenarios.append(scenario)
    if problems:
        raise ConfigError(problems)
    return scenarios


def load_scenario_file(path: str | Path) -> list[Scenario]:
    return parse_scenarios(read_file(path), str(path))


def load_scenario_paths(paths: list[str] | tuple[str, ...]) -> list[Scenario]:
    """Load files and folders (every *.yaml / *.yml / *.json inside, sorted)."""
    scenarios: list[Scenario] = []
    problems: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
        else:
            files = [path]
        for file in files:
            try:
                scenarios.extend(load_scenario_file(file))
            except ConfigError as exc:
                problems.extend(exc.problems)
    if problems:
        raise ConfigError(problems)
    return scenarios


@functools.cache
def builtin_scenarios() -> tuple[Scenario, ...]:
    """The built-in set shipped inside the package (`mock_server/data/scenarios`).
    Parsed once per process: scenarios are immutable."""
    folder = resources.files("mock_server") / "data" / "scenarios"
    scenarios: list[Scenario] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            source = f"<built-in>/{entry.name}"
            scenarios.extend(parse_scenarios(parse_text(entry.read_text("utf-8"), source), source))
    return tuple(scenarios)


def _unknown(node: dict[str, Any], allowed: set[str], what: str) -> None:
    for key in node:
        if key not in allowed:
            raise _Problem(
                node, key, f"unknown {what} key {key!r} (known: {', '.join(sorted(allowed))})"
            )


def _parse_scenario(record: Any, source: str) -> Scenario:
    if not isinstance(record, dict):
        raise _Problem(record, None, "a scenario is a mapping")
    _unknown(record, _SCENARIO_KEYS, "scenario")
    name = record.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise _Problem(record, "name", f"'name' is required: letters, digits, _ . - (got {name!r})")
    description = record.get("description", "")
    if not isinstance(description, str):
        raise _Problem(record, "description", "'description' must be a string")
    # Before anything is parsed or compiled (a 1 MiB `match` pattern took RE2 50 ms):
    # the count of steps, then the size.
    _check_step_count(record)
    size = _json_size(record)
    if size > MAX_SCENARIO_BYTES:
        raise _Problem(
            record,
            None,
            f"a scenario is at most {MAX_SCENARIO_BYTES} bytes written as JSON, this one "
            f"is {size}: shorten its description or messages, or split it",
        )
    steps = _parse_steps(record)
    match = _parse_match(record["match"]) if record.get("match") is not None else None
    pricing = _parse_pricing(record["pricing"]) if record.get("pricing") is not None else None
    weight = _parse_weight(record, record["weight"]) if record.get("weight") is not None else None
    return Scenario(
        name,
        description,
        steps,
        match,
        pricing,
        source=where(source, record),
        record=record,
        weight=weight,
    )


def _check_step_count(record: dict[str, Any]) -> None:
    raw_steps = record.get("steps")
    if isinstance(raw_steps, list) and len(raw_steps) > MAX_STEPS:
        raise _Problem(
            record, "steps", f"'steps' lists at most {MAX_STEPS} steps, got {len(raw_steps)}"
        )


def _parse_steps(record: dict[str, Any]) -> tuple[Step, ...]:
    raw_steps = record.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise _Problem(record, "steps", "'steps' must be a non-empty list")
    _check_step_count(record)
    steps: list[Step] = []
    #: Equal steps are one object: a scenario keeps 100 steps in the room of a few.
    shared: dict[Step, Step] = {}
    for position, raw in enumerate(raw_steps, start=1):
        if not isinstance(raw, dict):
            raise _Problem(raw_steps, None, f"step {position} must be a mapping")
        step = _parse_step(raw)
        previous = steps[-1] if steps else None
        if previous is not None and previous.status in TERMINAL:
            raise _Problem(
                raw,
                "status",
                f"step {position} comes after the terminal status "
                f"{previous.status!r}; terminal statuses are final",
            )
        if previous is not None and previous.status == "need_client_code":
            if step.status == "processing" and step.after:
                raise _Problem(
                    raw,
                    "after",
                    "the code moves the order to processing at once: "
                    "put the delay on the next step",
                )
            if step.status != "processing":
                # The script goes straight on after the code (docs/scenarios.md, "After
                # `need_client_code`"): the code's own move to processing is made
                # explicit, so both forms play the same.
                steps.append(Step(0.0, "processing"))
        steps.append(shared.setdefault(step, step))
    if steps[-1].status == "need_client_code":
        raise _Problem(
            raw_steps[-1],
            "status",
            "need_client_code needs a following step: what happens after the code "
            "(an explicit 'processing', or the next status)",
        )
    if steps[-1].status not in TERMINAL:
        raise _Problem(
            raw_steps[-1],
            "status",
            "the last step must be a terminal status (completed, partial or failed)",
        )
    return tuple(steps)


def _parse_step(raw: dict[str, Any]) -> Step:
    _unknown(raw, _STEP_KEYS, "step")
    status = raw.get("status")
    if status == "pending":
        raise _Problem(raw, "status", "a step never returns to pending (spec 3.2 rule 1)")
    if status not in STATUSES:
        raise _Problem(
            raw, "status", f"unknown status {status!r} (known: {', '.join(STATUSES[1:])})"
        )
    try:
        after = parse_duration(raw.get("after", 0))
    except ValueError as exc:
        raise _Problem(raw, "after", str(exc)) from exc
    error = raw.get("error", "")
    if error != "" and (not isinstance(error, str) or not _ERROR_CODE.match(error)):
        raise _Problem(
            raw, "error", f"an error code is UPPER_SNAKE_CASE like ORDER_TIMEOUT, got {error!r}"
        )
    if error and status not in ("partial", "failed"):
        raise _Problem(raw, "error", f"'error' belongs on a partial or failed step, not {status}")
    if status == "failed" and not error:
        raise _Problem(
            raw,
            "status",
            "a failed step needs an 'error' code (spec 2.1: always populated when failed)",
        )
    message = raw.get("error_message", "")
    if not isinstance(message, str):
        raise _Problem(raw, "error_message", "'error_message' must be a string")
    if message and not error:
        raise _Problem(raw, "error_message", "'error_message' needs an 'error'")
    deliver = None
    if "deliver" in raw:
        if status == "partial":
            deliver = _parse_deliver(raw, raw["deliver"])
        else:
            _check_implied_deliver(raw, status, raw["deliver"])
    expect_code = raw.get("expect_code")
    if expect_code is not None:
        if status != "need_client_code":
            raise _Problem(raw, "expect_code", "'expect_code' belongs on a need_client_code step")
        if not isinstance(expect_code, str | int) or isinstance(expect_code, bool):
            raise _Problem(raw, "expect_code", "'expect_code' must be a string")
        expect_code = str(expect_code)
    webhook = None
    if raw.get("webhook") is not None:
        if status not in TERMINAL:
            raise _Problem(raw, "webhook", "'webhook' chaos applies to the terminal event")
        webhook = _parse_webhook(raw["webhook"])
    return Step(after, status, deliver, error, message, expect_code, webhook)


def _parse_deliver(raw: dict[str, Any], value: Any) -> Deliver:
    if value == "all":
        return Deliver(percent=Decimal(100))
    if isinstance(value, str) and (found := _PERCENT.match(value)):
        percent = Decimal(found.group(1))
        if not 0 < percent < 100:
            raise _Problem(raw, "deliver", "a partial delivers between 0% and 100%, exclusive")
        return Deliver(percent=percent)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return Deliver(units=Decimal(str(value)))
    raise _Problem(
        raw, "deliver", f"'deliver' is a number of units > 0, 'all' or 'P%', got {value!r}"
    )


def _check_implied_deliver(raw: dict[str, Any], status: str, value: Any) -> None:
    """`deliver` on a terminal step other than partial may only restate what its status
    implies (docs/scenarios.md): `completed` delivers every unit, `failed` nothing."""
    if status not in TERMINAL:
        raise _Problem(raw, "deliver", f"'deliver' belongs on a terminal step, not {status}")
    found = _PERCENT.match(value) if isinstance(value, str) else None
    percent = Decimal(found.group(1)) if found else None
    if status == "completed":
        agrees, allowed = value == "all" or percent == 100, "'all' or '100%'"
    else:
        units = value if isinstance(value, int | float) and not isinstance(value, bool) else None
        agrees, allowed = units == 0 or percent == 0, "0 or '0%'"
    if not agrees:
        raise _Problem(
            raw,
            "deliver",
            f"'deliver' on a {status} step can only be {allowed}, got {value!r} "
            "(a step that delivers some units is status: partial)",
        )


def _parse_webhook(raw: Any) -> WebhookChaos:
    if not isinstance(raw, dict):
        raise _Problem(raw, None, "'webhook' must be a mapping")
    _unknown(raw, _WEBHOOK_KEYS, "webhook")
    duplicate = raw.get("duplicate", 0)
    if isinstance(duplicate, bool) or not isinstance(duplicate, int) or not 0 <= duplicate <= 10:
        raise _Problem(raw, "duplicate", "'duplicate' is a count of extra copies, 0 to 10")
    try:
        delay = parse_duration(raw.get("delay", 0))
    except ValueError as exc:
        raise _Problem(raw, "delay", str(exc)) from exc
    drop = raw.get("drop", False)
    if not isinstance(drop, bool):
        raise _Problem(raw, "drop", "'drop' must be true or false")
    return WebhookChaos(duplicate, delay, drop, _parse_retry(raw))


def _parse_retry(raw: dict[str, Any]) -> tuple[float, ...]:
    """`retry: [DURATION, ...]`: the gaps between attempts after a non-200, at most
    `MAX_RETRIES` (an empty list: one attempt, no retry)."""
    gaps = raw.get("retry")
    if gaps is None:
        return SPEC_RETRY
    if not isinstance(gaps, list) or len(gaps) > MAX_RETRIES:
        raise _Problem(
            raw,
            "retry",
            f"'retry' is a list of at most {MAX_RETRIES} durations (the gaps between "
            "attempts after a non-200), such as [3s, 3s, 3s]",
        )
    parsed = []
    for gap in gaps:
        try:
            seconds = parse_duration(gap)
        except ValueError as exc:
            raise _Problem(raw, "retry", f"'retry': {exc}") from exc
        if seconds <= 0:
            raise _Problem(raw, "retry", f"'retry': a gap is more than 0 s, got {gap!r}")
        parsed.append(seconds)
    return tuple(parsed)


def _parse_match(raw: Any) -> Match:
    if not isinstance(raw, dict) or not raw:
        raise _Problem(raw, None, "'match' must be a non-empty mapping")
    _unknown(raw, _MATCH_KEYS, "match")
    pattern = None
    if "merchant_order_id" in raw:
        if not isinstance(raw["merchant_order_id"], str):
            raise _Problem(raw, "merchant_order_id", "'merchant_order_id' is a regex string")
        try:
            pattern = compile_pattern(raw["merchant_order_id"])
        except ValueError as exc:
            raise _Problem(raw, "merchant_order_id", str(exc)) from exc
    item_id = _item_ids(raw)
    product_type = raw.get("product_type")
    if product_type is not None and product_type not in ("key", "topup", "service"):
        raise _Problem(raw, "product_type", "'product_type' is key, topup or service")
    quantity_min = raw.get("quantity_min")
    if quantity_min is not None:
        if isinstance(quantity_min, bool) or not isinstance(quantity_min, int | float):
            raise _Problem(raw, "quantity_min", "'quantity_min' must be a number")
        quantity_min = Decimal(str(quantity_min))
    return Match(pattern, item_id, product_type, quantity_min)


def _item_ids(raw: dict[str, Any]) -> frozenset[int] | None:
    """`item_id`: one item id, or a non-empty list of them."""
    value = raw.get("item_id")
    if value is None:
        return None
    ids = value if isinstance(value, list) else [value]
    if not ids or any(isinstance(i, bool) or not isinstance(i, int) for i in ids):
        raise _Problem(raw, "item_id", "'item_id' is an item id or a list of them")
    return frozenset(ids)


def _items(ids: frozenset[int]) -> str:
    """`1001`, or `one of 1001, 1002`."""
    ordered = sorted(ids)
    return str(ordered[0]) if len(ordered) == 1 else "one of " + ", ".join(map(str, ordered))


def compile_pattern(pattern: str) -> Any:
    """`pattern` compiled by RE2 (`RE2_OPTIONS`), or `ValueError` saying why not: RE2
    syntax (github.com/google/re2/wiki/Syntax) has no backreferences or lookaround,
    which are what make a pattern's time grow faster than its text."""
    try:
        return re2.compile(pattern, RE2_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        reason = str(reason)
        for found, words in _UNSUPPORTED:
            if found.match(reason):
                reason = f"{words} ({reason})"
                break
        raise ValueError(
            f"invalid regex {pattern!r}: {reason}; patterns are RE2 syntax "
            "(github.com/google/re2/wiki/Syntax)"
        ) from None


def _json_size(record: Any) -> int:
    try:
        return len(orjson.dumps(record))
    except TypeError:  # an integer beyond 64 bits, or a value JSON cannot hold
        return len(json.dumps(record, separators=(",", ":"), default=str).encode())


def _parse_weight(record: dict[str, Any], value: Any) -> float:
    """`weight: W`, a positive number up to `MAX_WEIGHT` (docs/scenarios.md, "Weighted
    selection"); kept as written (an int stays an int), so a reason reads `weight 3`.
    NaN, infinities and huge ints are refused."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Problem(
            record, "weight", f"'weight' is a positive number such as 3 or 0.5, got {value!r}"
        )
    if not (isinstance(value, int) or math.isfinite(value)) or not 0 < value <= MAX_WEIGHT:
        raise _Problem(
            record, "weight", f"'weight' is a number above 0 and at most 1e15, got {value!r}"
        )
    return value


def _parse_pricing(raw: Any) -> Pricing:
    if not isinstance(raw, dict) or len(raw) != 1:
        raise _Problem(raw, None, "'pricing' takes exactly one of delta_percent, unit_price")
    _unknown(raw, {"delta_percent", "unit_price"}, "pricing")
    if "unit_price" in raw:
        value = raw["unit_price"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _Problem(raw, "unit_price", "'unit_price' is integer cents >= 0")
        return Pricing(unit_price=value)
    value = raw["delta_percent"]
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= -100:
        raise _Problem(raw, "delta_percent", "'delta_percent' is a number above -100")
    return Pricing(delta_percent=Decimal(str(value)))
