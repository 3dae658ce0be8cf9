"""A production stand-in, written from the ordering service's API specification alone.

It imports nothing from `mock_server`: it is what an independent implementation of the
spec might look like, shaped where the spec says "not shown" the way a real provider
could have chosen, and deliberately unlike the sandbox there (docs/recording.md,
docs/shapes.md): a balance sent as a string, `expires_in` on the token answer, order fields the spec
does not list (`eta_seconds`, `currency`), choice fields echoed as their id, the order's
`webhook` object with sub-fields of its own, timings and an outcome mix of its own,
webhook retries 3 s apart, events with only the spec's seven fields (or a few more).

Time is the stand-in's own virtual clock (`StandIn.now`, epoch seconds): nothing moves
until the test calls `await standin.advance(seconds)`, which fires every fulfillment step
and webhook attempt that falls due, in time order, the clock standing at each while it
runs. Nothing sleeps on wall time. Everything (ids, tokens, codes, the outcome mix) is
drawn from `Production.seed`.

    standin = StandIn(Production(webhook_url="http://127.0.0.1:8999/hooks"))
    url = await standin.start()          # 127.0.0.1, a free port
    ...                                  # the merchant API on /api/v1/... and /v1/...
    await standin.advance(7)             # key orders complete (or not), webhooks go out
    await standin.stop()
"""

from __future__ import annotations

import asyncio
import hashlib
import heapq
import hmac
import itertools
import json
import random
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, Literal

import aiohttp
from aiohttp import web

#: 2026-03-01T10:00:00Z, where the stand-in's clock starts unless told otherwise.
START = 1772359200.0
PREFIXES = ("/api/v1", "/v1")
TERMINAL = frozenset({"completed", "partial", "failed"})
#: The fields spec section 6 lists as what receivers read: all an event carries with
#: `event_fields="spec"`.
SPEC_EVENT_FIELDS = (
    "order_id",
    "status",
    "merchant_order_id",
    "quantity",
    "delivered_quantity",
    "codes",
    "refund_amount",
)
ERROR_MESSAGES = {
    "OUT_OF_STOCK": "The item went out of stock before anything could be delivered.",
    "ORDER_TIMEOUT": "The provider did not deliver every unit in time.",
}


# -- the catalog ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Choice:
    id: int
    label: str


@dataclass(frozen=True)
class InputField:
    name: str
    type: Literal["text", "choice"]
    options: tuple[Choice, ...] = ()


@dataclass(frozen=True)
class Item:
    """A catalog record (spec 2.2); prices in cents. `login` marks a login-method top-up,
    the only kind that waits for a client code (spec 3.1)."""

    id: int
    name: str
    product_type: Literal["key", "topup", "service"]
    price: int
    min_quantity: float = 1
    max_quantity: float = 10
    in_stock: bool = True
    fields: tuple[InputField, ...] = ()
    subscriber_price: int | None = None
    amount_per_price: float | None = None
    login: bool = False


REGIONS = (Choice(1, "Europe"), Choice(2, "North America"), Choice(3, "Asia"))
CATALOG: tuple[Item, ...] = (
    Item(501, "Steam Gift Card 20 EUR", "key", 2150, 1, 10, subscriber_price=2100),
    Item(502, "Xbox Game Pass Ultimate 1 Month", "key", 1399, 1, 5),
    Item(503, "PlayStation Store 50 USD", "key", 4999, 1, 5, in_stock=False),
    Item(
        601,
        "Razer Gold Direct Top-up",
        "topup",
        104,
        1,
        500,
        fields=(InputField("razer_id", "text"), InputField("region", "choice", REGIONS)),
        amount_per_price=1.0,
    ),
    Item(
        602,
        "Genshin Impact Crystals via Login",
        "topup",
        1599,
        1,
        3,
        fields=(InputField("login_email", "text"), InputField("server", "choice", REGIONS)),
        amount_per_price=300.0,
        login=True,
    ),
    Item(
        701,
        "League Rank Boost (one division)",
        "service",
        2799,
        1,
        1,
        fields=(InputField("summoner", "text"), InputField("region", "choice", REGIONS)),
    ),
)


# -- the options --------------------------------------------------------------------------------


def _default_key_outcomes() -> dict[str, int]:
    return {"completed": 6, "timeout": 2, "out_of_stock": 1, "short": 1}


@dataclass(frozen=True)
class Production:
    """How the stand-in behaves. The defaults are "production": unlike the sandbox
    wherever the spec leaves the choice open.

    Key orders draw an outcome from `key_outcomes` (integer weights, drawn as a shuffled
    bag refilled when empty, so every sum-of-weights orders hold each outcome exactly as
    often as weighed): `completed` (processing after `key_processing_after`, completed
    after `key_completed_after`), `timeout` (partial with `ORDER_TIMEOUT` after
    `key_timeout_after`, half the units delivered; failed `ORDER_TIMEOUT` when that is
    none), `out_of_stock` (failed `OUT_OF_STOCK`, full refund, after
    `key_out_of_stock_after`), `short` (stock ran out mid-order: partial with an empty
    error after `key_completed_after`; failed `OUT_OF_STOCK` for a single unit)."""

    seed: int = 1
    start: float = START
    api_keys: tuple[str, ...] = ("ak_live_3f9a27c1d84e4b6a",)
    balance: str = "50000.00"
    subscription: bool = False
    catalog: tuple[Item, ...] = CATALOG
    webhook_url: str | None = None
    webhook_secret: str = "whsec_5d1e0a9b7c3f4e2a8b6d"
    # shapes
    balance_as: Literal["string", "number"] = "string"
    expires_in: bool = True
    extra_order_fields: bool = True
    choice_echo: Literal["id", "label"] = "id"
    event_fields: Literal["spec", "extra"] = "spec"
    timestamp_format: str = "%Y-%m-%dT%H:%M:%S+00:00"
    currency: str = "EUR"
    token_lifetime: float = 7200.0
    # timings (seconds after creation; login top-ups: after the client code)
    key_processing_after: float = 2.0
    key_completed_after: float = 7.0
    key_timeout_after: float = 40.0
    key_out_of_stock_after: float = 4.0
    topup_processing_after: float = 1.0
    topup_completed_after: float = 4.0
    login_code_after: float = 3.0
    login_completed_after_code: float = 5.0
    service_processing_after: float = 3.0
    service_completed_after: float = 12.0
    key_outcomes: dict[str, int] = field(default_factory=_default_key_outcomes)
    # webhooks
    retry_every: float = 3.0
    max_retries: int = 3


# -- state ----------------------------------------------------------------------------------


class Refusal(Exception):
    """An answer other than success: status and JSON body."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(status, body)
        self.status = status
        self.body = body


def _envelope(status: int, code: str, detail: str, **extra: Any) -> Refusal:
    return Refusal(status, {"detail": detail, "code": code, **extra})


@dataclass
class Account:
    id: str
    email: str
    balance: int  # cents
    merchant_order_ids: set[str] = field(default_factory=set)


@dataclass
class Attempt:
    """One webhook attempt, as the stand-in made it."""

    order_id: str
    number: int  # 1 = the first delivery, 2.. = retries
    at: float
    status_code: int | None  # None: no answer (connection refused, timeout)
    body: bytes


@dataclass
class Order:
    id: str
    account: Account
    item: Item
    quantity: Decimal
    fields: dict[str, Any]
    price: int  # cents charged
    unit: int  # cents per unit
    merchant_order_id: str | None
    created_at: float
    outcome: str
    status: str = "pending"
    delivered: Decimal = Decimal(0)
    refund: int = 0  # cents
    error: str = ""
    codes: list[str] = field(default_factory=list)
    completed_at: float | None = None
    settles_at: float | None = None
    webhook_url: str | None = None
    last_status_code: int | None = None
    next_attempt_at: float | None = None
    history: list[tuple[float, str]] = field(default_factory=list)


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


def _money(cents: int) -> float:
    return cents / 100


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _decimals(value: Any) -> Decimal:
    try:
        return Decimal(str(value))
    except InvalidOperation as exc:  # pragma: no cover - only numbers get here
        raise _envelope(400, "validation_error", f"not a number: {value!r}") from exc


class StandIn:
    """The production stand-in: an aiohttp app (`app`), its state and its clock."""

    def __init__(self, options: Production | None = None) -> None:
        self.options = options or Production()
        self.now = self.options.start
        self.webhook_url = self.options.webhook_url
        seed = self.options.seed
        self._ids = random.Random(f"{seed}:ids")
        self._tokens_rng = random.Random(f"{seed}:tokens")
        self._codes_rng = random.Random(f"{seed}:codes")
        self._outcomes_rng = random.Random(f"{seed}:outcomes")
        self._bag: list[str] = []
        self._queue: list[tuple[float, int, Callable[[], Awaitable[None] | None]]] = []
        self._order = itertools.count()
        self._advancing = asyncio.Lock()
        self.items = {item.id: item for item in self.options.catalog}
        self.accounts: dict[str, Account] = {}
        for number, key in enumerate(self.options.api_keys):
            self.accounts[key] = Account(
                id=self._uuid(),
                email=f"ops{number or ''}@merchant-shop.example",
                balance=int(Decimal(self.options.balance) * 100),
            )
        self.tokens: dict[str, tuple[Account, float]] = {}
        self.orders: dict[str, Order] = {}
        self.attempts: list[Attempt] = []
        self.plants: dict[int, dict[str, Any]] = {
            1: {"id": 1, "name": "Monstera", "category": "indoor", "status": "available",
                "tags": ["tropical"]},
            2: {"id": 2, "name": "Olive", "category": "outdoor", "status": "sold", "tags": []},
        }  # fmt: skip
        self.app = self._make_app()
        self._runner: web.AppRunner | None = None
        self._http: aiohttp.ClientSession | None = None
        self.url = ""

    # -- running --------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port).start()
        bound_host, bound_port = self._runner.addresses[0][:2]
        self.url = f"http://{bound_host}:{bound_port}"
        self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
        return self.url

    async def stop(self) -> None:
        if self._http is not None:
            await self._http.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> StandIn:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def advance(self, seconds: float) -> None:
        """Let `seconds` of production's time pass: each fulfillment step and webhook
        attempt due by then runs, in time order, with the clock standing at its time."""
        if seconds < 0:
            raise ValueError("time does not run backwards")
        async with self._advancing:
            target = round(self.now + seconds, 6)
            while self._queue and self._queue[0][0] <= target:
                due, _, action = heapq.heappop(self._queue)
                self.now = max(self.now, due)
                result = action()
                if result is not None:
                    await result
            self.now = target

    def _at(self, delay: float, action: Callable[[], Awaitable[None] | None]) -> None:
        heapq.heappush(self._queue, (round(self.now + delay, 6), next(self._order), action))

    def iso(self, ts: float | None) -> str | None:
        if ts is None:
            return None
        return datetime.fromtimestamp(ts, UTC).strftime(self.options.timestamp_format)

    # -- drawing ----------------------------------------------------------------------------

    def _uuid(self) -> str:
        return str(uuid.UUID(int=self._ids.getrandbits(128), version=4))

    def _code(self) -> str:
        alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
        groups = ("".join(self._codes_rng.choices(alphabet, k=5)) for _ in range(4))
        return "-".join(groups)

    def _draw_key_outcome(self) -> str:
        if not self._bag:
            weights = self.options.key_outcomes
            self._bag = [name for name, weight in weights.items() for _ in range(int(weight))]
            if not self._bag:
                raise ValueError("key_outcomes has no positive weight")
            self._outcomes_rng.shuffle(self._bag)
        return self._bag.pop()

    # -- the app ---------------------------------------------------------------------------

    def _make_app(self) -> web.Application:
        app = web.Application()
        for prefix in PREFIXES:
            app.router.add_post(f"{prefix}/auth/token/client", self._token)
            app.router.add_get(f"{prefix}/account/balance", self._handler(self._balance))
            app.router.add_get(f"{prefix}/account/me", self._handler(self._me))
            app.router.add_post(f"{prefix}/orders", self._handler(self._create))
            app.router.add_get(f"{prefix}/orders/{{id}}", self._handler(self._lookup))
            app.router.add_post(
                f"{prefix}/orders/{{id}}/client-code", self._handler(self._client_code)
            )
        app.router.add_put("/v3/plant", self._plant)
        return app

    def _handler(
        self, method: Callable[[web.Request, Account], Awaitable[tuple[int, Any]]]
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            try:
                account = self._authenticate(request)
                status, body = await method(request, account)
            except Refusal as refusal:
                status, body = refusal.status, refusal.body
            return web.json_response(body, status=status)

        return handle

    def _authenticate(self, request: web.Request) -> Account:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        found = self.tokens.get(token) if scheme.lower() == "bearer" else None
        if found is None or self.now >= found[1]:
            raise _envelope(401, "not_authenticated", "Access token missing, invalid or expired.")
        return found[0]

    @staticmethod
    async def _json(request: web.Request) -> Any:
        raw = await request.read()
        try:
            return json.loads(raw) if raw else None
        except ValueError as exc:
            raise _envelope(400, "validation_error", "The body is not JSON.") from exc

    # -- auth, balance, account -------------------------------------------------------------

    async def _token(self, request: web.Request) -> web.Response:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        key = body.get("api_key") if isinstance(body, dict) else None
        account = self.accounts.get(key) if isinstance(key, str) else None
        if account is None:
            return web.json_response({"error": "invalid_api_key"}, status=401)
        token = f"pt_{self._tokens_rng.getrandbits(160):040x}"
        self.tokens[token] = (account, self.now + self.options.token_lifetime)
        answer: dict[str, Any] = {"access_token": token, "token_type": "Bearer"}
        if self.options.expires_in:
            answer["expires_in"] = int(self.options.token_lifetime)
        return web.json_response(answer)

    async def _balance(self, request: web.Request, account: Account) -> tuple[int, Any]:
        if self.options.balance_as == "string":
            balance: Any = f"{Decimal(account.balance) / 100:.2f}"
        else:
            balance = _money(account.balance)
        return 200, {"balance": balance, "currency": self.options.currency}

    async def _me(self, request: web.Request, account: Account) -> tuple[int, Any]:
        return 200, {
            "id": account.id,
            "email": account.email,
            "company_name": "Merchant Shop GmbH",
            "has_active_subscription": self.options.subscription,
        }

    # -- orders ----------------------------------------------------------------------------

    def _order_of(self, request: web.Request, account: Account) -> Order:
        order = self.orders.get(request.match_info["id"])
        if order is None or order.account is not account:
            raise _envelope(404, "not_found", "Order not found.")
        return order

    async def _lookup(self, request: web.Request, account: Account) -> tuple[int, Any]:
        return 200, self.answer(self._order_of(request, account))

    async def _create(self, request: web.Request, account: Account) -> tuple[int, Any]:
        body = await self._json(request)
        if not isinstance(body, dict):
            raise _envelope(400, "validation_error", "The body must be a JSON object.")
        item_id = body.get("item_id")
        if not isinstance(item_id, int) or isinstance(item_id, bool):
            raise _envelope(400, "validation_error", "item_id must be an integer.")
        item = self.items.get(item_id)
        if item is None or not item.in_stock:
            raise _envelope(400, "validation_error", "Item is not available")
        quantity = self._quantity(item, body)
        fields = self._fields(item, body.get("fields"))
        merchant_order_id = body.get("merchant_order_id")
        if merchant_order_id is not None and not isinstance(merchant_order_id, str):
            raise _envelope(400, "validation_error", "merchant_order_id must be a string.")
        if merchant_order_id is not None and merchant_order_id in account.merchant_order_ids:
            raise _envelope(
                400, "validation_error", f"merchant_order_id {merchant_order_id} already used."
            )
        unit = item.subscriber_price if self.options.subscription else None
        unit = item.price if unit is None else unit
        charge = int((quantity * unit).quantize(Decimal(1), rounding=ROUND_HALF_UP))
        guard = body.get("price")
        if guard is not None:
            if not _is_number(guard) or _decimals(guard).as_tuple().exponent < -2:  # type: ignore[operator]
                raise _envelope(
                    400, "validation_error", "price must be a number with at most 2 decimals."
                )
            if _decimals(guard) * 100 != charge:
                raise _envelope(
                    400,
                    "price_mismatch",
                    "The expected price differs from the current price.",
                    actual_price=_money(charge),
                )
        if charge > account.balance:
            raise _envelope(400, "insufficient_balance", "The balance cannot cover the order.")
        account.balance -= charge
        if merchant_order_id is not None:
            account.merchant_order_ids.add(merchant_order_id)
        order = Order(
            id=self._uuid(),
            account=account,
            item=item,
            quantity=quantity,
            fields=fields,
            price=charge,
            unit=unit,
            merchant_order_id=merchant_order_id,
            created_at=self.now,
            outcome=self._draw_key_outcome() if item.product_type == "key" else "completed",
            webhook_url=self.webhook_url,
        )
        order.history.append((self.now, "pending"))
        self.orders[order.id] = order
        self._plan(order)
        return 201, self.answer(order)

    def _quantity(self, item: Item, body: dict[str, Any]) -> Decimal:
        raw = body.get("quantity")
        if item.product_type == "service":
            if raw is not None and raw != 1:
                raise _envelope(400, "validation_error", "A service's quantity is always 1.")
            return Decimal(1)
        if item.product_type == "key":
            raw = 1 if raw is None else raw
            if not isinstance(raw, int) or isinstance(raw, bool):
                raise _envelope(400, "validation_error", "quantity must be an integer.")
        elif not _is_number(raw):
            raise _envelope(400, "validation_error", "quantity is required for a top-up.")
        quantity = _decimals(raw)
        if not item.min_quantity <= quantity <= item.max_quantity:
            raise _envelope(
                400,
                "validation_error",
                f"quantity must be between {item.min_quantity:g} and {item.max_quantity:g}.",
            )
        return quantity

    def _fields(self, item: Item, given: Any) -> dict[str, Any]:
        if item.product_type == "key":
            if given not in (None, {}):
                raise _envelope(400, "validation_error", "Key items take no fields.")
            return {}
        if not isinstance(given, dict):
            raise _envelope(400, "validation_error", "fields are required for this item.")
        known = {f.name: f for f in item.fields}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise _envelope(400, "validation_error", f"Unknown field: {unknown[0]}.")
        fields: dict[str, Any] = {}
        for definition in item.fields:
            value = given.get(definition.name)
            if definition.type == "text":
                if not isinstance(value, str) or not value:
                    raise _envelope(
                        400, "validation_error", f"{definition.name} must be a non-empty string."
                    )
                fields[definition.name] = value
                continue
            ids = {option.id: option for option in definition.options}
            if isinstance(value, bool) or value not in ids:
                raise _envelope(
                    400, "validation_error", f"{definition.name} must be one of its choice ids."
                )
            fields[definition.name] = value
        return fields

    async def _client_code(self, request: web.Request, account: Account) -> tuple[int, Any]:
        order = self._order_of(request, account)
        body = await self._json(request)
        code = body.get("code") if isinstance(body, dict) else None
        if not isinstance(code, str) or not code.strip():
            raise _envelope(400, "validation_error", "code must be a non-empty string.")
        if order.status != "need_client_code":
            raise _envelope(400, "validation_error", "The order is not waiting for a client code.")
        self._enter(order, "processing")
        delay = self.options.login_completed_after_code
        order.settles_at = self.now + delay
        self._at(delay, lambda: self._settle(order, order.quantity, ""))
        return 200, self.answer(order)

    # -- fulfillment -------------------------------------------------------------------------

    def _plan(self, order: Order) -> None:
        o = self.options
        kind = order.item.product_type
        if kind == "service":
            order.settles_at = self.now + o.service_completed_after
            self._at(o.service_processing_after, lambda: self._enter(order, "processing"))
            self._at(o.service_completed_after, lambda: self._settle(order, order.quantity, ""))
            return
        if kind == "topup":
            self._at(o.topup_processing_after, lambda: self._enter(order, "processing"))
            if order.item.login:
                self._at(o.login_code_after, lambda: self._enter(order, "need_client_code"))
            else:
                order.settles_at = self.now + o.topup_completed_after
                self._at(o.topup_completed_after, lambda: self._settle(order, order.quantity, ""))
            return
        self._at(o.key_processing_after, lambda: self._enter(order, "processing"))
        half = Decimal(int(order.quantity) // 2)
        settle: dict[str, tuple[float, Decimal, str]] = {
            "completed": (o.key_completed_after, order.quantity, ""),
            "timeout": (o.key_timeout_after, half, "ORDER_TIMEOUT"),
            "out_of_stock": (o.key_out_of_stock_after, Decimal(0), "OUT_OF_STOCK"),
            "short": (o.key_completed_after, half, "" if half else "OUT_OF_STOCK"),
        }
        if order.outcome not in settle:
            raise ValueError(f"unknown key outcome {order.outcome!r}")
        after, delivered, error = settle[order.outcome]
        order.settles_at = self.now + after
        self._at(after, lambda: self._settle(order, delivered, error))

    def _enter(self, order: Order, status: str) -> None:
        if order.status in TERMINAL:  # spec 3.2, rule 2
            raise AssertionError(f"order {order.id} is {order.status}: it never moves again")
        order.status = status
        order.history.append((self.now, status))

    def _settle(self, order: Order, delivered: Decimal, error: str) -> None:
        if delivered == order.quantity:
            status = "completed"
        elif delivered:
            status = "partial"
        else:
            status = "failed"
            error = error or "OUT_OF_STOCK"
        order.delivered = delivered
        order.error = error
        order.refund = order.price - int(
            (delivered * order.unit).quantize(Decimal(1), rounding=ROUND_HALF_UP)
        )
        if order.item.product_type == "key":
            order.codes = [self._code() for _ in range(int(delivered))]
        if status == "completed":
            order.completed_at = self.now
        order.account.balance += order.refund
        self._enter(order, status)
        if order.webhook_url:
            self._at(0, lambda: self._deliver(order, 1))

    # -- webhooks ----------------------------------------------------------------------------

    def event(self, order: Order) -> dict[str, Any]:
        answer = self.answer(order)
        body = {name: answer[name] for name in SPEC_EVENT_FIELDS if name != "order_id"}
        body = {"order_id": order.id, **body}
        if self.options.event_fields == "extra":
            body["error"] = order.error
            body["event"] = f"order.{order.status}"
            body["sent_at"] = self.iso(self.now)
        return body

    def sign(self, raw: bytes) -> str:
        key = self.options.webhook_secret.encode()
        return "sha256=" + hmac.new(key, raw, hashlib.sha256).hexdigest()

    async def _deliver(self, order: Order, number: int) -> None:
        raw = json.dumps(self.event(order), separators=(",", ":")).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "MerchantShop-Webhooks/3.2",
            "X-Webhook-Signature": self.sign(raw),
        }
        order.next_attempt_at = None
        assert self._http is not None and order.webhook_url
        status: int | None
        try:
            async with self._http.post(order.webhook_url, data=raw, headers=headers) as answer:
                status = answer.status
                await answer.read()
        except (aiohttp.ClientError, TimeoutError):
            status = None
        self.attempts.append(Attempt(order.id, number, self.now, status, raw))
        order.last_status_code = status
        if status != 200 and number <= self.options.max_retries:  # strict 200 (spec 6)
            order.next_attempt_at = self.now + self.options.retry_every
            self._at(self.options.retry_every, lambda: self._deliver(order, number + 1))

    # -- the order as production answers it -----------------------------------------------------

    def answer(self, order: Order) -> dict[str, Any]:
        item = order.item
        fields = dict(order.fields)
        if self.options.choice_echo == "label":
            for definition in item.fields:
                if definition.type == "choice" and definition.name in fields:
                    labels = {c.id: c.label for c in definition.options}
                    fields[definition.name] = labels[fields[definition.name]]
        answer: dict[str, Any] = {
            "id": order.id,
            "item": item.id,
            "item_name": item.name,
            "item_product_type": item.product_type,
            "quantity": _number(order.quantity),
            "delivered_quantity": _number(order.delivered),
            "price": _money(order.price),
            "refund_amount": _money(order.refund),
            "fields": fields,
            "status": order.status,
            "error": order.error,
            "error_message": ERROR_MESSAGES.get(order.error, order.error),
            "codes": list(order.codes),
            "merchant_order_id": order.merchant_order_id,
            "source": "api",
            "created_by": {"id": order.account.id, "email": order.account.email},
            "created_at": self.iso(order.created_at),
            "completed_at": self.iso(order.completed_at),
            "webhook": None,
        }
        if order.webhook_url:
            answer["webhook"] = {
                "url": order.webhook_url,
                "last_status_code": order.last_status_code,
                "next_attempt_at": self.iso(order.next_attempt_at),
            }
        if self.options.extra_order_fields:
            left = 0 if order.settles_at is None else max(0.0, order.settles_at - self.now)
            answer["eta_seconds"] = 0 if order.status in TERMINAL else int(left)
            answer["currency"] = self.options.currency
        return answer

    # -- the plant demo (spec 4.6) --------------------------------------------------------------

    async def _plant(self, request: web.Request) -> web.Response:
        try:
            body = json.loads(await request.read() or b"null")
        except ValueError:
            body = None
        plant_id = body.get("id") if isinstance(body, dict) else None
        if not isinstance(plant_id, int) or isinstance(plant_id, bool) or plant_id < 1:
            return web.Response(status=400, text="Invalid ID supplied")
        plant = self.plants.get(plant_id)
        if plant is None:
            return web.Response(status=404, text="Plant not found")
        assert isinstance(body, dict)
        checks = {
            "name": lambda v: isinstance(v, str),
            "category": lambda v: isinstance(v, str),
            "tags": lambda v: isinstance(v, list) and all(isinstance(t, str) for t in v),
            "status": lambda v: v in ("available", "pending", "sold"),
        }
        for name, ok in checks.items():
            if name in body and not ok(body[name]):
                return web.Response(status=400, text=f"Invalid {name}")
        plant.update({name: body[name] for name in checks if name in body})
        return web.json_response({k: plant[k] for k in ("id", "name", "status", "tags")})
