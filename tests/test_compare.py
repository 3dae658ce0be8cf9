"""`mock-server compare` and `mock-server recording export --har` (docs/recording.md,
"Compare").

"Production" here is a stand-in: a real sandbox server started in-process on a manual
clock, driven by a merchant client whose every exchange, and every webhook the account's
receiver gets, is written by `Session` in the recorder's format (docs/recording.md, "The
file"), secrets redacted into `<kind:hash>` placeholders as the recorder does. A stand-in
that behaves otherwise runs other scenarios (a slower `happy_path`, `timeout_partial`
queued for every order, a scenario of the test's own) or answers with another shape (a
`rewrite` of its answers). Recorded times are the stand-in's virtual clock: nothing waits
on wall time. Traffic stays on loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import io
import json
import re
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from mock_server.app import create_app
from mock_server.clock import parse_iso
from mock_server.config import Settings
from mock_server.recording.analysis import compare, har
from mock_server.recording.analysis.catalog_inference import infer_catalog
from mock_server.recording.analysis.reading import read_recording
from mock_server.recording.analysis.sessions import sessions_of
from mock_server.recording.recorder.fileformat import end_line_of
from mock_server.recording.recorder.redaction import Redactor
from mock_server.serving import Serving

START = "2026-03-01T10:00:00Z"
START_TS = parse_iso(START)
KEY = "ak_test_default"
SLOW_HAPPY_PATH = """\
scenarios:
  - name: happy_path
    description: Production's orders take 30 s, not 3 s.
    steps:
      - after: 1s
        status: processing
      - after: 29s
        status: completed
"""
PROVIDER_DOWN = """\
scenarios:
  - name: provider_down
    description: The provider fails after a long wait; full refund.
    steps:
      - after: 2s
        status: processing
      - after: 12s
        status: failed
        error: PROVIDER_DOWN
        error_message: The provider is down.
"""

# -- the production stand-in and its recorder ---------------------------------------------


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Session:
    """A merchant's session with the stand-in, recorded event by event.

    `events` keep what went over the wire; `write` redacts them with the recorder's own
    rules (`redaction.Redactor`), the same secret always the same placeholder."""

    def __init__(
        self,
        tmp_path: Path,
        *,
        scenario_files: tuple[str, ...] = (),
        queue: str | None = None,
        webhook_answers: Callable[[str, int], int] | None = None,
        rewrite: Callable[[str, str, Any], Any] | None = None,
        webhooks: bool = True,
    ) -> None:
        self.tmp_path = tmp_path
        self.scenario_files = scenario_files
        self.queue = queue
        self.webhook_answers = webhook_answers or (lambda order_id, attempt: 200)
        self.rewrite = rewrite
        self.with_webhooks = webhooks
        self.events: list[dict[str, Any]] = []
        self.now = START_TS
        self.token = ""
        self.deliveries: dict[str, int] = {}

    # running

    async def __aenter__(self) -> Session:
        settings = Settings(
            clock="manual", seed=7, start_time=START_TS, scenarios=self.scenario_files
        )
        self.serving = Serving(create_app(settings), "127.0.0.1", 0, access_log=None)
        await self.serving.start()
        self.url = self.serving.url
        self.http = aiohttp.ClientSession()
        receiver = web.Application()
        receiver.router.add_post("/hooks", self._hook)
        self.receiver = web.AppRunner(receiver, access_log=None)
        await self.receiver.setup()
        site = web.TCPSite(self.receiver, "127.0.0.1", 0)
        await site.start()
        host, port = self.receiver.addresses[0][:2]
        accounts = (await self._control("GET", "/_mock/accounts"))["accounts"]
        hook = f"http://{host}:{port}/hooks" if self.with_webhooks else None
        await self._control("PATCH", f"/_mock/accounts/{accounts[0]['id']}", {"webhook_url": hook})
        if self.queue:
            await self._control(
                "POST", "/_mock/scenarios/next", {"scenario": self.queue, "count": None}
            )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.close()
        await self.receiver.cleanup()
        await self.serving.stop()

    async def _control(self, method: str, path: str, body: Any = None) -> Any:
        async with self.http.request(method, self.url + path, json=body) as response:
            assert response.status < 300, await response.text()
            return await response.json()

    async def advance(self, seconds: float) -> None:
        """Production's time passes (the stand-in's clock; nothing is recorded)."""
        await self._control("POST", "/_mock/clock/advance", {"seconds": seconds})
        self.now += seconds

    async def _hook(self, request: web.Request) -> web.Response:
        raw = await request.read()
        body = json.loads(raw)
        # The delivery's time: the stand-in's clock stands at the attempt while it runs.
        async with self.http.get(self.url + "/_mock/clock") as response:
            at = parse_iso((await response.json())["now"])
        attempt = self.deliveries.get(body["order_id"], 0) + 1
        self.deliveries[body["order_id"]] = attempt
        answered = self.webhook_answers(body["order_id"], attempt)
        self.events.append(
            {
                "kind": "webhook",
                "at": at,
                "headers": [[k, v] for k, v in request.headers.items()],
                "body": body,
                "answered": answered,
                "signature_valid": True,
            }
        )
        return web.Response(status=answered)

    async def call(
        self, method: str, path: str, body: Any = None, *, token: str | None = None
    ) -> tuple[int, Any]:
        headers = {"Accept": "application/json", "User-Agent": "merchant-client/1.0"}
        token = self.token if token is None else token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if body is not None:
            headers["Content-Type"] = "application/json"
        path, _, query = path.partition("?")
        at = self.now
        data = json.dumps(body).encode() if body is not None else None
        url = self.url + path + (f"?{query}" if query else "")
        async with self.http.request(method, url, data=data, headers=headers) as response:
            status = response.status
            answer = json.loads(await response.read())
            answer_headers = [[k, v] for k, v in response.headers.items()]
        if self.rewrite is not None:
            answer = self.rewrite(method, path, answer)
        request: dict[str, Any] = {
            "method": method,
            "path": path,
            "query": query,
            "headers": [[k, v] for k, v in headers.items()],
        }
        if body is not None:
            request["body"] = body
        self.events.append(
            {
                "kind": "exchange",
                "at": at,
                "request": request,
                "response": {"status": status, "headers": answer_headers, "body": answer},
                "ms": 1.5,
            }
        )
        return status, answer

    async def login(self, api_key: str = KEY) -> str:
        status, answer = await self.call(
            "POST", "/api/v1/auth/token/client", {"api_key": api_key}, token=""
        )
        assert status == 200, answer
        self.token = answer["access_token"]
        return self.token

    async def order(self, body: dict[str, Any]) -> dict[str, Any]:
        status, answer = await self.call("POST", "/api/v1/orders", body)
        assert status == 201, answer
        return answer

    async def poll(self, orders: list[dict[str, Any]], *, every: float, until: float) -> None:
        """Poll each order every `every` seconds until it is terminal (or waits for a
        code), for at most `until` seconds."""
        waiting = {o["id"] for o in orders}
        elapsed = 0.0
        while waiting and elapsed < until:
            await self.advance(every)
            elapsed += every
            for order_id in sorted(waiting):
                status, answer = await self.call("GET", f"/api/v1/orders/{order_id}")
                if answer["status"] in ("completed", "partial", "failed", "need_client_code"):
                    waiting.discard(order_id)

    # writing

    def lines(self, *, redact: bool = True) -> list[dict[str, Any]]:
        redactor = Redactor()  # the recorder's own rules: the same secret, the same placeholder
        header = {
            "format": "ordering-sandbox-recording",
            "version": 1,
            "upstream": "https://orders.example.com",
            "started_at": _iso(START_TS),
            "redaction": redactor.names if redact else [],
        }
        lines: list[dict[str, Any]] = [header]
        for seq, event in enumerate(self.events, start=1):
            line = json.loads(json.dumps(event))
            line = {"seq": seq, **line, "at": _iso(event["at"])}
            lines.append(redactor.redact(line) if redact else line)
        lines.append(end_line_of(lines[1:]))
        return lines

    def write(self, name: str = "session.jsonl", *, redact: bool = True) -> Path:
        path = self.tmp_path / name
        text = "".join(json.dumps(line) + "\n" for line in self.lines(redact=redact))
        if name.endswith(".gz"):
            path.write_bytes(gzip.compress(text.encode()))
        else:
            path.write_text(text)
        return path


def browser_har(session: Session) -> dict[str, Any]:
    """The session as a browser's devtools export it: HTTP/2 pseudo-headers, pages,
    initiators, timings, cookies, secrets left in clear, no webhooks."""
    entries = []
    for event in session.lines(redact=False)[1:]:
        if event["kind"] != "exchange":
            continue
        request, response = event["request"], event["response"]
        url = "https://orders.example.com" + request["path"]
        if request["query"]:
            url += "?" + request["query"]
        entry: dict[str, Any] = {
            "_initiator": {"type": "script"},
            "_priority": "High",
            "_resourceType": "fetch",
            "cache": {},
            "connection": "443",
            "pageref": "page_1",
            "request": {
                "method": request["method"],
                "url": url,
                "httpVersion": "http/2.0",
                "headers": [
                    {"name": ":authority", "value": "orders.example.com"},
                    {"name": ":method", "value": request["method"]},
                    {"name": ":path", "value": request["path"]},
                    {"name": ":scheme", "value": "https"},
                    *({"name": k.lower(), "value": v} for k, v in request["headers"]),
                ],
                "queryString": [],
                "cookies": [],
                "headersSize": -1,
                "bodySize": 0,
            },
            "response": {
                "status": response["status"],
                "statusText": "",
                "httpVersion": "http/2.0",
                "headers": [{"name": k.lower(), "value": v} for k, v in response["headers"]],
                "cookies": [],
                "content": {
                    "size": 100,
                    "mimeType": "application/json",
                    "text": json.dumps(response["body"]),
                },
                "redirectURL": "",
                "headersSize": -1,
                "bodySize": -1,
                "_transferSize": 400,
                "_error": None,
            },
            "serverIPAddress": "127.0.0.1",
            "startedDateTime": event["at"],
            "time": 12.5,
            "timings": {
                "blocked": 1.1,
                "dns": -1,
                "ssl": -1,
                "connect": -1,
                "send": 0.2,
                "wait": 10.4,
                "receive": 0.8,
                "_blocked_queueing": 0.6,
            },
        }
        if "body" in request:
            entry["request"]["postData"] = {
                "mimeType": "application/json",
                "text": json.dumps(request["body"]),
            }
        entries.append(entry)
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "WebInspector", "version": "537.36"},
            "pages": [
                {
                    "startedDateTime": _iso(START_TS),
                    "id": "page_1",
                    "title": "https://shop.example.com/checkout",
                    "pageTimings": {"onContentLoad": 300, "onLoad": 500},
                }
            ],
            "entries": entries,
        }
    }


async def standard_session(session: Session) -> None:
    """A merchant's day: a token, the balance, a key order, a top-up and a service
    order polled until settled, a login top-up released with its code, refusals (an
    unknown item, one out of stock, a price guard, an unknown order, a bad token), the
    balance again."""
    await session.login()
    await session.call("GET", "/api/v1/account/balance")
    orders = [
        await session.order({"item_id": 1001, "quantity": 2, "merchant_order_id": "shop-1"}),
        await session.order(
            {
                "item_id": 2001,
                "quantity": 5,
                "fields": {"razer_id": "rz-42", "region": 2},
                "merchant_order_id": "shop-2",
            }
        ),
        await session.order({"item_id": 3001, "fields": {"riot_id": "Player#EUW", "region": 1}}),
    ]
    await session.call("POST", "/api/v1/orders", {"item_id": 987654, "quantity": 1})
    await session.call("POST", "/api/v1/orders", {"item_id": 1004, "quantity": 1})
    await session.call("POST", "/api/v1/orders", {"item_id": 1001, "quantity": 1, "price": 1.0})
    await session.call("GET", "/api/v1/orders/00000000-0000-4000-8000-000000000000")
    await session.call("GET", "/api/v1/account/balance", token="not-a-token")
    await session.poll(orders, every=1.5, until=120)
    login = await session.order(
        {"item_id": 2002, "quantity": 1, "fields": {"login_email": "p@example.com", "server": 2}}
    )
    await session.poll([login], every=1.0, until=10)
    await session.call("POST", f"/v1/orders/{login['id']}/client-code", {"code": "123456"})
    await session.poll([login], every=1.0, until=10)
    await session.advance(1)
    await session.call("GET", "/api/v1/account/balance")
    await session.call("GET", "/v1/account/me")


def record(tmp_path: Path, script=standard_session, **options: Any) -> Session:
    async def go() -> Session:
        async with Session(tmp_path, **options) as session:
            await script(session)
        return session

    return asyncio.run(go())


def run_compare(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = compare.main(list(args))
    return code, out.getvalue(), err.getvalue()


def compare_json(*args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run_compare(*args, "--json")
    assert out, err
    return code, json.loads(out)


def classes_by_name(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in document["classes"]}


async def key_orders(session: Session) -> None:
    """Three key orders (two of several units, one of one), polled every 2 s; the
    balance read before and after."""
    await session.login()
    await session.call("GET", "/api/v1/account/balance")
    orders = [
        await session.order({"item_id": 1001, "quantity": 3, "merchant_order_id": "k-1"}),
        await session.order({"item_id": 1002, "quantity": 2, "merchant_order_id": "k-2"}),
        await session.order({"item_id": 1001, "quantity": 1, "merchant_order_id": "k-3"}),
    ]
    await session.poll(orders, every=2.0, until=90)
    await session.advance(2)
    await session.call("GET", "/api/v1/account/balance")


async def one_order_retried(session: Session) -> None:
    """One order; its webhook is refused twice, so production retries."""
    await session.login()
    order = await session.order({"item_id": 1001, "quantity": 1, "merchant_order_id": "r-1"})
    await session.poll([order], every=1.0, until=10)
    for _ in range(3):
        await session.advance(60)
        await session.call("GET", f"/api/v1/orders/{order['id']}")


# -- no drift -------------------------------------------------------------------------------


def test_a_recording_of_a_default_sandbox_compares_clean(tmp_path: Path) -> None:
    session = record(tmp_path)
    path = session.write("session.jsonl.gz")
    code, document = compare_json(str(path))
    summary = document["summary"]
    assert summary["exchanges"] == sum(1 for e in session.events if e["kind"] == "exchange")
    assert summary["webhooks"] == 4 and summary["orders"] == 4
    assert document["findings"] == [], document["findings"]
    found = classes_by_name(document)
    assert set(found) == {"recorded_completed", "recorded_completed_client_code"}
    assert found["recorded_completed"]["explained_by"][0] == {"scenario": "happy_path", "orders": 3}
    assert found["recorded_completed_client_code"]["explained_by"] == [
        {"scenario": "need_client_code", "orders": 1}
    ]
    # A duplicated webhook, a dropped one or a 10% dearer price is not what was seen.
    assert {"webhook_duplicate", "webhook_dropped", "price_mismatch"} <= set(
        found["recorded_completed"]["why_not"]
    )
    assert code == 0 and document["exit"] == 0 and document["timelines"] == []

    code, text, _ = run_compare(str(path))
    assert code == 0
    assert "2 (2 explained, 0 unexplained); shape findings: 0" in text
    assert "explained by happy_path (3 of 3)" in text


# -- lifecycle drift -------------------------------------------------------------------------


def test_orders_that_take_30_s_instead_of_3_are_produced_by_no_scenario(tmp_path: Path) -> None:
    slow = tmp_path / "slow.yaml"
    slow.write_text(SLOW_HAPPY_PATH)
    path = record(tmp_path, key_orders, scenario_files=(str(slow),)).write()
    code, document = compare_json(str(path))
    assert code == 1
    completed = classes_by_name(document)["recorded_completed"]
    assert completed["orders"] == 3 and not completed["explained"]
    assert completed["explained_by"] == []
    assert completed["sandbox_choice"] == "happy_path"
    assert "the sandbox shows completed" in completed["why_not"]["happy_path"]
    assert [d["status"] for d in completed["median_delays"]] == ["processing", "completed"]
    assert 28 <= completed["median_delays"][1]["after"] <= 30
    # Shapes are the same: only the lives differ.
    assert document["findings"] == []
    (timeline,) = document["timelines"]
    assert timeline["class"] == "recorded_completed"
    rows = timeline["rows"]
    assert {"status": "completed", "source": "entered"} in [r["sandbox"] for r in rows]
    late = [r for r in rows if r["recording"] and r["at"] >= 10]
    assert late and all(r["recording"]["status"] == "processing" for r in late[:-2])
    assert all(r["sandbox"]["status"] == "completed" for r in late if r["sandbox"])

    code, text, _ = run_compare(str(path))
    assert code == 1
    assert "UNEXPLAINED recorded_completed" in text
    assert compare.NO_SCENARIO in text
    assert "timeline of recorded_completed" in text


def test_timeout_partial_orders_are_explained_by_timeout_partial(tmp_path: Path) -> None:
    path = record(tmp_path, key_orders, queue="timeout_partial").write()
    code, document = compare_json(str(path))
    found = classes_by_name(document)
    assert set(found) == {"recorded_partial_order_timeout", "recorded_failed_order_timeout"}
    partial = found["recorded_partial_order_timeout"]
    assert partial["orders"] == 2 and partial["explained"]
    assert partial["explained_by"] == [{"scenario": "timeout_partial", "orders": 2}]
    assert "out_of_stock_partial" in partial["why_not"]  # partial, but no ORDER_TIMEOUT
    assert found["recorded_failed_order_timeout"]["explained_by"] == [
        {"scenario": "timeout_partial", "orders": 1}
    ]
    # Replayed under timeout_partial, the answers agree, refunds and balance included.
    assert document["findings"] == []
    assert code == 0


def test_a_scenario_of_production_is_explained_once_given(tmp_path: Path) -> None:
    custom = tmp_path / "provider.yaml"
    custom.write_text(PROVIDER_DOWN)
    path = record(
        tmp_path, key_orders, scenario_files=(str(custom),), queue="provider_down"
    ).write()
    code, document = compare_json(str(path))
    failed = classes_by_name(document)["recorded_failed_provider_down"]
    assert code == 1 and not failed["explained"] and failed["explained_by"] == []

    code, document = compare_json(str(path), "--scenarios", str(custom))
    failed = classes_by_name(document)["recorded_failed_provider_down"]
    assert failed["explained"] and failed["explained_by"] == [
        {"scenario": "provider_down", "orders": 3}
    ]
    assert "provider_down" in document["summary"]["scenarios"]
    assert document["findings"] == [] and code == 0


def test_a_looser_or_tighter_tolerance_changes_what_explains(tmp_path: Path) -> None:
    slow = tmp_path / "slow.yaml"
    slow.write_text(SLOW_HAPPY_PATH.replace("29s", "4s"))  # completes at 5 s, not 3 s
    path = record(tmp_path, key_orders, scenario_files=(str(slow),)).write()
    code, document = compare_json(str(path), "--tolerance", "0")
    assert code == 1 and not classes_by_name(document)["recorded_completed"]["explained"]
    code, document = compare_json(str(path), "--tolerance", "2")
    assert code == 0 and classes_by_name(document)["recorded_completed"]["explained"]


# -- webhooks -------------------------------------------------------------------------------


def test_retries_are_replayed_and_their_pattern_matches(tmp_path: Path) -> None:
    session = record(
        tmp_path,
        one_order_retried,
        webhook_answers=lambda order, attempt: 500 if attempt <= 2 else 200,
    )
    webhooks = [e for e in session.events if e["kind"] == "webhook"]
    assert [w["answered"] for w in webhooks] == [500, 500, 200]
    path = session.write()
    code, document = compare_json(str(path))
    (completed,) = document["classes"]
    assert completed["explained"] and completed["explained_by"][0]["scenario"] == "happy_path"
    assert "webhook_duplicate" in completed["why_not"]
    assert document["findings"] == [] and code == 0

    # A production that retries after 20 s, not 60 s: no scenario sends that.
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    hooks = [line for line in lines if line.get("kind") == "webhook"]
    first = parse_iso(hooks[0]["at"])
    for number, hook in enumerate(hooks):
        hook["at"] = _iso(first + 20 * number)
    faster = tmp_path / "faster.jsonl"
    faster.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, document = compare_json(str(faster))
    (completed,) = document["classes"]
    assert code == 1 and not completed["explained"]
    assert "webhook 2 (completed)" in completed["why_not"]["happy_path"]


# -- shapes ---------------------------------------------------------------------------------


def _drifted(method: str, path: str, answer: Any) -> Any:
    """A production whose lookups carry a field more, lack `source`, and whose balance
    is a string."""
    if method == "GET" and "/orders/" in path and isinstance(answer, dict) and "id" in answer:
        answer = {**answer, "eta_seconds": 12}
        answer.pop("source", None)
    if path.endswith("/account/balance") and isinstance(answer, dict) and "balance" in answer:
        answer = {**answer, "balance": f"{answer['balance']:.2f}"}
    return answer


def test_shape_drift_is_found(tmp_path: Path) -> None:
    path = record(tmp_path, key_orders, rewrite=_drifted).write()
    code, document = compare_json(str(path))
    assert code == 1
    assert all(c["explained"] for c in document["classes"])
    kinds = {(f["request"], f["pointer"], f["kind"]) for f in document["findings"]}
    assert kinds == {
        ("GET /api/v1/orders/{id}", "/eta_seconds", "missing field"),
        ("GET /api/v1/orders/{id}", "/source", "extra field"),
        ("GET /api/v1/account/balance", "/balance", "type"),
    }
    balance = next(f for f in document["findings"] if f["pointer"] == "/balance")
    assert (balance["recorded"], balance["sandbox"]) == ("string", "number")
    eta = next(f for f in document["findings"] if f["pointer"] == "/eta_seconds")
    assert eta["seq"] >= 1 and eta["order"] and eta["recorded"] == "present"
    assert document["summary"]["shape_findings"] == len(document["findings"])

    code, text, _ = run_compare(str(path))
    assert "GET /api/v1/orders/{id}  /eta_seconds  missing field" in text


def test_a_value_that_drifted_is_found(tmp_path: Path) -> None:
    """Enums and money are compared as values: a product type and a price of production
    that differ from what the same request gets in the sandbox."""

    reads = []

    def rewrite(method: str, path: str, answer: Any) -> Any:
        if method == "GET" and isinstance(answer, dict) and answer.get("item") == 1002:
            return {**answer, "item_product_type": "voucher", "price": answer["price"] + 1}
        if path.endswith("/balance"):
            reads.append(answer["balance"])
            if len(reads) == 2:  # production charged 5.00 more than its orders say
                return {**answer, "balance": answer["balance"] - 5}
        return answer

    path = record(tmp_path, key_orders, rewrite=rewrite).write()
    code, document = compare_json(str(path))
    kinds = {(f["pointer"], f["kind"]) for f in document["findings"]}
    assert kinds == {
        ("/item_product_type", "value"),
        ("/price", "money"),
        ("/balance", "balance change"),
    }
    change = next(f for f in document["findings"] if f["kind"] == "balance change")
    assert change["recorded"] == round(change["sandbox"] - 5, 2)
    assert code == 1


def test_the_catalog_is_what_the_order_answers_show(tmp_path: Path) -> None:
    path = record(tmp_path).write()
    sessions = sessions_of([read_recording(str(path))])
    items = {item["id"]: item for item in infer_catalog(sessions)}
    # Items production refused (987654 unknown, 1004 out of stock) were never sold.
    assert set(items) == {1001, 2001, 2002, 3001}
    assert items[1001] | {"fields": []} == {
        "id": 1001,
        "name": "Steam Wallet Gift Card $20 (US)",
        "product_type": "key",
        "price": 2000,
        "base_price": 2000,
        "subscriber_price": 2000,
        "min_quantity": 1,
        "max_quantity": 2,
        "in_stock": True,
        "fields": [],
    }
    assert items[2001]["price"] == 103 and items[2001]["product_type"] == "topup"
    assert items[2001]["fields"] == [
        {"name": "region", "type": "choice", "options": [{"id": 2, "name": "United States"}]},
        {"name": "razer_id", "type": "text"},
    ]
    assert items[2002]["client_code"] is True  # seen waiting for a client code
    assert (items[3001]["min_quantity"], items[3001]["max_quantity"]) == (1, 1)
    assert "client_code" not in items[3001]


def test_a_given_catalog_and_several_files(tmp_path: Path) -> None:
    first = record(tmp_path).write("first.jsonl")
    second = record(tmp_path, key_orders, queue="timeout_partial").write("second.jsonl")
    catalog = Path(__file__).parent.parent / "mock_server" / "data" / "catalog.json"
    code, document = compare_json(str(first), str(second), "--catalog", str(catalog))
    summary = document["summary"]
    assert summary["files"] == [str(first), str(second)] and summary["catalog"] == "given"
    assert summary["orders"] == 4 + 3
    assert set(classes_by_name(document)) == {
        "recorded_completed",
        "recorded_completed_client_code",
        "recorded_partial_order_timeout",
        "recorded_failed_order_timeout",
    }
    assert document["findings"] == [] and code == 0


def test_what_production_never_answered_is_not_compared(tmp_path: Path) -> None:
    """The recorder's own 502 `upstream_unavailable` is not production's answer."""
    session = record(tmp_path, key_orders)
    lines = session.lines()
    lookup = next(
        line
        for line in lines[1:]
        if line["request"]["method"] == "GET" and "/orders/" in line["request"]["path"]
    )
    lookup["response"] = {
        "status": 502,
        "headers": [["Content-Type", "application/json"]],
        "body": {
            "detail": "The upstream did not answer within 30 s",
            "code": "upstream_unavailable",
        },
    }
    path = tmp_path / "cut.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, document = compare_json(str(path))
    assert document["summary"]["skipped"] == 1
    assert document["findings"] == [] and code == 0


# -- HAR ------------------------------------------------------------------------------------


def test_a_browser_har_compares(tmp_path: Path) -> None:
    session = record(tmp_path, webhooks=False)
    path = tmp_path / "devtools.har"
    path.write_text(json.dumps(browser_har(session), indent=2))
    recording = read_recording(str(path))
    assert recording.kind == "har" and not recording.webhooks
    code, document = compare_json(str(path))
    assert document["findings"] == [], document["findings"]
    assert all(c["explained"] for c in document["classes"])
    assert code == 0


def test_recording_export_har_then_compare(tmp_path: Path, capsys) -> None:
    session = record(
        tmp_path,
        one_order_retried,
        webhook_answers=lambda order, attempt: 503 if attempt == 1 else 200,
    )
    path = session.write()
    out = tmp_path / "session.har"
    assert har.main(["export", "--har", str(path), "--out", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["log"]["version"] == "1.2"
    entries = document["log"]["entries"]
    inbound = [e for e in entries if e.get("_direction") == "inbound"]
    assert [e["response"]["status"] for e in inbound] == [503, 200]
    assert all(e["_signature_valid"] is True for e in inbound)
    assert entries[0]["request"]["url"] == "https://orders.example.com/api/v1/auth/token/client"
    back = read_recording(str(out))
    original = read_recording(str(path))
    assert [w.answered for w in back.webhooks] == [503, 200]
    assert [(e.method, e.path, e.status) for e in back.exchanges] == [
        (e.method, e.path, e.status) for e in original.exchanges
    ]
    code, compared = compare_json(str(out))
    assert compared["findings"] == [] and code == 0
    assert compared["classes"][0]["explained"]

    capsys.readouterr()
    assert har.main(["export", str(path), "--har"]) == 0
    assert json.loads(capsys.readouterr().out) == document


# -- bad input ------------------------------------------------------------------------------


def _header() -> str:
    return json.dumps(Session(Path(".")).lines()[0]) + "\n"


def _one_balance_read() -> str:
    """A finished recording of one exchange: something to replay."""
    exchange = {
        "seq": 1,
        "at": _iso(START_TS),
        "kind": "exchange",
        "request": {"method": "GET", "path": "/api/v1/account/balance", "query": ""},
        "response": {"status": 401, "body": {"detail": "no token", "code": "unauthorized"}},
    }
    return _header() + "".join(json.dumps(e) + "\n" for e in (exchange, end_line_of([exchange])))


def test_unreadable_input_is_exit_2_with_file_and_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    code, out, err = run_compare(str(missing))
    assert code == 2 and err.startswith(f"{missing}:1: cannot read it") and out == ""

    broken = tmp_path / "broken.jsonl"
    broken.write_text(_header() + '{"seq": 1, "at": "2026-03-01T10:00:00.000Z"}\n{nope\n{}\n')
    code, _, err = run_compare(str(broken))
    assert code == 2 and err.startswith(f"{broken}:2: not an event")
    broken.write_text(_header() + "{nope\n" + '{"a": 1}\n')
    code, _, err = run_compare(str(broken))
    assert code == 2 and err.startswith(f"{broken}:2: not JSON")

    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text('{"format": "something-else", "version": 1}\n')
    code, _, err = run_compare(str(wrong))
    assert code == 2 and err.startswith(f"{wrong}:1: not a recording")
    wrong.write_text('{"format": "ordering-sandbox-recording", "version": 9}\n')
    code, _, err = run_compare(str(wrong))
    assert code == 2 and err.startswith(f"{wrong}:1: recording version 9")

    bad_har = tmp_path / "bad.har"
    bad_har.write_text('{"log": {"entries": [\n  {"request": {}}\n]}}\n')
    code, _, err = run_compare(str(bad_har))
    assert code == 2 and err.startswith(f"{bad_har}:2: log.entries[0] is not a HAR entry")

    # Every file is read before anything runs: a good one beside a bad one is still 2.
    good = tmp_path / "good.jsonl"
    good.write_text(_header())
    code, _, err = run_compare(str(good), str(wrong))
    assert code == 2 and err.startswith(f"{wrong}:1:")


def test_bad_arguments_are_exit_2(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(_one_balance_read())
    for args in (
        [],
        [str(good), "--tolerance", "soon"],
        [str(good), "--tolerance", "-0.5"],
        [str(good), "--tolerance", "nan"],
        [str(good), "--no-such-flag"],
        [str(good), "--scenarios"],
    ):
        code, out, err = run_compare(*args)
        assert code == 2, args
        assert "usage: mock-server compare" in err
    code, _, err = run_compare(str(good), "--catalog", str(tmp_path / "none.json"))
    assert code == 2 and "none.json" in err
    scenarios = tmp_path / "bad.yaml"
    scenarios.write_text(
        "scenarios:\n  - name: broken\n    steps:\n      - after: 1s\n        status: pending\n"
    )
    code, _, err = run_compare(str(good), "--scenarios", str(scenarios))
    assert code == 2 and re.search(rf"{re.escape(str(scenarios))}:\d+: ", err), err


def test_an_empty_recording_is_exit_2_nothing_to_replay(tmp_path: Path) -> None:
    """A recording with no exchange is no evidence of anything (docs/recording.md, "Can
    a result be trusted"), even with its end line."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text(_header() + json.dumps(end_line_of([])) + "\n")
    code, out, err = run_compare(str(empty), "--json")
    assert code == 2 and out == ""
    assert err.startswith(f"{empty}:1: nothing to replay: no exchange was recorded")


def test_bad_input_to_recording_export_is_exit_2(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "missing.jsonl"
    assert har.main(["export", "--har", str(missing)]) == 2
    assert capsys.readouterr().err.startswith(f"{missing}:1: cannot read it")
    broken = tmp_path / "broken.jsonl"
    broken.write_text(_header() + "{nope\n{}\n")
    assert har.main(["export", "--har", str(broken)]) == 2
    assert capsys.readouterr().err.startswith(f"{broken}:2: not JSON")
    good = tmp_path / "good.jsonl"
    good.write_text(_one_balance_read())
    assert har.main(["export", str(good)]) == 2
    assert "--har" in capsys.readouterr().err
    for args in ([], ["import", str(good)], ["export"], ["export", "--har", str(good), "--zip"]):
        assert har.main(args) == 2, args
        assert "usage: mock-server recording" in capsys.readouterr().err
    out = tmp_path / "no-such-dir" / "out.har"
    assert har.main(["export", "--har", str(good), "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith(f"{out}: cannot write it")


def test_compare_runs_as_a_process(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text(_header() + '{"seq": "one"}\n')
    code = (
        "import sys; from mock_server.recording.analysis.compare import main; "
        f"sys.exit(main([{str(broken)!r}]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"{broken}:2: not an event"), done.stderr
