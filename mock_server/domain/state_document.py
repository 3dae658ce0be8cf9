"""A sandbox's whole state as one JSON document, and back (docs/state.md).

`dump` is what `GET /_mock/state` answers and what `--state` files keep; `restore`
checks a document as strictly as the configuration files are checked, builds a complete
new state from it, and only then swaps it in: a refused document changes nothing.
Pending fulfillment steps and webhook attempts resume at their virtual due times.

Money is integer cents and times are epoch seconds on the virtual clock (exact, where
the API's major units and ISO strings are for people). The request journal and the
live event readers are not state: they start empty.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Callable, Hashable, Iterable, Iterator
from decimal import Decimal
from sys import intern
from typing import TYPE_CHECKING, Any, Protocol

from ..clock import make_clock
from ..errors import ApiError, validation_error
from ..sourcefile import ConfigError
from . import selection
from .accounts import Account
from .catalog import parse_catalog
from .deliveries import LISTENER, Attempt, Delivery, Own
from .document_reader import Reader, fixed_list
from .faults import Faults
from .order_request import MAX_KEY_UNITS, NO_FIELDS
from .orders import PENDING_WEBHOOK, Order
from .plants import PLANT_STATUSES, Plants
from .randomness import MAX_DRAWN, MAX_SEED, Randomness
from .scenarios import MAX_RETRIES, SPEC_RETRY, Scenario, builtin_scenarios, parse_scenarios
from .shapes import Shapes, parse_kinds
from .startup import QueuedScenario, StartupState
from .state import State
from .statuses import STATUSES, TERMINAL
from .tokens import Grant

if TYPE_CHECKING:
    from ..clock import Clock
    from .coverage import Coverage


class Saved(Protocol):
    """What a document is made of and made for: a `Sandbox` (`domain/sandbox.py`), as
    far as this module reads it."""

    startup: StartupState
    sandbox_id: str
    state: State
    seed: int
    scenarios: dict[str, Scenario]
    loaded_documents: list[Any]
    queue: list[QueuedScenario]
    faults: Faults
    coverage: Coverage
    shapes: Shapes
    #: Changes each time the state is replaced whole (reset, new accounts, a document).
    generation: int

    @property
    def clock(self) -> Clock: ...


#: The document's format. Raise it when the shape changes, and teach `migrate` the old.
FORMAT = 1
DELIVERY_STATUSES = ("pending", "retrying", "delivered", "failed", "dropped")


class Replaced(RuntimeError):
    """The sandbox's state was replaced (a reset, new accounts, `PUT /_mock/state`)
    while its document was being read: what is left to read is gone."""


def dump(sandbox: Saved) -> dict[str, Any]:
    """The whole document, every part made now."""
    document = dump_as_read(sandbox)
    ledger = document["ledger"]
    for account_id, rows in ledger.items():
        ledger[account_id] = list(rows)
    for part in _GROWING:
        document[part] = list(document[part])
    return document


#: The parts that grow with traffic, after the rest, in the document's order.
_GROWING = ("tokens", "orders", "deliveries")


def dump_as_read(sandbox: Saved) -> dict[str, Any]:
    """The document, its parts that grow with traffic (every account's ledger, tokens,
    orders, deliveries) iterators made as they are read, so that `GET /_mock/state` is
    written in pieces (docs/state.md). What is listed is what there is now: each order
    and delivery as it is when read; an order made meanwhile and its deliveries are not
    among them, so the document always loads. An iterator read after the state was
    replaced raises `Replaced`."""
    state = sandbox.state
    now = sandbox.clock.now()
    orders = list(state.orders.values())
    generation = sandbox.generation
    return dump_rest(sandbox) | {
        "ledger": {a: state.ledger.rows_as_read(a) for a in state.accounts},
        "tokens": iter(
            [[t, g.account_id, g.api_key, g.expires_at] for t, g in state.tokens.live(now)]
        ),
        "orders": _orders_as_read(sandbox, orders, generation),
        "deliveries": _deliveries_as_read(sandbox, len(orders), generation),
    }


def _orders_as_read(sandbox: Saved, orders: list[Order], generation: int) -> Iterator[Any]:
    for order in orders:
        if sandbox.generation != generation:
            raise Replaced("the sandbox's state was replaced while it was read: read it again")
        yield order_state(order)


def _deliveries_as_read(sandbox: Saved, listed: int, generation: int) -> Iterator[Any]:
    """The deliveries there are once the orders are read (so that every delivery an
    order names is among them), but those of orders made after the first `listed`."""
    state = sandbox.state
    if sandbox.generation != generation:
        raise Replaced("the sandbox's state was replaced while it was read: read it again")
    later = set(itertools.islice(state.orders, listed, None))
    for delivery in list(state.deliveries.values()):
        if sandbox.generation != generation:
            raise Replaced("the sandbox's state was replaced while it was read: read it again")
        if delivery.order_id not in later:
            yield delivery_state(delivery)


def dump_rest(sandbox: Saved) -> dict[str, Any]:
    """The document without the parts that grow with traffic (ledger, tokens, orders,
    deliveries): what a state file rewrites on every change."""
    state, clock = sandbox.state, sandbox.clock
    return {
        "format": FORMAT,
        "seed": sandbox.seed,
        "clock": {"mode": clock.mode, "time_scale": clock.time_scale, "now": clock.now()},
        "random": dict(state.randomness.drawn),
        "scenarios_loaded": [*startup_scenarios(sandbox.startup), *sandbox.loaded_documents],
        "scenario_sources": scenario_sources(sandbox),
        "catalog": state.catalog.to_feed(),
        "accounts": [_account(a) for a in state.accounts.values()],
        "queue": [entry.to_json() for entry in sandbox.queue],
        "faults": sandbox.faults.dump(),
        "plants": state.plants.dump(),
        "coverage": sandbox.coverage.dump(),
        "shapes": dict(sandbox.shapes.document),
    }


#: A row of a part kept apart: its key, a fingerprint that changes whenever the row may
#: have (None: compare its JSON), and how to make it.
Row = tuple[str, Hashable | None, Callable[[], Any]]
#: The parts of the rest that a state file keeps apart, row by row (see `split_rest`):
#: an item, an account and a fault are a row each; the others one row.
APART = (
    "catalog",
    "accounts",
    "faults",
    "scenarios_loaded",
    "scenario_sources",
    "queue",
    "plants",
    "shapes",
)
_LISTS = ("catalog", "accounts")


def split_rest(
    sandbox: Saved, *, items: Iterable[int] | None = None, accounts: Iterable[str] | None = None
) -> tuple[dict[str, Any], dict[str, list[Row]]]:
    """`dump_rest` as a state file keeps it (docs/state.md): the small rest (the clock,
    the random counts, coverage, the faults' next id), and the rows of each part in
    `APART`, made only when their fingerprints change, so that a save costs what
    changed rather than the whole catalog, accounts, faults and scenarios.

    With `items` and `accounts` (after merchant calls and background work, which change
    no more of the rest than the stock of their orders' items, their accounts' balances,
    the queue, the faults' uses and the plants), only those catalog items and accounts
    are rows, the parts only control calls change are left out, and so is the faults'
    next id."""
    state, clock, faults = sandbox.state, sandbox.clock, sandbox.faults
    small = {
        "format": FORMAT,
        "seed": sandbox.seed,
        "clock": {"mode": clock.mode, "time_scale": clock.time_scale, "now": clock.now()},
        "random": dict(state.randomness.drawn),
        "coverage": sandbox.coverage.dump(),
    }
    queue = sandbox.queue
    catalog = state.catalog.items
    chosen_items = catalog.values() if items is None else filter(None, map(catalog.get, items))
    chosen_accounts = (
        state.accounts.values()
        if accounts is None
        else filter(None, map(state.accounts.get, accounts))
    )
    rows: dict[str, list[Row]] = {
        "catalog": [
            (str(item.id), (item, item.price, item.in_stock, item.stock), item.to_feed)
            for item in chosen_items
        ],
        "accounts": [(a.id, None, functools.partial(_account, a)) for a in chosen_accounts],
        "faults": [(str(f.id), (f, f.times), f.to_json) for f in faults.list()],
        "queue": [
            (
                "",
                tuple((entry, entry.remaining) for entry in queue),
                lambda: [entry.to_json() for entry in queue],
            )
        ],
        "plants": [("", None, state.plants.dump)],
    }
    if items is None and accounts is None:
        small["faults"] = {"next_id": faults.dump()["next_id"]}  # the faults are rows
        rows |= _control_parts(sandbox)
    return small, rows


def _control_parts(sandbox: Saved) -> dict[str, list[Row]]:
    """The parts only control calls change."""
    loaded = sandbox.loaded_documents
    return {
        "scenarios_loaded": [
            (
                "",
                (sandbox.startup, loaded, len(loaded)),
                lambda: [*startup_scenarios(sandbox.startup), *loaded],
            )
        ],
        "scenario_sources": [
            ("", tuple(sandbox.scenarios.values()), lambda: scenario_sources(sandbox))
        ],
        "shapes": [("", sandbox.shapes, lambda: dict(sandbox.shapes.document))],
    }


def join_rest(small: dict[str, Any], rows: dict[str, list[Any]]) -> dict[str, Any]:
    """The rest back from what `split_rest` made, each part's rows in their order. A
    part the small rest still holds (a file of the first format kept everything there)
    is kept as it is."""
    rest = dict(small)
    for part in _LISTS:
        rest.setdefault(part, rows.get(part, []))
    faults = rest.get("faults")
    if isinstance(faults, dict) and "faults" not in faults:
        rest["faults"] = faults | {"faults": rows.get("faults", [])}
    for part in APART:
        if part not in rest and rows.get(part):
            rest[part] = rows[part][0]
    return rest


def startup_scenarios(startup: StartupState) -> list[dict[str, Any]]:
    """The scenarios a sandbox started with beyond the built-in set (`--scenarios`
    files, a created sandbox's `scenarios`) as one scenario document, or none. A state
    document carries them first in `scenarios_loaded`, so it names no scenario that it
    does not hold: `mock-server validate` and a fresh server can read it."""
    builtin = {id(scenario) for scenario in builtin_scenarios()}
    records = [s.record for s in startup.scenarios if id(s) not in builtin]
    return [{"scenarios": records}] if records else []


def scenario_sources(sandbox: Saved) -> dict[str, str]:
    """Where each scenario beyond the built-in set came from (`source` in
    `GET /_mock/scenarios`: a file and line, `request body`), by name, so that a restored
    one says it too rather than where the saved document held it."""
    builtin = {id(scenario) for scenario in builtin_scenarios()}
    return {s.name: s.source for s in sandbox.scenarios.values() if id(s) not in builtin}


def migrate(document: Any) -> Any:
    """An older format brought up to `FORMAT` (none exists yet); a newer one refused."""
    if not isinstance(document, dict) or not isinstance(document.get("format"), int):
        raise validation_error('a state document is an object with an integer "format"')
    if document["format"] > FORMAT:
        raise validation_error(
            f"this state is format {document['format']}, newer than this sandbox reads "
            f"({FORMAT}): upgrade the sandbox"
        )
    if document["format"] < 1:
        raise validation_error(f"unknown state format {document['format']}")
    return document


def _account(account: Account) -> dict[str, Any]:
    return {
        "id": account.id,
        "email": account.email,
        "api_keys": list(account.api_keys),
        "balance": account.balance,
        "opening_balance": account.opening_balance,
        "has_active_subscription": account.has_active_subscription,
        "webhook_url": account.webhook_url,
        "webhook_secret": account.webhook_secret,
        "signature_headers": list(account.signature_headers),
    }


def order_state(order: Order) -> dict[str, Any]:
    history = order.history
    webhook = order.webhook
    if webhook is None:
        saved_webhook = None
    elif isinstance(webhook, Delivery):
        saved_webhook = {"delivery": webhook.id}
    else:
        saved_webhook = {"view": dict(webhook)}
    timer = order.timer
    reason = order.scenario_reason
    return {
        "id": order.id,
        "account_id": order.account_id,
        "email": order.created_by_email,
        "item_id": order.item_id,
        "item_name": order.item_name,
        "product_type": order.product_type,
        "quantity": _quantity_out(order.quantity),
        "unit_price": order.unit_price,
        "price": order.price,
        "fields": dict(order.fields),
        "merchant_order_id": order.merchant_order_id,
        "created_at": order.created_at,
        "scenario": order.scenario.name,
        "reason": [reason.source, reason.detail] if reason else None,
        "status": order.status,
        "delivered_quantity": _quantity_out(order.delivered_quantity),
        "refund_amount": order.refund_amount,
        "error": order.error,
        "error_message": order.error_message,
        "codes": list(order.codes),
        "completed_at": order.completed_at,
        "source": order.source,
        "webhook": saved_webhook,
        "history": [[history[i], history[i + 1]] for i in range(0, len(history), 2)],
        "next_step": order.next_step,
        "expected_code": order.expected_code,
        "due": timer.due if timer is not None and not timer.cancelled else None,
    }


def delivery_state(delivery: Delivery) -> dict[str, Any]:
    return {
        "id": delivery.id,
        "order_id": delivery.order_id,
        "status": delivery.status,
        "copy": delivery.copy,
        "url": delivery.url,
        "secret": delivery.secret,
        "signature_headers": list(delivery.signature_headers),
        "attempts": [
            [a.at, a.status_code, a.error, a.duration_ms, a.manual, *([a.via] if a.via else [])]
            for a in delivery.attempts
        ],
        "next_attempt_at": delivery.next_attempt_at,
    } | _delivery_extras(delivery)


def _delivery_extras(delivery: Delivery) -> dict[str, Any]:
    """A scenario's own retry schedule and the shaped bytes last sent, where there are
    (older documents have neither)."""
    extras: dict[str, Any] = {}
    if delivery.retry != SPEC_RETRY:
        extras["retry"] = list(delivery.retry)
    if delivery.sent is not None:
        extras["sent"] = delivery.sent.decode("utf-8")
    return extras


def _quantity_out(value: int | Decimal) -> int | str:
    return str(value) if isinstance(value, Decimal) else value


# -- restoring ----------------------------------------------------------------------------


class Restored:
    """Everything a sandbox is made of, built from a document and not yet in use."""

    def __init__(self) -> None:
        self.state: State
        self.seed: int
        self.scenarios: dict[str, Scenario]
        self.loaded_documents: list[Any]
        #: How many scenarios `loaded_documents` holds (a sandbox's quota counts them).
        self.runtime_scenarios = 0
        self.queue: list[QueuedScenario]
        self.faults: Faults
        self.coverage: dict[str, dict[str, int]]
        self.shapes: Shapes
        self.timers: list[tuple[Order, float]] = []


def restore(sandbox: Saved, document: Any) -> Restored:
    """Check `document` and build the state it describes (raises a `validation_error`
    naming the first problem). Nothing of `sandbox` changes here: see `Sandbox.adopt`."""
    doc = Reader(migrate(document), "state")
    built = Restored()
    built.seed = doc.integer("seed", 0, MAX_SEED)
    clock_doc = doc.child("clock")
    mode = clock_doc.choice("mode", ("manual", "real"))
    scale = clock_doc.number("time_scale", minimum=0, exclusive=True)
    clock = make_clock(mode, start=clock_doc.number("now"), time_scale=scale)
    scenarios = {s.name: s for s in sandbox.startup.scenarios}
    documents = doc.list("scenarios_loaded")
    # This sandbox's own startup scenarios, when the document begins with them, are not
    # loaded a second time at run time (a state put back where it came from).
    own = startup_scenarios(sandbox.startup)
    skipped = len(own) if documents[: len(own)] == own else 0
    for index, loaded in enumerate(documents[skipped:], start=skipped):
        try:
            parsed = parse_scenarios(loaded, f"state: scenarios_loaded[{index}]")
        except ConfigError as exc:
            raise validation_error("; ".join(exc.problems)) from exc
        built.runtime_scenarios += len(parsed)
        for scenario in parsed:
            scenarios[scenario.name] = scenario
    # Where each scenario came from (absent from older documents).
    sources = doc.data.get("scenario_sources", {})
    if not isinstance(sources, dict) or not all(isinstance(s, str) for s in sources.values()):
        raise validation_error("state: scenario_sources: expected an object of strings")
    startup = {id(scenario) for scenario in sandbox.startup.scenarios}
    for name, source in sources.items():
        if name in scenarios and id(scenarios[name]) not in startup:
            scenarios[name] = dataclasses.replace(scenarios[name], source=source)
    built.scenarios = scenarios
    built.loaded_documents = documents[skipped:]
    built.shapes = sandbox.startup.shapes  # absent from older documents: the startup's
    if "shapes" in doc.data:
        try:
            built.shapes = parse_kinds(doc.data["shapes"], "state: shapes")
        except ConfigError as exc:
            raise validation_error("; ".join(exc.problems)) from exc
    try:
        catalog = parse_catalog(doc.list("catalog"), "state: catalog")
    except ConfigError as exc:
        raise validation_error("; ".join(exc.problems)) from exc
    randomness = Randomness(built.seed, sandbox.sandbox_id, sandbox.startup.credential_key)
    drawn = doc.child("random")
    counts = [drawn.integer(k, 0, MAX_DRAWN) for k in ("ids", "tokens", "codes")]
    # The draws among weighted scenarios (docs/state.md): absent from older documents.
    weights = drawn.integer("weights", 0, MAX_DRAWN) if "weights" in drawn.data else 0
    randomness.skip(*counts, weights)  # as quick for any count (docs/hosting.md)
    state = State(clock=clock, randomness=randomness, catalog=catalog)
    for account_doc in doc.items("accounts"):
        state.add_account(_read_account(account_doc))
    ledger = doc.child("ledger")
    for account_id in ledger.keys():  # noqa: SIM118 - a Reader, not a dict
        if account_id not in state.accounts:
            raise validation_error(f"state: ledger: no account {account_id}")
        state.ledger.restore(account_id, _ledger_rows(ledger.list(account_id), account_id))
    for index, row in enumerate(doc.list("tokens")):
        token, account_id, api_key, expires_at = fixed_list(row, 4, f"state: tokens[{index}]")
        if account_id not in state.accounts:
            raise validation_error(f"state: tokens[{index}]: no account {account_id}")
        if state.account_by_key.get(str(api_key)) != account_id:
            continue  # its key was revoked: the token works no more, nor counts
        state.tokens.restore(str(token), Grant(str(account_id), str(api_key), float(expires_at)))
    plants = doc.items("plants")
    for plant in plants:
        plant.choice("status", PLANT_STATUSES)
    state.plants = Plants.load([p.data for p in plants])
    saved_webhooks: list[tuple[Order, Any, int]] = []
    for index, data in enumerate(doc.list("orders")):
        read = _order_fast(data, state, scenarios)
        if read is None:  # something is off: read it slowly, to name what
            read = _read_order(Reader(data, f"state.orders[{index}]"), state, scenarios)
        order, due = read
        _check_units(order, index)
        saved_webhooks.append((order, data.get("webhook"), index))
        state.orders[order.id] = order
        if order.merchant_order_id is not None:
            refs = state.orders_by_merchant_ref.setdefault(order.account_id, {})
            refs[order.merchant_order_id] = order.id
        if due is not None:
            built.timers.append((order, due))
    for delivery_doc in doc.items("deliveries"):
        delivery = _read_delivery(delivery_doc, state)
        state.deliveries[delivery.id] = delivery
        state.deliveries_by_order.add(delivery)
    _link_webhooks(saved_webhooks, state)
    built.queue = []
    for entry in doc.items("queue"):
        name = entry.string("scenario")
        if name not in scenarios:
            raise _not_loaded("state: queue", name)
        account_id = entry.optional_string("account_id")
        if account_id is not None and account_id not in state.accounts:
            raise validation_error(f"state: queue: no account {account_id}")
        remaining = entry.data.get("remaining")
        if remaining is not None:
            remaining = entry.integer("remaining", 1, 10**6)
        built.queue.append(QueuedScenario(scenarios[name], account_id, remaining))
    try:
        built.faults = Faults.load(doc.child("faults").data)
    except (KeyError, TypeError) as exc:
        raise validation_error(f"state: faults: {exc}") from exc
    built.coverage = doc.child("coverage").data
    built.state = state
    return built


def _check_units(order: Order, index: int) -> None:
    """A key order still to settle draws a code per unit when it settles: it may have no
    more units than a new one (docs/hosting.md, "What one request may cost")."""
    if (
        order.product_type == "key"
        and order.status not in TERMINAL
        and order.quantity > MAX_KEY_UNITS
    ):
        raise validation_error(
            f"state.orders[{index}].quantity: {order.quantity} is above {MAX_KEY_UNITS}, "
            "the most units a key order still to settle may have"
        )


def _not_loaded(where: str, name: str) -> ApiError:
    return validation_error(
        f"{where}: scenario {name!r} is not loaded: it is neither built in nor carried by "
        "the document (add the scenario document that defines it, such as the content of "
        "the --scenarios file the state was made with, to scenarios_loaded)"
    )


def _read_account(doc: Reader) -> Account:
    keys = [str(k) for k in doc.list("api_keys")]
    if not all(k.startswith("ak_") for k in keys):
        raise validation_error(f"{doc.where}: an API key starts with 'ak_'")
    return Account(
        id=doc.string("id"),
        email=doc.string("email"),
        api_keys=keys,
        balance=doc.integer("balance", -(10**15), 10**15),
        has_active_subscription=doc.boolean("has_active_subscription"),
        webhook_url=doc.optional_string("webhook_url"),
        webhook_secret=doc.string("webhook_secret"),
        signature_headers=tuple(str(h) for h in doc.list("signature_headers")),
        opening_balance=doc.integer("opening_balance", -(10**15), 10**15),
    )


def _ledger_rows(rows: list[Any], account_id: str) -> list[list[Any]]:
    checked = []
    for index, row in enumerate(rows):
        where = f"state: ledger.{account_id}[{index}]"
        kind, amount, after, order_id, at = fixed_list(row, 5, where)
        if kind not in ("charge", "refund", "adjustment") or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in (amount, after)
        ):
            raise validation_error(f"state: ledger.{account_id}[{index}]: not an entry")
        checked.append([kind, amount, after, order_id, float(at)])
    return checked


def _read_order(
    doc: Reader, state: State, scenarios: dict[str, Scenario]
) -> tuple[Order, float | None]:
    account_id = doc.string("account_id")
    if account_id not in state.accounts:
        raise validation_error(f"{doc.where}: no account {account_id}")
    name = doc.string("scenario")
    if name not in scenarios:
        raise _not_loaded(doc.where, name)
    history = doc.list("history")
    flat: tuple[str | float, ...] = ()
    for index, step in enumerate(history):
        status, at = fixed_list(step, 2, f"{doc.where}.history[{index}]")
        if status not in STATUSES:
            raise validation_error(f"{doc.where}.history[{index}]: unknown status {status!r}")
        flat += (status, float(at))
    reason = doc.data.get("reason")
    reason = fixed_list(reason, 2, f"{doc.where}.reason") if reason else None
    # Strings most orders share are kept once, as they were before the state was saved.
    order = Order(
        id=doc.string("id"),
        account_id=intern(account_id),
        created_by_email=intern(doc.string("email")),
        item_id=doc.integer("item_id", 0, 2**53),
        item_name=intern(doc.string("item_name")),
        product_type=doc.choice("product_type", ("key", "topup", "service")),
        quantity=doc.quantity("quantity"),
        unit_price=doc.integer("unit_price", 0, 10**15),
        price=doc.integer("price", 0, 10**15),
        fields={str(k): str(v) for k, v in doc.child("fields").data.items()},
        merchant_order_id=doc.optional_string("merchant_order_id"),
        created_at=doc.number("created_at"),
        scenario=scenarios[name],
        status=doc.choice("status", STATUSES),
        delivered_quantity=doc.quantity("delivered_quantity"),
        refund_amount=doc.integer("refund_amount", 0, 10**15),
        error=intern(doc.string("error")),
        error_message=intern(doc.string("error_message")),
        codes=tuple(str(c) for c in doc.list("codes")),
        completed_at=doc.optional_number("completed_at"),
        source=doc.string("source"),
        history=flat,
        next_step=doc.integer("next_step", 0, len(scenarios[name].steps)),
        expected_code=doc.optional_string("expected_code"),
        scenario_reason=selection.reason(str(reason[0]), str(reason[1])) if reason else None,
    )
    return order, doc.optional_number("due")


_ORDER_STRINGS = (
    "id",
    "account_id",
    "email",
    "item_name",
    "scenario",
    "error",
    "error_message",
    "source",
)
_ORDER_CENTS = ("unit_price", "price", "refund_amount")
_MAX_CENTS = 10**15


def _order_fast(
    data: Any, state: State, scenarios: dict[str, Scenario]
) -> tuple[Order, float | None] | None:
    """The common case of `_read_order`, checked with plain tests: a state file holds
    100,000 orders and a restart must take seconds. None when any test fails (the slow
    reader then names the problem)."""
    try:
        for key in _ORDER_STRINGS:
            if type(data[key]) is not str:
                return None
        for key in _ORDER_CENTS:
            cents = data[key]
            if type(cents) is not int or not 0 <= cents <= _MAX_CENTS:
                return None
        account_id, name = data["account_id"], data["scenario"]
        scenario = scenarios.get(name)
        status, product_type = data["status"], data["product_type"]
        history, codes, fields = data["history"], data["codes"], data["fields"]
        quantity, delivered = data["quantity"], data["delivered_quantity"]
        ref, expected = data["merchant_order_id"], data["expected_code"]
        created, completed, due = data["created_at"], data["completed_at"], data["due"]
        item_id, next_step, reason = data["item_id"], data["next_step"], data["reason"]
    except (KeyError, TypeError):
        return None
    if (
        account_id not in state.accounts
        or scenario is None
        or status not in STATUSES
        or product_type not in ("key", "topup", "service")
        or type(quantity) is not int
        or type(delivered) is not int
        or type(item_id) is not int
        or type(next_step) is not int
        or not 0 <= next_step <= len(scenario.steps)
        or type(created) not in (int, float)
        or not (completed is None or type(completed) in (int, float))
        or not (due is None or type(due) in (int, float))
        or not (ref is None or type(ref) is str)
        or not (expected is None or type(expected) is str)
        or type(fields) is not dict
        or type(codes) is not list
        or type(history) is not list
        or not (reason is None or (type(reason) is list and len(reason) == 2))
    ):
        return None
    flat: list[str | float] = []
    for step in history:
        if type(step) is not list or len(step) != 2 or step[0] not in _STATUS_OF:
            return None
        flat += (_STATUS_OF[step[0]], float(step[1]))
    order = Order(
        id=data["id"],
        account_id=intern(account_id),
        created_by_email=intern(data["email"]),
        item_id=item_id,
        item_name=intern(data["item_name"]),
        product_type=intern(product_type),
        quantity=quantity,
        unit_price=data["unit_price"],
        price=data["price"],
        # Shared when empty, as a new order's are (an empty dict per order is 64 bytes).
        fields={str(k): str(v) for k, v in fields.items()} if fields else NO_FIELDS,
        merchant_order_id=ref,
        created_at=float(created),
        scenario=scenario,
        status=_STATUS_OF[status],
        delivered_quantity=delivered,
        refund_amount=data["refund_amount"],
        error=intern(data["error"]),
        error_message=intern(data["error_message"]),
        codes=tuple(map(str, codes)),
        completed_at=None if completed is None else float(completed),
        source=intern(data["source"]),
        history=tuple(flat),
        next_step=next_step,
        expected_code=expected,
        scenario_reason=selection.reason(*map(str, reason)) if reason else None,
    )
    return order, None if due is None else float(due)


#: Each status as the program's own string (shared by every restored order).
_STATUS_OF = {status: status for status in STATUSES}


def _read_delivery(doc: Reader, state: State) -> Delivery:
    order = state.orders.get(doc.string("order_id"))
    if order is None:
        raise validation_error(f"{doc.where}: no order {doc.data.get('order_id')}")
    attempts = []
    for index, row in enumerate(doc.list("attempts")):
        # Five values; a sixth says how the attempt was made ("listener").
        where = f"{doc.where}.attempts[{index}]"
        at, code, error, duration, manual, *via = (
            fixed_list(row, 6, where)
            if isinstance(row, list) and len(row) == 6
            else fixed_list(row, 5, where)
        )
        if via and via[0] != LISTENER:
            raise validation_error(f"{where}[5]: expected {LISTENER!r}")
        attempts.append(Attempt(float(at), code, error, float(duration), bool(manual), *via))
    return Delivery(
        id=doc.string("id"),
        order=order,
        status=doc.choice("status", DELIVERY_STATUSES),
        copy=doc.integer("copy", 0, 10),
        url=doc.optional_string("url"),
        secret=doc.optional_string("secret"),
        signature_headers=tuple(str(h) for h in doc.list("signature_headers")),
        attempts=tuple(attempts),
        next_attempt_at=doc.optional_number("next_attempt_at"),
        own=Own.of(_retry(doc), _sent(doc)),
    )


def _sent(doc: Reader) -> bytes | None:
    sent = doc.optional_string("sent") if "sent" in doc.data else None
    return sent.encode("utf-8") if sent is not None else None


def _retry(doc: Reader) -> tuple[float, ...]:
    if "retry" not in doc.data:
        return SPEC_RETRY
    gaps = doc.list("retry")
    if len(gaps) > MAX_RETRIES or not all(
        isinstance(g, int | float) and not isinstance(g, bool) and 0 < g < math.inf for g in gaps
    ):
        raise validation_error(
            f"{doc.where}.retry: expected at most {MAX_RETRIES} gaps, each seconds > 0"
        )
    return tuple(float(g) for g in gaps)


def _link_webhooks(saved_webhooks: list[tuple[Order, Any, int]], state: State) -> None:
    """An order's `webhook` is its pending view or its primary delivery (each with its
    index in `orders`, named only in an error)."""
    for order, saved, index in saved_webhooks:
        if saved is None:
            order.webhook = None
        elif isinstance(saved, dict) and isinstance(saved.get("view"), dict):
            view = saved["view"]
            order.webhook = PENDING_WEBHOOK if view == PENDING_WEBHOOK else view
        elif isinstance(saved, dict) and saved.get("delivery") in state.deliveries:
            order.webhook = state.deliveries[saved["delivery"]]
        else:
            raise validation_error(f"state.orders[{index}].webhook: not a view or a known delivery")
