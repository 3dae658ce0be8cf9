"""The replay behind `mock-server compare` (docs/recording.md, "Compare"): what the
sandbox would have done with a recorded session's traffic.

A sandbox server is started here (manual clock, seeded, 127.0.0.1 on a free port) and
driven only over HTTP, through the merchant API and the documented control API
(docs/control-api.md), as any client would. Nothing here reaches into a `Sandbox`.

1. **Worlds.** Every play and every session is a sandbox of its own
   (`POST /_mock/sandboxes`, docs/control-api.md "Sandboxes"), so nothing one does is
   seen by another. Its catalog is the recording's items as order answers showed them
   (`infer_catalog`) unless `--catalog` gives one; its accounts are one per recorded API
   key, with a balance large enough, whose webhook URL is the `Receiver` here where the
   recording shows webhooks (or an order's `webhook` object).
2. **Explaining classes** (`explain`). For each outcome class (`traces.classes`), up to
   `REPRESENTATIVES` of its orders, spread over the class's durations, are played under
   the sandbox's own choice and under every scenario of the server
   (`GET /_mock/scenarios`: the built-in ones and `--scenarios` files), each play an
   order of its own account forced with `X-Mock-Scenario` and created at the same
   instant. The clock is advanced to each observed time (`POST /_mock/clock/advance`),
   where the order is read (`GET .../orders/{id}`) or its client code submitted as
   recorded; then the order's history and webhook deliveries are read
   (`GET /_mock/orders/{id}`), and each play judged by `judge`.
3. **The session replay** (`replay_session`). Requests are sent in `seq` order with the
   clock advanced by the recorded gaps; tokens and order ids the sandbox makes are bound
   to the recorded ones by order of appearance; each order is created under the scenario
   that explained it. Each answer is compared as `conformance.compare` compares
   (status, error code, field set, JSON types), and values only for enums, echoed
   request fields and money.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any
from urllib.parse import quote

import aiohttp
from aiohttp import web

from ..conformance import compare as compare_answers
from .reading import Exchange, Message, Recording, Webhook
from .traces import TERMINAL, Observation, OutcomeClass, Trace, classes, median, traces

#: Orders of a class played under each scenario: the shortest and the longest lives of
#: the class, and some between (a class can mix timings that different scenarios play).
REPRESENTATIVES = 5
DEFAULT_TOLERANCE = 0.25
MIN_TOLERANCE = 1.0
SEED = 1
#: Major units: no recorded order is refused for want of money.
BALANCE = 1_000_000_000
#: Request fields an order answer echoes, compared as values (`fields` as the labels
#: the catalog gives choice ids).
ECHOED = ("merchant_order_id", "item", "quantity", "fields")

_TOKEN = re.compile(r"^(?:/api)?/v1/auth/token/client$")
_BALANCE = re.compile(r"^(?:/api)?/v1/account/balance$")
_ORDERS = re.compile(r"^(?:/api)?/v1/orders$")
_ORDER = re.compile(r"^(?:/api)?/v1/orders/([^/]+)$")
_CLIENT_CODE = re.compile(r"^(?:/api)?/v1/orders/([^/]+)/client-code$")
#: Not the service's: the sandbox's own control calls, the recorder's receiver.
_NOT_REPLAYED = re.compile(r"^/(?:_mock|_record)(?:/|$)")
_NOT_SENT = {
    "authorization",
    "connection",
    "content-encoding",  # the recorder keeps the header, the body it wrote is decoded
    "content-length",
    "cookie",
    "host",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "accept-encoding",
    "x-mock-scenario",
}


class ReplayError(Exception):
    """The replay cannot go on (the sandbox refused its setup)."""


# -- findings --------------------------------------------------------------------------------


@dataclass
class Finding:
    """One difference between a recorded answer and the sandbox's."""

    seq: int | None
    order: str | None
    request: str
    pointer: str
    kind: str
    recorded: Any
    sandbox: Any

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "order": self.order,
            "request": self.request,
            "pointer": self.pointer,
            "kind": self.kind,
            "recorded": self.recorded,
            "sandbox": self.sandbox,
        }


_STATUS = re.compile(r"^status: service (\S+), sandbox (\S+)$")
_CODE = re.compile(r"^code: service (.*), sandbox (.*)$")
_FIELD = re.compile(r"^field (.+): only the (service|sandbox) has it$")
_TYPE = re.compile(r"^type of (.+): service (.+), sandbox (.+)$")
_BODY = re.compile(r"^body: service (.*), sandbox (.*)$")


def shape_findings(
    recorded: tuple[int, Any], sandbox: tuple[int, Any], **where: Any
) -> list[Finding]:
    """`conformance.compare`'s differences as findings: its words for kinds, its dotted
    paths as JSON pointers (a list's elements as `/0`: it compares the first)."""
    found = []
    for difference in compare_answers(recorded, sandbox):
        if match := _STATUS.match(difference):
            found.append(
                Finding(
                    pointer="", kind="status", recorded=recorded[0], sandbox=sandbox[0], **where
                )
            )
        elif match := _CODE.match(difference):
            found.append(
                Finding(
                    pointer="/code",
                    kind="code",
                    recorded=_literal(match[1]),
                    sandbox=_literal(match[2]),
                    **where,
                )
            )
        elif match := _FIELD.match(difference):
            recorded_has = match[2] == "service"
            found.append(
                Finding(
                    pointer=_pointer(match[1]),
                    kind="missing field" if recorded_has else "extra field",
                    recorded="present" if recorded_has else "absent",
                    sandbox="absent" if recorded_has else "present",
                    **where,
                )
            )
        elif match := _TYPE.match(difference):
            pointer = "" if match[1] == "body" else _pointer(match[1])
            found.append(
                Finding(pointer=pointer, kind="type", recorded=match[2], sandbox=match[3], **where)
            )
        elif match := _BODY.match(difference):
            found.append(
                Finding(pointer="", kind="body", recorded=match[1], sandbox=match[2], **where)
            )
        else:
            found.append(
                Finding(pointer="", kind="shape", recorded=difference, sandbox=None, **where)
            )
    return found


def _pointer(dotted: str) -> str:
    return "/" + "/".join(part.replace("[]", "/0") for part in dotted.split("."))


def _literal(text: str) -> Any:
    return None if text == "None" else text.strip("'\"")


# -- what the recording holds --------------------------------------------------------------


@dataclass(repr=False)
class Session:
    """One recording, replayed in a sandbox of its own."""

    index: int
    recording: Recording
    traces: list[Trace]
    start: float
    end: float
    exchanges: dict[int, Exchange]
    #: API keys that were exchanged for a token, in order of first appearance.
    keys: list[str]
    #: Accounts (API key, or None for tokens whose exchange was not recorded) whose
    #: orders showed a webhook (a delivery, or an order's `webhook` object).
    webhooked: set[str | None]

    @property
    def webhooks_recorded(self) -> bool:
        """Only a recording that caught deliveries says what production sent (a HAR
        from a browser holds exchanges only): webhook patterns are judged only then."""
        return bool(self.recording.webhooks)

    def account_of(self, trace: Trace) -> str | None:
        return trace.api_key if trace.api_key in self.keys else None


def sessions_of(recordings: list[Recording]) -> list[Session]:
    found = []
    for index, recording in enumerate(recordings):
        events = recording.events()
        times = [event.at for event in events]
        keys: list[str] = []
        for exchange in recording.exchanges:
            if _TOKEN.match(exchange.path) and exchange.method == "POST":
                key = _dict(exchange.request.body).get("api_key")
                answer = _dict(exchange.response.body)
                granted = exchange.status == 200 and isinstance(answer.get("access_token"), str)
                if granted and isinstance(key, str) and key not in keys:
                    keys.append(key)
        session_traces = traces(recording)
        session = Session(
            index=index,
            recording=recording,
            traces=session_traces,
            start=min(times) if times else 0.0,
            end=max(times) if times else 0.0,
            exchanges={exchange.seq: exchange for exchange in recording.exchanges},
            keys=keys,
            webhooked=set(),
        )
        for trace in session_traces:
            if trace.webhooks or any(o.order.get("webhook") for o in trace.observations):
                session.webhooked.add(session.account_of(trace))
        found.append(session)
    return found


# -- the catalog a recording shows ---------------------------------------------------------


@dataclass
class _SeenItem:
    id: int
    name: str | None = None
    product_type: str | None = None
    charges: list[tuple[Decimal, int]] = field(default_factory=list)
    #: Prices of lookups, used where no creation of the item was recorded.
    shown: list[tuple[Decimal, int]] = field(default_factory=list)
    quantities: list[Decimal] = field(default_factory=list)
    text_fields: list[str] = field(default_factory=list)
    choices: dict[str, dict[int, str]] = field(default_factory=dict)
    client_code: bool = False


def infer_catalog(sessions: list[Session]) -> list[dict[str, Any]]:
    """The items the recordings' order answers show, in the feed format (spec 2.2): id,
    name, type, unit price (the charged `price` over `quantity`, in cents), `fields`
    (text values sent as text fields; numeric choice ids paired with the labels the
    answers showed), the range of the quantities ordered. An item production refused
    as unknown or unavailable, and never sold, is not in it: the sandbox refuses it too.
    """
    seen: dict[int, _SeenItem] = {}
    for session in sessions:
        for exchange in session.recording.exchanges:
            _learn(seen, exchange)
        for trace in session.traces:
            item = seen.get(_int(trace.item_id) or -1)
            if item is not None and any(o.status == "need_client_code" for o in trace.observations):
                item.client_code = True
    return [_item_record(item) for item in sorted(seen.values(), key=lambda i: i.id)]


def _learn(seen: dict[int, _SeenItem], exchange: Exchange) -> None:
    answer = _dict(exchange.response.body)
    request = _dict(exchange.request.body)
    creation = _ORDERS.match(exchange.path) and exchange.method == "POST"
    if exchange.status // 100 == 2 and _is_order(answer):
        item_id = _int(answer.get("item"))
        if item_id is None:
            return
        item = seen.setdefault(item_id, _SeenItem(item_id))
        item.name = item.name or _text(answer.get("item_name"))
        item.product_type = item.product_type or _text(answer.get("item_product_type"))
        quantity, price = _decimal(answer.get("quantity")), _decimal(answer.get("price"))
        if quantity is not None and quantity > 0 and price is not None:
            # What a creation charged is the price; a lookup only repeats it.
            charges = item.charges if creation else item.shown
            charges.append((quantity, int((price * 100).to_integral_value(ROUND_HALF_UP))))
            item.quantities.append(quantity)
        if creation:
            _learn_fields(item, request.get("fields"), answer.get("fields"))
    elif creation and exchange.status == 400 and answer.get("code") == "price_mismatch":
        # The item exists (production priced it); what it costs is `actual_price`.
        item_id, actual = _int(request.get("item_id")), _decimal(answer.get("actual_price"))
        quantity = _decimal(request.get("quantity", 1))
        if item_id is None or actual is None or quantity is None or quantity <= 0:
            return
        item = seen.setdefault(item_id, _SeenItem(item_id))
        item.charges.append((quantity, int((actual * 100).to_integral_value(ROUND_HALF_UP))))
        item.quantities.append(quantity)
        _learn_fields(item, request.get("fields"), None)


def _learn_fields(item: _SeenItem, sent: Any, shown: Any) -> None:
    if not isinstance(sent, dict):
        return
    shown = shown if isinstance(shown, dict) else {}
    for name, value in sent.items():
        if isinstance(value, int) and not isinstance(value, bool):
            label = shown.get(name)
            options = item.choices.setdefault(name, {})
            options.setdefault(value, label if isinstance(label, str) else f"option {value}")
        elif name not in item.text_fields:
            item.text_fields.append(name)


def _item_record(item: _SeenItem) -> dict[str, Any]:
    product_type = item.product_type
    if product_type not in ("key", "topup", "service"):
        product_type = "topup" if (item.text_fields or item.choices) else "key"
    price = _unit_price(item.charges or item.shown)
    quantities = item.quantities or [Decimal(1)]
    low, high = min(quantities), max(quantities)
    if product_type == "service":
        low = high = Decimal(1)
    elif product_type == "key":
        low, high = Decimal(max(1, math.floor(low))), Decimal(max(1, math.ceil(high)))
    record: dict[str, Any] = {
        "id": item.id,
        "name": item.name or f"item {item.id}",
        "product_type": product_type,
        "price": price,
        "base_price": price,
        "subscriber_price": price,
        "min_quantity": _number(low),
        "max_quantity": _number(high),
        "in_stock": True,
        "fields": [],
    }
    if product_type != "key":
        fields: list[dict[str, Any]] = []
        for name, options in item.choices.items():
            fields.append(
                {
                    "name": name,
                    "type": "choice",
                    "options": [{"id": i, "name": label} for i, label in sorted(options.items())],
                }
            )
        fields += [{"name": n, "type": "text"} for n in item.text_fields if n not in item.choices]
        record["fields"] = fields
    if item.client_code and product_type == "topup":
        record["client_code"] = True
    return record


def _unit_price(charges: list[tuple[Decimal, int]]) -> int:
    """The price in cents that charges what was charged (quantity x price, rounded half
    up, as spec 4.3 charges), for as many recorded charges as any price does."""
    if not charges:
        return 100
    candidates: set[int] = set()
    for quantity, cents in charges:
        guess = int((Decimal(cents) / quantity).to_integral_value(ROUND_HALF_UP))
        candidates.update(range(max(0, guess - 2), guess + 3))

    def fits(unit: int) -> int:
        return sum(
            1
            for quantity, cents in charges
            if int((quantity * unit).to_integral_value(ROUND_HALF_UP)) == cents
        )

    return max(sorted(candidates), key=fits)


# -- the sandbox server, its worlds, the webhook receiver ----------------------------------


class Receiver:
    """The merchant's webhook receiver as the recording says it behaved: each attempt
    for an order is answered with the next code production's receiver gave (the
    recorded `answered`, in order), 200 beyond them. What it receives is kept."""

    def __init__(self) -> None:
        self.answers: dict[str, list[int]] = {}
        self.received: dict[str, list[Any]] = {}
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/hooks/{tag}", self._deliver)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}/hooks"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def expect(self, order_id: str, answers: list[int]) -> None:
        self.answers[order_id] = list(answers)

    def forget(self, order_ids: Iterable[str]) -> None:
        for order_id in order_ids:
            self.answers.pop(order_id, None)
            self.received.pop(order_id, None)

    async def _deliver(self, request: web.Request) -> web.Response:
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        order_id = str(body.get("order_id")) if isinstance(body, dict) else ""
        seen = self.received.setdefault(order_id, [])
        seen.append(body)
        answers = self.answers.get(order_id, [])
        status = answers[len(seen) - 1] if len(seen) <= len(answers) else 200
        return web.Response(status=status if 100 <= status <= 599 else 200)


class Server:
    """The sandbox server compare drives, the receiver, and one HTTP client."""

    def __init__(self, scenarios: list[str], catalog: str | None) -> None:
        self.scenario_paths = scenarios
        self.catalog_path = catalog
        self.receiver = Receiver()
        self.url = ""
        self._serving: Any = None
        self.http: aiohttp.ClientSession | None = None
        self._worlds = 0

    async def start(self) -> None:
        """Start it all; a bad `--scenarios` or `--catalog` file raises `ConfigError`."""
        from ..app import create_app
        from ..config import Settings, load_startup
        from ..serving import Serving

        big = 10**9
        settings = Settings(
            host="127.0.0.1",
            port=0,
            clock="manual",
            seed=SEED,
            catalog=self.catalog_path,
            scenarios=tuple(self.scenario_paths),
            journal_size=10,
            max_sandboxes=big,
            sandbox_max_orders=big,
            sandbox_max_accounts=big,
            sandbox_max_tokens=big,
            sandbox_max_catalog=big,
        )
        startup = load_startup(settings)
        self._serving = Serving(create_app(settings, startup=startup), "127.0.0.1", 0)
        await self._serving.start()
        self.url = self._serving.url
        await self.receiver.start()
        self.http = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, force_close=False),
            timeout=aiohttp.ClientTimeout(total=120),
        )

    async def stop(self) -> None:
        if self.http is not None:
            await self.http.close()
        await self.receiver.stop()
        if self._serving is not None:
            await self._serving.stop()

    async def call(
        self,
        method: str,
        url: str,
        *,
        body: Any = None,
        data: bytes | None = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> tuple[int, Any]:
        """One request; the answer's body as JSON, else text (None when empty)."""
        assert self.http is not None
        sent: list[tuple[str, str]] = list(headers or [])
        if body is not None:
            data = json.dumps(body).encode()
            if not any(name.lower() == "content-type" for name, _ in sent):
                sent.append(("Content-Type", "application/json"))
        async with self.http.request(
            method, url, data=data, headers=sent, allow_redirects=False
        ) as response:
            raw = await response.read()
            return response.status, _parse(raw)

    async def scenarios(self) -> list[dict[str, Any]]:
        status, answer = await self.call("GET", self.url + "/_mock/scenarios")
        if status != 200:
            raise ReplayError(f"GET /_mock/scenarios answered {status}: {answer}")
        return list(answer["scenarios"])

    async def world(
        self, start: float, accounts: list[dict[str, Any]], catalog: list[dict[str, Any]] | None
    ) -> World:
        self._worlds += 1
        body: dict[str, Any] = {
            "seed": SEED,
            "clock": "manual",
            "start_time": iso(start),
            "accounts": {"accounts": accounts},
        }
        if catalog is not None:
            body["catalog"] = catalog
        status, answer = await self.call("POST", self.url + "/_mock/sandboxes", body=body)
        if status != 201:
            raise ReplayError(f"the sandbox refused the replay's setup ({status}): {answer}")
        return World(self, answer["id"], answer["base_url"])

    def key(self, kind: str, *parts: Any) -> str:
        """An API key unique on this server: `ak_<kind>_<world>_<parts>`."""
        return "_".join(["ak", kind, str(self._worlds), *map(str, parts)])


@dataclass
class World:
    server: Server
    id: str
    base_url: str
    now: float = 0.0  # seconds since the world's start

    async def advance_to(self, when: float) -> None:
        if when > self.now + 1e-7:
            seconds = round(when - self.now, 6)
            status, answer = await self.server.call(
                "POST", self.base_url + "/_mock/clock/advance", body={"seconds": seconds}
            )
            if status != 200:
                raise ReplayError(f"POST /_mock/clock/advance answered {status}: {answer}")
            self.now = when

    async def token(self, api_key: str) -> str | None:
        status, answer = await self.server.call(
            "POST", self.base_url + "/api/v1/auth/token/client", body={"api_key": api_key}
        )
        return answer.get("access_token") if status == 200 and isinstance(answer, dict) else None

    async def inspect(self, order_id: str) -> dict[str, Any]:
        """`GET /_mock/orders/{id}`: the order, its scenario, history and deliveries."""
        status, answer = await self.server.call(
            "GET", self.base_url + "/_mock/orders/" + quote(order_id, safe="")
        )
        return answer if status == 200 and isinstance(answer, dict) else {}

    async def close(self) -> None:
        await self.server.call("DELETE", self.server.url + "/_mock/sandboxes/" + self.id)


# -- explaining classes ----------------------------------------------------------------------


@dataclass
class Play:
    """One recorded order played under one scenario (None: the sandbox's own choice)."""

    trace: Trace
    session: Session
    scenario: str | None
    key: str = ""
    token: str | None = None
    created: tuple[int, Any] = (0, None)
    #: What reading the order (or submitting its code) answered at each observed time.
    reads: list[tuple[float, str, str]] = field(default_factory=list)
    inspected: dict[str, Any] = field(default_factory=dict)
    chosen: str | None = None
    why_not: str | None = None

    @property
    def order_id(self) -> str | None:
        body = self.created[1]
        return body.get("id") if self.created[0] == 201 and isinstance(body, dict) else None

    @property
    def explained(self) -> bool:
        return self.why_not is None


@dataclass
class ClassVerdict:
    outcome: OutcomeClass
    played: list[Trace]
    #: Scenario name -> the played orders it explains (`id()` of their traces), the
    #: scenario explaining most first.
    explains: dict[str, set[int]]
    #: Scenario name -> why it does not explain the first played order it fails.
    why_not: dict[str, str]
    own_choice: str | None
    #: The first played order under the sandbox's own choice, for the timeline.
    sample: Play | None

    def explaining(self, trace: Trace) -> list[str]:
        return [name for name, ids in self.explains.items() if id(trace) in ids]

    @property
    def explained_orders(self) -> int:
        return sum(1 for trace in self.played if self.explaining(trace))

    @property
    def explained(self) -> bool:
        """Every played order is explained by some scenario of the set."""
        return bool(self.played) and self.explained_orders == len(self.played)

    def scenario_for(self, trace: Trace) -> str | None:
        """The scenario the replay creates `trace` under: of those explaining it (or
        the played order nearest in duration), the one explaining most of the class
        (`explains` is in that order); None where none does."""
        candidates = [t for t in self.played if self.explaining(t)]
        if not candidates:
            return None
        nearest = (
            trace
            if any(t is trace for t in candidates)
            else min(candidates, key=lambda t: abs(_duration(t) - _duration(trace)))
        )
        return self.explaining(nearest)[0]


def tolerances(trace: Trace, tolerance: float) -> list[float]:
    """For each observation: `tolerance` of the gap since the one before, at least
    `MIN_TOLERANCE` seconds."""
    found, previous = [], 0.0
    for observation in trace.observations:
        found.append(max(MIN_TOLERANCE, tolerance * (observation.at - previous)))
        previous = observation.at
    return found


def representatives(outcome: OutcomeClass, count: int = REPRESENTATIVES) -> list[Trace]:
    """Up to `count` orders spread over the class's durations, shortest and longest
    included."""
    ordered = sorted(outcome.traces, key=_duration)
    if len(ordered) <= count:
        return ordered
    picks = sorted({round(i * (len(ordered) - 1) / (count - 1)) for i in range(count)})
    return [ordered[i] for i in picks]


def _duration(trace: Trace) -> float:
    return trace.observations[-1].at if trace.observations else 0.0


async def explain(
    server: Server,
    outcomes: list[OutcomeClass],
    session_of: dict[int, Session],
    scenarios: list[dict[str, Any]],
    catalog: list[dict[str, Any]] | None,
    tolerance: float,
) -> list[ClassVerdict]:
    names = [scenario["name"] for scenario in scenarios]
    priced = {s["name"] for s in scenarios if s.get("pricing")}
    verdicts = []
    for outcome in outcomes:
        played = representatives(outcome)
        plays = await _play_class(server, played, session_of, names, catalog)
        explains: dict[str, set[int]] = {}
        why_not: dict[str, str] = {}
        own_choice, sample = None, None
        for play in plays:
            play.why_not = judge(play, tolerance)
            if play.scenario is None:
                own_choice = own_choice or play.chosen
                sample = sample or play
                continue
            if play.explained:
                explains.setdefault(play.scenario, set()).add(id(play.trace))
            else:
                why_not.setdefault(play.scenario, play.why_not or "")
        # Listing order, scenarios without `pricing` first on a tie.
        ordered = sorted(explains, key=lambda n: (-len(explains[n]), n in priced, names.index(n)))
        verdicts.append(
            ClassVerdict(
                outcome, played, {n: explains[n] for n in ordered}, why_not, own_choice, sample
            )
        )
    return verdicts


async def _play_class(
    server: Server,
    played: list[Trace],
    session_of: dict[int, Session],
    names: list[str],
    catalog: list[dict[str, Any]] | None,
) -> list[Play]:
    variants: list[str | None] = [None, *names]
    plays: list[Play] = []
    accounts: list[dict[str, Any]] = []
    keys: list[str] = []
    for r, trace in enumerate(played):
        session = session_of[id(trace)]
        webhooked = session.account_of(trace) in session.webhooked
        for v, variant in enumerate(variants):
            key = server.key("play", r, v)
            keys.append(key)
            accounts.append(_account(f"play-{r}-{v}", key, webhooked and server.receiver.url))
            plays.append(Play(trace, session, variant))
    world = await server.world(played[0].created.at, accounts, catalog)
    try:
        for play, key in zip(plays, keys, strict=True):
            play.key = key
            play.token = await world.token(key)
            headers = _creation_headers(play.trace.created, play.token)
            if play.scenario is not None:
                headers.append(("X-Mock-Scenario", play.scenario))
            play.created = await server.call(
                "POST",
                world.base_url + play.trace.created.path,
                data=_request_bytes(play.trace.created.request, {}),
                headers=headers,
            )
            if play.order_id is not None:
                server.receiver.expect(play.order_id, _answers(play.trace))
        moments: dict[float, list[tuple[Play, Observation]]] = {}
        for play in plays:
            for observation in play.trace.observations[1:]:
                moments.setdefault(observation.at, []).append((play, observation))
        for when in sorted(moments):
            await world.advance_to(when)
            done: set[tuple[int, float]] = set()
            for play, observation in moments[when]:
                if play.order_id is None:
                    continue
                if observation.kind == "client_code":
                    await _submit_code(world, play, observation)
                elif (id(play), when) not in done:
                    done.add((id(play), when))
                    path = f"/api/v1/orders/{play.order_id}"
                    status, answer = await _as_merchant(world, play, "GET", path, None)
                    play.reads.append((when, _status_of(status, answer), "read"))
        await world.advance_to(max(_horizon(play.trace, play.session) for play in plays))
        for play in plays:
            if play.order_id is not None:
                play.inspected = await world.inspect(play.order_id)
                play.chosen = play.inspected.get("scenario")
    finally:
        server.receiver.forget(p.order_id for p in plays if p.order_id)
        await world.close()
    return plays


async def _submit_code(world: World, play: Play, observation: Observation) -> None:
    exchange = play.session.exchanges.get(observation.seq)
    request = exchange.request if exchange is not None else Message(body={"code": "0000"})
    path = exchange.path if exchange is not None else "/api/v1/orders/{id}/client-code"
    path = re.sub(r"/orders/[^/]+/client-code$", f"/orders/{play.order_id}/client-code", path)
    status, answer = await _as_merchant(world, play, "POST", path, _request_bytes(request, {}))
    play.reads.append((observation.at, _status_of(status, answer), "client code"))


async def _as_merchant(
    world: World, play: Play, method: str, path: str, data: bytes | None
) -> tuple[int, Any]:
    """A merchant call of the play's account; a token expired on the way (a life
    longer than a token's 2 hours) is exchanged again, as a client would."""
    for _ in range(2):
        headers = [("Authorization", f"Bearer {play.token}")]
        if data is not None:
            headers.append(("Content-Type", "application/json"))
        status, answer = await world.server.call(
            method, world.base_url + path, data=data, headers=headers
        )
        if status != 401:
            break
        play.token = await world.token(play.key)
    return status, answer


def _status_of(status: int, answer: Any) -> str:
    if status == 200 and isinstance(answer, dict) and isinstance(answer.get("status"), str):
        return answer["status"]
    code = answer.get("code") if isinstance(answer, dict) else None
    return f"HTTP {status}" + (f" {code}" if code else "")


def _horizon(trace: Trace, session: Session) -> float:
    """How long after its creation the order is watched: to the recording's end (all
    production sent by then was recorded), at least past its last observation."""
    last = trace.observations[-1].at if trace.observations else 0.0
    return max(session.end - trace.created.at, last) + MIN_TOLERANCE


def _answers(trace: Trace) -> list[int]:
    return [w.answered if w.answered is not None else 200 for w in trace.webhooks]


def judge(play: Play, tolerance: float) -> str | None:
    """None when the play gives what the recording saw of the order; else why not.

    Same as recorded: the creation's answer and charge; the status at each observed
    time (the sandbox shows it at some time within the tolerance); the terminal status,
    error code and delivered/refunded shares; and, where the recording caught webhooks,
    each delivery attempt (its status, its time within the tolerance) with no other
    attempt before the recording ends."""
    trace = play.trace
    status, created = play.created
    if status != 201 or not isinstance(created, dict):
        return f"the sandbox refused the order: {_status_of(status, created)}"
    charged, recorded_charge = (
        _cents(created.get("price")),
        _cents(trace.created_order.get("price")),
    )
    if charged != recorded_charge:
        return f"charged {_money(charged)}, recorded {_money(recorded_charge)}"
    inspected = play.inspected
    history = inspected.get("history") or []
    if not history:
        return "the sandbox has no history of the order"
    start = parse_time(history[0]["at"])
    spans = _spans(history, start)
    limits = tolerances(trace, tolerance)
    for observation, limit in zip(trace.observations, limits, strict=True):
        if observation.kind == "create":
            if created.get("status") != observation.status:
                return f"created {created.get('status')}, recorded {observation.status}"
            continue
        if not _shown(spans, observation.status, observation.at, limit):
            return (
                f"{observation.status} at {observation.at:.1f} s ({observation.kind}): the "
                f"sandbox shows {_status_at(spans, observation.at)} then"
                f" ({_story(spans)})"
            )
    key = trace.key()
    order = inspected.get("order") or {}
    if key.final in TERMINAL:
        mine = (
            str(order.get("status")),
            str(order.get("error") or ""),
            _share(order.get("delivered_quantity"), order.get("quantity")),
            _share(order.get("refund_amount"), order.get("price")),
        )
        theirs = (key.final, key.error, key.delivered, key.refunded)
        if mine != theirs:
            return f"ends {_ending(theirs)}; the sandbox: {_ending(mine)}"
    if play.session.webhooks_recorded:
        return _webhook_difference(trace, inspected, start, limits, play.session)
    return None


def _spans(history: list[dict[str, Any]], start: float) -> list[tuple[str, float, float]]:
    spans = []
    for index, entry in enumerate(history):
        begins = parse_time(entry["at"]) - start
        ends = (
            parse_time(history[index + 1]["at"]) - start if index + 1 < len(history) else math.inf
        )
        spans.append((str(entry["status"]), begins, ends))
    return spans


def _shown(spans: list[tuple[str, float, float]], status: str, at: float, limit: float) -> bool:
    low, high = at - limit, at + limit
    return any(
        name == status and begins <= high and (ends > low or begins == ends >= low)
        for name, begins, ends in spans
    )


def _status_at(spans: list[tuple[str, float, float]], at: float) -> str:
    shown = "pending"
    for name, begins, _ends in spans:
        if begins <= at:
            shown = name
    return shown


def _story(spans: list[tuple[str, float, float]]) -> str:
    return ", ".join(f"{name} at {begins:.1f} s" for name, begins, _ in spans)


def _webhook_difference(
    trace: Trace, inspected: dict[str, Any], start: float, limits: list[float], session: Session
) -> str | None:
    recorded = [
        (o, limit)
        for o, limit in zip(trace.observations, limits, strict=True)
        if o.kind == "webhook"
    ]
    attempts = sandbox_attempts(inspected, start)
    for index, (observation, limit) in enumerate(recorded):
        if index >= len(attempts):
            return (
                f"webhook {index + 1} ({observation.status}) at {observation.at:.1f} s: the "
                f"sandbox made {len(attempts)} attempt(s)"
            )
        at, status, _code = attempts[index]
        if status != observation.status or abs(at - observation.at) > limit:
            return (
                f"webhook {index + 1} ({observation.status}) at {observation.at:.1f} s: the "
                f"sandbox's attempt {index + 1} is {status} at {at:.1f} s"
            )
    end = session.end - trace.created.at
    extra = [a for a in attempts[len(recorded) :] if a[0] + MIN_TOLERANCE <= end]
    if extra:
        return (
            f"the sandbox made {len(extra)} more webhook attempt(s) than recorded, the "
            f"first at {extra[0][0]:.1f} s ({extra[0][1]}) before the recording ends"
        )
    return None


def sandbox_attempts(inspected: dict[str, Any], start: float) -> list[tuple[float, str, Any]]:
    """Every webhook attempt the sandbox made for the order: (seconds after its
    creation, the event's status, the receiver's answer), in time order."""
    found = []
    for delivery in inspected.get("deliveries") or []:
        body = _parse(str(delivery.get("body") or "").encode())
        status = str(body.get("status")) if isinstance(body, dict) else "?"
        for attempt in delivery.get("attempts") or []:
            at = parse_time(attempt["at"]) - start
            found.append((at, status, attempt.get("status_code"), delivery.get("copy", 0)))
    found.sort(key=lambda a: (a[0], a[3]))
    return [(at, status, code) for at, status, code, _copy in found]


def _share(part: Any, whole: Any) -> str:
    p = float(part) if isinstance(part, int | float) and not isinstance(part, bool) else 0.0
    w = float(whole) if isinstance(whole, int | float) and not isinstance(whole, bool) else 0.0
    if p <= 0:
        return "none"
    return "all" if w and p >= w else "some"


def _ending(parts: tuple[str, str, str, str]) -> str:
    status, error, delivered, refunded = parts
    return f"{status}{f' {error}' if error else ''}, delivered {delivered}, refunded {refunded}"


# -- the session replay -----------------------------------------------------------------------


@dataclass
class Deferred:
    """An order answer whose `status` differs from the recorded one at that time: a
    finding only if the sandbox never showed the recorded status within tolerance."""

    exchange: Exchange
    order_id: str
    trace: Trace
    at: float
    limit: float
    recorded: str
    sandbox: str


@dataclass
class Replayed:
    findings: list[Finding] = field(default_factory=list)
    replayed: int = 0
    skipped: int = 0


async def replay_session(
    server: Server,
    session: Session,
    catalog: list[dict[str, Any]] | None,
    scenario_of: dict[int, str | None],
    explained_trace: dict[int, bool],
    tolerance: float,
) -> Replayed:
    """Send the session's requests in `seq` order, the clock advanced by the recorded
    gaps, and compare each answer with the recorded one."""
    result = Replayed()
    accounts, key_of = [], {}
    for number, key in enumerate([None, *session.keys]):
        replay_key = server.key("replay", session.index, number)
        key_of[key] = replay_key
        url = server.receiver.url if key in session.webhooked else None
        accounts.append(_account(f"replay-{session.index}-{number}", replay_key, url))
    world = await server.world(session.start, accounts, catalog)
    state = _Binding(key_of)
    trace_by_seq = {trace.created.seq: trace for trace in session.traces}
    trace_by_id = {trace.order_id: trace for trace in session.traces}
    limits = {
        id(t): dict(zip((o.seq for o in t.observations), tolerances(t, tolerance), strict=True))
        for t in session.traces
    }
    deferred: list[Deferred] = []
    balances: dict[str | None, list[tuple[Exchange, float, float]]] = {}
    try:
        for event in session.recording.events():
            if isinstance(event, Webhook):
                continue  # the sandbox sends its own; the receiver answers as recorded
            await world.advance_to(max(world.now, event.at - session.start))
            if (
                _NOT_REPLAYED.match(event.path)
                or _unanswered(event)
                or state.names_failed_order(event)
            ):
                result.skipped += 1
                continue
            result.replayed += 1
            trace = trace_by_seq.get(event.seq)
            headers = await state.headers(world, event)
            if trace is not None and _ORDERS.match(event.path) and event.method == "POST":
                scenario = scenario_of.get(id(trace))
                if scenario is not None:
                    headers.append(("X-Mock-Scenario", scenario))
            url = world.base_url + state.path(event.path) + state.query(event.query)
            status, answer = await server.call(
                event.method, url, data=state.body(event), headers=headers
            )
            state.bind(event, status, answer, server.receiver, trace)
            recorded = _recorded_body(event.response)
            where = {
                "seq": event.seq,
                "order": _order_named(event, trace),
                "request": f"{event.method} {_template(event.path)}",
            }
            if recorded is _NOTHING:
                if event.status != status:
                    result.findings.append(
                        Finding(
                            pointer="",
                            kind="status",
                            recorded=event.status,
                            sandbox=status,
                            **where,
                        )
                    )
                continue
            findings = shape_findings((event.status, recorded), (status, answer), **where)
            order_trace = _trace_of(event, trace, trace_by_id)
            if _is_order(recorded) and _is_order(answer) and status // 100 == 2:
                findings = _order_values(findings, recorded, answer, where)
                if recorded.get("status") != answer.get("status") and order_trace is not None:
                    at = event.at - order_trace.created.at
                    limit = limits[id(order_trace)].get(event.seq, MIN_TOLERANCE)
                    deferred.append(
                        Deferred(
                            event,
                            answer["id"],
                            order_trace,
                            at,
                            limit,
                            str(recorded.get("status")),
                            str(answer.get("status")),
                        )
                    )
            elif isinstance(recorded, dict) and isinstance(answer, dict):
                findings += _money_finding(recorded, answer, "actual_price", where)
            if _BALANCE.match(event.path) and status == 200 and event.status == 200:
                mine, theirs = _dict(answer).get("balance"), _dict(recorded).get("balance")
                if _is_number(mine) and _is_number(theirs):
                    account = state.account_of(event)
                    balances.setdefault(account, []).append((event, theirs, mine))
            result.findings += findings
        await world.advance_to(session.end - session.start)  # webhooks after the last call
        histories = _Histories(world)
        for item in deferred:
            if not explained_trace.get(id(item.trace), False):
                continue  # its class is reported as unexplained, with a timeline
            inspected = await histories.get(item.order_id)
            history = inspected.get("history") or []
            if history and _shown(
                _spans(history, parse_time(history[0]["at"])), item.recorded, item.at, item.limit
            ):
                continue
            result.findings.append(
                Finding(
                    seq=item.exchange.seq,
                    order=item.trace.order_id,
                    request=f"{item.exchange.method} {_template(item.exchange.path)}",
                    pointer="/status",
                    kind="value",
                    recorded=item.recorded,
                    sandbox=item.sandbox,
                )
            )
        result.findings += await _balance_findings(balances, state, histories, session, tolerance)
        result.findings += _webhook_findings(session, state, server.receiver, explained_trace)
    finally:
        server.receiver.forget(state.orders.values())
        await world.close()
    result.findings.sort(key=lambda f: (f.seq if f.seq is not None else 0, f.pointer))
    return result


_NOTHING = object()


def _unanswered(exchange: Exchange) -> bool:
    """The recorder's own 502 `upstream_unavailable`: production never answered, so
    there is nothing of production's to compare (docs/recording.md, "Record")."""
    body = _dict(exchange.response.body)
    return exchange.status == 502 and body.get("code") == "upstream_unavailable"


def _recorded_body(message: Message) -> Any:
    """The recorded answer's body, or `_NOTHING` where none was recorded (a HAR may
    leave bodies out): then only the status is compared."""
    if message.body is not None:
        return message.body
    if message.text is not None:
        return message.text
    if message.raw is not None:
        return message.raw.decode("utf-8", "replace")
    return _NOTHING


class _Binding:
    """Tokens and order ids of the recording bound to the sandbox's, by order of
    appearance: the recording's token N is the replay's token N."""

    def __init__(self, key_of: dict[str | None, str]) -> None:
        self.key_of = key_of
        self.tokens: dict[str, str] = {}
        self.token_account: dict[str, str | None] = {}
        self.orders: dict[str, str] = {}
        self.failed: set[str] = set()
        self.order_account: dict[str, str | None] = {}

    def names_failed_order(self, exchange: Exchange) -> bool:
        """A request about an order whose creation the sandbox refused: not replayed
        (the refusal is the finding; its lookups would only repeat it)."""
        found = _ORDER.match(exchange.path) or _CLIENT_CODE.match(exchange.path)
        return bool(found) and found[1] in self.failed

    def path(self, path: str) -> str:
        return "/".join(self.orders.get(part, part) for part in path.split("/"))

    def query(self, query: str) -> str:
        if not query:
            return ""
        parts = re.split(r"([=&;])", query)
        return "?" + "".join(self.orders.get(part, part) for part in parts)

    def body(self, exchange: Exchange) -> bytes | None:
        request = exchange.request
        if _TOKEN.match(exchange.path) and isinstance(request.body, dict):
            key = request.body.get("api_key")
            mapped = dict(request.body)
            if isinstance(key, str):
                mapped["api_key"] = self.key_of.get(key) or _unknown_key(key)
            return json.dumps(mapped).encode()
        return _request_bytes(request, self.orders)

    async def headers(self, world: World, exchange: Exchange) -> list[tuple[str, str]]:
        headers = _sendable(exchange.request.headers)
        authorization = exchange.request.header("Authorization")
        if authorization is not None:
            scheme, _, token = authorization.partition(" ")
            token = token.strip()
            if scheme.lower() == "bearer" and token:
                mine = self.tokens.get(token)
                if mine is None and exchange.status != 401:
                    # A token whose exchange was not recorded: the fallback account's.
                    mine = await world.token(self.key_of[None])
                    if mine is not None:
                        self.tokens[token] = mine
                        self.token_account[token] = None
                authorization = f"Bearer {mine or 'not-a-token-' + _digest(token)}"
            headers.append(("Authorization", authorization))
        return headers

    def account_of(self, exchange: Exchange) -> str | None:
        token = _bearer(exchange)
        return self.token_account.get(token or "")

    def bind(
        self,
        exchange: Exchange,
        status: int,
        answer: Any,
        receiver: Receiver,
        trace: Trace | None,
    ) -> None:
        recorded = _dict(exchange.response.body)
        answer = _dict(answer)
        if _TOKEN.match(exchange.path) and exchange.method == "POST":
            theirs, mine = recorded.get("access_token"), answer.get("access_token")
            if isinstance(theirs, str) and isinstance(mine, str):
                self.tokens[theirs] = mine
                key = _dict(exchange.request.body).get("api_key")
                self.token_account[theirs] = key if key in self.key_of else None
        elif _ORDERS.match(exchange.path) and exchange.method == "POST":
            theirs, mine = recorded.get("id"), answer.get("id")
            if exchange.status == 201 and isinstance(theirs, str):
                if status == 201 and isinstance(mine, str):
                    self.orders[theirs] = mine
                    self.order_account[mine] = self.account_of(exchange)
                    if trace is not None:
                        receiver.expect(mine, _answers(trace))
                else:
                    self.failed.add(theirs)


class _Histories:
    def __init__(self, world: World) -> None:
        self.world = world
        self.cache: dict[str, dict[str, Any]] = {}

    async def get(self, order_id: str) -> dict[str, Any]:
        if order_id not in self.cache:
            self.cache[order_id] = await self.world.inspect(order_id)
        return self.cache[order_id]


def _order_values(
    findings: list[Finding], recorded: dict[str, Any], answer: dict[str, Any], where: dict
) -> list[Finding]:
    """Values compared in an order answer: `item_product_type`, the echoed request
    fields, what was charged; what refunded, and a field's null-or-not, only where both
    answers show the order in the same status (and its webhook in the same state):
    otherwise the two lives ran a little apart, which the lifecycles judge."""
    same_status = recorded.get("status") == answer.get("status")
    same_webhook = _webhook_state(recorded) == _webhook_state(answer)
    kept = []
    for finding in findings:
        timing = not same_status or (finding.pointer.startswith("/webhook") and not same_webhook)
        if timing and finding.kind == "type" and "null" in (finding.recorded, finding.sandbox):
            continue
        kept.append(finding)
    if recorded.get("item_product_type") != answer.get("item_product_type"):
        kept.append(
            Finding(
                pointer="/item_product_type",
                kind="value",
                recorded=recorded.get("item_product_type"),
                sandbox=answer.get("item_product_type"),
                **where,
            )
        )
    for name in ECHOED:
        if name in recorded and name in answer and not _same(recorded[name], answer[name]):
            kept.append(
                Finding(
                    pointer=f"/{name}",
                    kind="echo",
                    recorded=recorded[name],
                    sandbox=answer[name],
                    **where,
                )
            )
    kept += _money_finding(recorded, answer, "price", where)
    if same_status:
        kept += _money_finding(recorded, answer, "refund_amount", where)
    return kept


def _webhook_state(order: dict[str, Any]) -> Any:
    webhook = order.get("webhook")
    return (webhook.get("status"), webhook.get("attempts")) if isinstance(webhook, dict) else None


def _money_finding(
    recorded: dict[str, Any], answer: dict[str, Any], name: str, where: dict
) -> list[Finding]:
    theirs, mine = recorded.get(name), answer.get(name)
    if _is_number(theirs) and _is_number(mine) and _cents(theirs) != _cents(mine):
        return [Finding(pointer=f"/{name}", kind="money", recorded=theirs, sandbox=mine, **where)]
    return []


async def _balance_findings(
    balances: dict[str | None, list[tuple[Exchange, float, float]]],
    state: _Binding,
    histories: _Histories,
    session: Session,
    tolerance: float,
) -> list[Finding]:
    """Each balance change between two reads of an account, recorded and replayed (the
    level itself is not compared). A difference is timing, not money, where it is what
    orders settling within the tolerance of either read refunded: which side of a read
    a refund falls on is the lifecycles' to judge."""
    found = []
    for account, reads in balances.items():
        settled: list[tuple[list[float], list[int]]] | None = None
        for (before, theirs0, mine0), (after, theirs1, mine1) in itertools.pairwise(reads):
            theirs = (_cents(theirs1) or 0) - (_cents(theirs0) or 0)
            mine = (_cents(mine1) or 0) - (_cents(mine0) or 0)
            if theirs == mine:
                continue
            if settled is None:
                settled = await _settlements(state, histories, account, session)
            limit = max(MIN_TOLERANCE, tolerance * (after.at - before.at))
            edges = (before.at - session.start, after.at - session.start)
            refunds = [
                refund
                for times, amounts in settled
                if any(abs(at - edge) <= limit for at in times for edge in edges)
                for refund in amounts
                if refund
            ]
            if _sums_to(abs(theirs - mine), refunds):
                continue
            found.append(
                Finding(
                    seq=after.seq,
                    order=None,
                    request=f"{after.method} {_template(after.path)}",
                    pointer="/balance",
                    kind="balance change",
                    recorded=round(theirs / 100, 2),
                    sandbox=round(mine / 100, 2),
                )
            )
    return found


async def _settlements(
    state: _Binding, histories: _Histories, account: str | None, session: Session
) -> list[tuple[list[float], list[int]]]:
    """For each order of the account: when it settled (in the replay; the bounds the
    recording gives), in seconds since the session's start, and what it refunded (in the
    replay; recorded), in cents."""
    traces_by_id = {trace.order_id: trace for trace in session.traces}
    found = []
    for recorded_id, order_id in state.orders.items():
        if state.order_account.get(order_id) != account:
            continue
        times: list[float] = []
        amounts: list[int] = []
        inspected = await histories.get(order_id)
        history = inspected.get("history") or []
        if history and history[-1].get("status") in TERMINAL:
            times.append(parse_time(history[-1]["at"]) - session.start)
            amounts.append(_cents(_dict(inspected.get("order")).get("refund_amount")) or 0)
        trace = traces_by_id.get(recorded_id)
        if trace is not None:
            entries = trace.entries()
            if entries and entries[-1].status in TERMINAL:
                created = trace.created.at - session.start
                times += [created + entries[-1].earliest, created + entries[-1].latest]
                amounts.append(_cents(trace.final_order().get("refund_amount")) or 0)
        found.append((times, amounts))
    return found


def _sums_to(target: int, amounts: list[int]) -> bool:
    """Some of `amounts` add up to `target` (cents)."""
    sums = {0}
    for amount in amounts[:24]:
        sums |= {total + amount for total in sums if total + amount <= target}
        if target in sums:
            return True
    return target in sums


def _webhook_findings(
    session: Session,
    state: _Binding,
    receiver: Receiver,
    explained_trace: dict[int, bool],
) -> list[Finding]:
    """The first webhook of each order, recorded and received here, compared as answers
    are (its field set and types; values for enums, echoes and money)."""
    found = []
    for trace in session.traces:
        mine_id = state.orders.get(trace.order_id)
        received = receiver.received.get(mine_id or "", [])
        if not trace.webhooks or not received:
            continue
        observation = trace.webhooks[0]
        recorded, mine = observation.order, received[0]
        where = {"seq": observation.seq, "order": trace.order_id, "request": "webhook"}
        findings = shape_findings((200, recorded), (200, mine), **where)
        if isinstance(recorded, dict) and isinstance(mine, dict):
            same_status = recorded.get("status") == mine.get("status")
            if not same_status and explained_trace.get(id(trace), False):
                findings.append(
                    Finding(
                        pointer="/status",
                        kind="value",
                        recorded=recorded.get("status"),
                        sandbox=mine.get("status"),
                        **where,
                    )
                )
            for name in ("merchant_order_id", "item", "quantity"):
                if name in recorded and name in mine and not _same(recorded[name], mine[name]):
                    findings.append(
                        Finding(
                            pointer=f"/{name}",
                            kind="echo",
                            recorded=recorded[name],
                            sandbox=mine[name],
                            **where,
                        )
                    )
            findings += _money_finding(recorded, mine, "price", where)
            if same_status:
                findings += _money_finding(recorded, mine, "refund_amount", where)
            else:
                findings = [
                    f
                    for f in findings
                    if not (f.kind == "type" and "null" in (f.recorded, f.sandbox))
                ]
        found += findings
    return found


# -- requests ---------------------------------------------------------------------------------


def _sendable(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [
        (name, value)
        for name, value in headers
        if not name.startswith(":") and name.lower() not in _NOT_SENT
    ]


def _creation_headers(exchange: Exchange, token: str | None) -> list[tuple[str, str]]:
    headers = _sendable(exchange.request.headers)
    if not any(name.lower() == "content-type" for name, _ in headers):
        headers.append(("Content-Type", "application/json"))
    headers.append(("Authorization", f"Bearer {token or 'none'}"))
    return headers


def _request_bytes(message: Message, ids: dict[str, str]) -> bytes | None:
    if message.body is not None:
        return json.dumps(_rename(message.body, ids)).encode()
    if message.text is not None:
        text = message.text
        for recorded, mine in ids.items():
            text = text.replace(recorded, mine)
        return text.encode()
    return message.raw


def _rename(value: Any, ids: dict[str, str]) -> Any:
    if not ids:
        return value
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, list):
        return [_rename(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _rename(v, ids) for k, v in value.items()}
    return value


def _account(name: str, api_key: str, webhook_url: str | bool | None) -> dict[str, Any]:
    account: dict[str, Any] = {
        "email": f"{name}@replay.example.com",
        "api_key": api_key,
        "balance": BALANCE,
    }
    if isinstance(webhook_url, str) and webhook_url:
        account["webhook_url"] = f"{webhook_url}/{name}"
    return account


def _unknown_key(key: str) -> str:
    """A key production refused stays one that no account holds."""
    return f"ak_unknown_{_digest(key)}"


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def _bearer(exchange: Exchange) -> str | None:
    scheme, _, token = (exchange.request.header("Authorization") or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def _template(path: str) -> str:
    """`/api/v1/orders/{id}`: the path with ids left out, to group findings."""
    parts = path.split("/")
    return "/".join(
        "{id}" if (len(p) >= 16 and re.search(r"\d", p)) or p.startswith("<") else p for p in parts
    )


def _order_named(exchange: Exchange, trace: Trace | None) -> str | None:
    if trace is not None:
        return trace.order_id
    found = _ORDER.match(exchange.path) or _CLIENT_CODE.match(exchange.path)
    return found[1] if found else None


def _trace_of(exchange: Exchange, trace: Trace | None, by_id: dict[str, Trace]) -> Trace | None:
    if trace is not None:
        return trace
    found = _ORDER.match(exchange.path) or _CLIENT_CODE.match(exchange.path)
    return by_id.get(found[1]) if found else None


# -- small helpers ----------------------------------------------------------------------------


def _parse(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _is_order(value: Any) -> bool:
    return isinstance(value, dict) and "status" in value and "item" in value and "id" in value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_PLACEHOLDER = re.compile(r"<[a-z_]+:[0-9A-Za-z_-]+>")


def _same(left: Any, right: Any) -> bool:
    """Equal values; a recorded string holding placeholders (`<email:...>`: redacted)
    matches any text in their place."""
    if isinstance(left, str) and isinstance(right, str) and _PLACEHOLDER.search(left):
        parts = [re.escape(part) for part in _PLACEHOLDER.split(left)]
        return re.fullmatch(".*".join(parts), right, re.DOTALL) is not None
    if _is_number(left) and _is_number(right):
        return math.isclose(float(left), float(right), rel_tol=0, abs_tol=1e-9)
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    return left == right


def _cents(value: Any) -> int | None:
    decimal = _decimal(value)
    return None if decimal is None else int((decimal * 100).to_integral_value(ROUND_HALF_UP))


def _money(cents: int | None) -> str:
    return "nothing" if cents is None else f"{cents / 100:.2f}"


def _decimal(value: Any) -> Decimal | None:
    if not _is_number(value):
        return None
    try:
        found = Decimal(str(value))
    except InvalidOperation:
        return None
    return found if found.is_finite() else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


def iso(ts: float) -> str:
    moment = datetime.fromtimestamp(ts, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


# -- the whole run ----------------------------------------------------------------------------


@dataclass(repr=False)
class Outcome:
    """Everything `compare` reports. (Its repr is short: asyncio formats the result of
    the task that made it when it finishes, and the recordings it holds are large.)"""

    sessions: list[Session]
    verdicts: list[ClassVerdict]
    findings: list[Finding]
    replayed: int
    skipped: int
    tolerance: float
    scenarios: list[str]
    #: The catalog's items (inferred from the recordings; empty where `--catalog` gave it).
    catalog: list[dict[str, Any]]
    catalog_given: bool

    def __repr__(self) -> str:
        return f"<Outcome of {len(self.sessions)} recording(s): {len(self.findings)} findings>"

    @property
    def exchanges(self) -> int:
        return sum(len(s.recording.exchanges) for s in self.sessions)

    @property
    def webhooks(self) -> int:
        return sum(len(s.recording.webhooks) for s in self.sessions)

    @property
    def orders(self) -> int:
        return sum(len(s.traces) for s in self.sessions)


async def run(
    recordings: list[Recording],
    scenario_paths: list[str],
    catalog_path: str | None,
    tolerance: float,
) -> Outcome:
    """Replay `recordings` (one session each, one after another, each in a sandbox of
    its own; their orders pooled into one set of outcome classes)."""
    sessions = sessions_of(recordings)
    session_of = {id(trace): session for session in sessions for trace in session.traces}
    outcomes = classes(trace for session in sessions for trace in session.traces)
    catalog = None if catalog_path else infer_catalog(sessions)
    server = Server(scenario_paths, catalog_path)
    await server.start()
    try:
        scenarios = await server.scenarios()
        verdicts = await explain(server, outcomes, session_of, scenarios, catalog, tolerance)
        scenario_of: dict[int, str | None] = {}
        explained_trace: dict[int, bool] = {}
        for verdict in verdicts:
            for trace in verdict.outcome.traces:
                scenario_of[id(trace)] = verdict.scenario_for(trace)
                explained_trace[id(trace)] = verdict.explained
        findings: list[Finding] = []
        replayed = skipped = 0
        for session in sessions:
            result = await replay_session(
                server, session, catalog, scenario_of, explained_trace, tolerance
            )
            findings += result.findings
            replayed += result.replayed
            skipped += result.skipped
    finally:
        await server.stop()
    return Outcome(
        sessions=sessions,
        verdicts=verdicts,
        findings=findings,
        replayed=replayed,
        skipped=skipped,
        tolerance=tolerance,
        scenarios=[s["name"] for s in scenarios],
        catalog=catalog or [],
        catalog_given=catalog_path is not None,
    )


def class_delays(outcome: OutcomeClass) -> list[tuple[str, float, int]]:
    """The class's usual history: each status with its median delay and sample count."""
    return [(status, median(samples), len(samples)) for status, samples in outcome.delays()]
