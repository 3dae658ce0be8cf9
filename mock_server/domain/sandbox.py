"""The sandbox backend: one method per API operation, plain values in, domain errors out.

The HTTP layer (`mock_server.api`, `mock_server.control`) parses requests, calls one
method here and renders the result. Everything here is synchronous except `advance`,
so each merchant operation is atomic on the event loop: two concurrent creates with the
same `merchant_order_id` cannot both pass the duplicate check, and a refused request
has changed nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import Callable
from typing import Any, Protocol

import orjson

from ..clock import Clock, iso, make_clock
from ..errors import (
    TokenError,
    insufficient_balance,
    not_authenticated,
    not_found,
    price_mismatch,
    validation_error,
)
from ..scheduler import Scheduler
from ..sourcefile import ConfigError
from . import admin, selection, state_document
from .accounts import Account
from .coverage import Coverage
from .deliveries import Delivery, Sender, event_body, event_view
from .events import EventHub, OpenStreams, encode_json
from .faults import Faults
from .journal import Journal
from .lifecycle import Lifecycle
from .listeners import Listeners
from .money import charge_for, major
from .order_request import OrderRequest, parse_order_request
from .orders import PENDING_WEBHOOK, Order, key_units
from .plants import Plant
from .policy import Policy
from .quotas import NO_QUOTAS, Quotas
from .sandbox_ids import DEFAULT_ID
from .scenarios import Scenario, WebhookChaos, parse_scenarios
from .shape_facts import DELIVERY_FACTS, delivery_facts, order_facts, token_facts
from .shapes import Facts, Shapes, parse_kinds
from .startup import QueuedScenario, StartupState
from .state import State
from .statuses import STATUSES


class Recorder(Protocol):
    """Who keeps a state file up to date: told of each order, delivery and token."""

    def order(self, sandbox: Sandbox, order: Order) -> None: ...
    def delivery(self, sandbox: Sandbox, delivery: Delivery) -> None: ...
    def token(self, sandbox: Sandbox, token: str) -> None: ...


class Sandbox:
    """One whole isolated world (docs/control-api.md, "Sandboxes"): its accounts, catalog
    copy, orders, deliveries, journal, random sequence, and its own clock and scheduler.

    `sandbox_id` is put into the tokens and API keys it generates so they are unique
    server-wide (the default sandbox's carry none: its credentials stay as they were).
    """

    def __init__(
        self,
        startup: StartupState,
        *,
        clock: Clock | None = None,
        sandbox_id: str = DEFAULT_ID,
        events: EventHub | None = None,
        quotas: Quotas = NO_QUOTAS,
    ) -> None:
        self.startup = startup
        #: Where its webhooks may go and what it may hold (`domain/policy.py`).
        self.policy = Policy.of(sandbox_id, startup.webhook_rules, quotas)
        #: Scenarios loaded at run time since the last reset, counted against its quota.
        self.runtime_scenarios = 0
        self.sandbox_id = sandbox_id
        self.seed = startup.seed
        self.scenarios: dict[str, Scenario] = {s.name: s for s in startup.scenarios}
        #: Production's shapes for its merchant answers and events (docs/shapes.md):
        #: the startup's until `PUT /_mock/shapes` (a reset goes back to them).
        self.shapes: Shapes = startup.shapes
        #: The seeded draws of `uuid` and `int` rules.
        self.shape_rng = random.Random(startup.seed)
        #: The scenario documents loaded at run time, in order (saved state replays them).
        self.loaded_documents: list[Any] = []
        clock = clock or make_clock(
            startup.clock_mode, start=startup.start_time, time_scale=startup.time_scale
        )
        self.scheduler = Scheduler(clock)
        self.state = self._fresh_state(clock)
        #: What changed, for the readers of `GET /_mock/events`.
        self.events = events or EventHub(encode_json)
        #: What the run exercised (`GET /_mock/coverage`); a reset keeps it.
        self.coverage = Coverage()
        #: Told of every change, to keep a state file up to date (`mock_server.state_file`).
        self.recorder: Recorder | None = None
        #: Bumped when the state is replaced wholesale (reset, saved state, accounts).
        self.generation = 0
        self.lifecycle = self._new_lifecycle()
        self.queue: list[QueuedScenario] = []
        self.faults = Faults()
        self.journal = Journal(startup.journal_size)
        #: Called with each order that reaches a terminal status (the webhook sender).
        self.settled_hooks: list[Callable[[Order, WebhookChaos | None], None]] = []
        #: The sender of this sandbox's webhooks, set by whoever wires I/O (the app).
        self.webhooks: Sender | None = None
        #: `mock-server listen` processes connected, through which attempts go.
        self.listeners = Listeners()
        #: Its open `/_mock/events` and `/_mock/listen` streams, under its quota.
        self.streams = OpenStreams()
        self._runner: asyncio.Task[None] | None = None

    @property
    def clock(self) -> Clock:
        return self.state.clock

    @property
    def quotas(self) -> Quotas:
        """What this sandbox may hold (`domain/quotas.py`): its policy's."""
        return self.policy.quotas

    def _fresh_state(self, clock: Clock) -> State:
        return State.build(
            clock=clock,
            seed=self.seed,
            catalog=self.startup.catalog,
            accounts=self.startup.accounts,
            sandbox_id=self.sandbox_id,
            credential_key=self.startup.credential_key,
        )

    # -- running and stopping -----------------------------------------------------------

    def start(self) -> None:
        """Under a real clock, run jobs as they fall due (needs a running event loop)."""
        if self.clock.mode == "real" and self._runner is None:
            self._runner = asyncio.create_task(self.scheduler.run_forever())

    async def close(self) -> None:
        """Stop everything this sandbox has in flight: its timers, its running webhook
        attempts, its scheduler loop and its HTTP client."""
        self.lifecycle.cancel_all()
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner
            self._runner = None
        self.scheduler.reset(self.clock)
        self.listeners.close()
        if self.webhooks is not None:
            await self.webhooks.close()
        self.events.close()

    # -- authentication -----------------------------------------------------------------

    def exchange_token(self, body: Any) -> dict[str, str]:
        api_key = body.get("api_key") if isinstance(body, dict) else None
        if not isinstance(api_key, str) or not api_key:
            raise TokenError(401, "api_key is required")
        account_id = self.state.account_by_key.get(api_key)
        if account_id is None:
            raise TokenError(401, "Invalid API key")
        tokens, now = self.state.tokens, self.state.now(account_id)
        # Past the quota: 429 in this endpoint's own shape (spec 4.1), nothing drawn.
        over = self.quotas.refusal("tokens", tokens.live_count(now) + 1)
        if over is not None:
            raise TokenError(429, over.detail)
        token = self.state.randomness.token()
        tokens.issue(token, account_id, api_key, now)
        if self.recorder is not None:
            self.recorder.token(self, token)
        return {"access_token": token, "token_type": "Bearer"}

    def authenticate(self, authorization: str | None) -> Account:
        """The account behind `Authorization: Bearer <token>`, or 401 not_authenticated."""
        if not authorization:
            raise not_authenticated(
                "Missing Authorization header: send 'Bearer <token>'", "missing token"
            )
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if (scheme != "Bearer" and scheme.lower() != "bearer") or not token:
            raise not_authenticated("Authorization must be 'Bearer <token>'", "missing token")
        state = self.state
        tokens, now = state.tokens, state.now()
        grant = tokens.lookup(token, now)
        # A revoked key's tokens stop working: the key must still map to the account.
        if grant is None or state.account_by_key.get(grant.api_key) != grant.account_id:
            raise not_authenticated(
                "Invalid or expired access token: exchange the API key "
                "again at /api/v1/auth/token/client",
                "expired token" if tokens.expired(token, now) else "invalid token",
            )
        return state.accounts[grant.account_id]

    # -- merchant operations ------------------------------------------------------------

    def balance(self, account: Account) -> dict[str, Any]:
        return {"balance": major(account.balance), "currency": "USD"}

    def me(self, account: Account) -> dict[str, Any]:
        return account.to_me()

    def create_order(
        self, account: Account, body: Any, *, scenario_name: str | None = None
    ) -> Order:
        """Spec 4.3: validate, price, charge, start fulfillment; all or nothing."""
        self.quotas.check("orders", len(self.state.orders) + 1)
        if not isinstance(body, dict):
            raise validation_error("The request body must be a JSON object", "malformed body")
        forced = self._named_scenario(scenario_name) if scenario_name is not None else None
        request = parse_order_request(body, self.state.catalog)
        if request.item.product_type == "key":
            self.quotas.check("codes", self.state.key_units + int(request.quantity))
        ref = request.merchant_order_id
        existing = self.state.order_id_for_ref(account.id, ref) if ref is not None else None
        if existing is not None:
            raise validation_error(
                f"merchant_order_id {ref!r} was already used by order {existing}",
                "duplicate merchant_order_id",
            )
        queued = None if forced else self._queued_for(account)
        chosen = self._choose(forced, queued, request)
        randomness = self.state.randomness
        if isinstance(chosen, selection.Draw):  # used up below, once the order is made
            scenario, why = chosen.pick(randomness.next_weight_draw())
        else:
            scenario, why = chosen
        unit_price = request.item.unit_price(account.has_active_subscription)
        if scenario.pricing is not None:
            unit_price = scenario.pricing.apply(unit_price)
        charge = charge_for(request.quantity, unit_price)
        if request.price_guard is not None and request.price_guard != charge:
            raise price_mismatch(
                f"The order would cost {major(charge):.2f}, not "
                f"{major(request.price_guard):.2f}: send the current price "
                "or omit 'price'",
                actual_price=major(charge),
            )
        if account.balance < charge:
            raise insufficient_balance(
                f"The order costs {major(charge):.2f} but the balance "
                f"is {major(account.balance):.2f}"
            )
        order = self._place(account, request, scenario, unit_price, charge)
        order.scenario_reason = why
        if isinstance(chosen, selection.Draw):
            randomness.weight_drawn()
        if queued is not None and queued.remaining is not None:
            queued.remaining -= 1
            if queued.remaining == 0:
                self.queue.remove(queued)
        return order

    def get_order(self, account: Account, order_id: str) -> Order:
        order = self.state.orders.get(order_id)
        if order is None or order.account_id != account.id:
            raise not_found(f"Order {order_id} not found")
        return order

    def submit_client_code(self, account: Account, order_id: str, body: Any) -> Order:
        order = self.get_order(account, order_id)
        code = body.get("code") if isinstance(body, dict) else None
        if isinstance(code, int) and not isinstance(code, bool):
            code = str(code)
        if not isinstance(code, str) or not code.strip():
            raise validation_error('code is required: send {"code": "<code>"}')
        if order.status != "need_client_code":
            raise validation_error(
                f"Order {order.id} is {order.status}; a client code is "
                "accepted only in need_client_code"
            )
        if order.expected_code is not None and code.strip() != order.expected_code:
            self.coverage.count("client_codes", "wrong code")
            raise validation_error(
                "The client code is not correct; the order is still waiting for the right one"
            )
        self.coverage.count("client_codes", "accepted")
        self.lifecycle.release(order)
        return order

    def update_plant(self, body: Any) -> Plant:
        if not isinstance(body, dict):
            raise validation_error("The request body must be a JSON object")
        return self.state.plants.update(body)

    # -- control operations -------------------------------------------------------------

    async def advance(self, seconds: float) -> float:
        now = await self.scheduler.advance(seconds)
        self.events.publish("clock", {"now": iso(now)})
        return now

    def reset(self, *, seed: int | None = None, start_time: float | None = None) -> None:
        """Back to the startup state; optionally with a new seed and start time."""
        self.lifecycle.cancel_all()
        self.seed = seed if seed is not None else self.startup.seed
        start = start_time if start_time is not None else self.startup.start_time
        clock = make_clock(self.clock.mode, start=start, time_scale=self.clock.time_scale)
        self.scheduler.reset(clock)
        self.scenarios = {s.name: s for s in self.startup.scenarios}
        self.shapes = self.startup.shapes
        self.shape_rng = random.Random(self.seed)
        self.loaded_documents = []
        self.runtime_scenarios = 0
        self.state = self._fresh_state(clock)
        self.lifecycle = self._new_lifecycle()
        self.queue.clear()
        self.faults = Faults()  # fault ids restart too: same requests, same answers
        self.journal.clear()
        self.generation += 1
        self.events.publish("reset", {})

    def queue_scenario(
        self, name: Any, *, account_id: Any = None, count: Any = 1, replace: Any = False
    ) -> QueuedScenario:
        """The next `count` orders (of `account_id`, or of any account) get `name`;
        `replace` first drops what was queued for the same account (or for any). The
        entry counts once against the queue quota, whatever its `count` (null too)."""
        if not isinstance(name, str) or name not in self.scenarios:
            raise validation_error(f"Unknown scenario {name!r}; known: {', '.join(self.scenarios)}")
        if account_id is not None and not isinstance(account_id, str):
            raise validation_error("account_id must be a string (an account id)")
        if account_id is not None and account_id not in self.state.accounts:
            raise not_found(f"Account {account_id} not found")
        if count is not None and (
            isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 10**6
        ):
            raise validation_error("count must be an integer 1 to 1000000, or null for every order")
        if not isinstance(replace, bool):
            raise validation_error("replace must be true or false")
        kept = [e for e in self.queue if e.account_id != account_id] if replace else self.queue
        self.quotas.check("queue", len(kept) + 1)  # refused: nothing dropped either
        self.queue = kept
        entry = QueuedScenario(self.scenarios[name], account_id, count)
        self.queue.append(entry)
        return entry

    def explain(self, body: Any) -> dict[str, Any]:
        """`POST /_mock/scenarios/explain`: the scenario an order request would get, why,
        and for every scenario with a `match` the first key that failed; for an order
        that would be drawn among weighted scenarios, no scenario but the candidates.
        Nothing is created, charged, drawn or taken from the queue."""
        if not isinstance(body, dict):
            raise validation_error("The request body must be a JSON object")
        unknown = sorted(set(body) - {"body", "account_id", "headers"})
        if unknown:
            raise validation_error(
                f"unknown key {unknown[0]!r}: send body, and optionally account_id and headers"
            )
        account = self._explained_account(body.get("account_id"))
        headers = body.get("headers") or {}
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            raise validation_error("headers must be an object of strings")
        named = next((v for k, v in headers.items() if k.lower() == "x-mock-scenario"), None)
        forced = self._named_scenario(named) if named is not None else None
        request = body.get("body")
        if not isinstance(request, dict):
            raise validation_error("body must be the order request: a JSON object")
        parsed = parse_order_request(request, self.state.catalog)
        queued = self._queued_for(account) if account is not None else None
        chosen = self._choose(forced, queued, parsed)
        # A weighted draw is described, not made: explaining never uses the sequence
        # (docs/control-api.md, "Why this scenario").
        if isinstance(chosen, selection.Draw):
            name, why, candidates = None, chosen.why(), chosen.candidates()
        else:
            name, why, candidates = chosen[0].name, chosen[1], []
        return {
            "scenario": name,
            "reason": why.to_json(),
            "near_misses": selection.near_misses(self.scenarios, _candidate(parsed)),
            "candidates": candidates,
        }

    def _choose(
        self, forced: Scenario | None, queued: QueuedScenario | None, request: OrderRequest
    ) -> tuple[Scenario, selection.ScenarioReason] | selection.Draw:
        """The scenario an order gets, and why: the header's, else the queue's, else the
        first automatic rule that applies; that may be a weighted draw, still to make."""
        if forced is not None:
            return forced, selection.by_header(forced.name)
        if queued is not None:
            why = selection.by_queue(queued.scenario.name, queued.account_id, queued.remaining)
            return queued.scenario, why
        return selection.automatic(self.scenarios, _candidate(request))

    def _explained_account(self, account_id: Any) -> Account | None:
        if account_id is None:
            return next(iter(self.state.accounts.values()), None)
        if not isinstance(account_id, str) or account_id not in self.state.accounts:
            raise not_found(f"Account {account_id} not found")
        return self.state.accounts[account_id]

    def replace_accounts(self, data: Any) -> list[Account]:
        """Every account replaced (see `admin.replace_accounts`); queue entries aimed at
        the replaced accounts go with them."""
        replaced = set(self.state.accounts)
        accounts = admin.replace_accounts(self.state, data, self.policy)
        self.queue = [entry for entry in self.queue if entry.account_id is None]
        # Their pending steps and webhook attempts go too, whenever they were due: a
        # timer left in the scheduler would hold its order (docs/hosting.md, "Quotas").
        self.scheduler.forget_owners(replaced)
        self.state.manual_attempts = 0
        self.state.key_units = 0
        self.generation += 1  # orders and deliveries of the old accounts are gone
        return accounts

    def patch_account(self, account_id: str, body: dict[str, Any]) -> Account:
        """`admin.patch_account`; a new balance is a ledger adjustment, under its quota."""
        admin.find_account(self.state, account_id)
        if "balance" in body:
            self.quotas.check("adjustments", self.state.ledger.adjustments + 1)
        return admin.patch_account(self.state, account_id, body, self.policy)

    def issue_api_key(self, account_id: str) -> str:
        """`admin.issue_api_key`, under the `api_keys` quota."""
        admin.find_account(self.state, account_id)
        self.quotas.check("api_keys", len(self.state.account_by_key) + 1)
        return admin.issue_api_key(self.state, account_id)

    async def redeliver(self, delivery_id: str) -> Delivery:
        """Send a delivery once more, now (`Sender.redeliver`): the attempt it keeps
        counts against the `redeliveries` quota, taken before it is made."""
        delivery = self.find_delivery(delivery_id)
        state = self.state
        self.quotas.check("redeliveries", state.manual_attempts + 1)
        state.manual_attempts += 1
        assert self.webhooks is not None, "the app wires a sender to every sandbox"
        return await self.webhooks.redeliver(delivery)

    def load_scenarios(self, data: Any, source: str = "request body") -> list[Scenario]:
        """Add (or replace, by name) scenarios at run time; all or nothing."""
        try:
            loaded = parse_scenarios(data, source)
        except ConfigError as exc:
            raise validation_error("; ".join(exc.problems)) from exc
        self.quotas.check("scenarios", self.runtime_scenarios + len(loaded))
        self.runtime_scenarios += len(loaded)
        for scenario in loaded:
            self.scenarios[scenario.name] = scenario
        self.loaded_documents.append(data)
        return loaded

    # -- production's shapes (docs/shapes.md) -------------------------------------------

    def set_shapes(self, kinds: Any) -> Shapes:
        """`PUT /_mock/shapes`: the `{KIND: RULES}` mapping its answers and events take
        from now on (an empty one: none); a refused mapping changes nothing."""
        try:
            self.shapes = parse_kinds(kinds, "shapes")
        except ConfigError as exc:
            raise validation_error("; ".join(exc.problems)) from exc
        return self.shapes

    def answer_facts(self, kind: str, body: dict[str, Any]) -> Facts:
        """What a rule of `kind` may read beyond the answer's fields (docs/shapes.md)."""
        now = self.clock.now()
        if kind == "token":
            return token_facts(now, self.shape_rng)
        reads = self.shapes.reads(kind)
        if kind != "order" or not reads:
            return Facts(now=now, rng=self.shape_rng)
        state = self.state
        order_id = body.get("id")
        order = state.orders.get(order_id) if isinstance(order_id, str) else None
        primary = None
        url = None
        if order is not None:
            # The delivery its `webhook` object is rendered from (`Order.webhook`).
            primary = order.webhook if isinstance(order.webhook, Delivery) else None
            account = state.accounts.get(order.account_id)
            url = account.webhook_url if account is not None else None
        return order_facts(body, state.catalog, primary, url, now, self.shape_rng, reads)

    def answer_facts_key(self, order_id: str) -> tuple[Any, ...]:
        """What an order answer's facts depend on beyond its own bytes (whose `webhook`
        object already shows its delivery's state): its item's choice options, which
        only a new catalog changes, and where its webhook goes. Two answers with the
        same bytes and key take the same facts (`merchant.shaping` keeps shaped answers
        by it)."""
        state = self.state
        order = state.orders.get(order_id)
        if order is None:
            return (id(state.catalog),)
        account = state.accounts.get(order.account_id)
        primary = order.webhook  # its primary delivery, once it has one
        return (
            id(state.catalog),
            account.webhook_url if account is not None else None,
            primary.url if isinstance(primary, Delivery) else None,
        )

    def event_body(self, delivery: Delivery, url: str | None) -> bytes:
        """The bytes an attempt of `delivery` to `url` sends: the order-result event, in
        production's shape when a shapes file says so (what is signed; kept as the
        delivery's `sent`)."""
        shapes = self.shapes
        if not shapes.applies("event"):
            return event_body(delivery.order)
        reads = shapes.reads("event")
        facts = Facts(
            now=self.clock.now(),
            named=delivery_facts(delivery, url) if reads & DELIVERY_FACTS else {},
            order=delivery.order.to_json() if "order" in reads else None,
            rng=self.shape_rng,
        )
        event = event_view(delivery.order)
        shaped = shapes.shape("event", event, facts)
        try:
            # Copied to its own size: orjson's result keeps its whole working buffer
            # (4 KiB), and every delivery keeps what it sent.
            sent = bytes(memoryview(orjson.dumps(shaped)))
        except TypeError:  # an integer past 64 bits (a `const`): the standard encoder
            sent = json.dumps(shaped, separators=(",", ":")).encode()
        delivery.sent = sent
        return sent

    # -- saved state (docs/state.md) -----------------------------------------------------

    def dump_state(self) -> dict[str, Any]:
        return state_document.dump(self)

    def load_state(self, document: Any) -> None:
        """Replace the whole state with a saved one; a refused document changes nothing
        (one that holds more than a quota allows included)."""
        restored = state_document.restore(self, document)
        rules = self.startup.webhook_rules
        for account in restored.state.accounts.values():
            refused = rules.literal_refusal(account.webhook_url) if account.webhook_url else None
            if refused:
                raise validation_error(
                    f"state: account {account.id}: 'webhook_url' is refused: {refused}"
                )
        self.policy.check_keys(restored.state.account_by_key)
        quotas = self.quotas
        quotas.check("orders", len(restored.state.orders))
        quotas.check("codes", key_units(restored.state.orders.values()))
        quotas.check("accounts", len(restored.state.accounts))
        quotas.check("catalog", len(restored.state.catalog))
        quotas.check("scenarios", restored.runtime_scenarios)
        quotas.check("faults", len(restored.faults))
        restored.faults.check_sizes(quotas)
        quotas.check("queue", len(restored.queue))
        quotas.check("tokens", restored.state.tokens.live_count(restored.state.clock.now()))
        quotas.check("api_keys", len(restored.state.account_by_key))
        quotas.check("adjustments", restored.state.ledger.adjustments)
        quotas.check("redeliveries", _manual_attempts(restored.state))
        self.adopt(restored)

    def resume_saved(self, document: Any) -> None:
        """The state a state file kept, back whole at start, quotas lowered since or not
        (what the file holds was allowed when it was written)."""
        self.adopt(state_document.restore(self, document))

    def adopt(self, restored: state_document.Restored) -> None:
        """Swap a checked, fully built state in, and resume its pending work."""
        self.lifecycle.cancel_all()
        state = restored.state
        state.manual_attempts = _manual_attempts(state)
        state.key_units = key_units(state.orders.values())
        self.scheduler.reset(state.clock)
        self.seed = restored.seed
        self.state = state
        self.scenarios = restored.scenarios
        self.shapes = restored.shapes
        self.loaded_documents = restored.loaded_documents
        self.runtime_scenarios = restored.runtime_scenarios
        self.queue = restored.queue
        self.faults = restored.faults
        self.coverage.load(restored.coverage)
        self.journal.clear()
        self.generation += 1
        self.lifecycle = self._new_lifecycle()
        for order, due in restored.timers:
            self.lifecycle.resume(order, due)
        if self.webhooks is not None:
            for delivery in state.deliveries.values():
                self.webhooks.resume(delivery)
        self.events.publish("reset", {})

    def clock_info(self) -> dict[str, Any]:
        return {
            "now": iso(self.clock.now()),
            "mode": self.clock.mode,
            "time_scale": self.clock.time_scale,
        }

    def list_orders(
        self,
        *,
        account_id: str | None = None,
        status: str | None = None,
        merchant_order_id: str | None = None,
    ) -> list[Order]:
        if status is not None and status not in STATUSES:
            raise validation_error(f"status must be one of {', '.join(STATUSES)}")
        return [
            order
            for order in self.state.orders.values()
            if (account_id is None or order.account_id == account_id)
            and (status is None or order.status == status)
            and (merchant_order_id is None or order.merchant_order_id == merchant_order_id)
        ]

    def find_order(self, order_id: str) -> Order:
        order = self.state.orders.get(order_id)
        if order is None:
            raise not_found(f"Order {order_id} not found")
        return order

    # -- internals ----------------------------------------------------------------------

    def _named_scenario(self, name: str) -> Scenario:
        scenario = self.scenarios.get(name)
        if scenario is None:
            raise validation_error(
                f"Unknown scenario {name!r} in X-Mock-Scenario; known: {', '.join(self.scenarios)}"
            )
        return scenario

    def _queued_for(self, account: Account) -> QueuedScenario | None:
        for entry in self.queue:
            if entry.account_id in (None, account.id):
                return entry
        return None

    def _place(
        self,
        account: Account,
        request: OrderRequest,
        scenario: Scenario,
        unit_price: int,
        charge: int,
    ) -> Order:
        now = self.state.now(account.id)
        order = Order(
            id=self.state.randomness.uuid(),
            account_id=account.id,
            created_by_email=account.email,
            item_id=request.item.id,
            item_name=request.item.name,
            product_type=request.item.product_type,
            quantity=request.quantity,
            unit_price=unit_price,
            price=charge,
            fields=request.fields,
            merchant_order_id=request.merchant_order_id,
            created_at=now,
            scenario=scenario,
            webhook=PENDING_WEBHOOK if account.webhook_url else None,
        )
        order.history += ("pending", now)
        self.state.orders[order.id] = order
        if order.product_type == "key":
            self.state.key_units += int(order.quantity)
        if order.merchant_order_id is not None:
            refs = self.state.orders_by_merchant_ref.setdefault(account.id, {})
            refs[order.merchant_order_id] = order.id
        self.state.ledger.charge(account, charge, order.id, now)
        self.lifecycle.start(order)
        self.coverage.count("statuses", "pending")
        self.coverage.count("scenarios", scenario.name)
        self.order_changed(order)
        return order

    def order_changed(self, order: Order) -> None:
        """Tell the state file and the event readers (if any) that `order` was created or
        changed."""
        if self.recorder is not None:
            self.recorder.order(self, order)
        if self.events.active:
            self.events.publish_order(order)

    def delivery_changed(self, delivery: Delivery) -> None:
        if self.recorder is not None:
            self.recorder.delivery(self, delivery)
        if self.events.active:
            self.events.publish("delivery", delivery.to_json())

    def coverage_report(self) -> dict[str, Any]:
        return self.coverage.report(self.scenarios)

    def _new_lifecycle(self) -> Lifecycle:
        return Lifecycle(self.state, self.scheduler, self._settled, self._order_moved)

    def _order_moved(self, order: Order) -> None:
        """After every status change: count it (coverage), then tell the readers."""
        history, coverage = order.history, self.coverage
        before, after = history[-4], history[-2]
        coverage.count("statuses", after)
        coverage.count("transitions", f"{before}->{after}")
        if after == "failed":
            coverage.count("settlement_errors", order.error)
        elif after == "partial":
            coverage.count(
                "settlement_errors",
                "partial with error" if order.error else "partial without error",
            )
            if order.error:
                coverage.count("settlement_errors", order.error)
        self.order_changed(order)

    def _settled(self, order: Order, chaos: WebhookChaos | None) -> None:
        for hook in self.settled_hooks:
            hook(order, chaos)

    def deliveries(self, order_id: str | None = None) -> list[Delivery]:
        if order_id is None:
            return list(self.state.deliveries.values())
        return self.state.deliveries_by_order.of(order_id)

    def find_delivery(self, delivery_id: str) -> Delivery:
        delivery = self.state.deliveries.get(delivery_id)
        if delivery is None:
            raise not_found(f"Delivery {delivery_id} not found")
        return delivery


def _manual_attempts(state: State) -> int:
    """The manual attempts a (restored) state's deliveries hold."""
    return sum(
        attempt.manual for delivery in state.deliveries.values() for attempt in delivery.attempts
    )


def _candidate(request: OrderRequest) -> selection.Candidate:
    item = request.item
    return selection.Candidate(
        merchant_order_id=request.merchant_order_id,
        item_id=item.id,
        product_type=item.product_type,
        quantity=request.quantity,
        client_code=item.client_code,
    )
