"""The production stand-in (tests/standin/): it follows the spec where the spec is
explicit, differs from the sandbox where the spec leaves the choice open, and a recording
of a session with it is one `compare` reads.

Everything runs on loopback, port 0, on the stand-in's virtual clock (nothing sleeps).
"""

from __future__ import annotations

import ast
import contextlib
import gzip
import hashlib
import hmac
import io
import json
from pathlib import Path
from typing import Any

from mock_server.recording.analysis import compare
from mock_server.recording.analysis.reading import read_recording
from mock_server.recording.recorder.redaction import scan
from tests.standin import (
    SPEC_EVENT_FIELDS,
    Production,
    ProductionSession,
    record_production,
    refuse_first,
)
from tests.standin.production import START

KEY = {"item_id": 501, "quantity": 2, "merchant_order_id": "k-1"}  # 21.50 a unit
TOPUP = {"item_id": 601, "quantity": 5, "fields": {"razer_id": "rz-1", "region": 2}}
LOGIN = {"item_id": 602, "quantity": 1, "fields": {"login_email": "a@b.example", "server": 1}}
SERVICE = {"item_id": 701, "fields": {"summoner": "Faker#KR1", "region": 3}}
ALL_KEY_OUTCOMES = ("completed", "timeout", "out_of_stock", "short")


def only(outcome: str, **options: Any) -> Production:
    """A production whose every key order has this outcome."""
    return Production(key_outcomes={outcome: 1}, **options)


async def status_at(session: ProductionSession, order_id: str, prefix: str = "/api/v1") -> Any:
    status, answer = await session.call("GET", f"{prefix}/orders/{order_id}")
    assert status == 200, answer
    return answer


async def balance(session: ProductionSession) -> str:
    status, answer = await session.call("GET", "/api/v1/account/balance")
    assert status == 200, answer
    return answer["balance"]


# -- authentication and both prefixes ---------------------------------------------------------


async def test_token_exchange_on_both_prefixes_and_its_own_error_shape() -> None:
    async with ProductionSession() as session:
        key = session.options.api_keys[0]
        for prefix in ("/api/v1", "/v1"):
            status, answer = await session.call(
                "POST", f"{prefix}/auth/token/client", {"api_key": key}, token=""
            )
            assert status == 200
            assert answer["token_type"] == "Bearer" and answer["access_token"]
            assert answer["expires_in"] == 7200  # not in spec 2.5; production sends it
            for body in ({"api_key": "ak_wrong"}, {}, None):
                status, answer = await session.call(
                    "POST", f"{prefix}/auth/token/client", body, token=""
                )
                assert status == 401 and set(answer) == {"error"}  # spec 4.1, not the envelope
        # Two hours of virtual time later the token is refused, in the standard envelope.
        await session.login()
        await session.advance(7199)
        assert (await session.call("GET", "/v1/account/balance"))[0] == 200
        await session.advance(1)
        status, answer = await session.call("GET", "/v1/account/balance")
        assert status == 401 and answer["code"] == "not_authenticated"
        assert set(answer) == {"detail", "code"}


async def test_every_operation_answers_on_both_prefixes() -> None:
    async with ProductionSession(only("completed")) as session:
        await session.login()
        for prefix in ("/api/v1", "/v1"):
            assert (await session.call("GET", f"{prefix}/account/balance"))[0] == 200
            status, me = await session.call("GET", f"{prefix}/account/me")
            assert status == 200 and me["has_active_subscription"] is False
            order = await session.order({**LOGIN, "merchant_order_id": prefix}, prefix=prefix)
            await session.advance(3)
            assert (await status_at(session, order["id"], prefix))["status"] == "need_client_code"
            status, answer = await session.call(
                "POST", f"{prefix}/orders/{order['id']}/client-code", {"code": "123456"}
            )
            assert status == 200 and answer["status"] == "processing"
        for path in ("/api/v1/account/balance", "/v1/orders/x", "/api/v1/account/me"):
            status, answer = await session.call("GET", path, token="")
            assert status == 401 and answer == {
                "detail": answer["detail"],
                "code": "not_authenticated",
            }


# -- order creation --------------------------------------------------------------------------


async def test_a_created_order_is_pending_and_charged() -> None:
    async with ProductionSession() as session:
        await session.login()
        assert await balance(session) == "50000.00"
        order = await session.order(KEY)
        assert order["status"] == "pending"
        assert (order["delivered_quantity"], order["refund_amount"]) == (0, 0)
        assert order["error"] == order["error_message"] == "" and order["codes"] == []
        assert order["completed_at"] is None and order["source"] == "api"
        assert order["price"] == 43.0 and order["quantity"] == 2 and order["fields"] == {}
        assert order["merchant_order_id"] == "k-1" and set(order["created_by"]) == {"id", "email"}
        assert await balance(session) == "49957.00"
        # A top-up's decimal quantity; the price guard equal to the charge passes.
        topup = await session.order({**TOPUP, "quantity": 2.5, "price": 2.6})
        assert topup["price"] == 2.6 and topup["quantity"] == 2.5
        # With a subscription the subscriber price is charged.
    async with ProductionSession(Production(subscription=True)) as session:
        await session.login()
        assert (await session.order(KEY))["price"] == 42.0


async def test_refusals_use_the_envelope_and_create_or_charge_nothing() -> None:
    async with ProductionSession(Production(api_keys=("ak_one", "ak_two"))) as session:
        await session.login("ak_two")
        theirs = await session.order(KEY)
        await session.login("ak_one")
        mine = await session.order(KEY)
        session.standin.accounts["ak_one"].balance = 4000  # 40.00: less than 3 x 15.99
        before = ("40.00", len(session.standin.orders))
        refused = {
            "validation_error": [
                {"item_id": 999},
                {"item_id": 503},  # out of stock at create time
                {"item_id": "501"},
                {"quantity": 2},
                {"item_id": 501, "quantity": 11},
                {"item_id": 501, "quantity": 1.5},
                {"item_id": 501, "fields": {"x": "y"}},
                {"item_id": 601, "fields": TOPUP["fields"]},  # a top-up's quantity is required
                {"item_id": 601, "quantity": 5},  # and its fields
                {**TOPUP, "fields": {"razer_id": "rz-1", "region": 9}},
                {**TOPUP, "fields": {"razer_id": "rz-1", "region": "Europe"}},
                {**SERVICE, "quantity": 2},
                {**KEY, "merchant_order_id": "k-1"},  # reused
                {**KEY, "merchant_order_id": 7},
                {**KEY, "merchant_order_id": "new", "price": 43.001},
                "not an object",
            ],
            "price_mismatch": [{**KEY, "merchant_order_id": "new", "price": 40.0}],
            "insufficient_balance": [{"item_id": 602, "quantity": 3, "fields": LOGIN["fields"]}],
        }
        for code, bodies in refused.items():
            for body in bodies:
                status, answer = await session.call("POST", "/api/v1/orders", body)
                assert status == 400 and answer["code"] == code, (body, answer)
                assert isinstance(answer["detail"], str)
        status, answer = await session.call(
            "POST", "/api/v1/orders", {"item_id": 503, "quantity": 1}
        )
        assert answer["detail"] == "Item is not available"
        status, answer = await session.call(
            "POST", "/api/v1/orders", {"item_id": 502, "quantity": 1, "price": 13.98}
        )
        assert set(answer) == {"detail", "code", "actual_price"} and answer["actual_price"] == 13.99
        assert (await balance(session), len(session.standin.orders)) == before
        # Another account's order, or none at all, is not found.
        for order_id in (theirs["id"], "00000000-0000-4000-8000-000000000000"):
            status, answer = await session.call("GET", f"/api/v1/orders/{order_id}")
            assert status == 404 and answer["code"] == "not_found"
        assert (await status_at(session, mine["id"]))["id"] == mine["id"]


# -- statuses and transitions (spec section 3) ----------------------------------------------------


async def test_a_completed_key_order_follows_productions_timings() -> None:
    async with ProductionSession(only("completed")) as session:
        await session.login()
        order = await session.order(KEY)
        seen = []
        for _ in range(8):
            answer = await status_at(session, order["id"])
            seen.append((session.now - START, answer["status"]))
            await session.advance(1)
        # The sandbox's happy path: processing at 1 s, completed at 3 s. Production: 2 s, 7 s.
        assert [s for _, s in seen] == ["pending"] * 2 + ["processing"] * 5 + ["completed"]
        done = await status_at(session, order["id"])
        assert done["delivered_quantity"] == 2 and len(done["codes"]) == 2
        assert done["refund_amount"] == 0 and done["error"] == ""
        assert done["completed_at"] == "2026-03-01T10:00:07+00:00"  # its own format
        assert done["eta_seconds"] == 0 and done["currency"] == "EUR"


async def test_partials_and_failures_refund_and_leave_completed_at_null() -> None:
    async with ProductionSession(Production(key_outcomes={"timeout": 1})) as session:
        await session.login()
        four = await session.order({**KEY, "quantity": 4})
        one = await session.order({"item_id": 502, "quantity": 1})
        await session.advance(39)
        assert (await status_at(session, four["id"]))["status"] == "processing"
        await session.advance(1)
        partial = await status_at(session, four["id"])
        assert partial["status"] == "partial" and partial["error"] == "ORDER_TIMEOUT"
        assert partial["delivered_quantity"] == 2 and len(partial["codes"]) == 2
        assert partial["refund_amount"] == 43.0 and partial["completed_at"] is None
        assert partial["error_message"]
        failed = await status_at(session, one["id"])  # nothing to deliver: failed, all back
        assert failed["status"] == "failed" and failed["error"] == "ORDER_TIMEOUT"
        assert failed["refund_amount"] == failed["price"] == 13.99 and failed["codes"] == []
        assert await balance(session) == f"{50000 - 86 - 13.99 + 43 + 13.99:.2f}"

    async with ProductionSession(only("out_of_stock")) as session:
        await session.login()
        order = await session.order(KEY)
        await session.advance(4)
        failed = await status_at(session, order["id"])
        assert failed["status"] == "failed" and failed["error"] == "OUT_OF_STOCK"
        assert failed["error_message"] and failed["completed_at"] is None
        assert failed["refund_amount"] == failed["price"] and failed["delivered_quantity"] == 0
        assert await balance(session) == "50000.00"

    async with ProductionSession(only("short")) as session:  # stock ran out mid-order
        await session.login()
        order = await session.order({**KEY, "quantity": 3})
        await session.advance(7)
        partial = await status_at(session, order["id"])
        assert partial["status"] == "partial" and partial["delivered_quantity"] == 1
        assert partial["error"] == partial["error_message"] == ""  # spec 2.1: usually empty
        assert partial["refund_amount"] == 43.0 and partial["completed_at"] is None


async def test_a_login_topup_waits_for_its_code_and_nothing_else_does() -> None:
    async with ProductionSession(Production(choice_echo="label")) as session:
        await session.login()
        login = await session.order(LOGIN)
        topup = await session.order(TOPUP)
        service = await session.order(SERVICE)
        status, answer = await session.client_code(login["id"])
        assert status == 400 and answer["code"] == "validation_error"  # not waiting yet
        await session.advance(3)
        assert (await status_at(session, login["id"]))["status"] == "need_client_code"
        await session.advance(3600)  # it never leaves on its own
        waiting = await status_at(session, login["id"])
        assert waiting["status"] == "need_client_code" and waiting["fields"]["server"] == "Europe"
        for body in ({}, {"code": ""}, {"code": 123456}):
            status, answer = await session.call(
                "POST", f"/v1/orders/{login['id']}/client-code", body
            )
            assert status == 400 and answer["code"] == "validation_error"
        status, answer = await session.client_code(login["id"])
        assert status == 200 and answer["status"] == "processing"
        await session.advance(5)
        assert (await status_at(session, login["id"]))["status"] == "completed"
        histories = {
            o["id"]: [s for _, s in session.standin.orders[o["id"]].history]
            for o in (login, topup, service)
        }
        assert histories == {
            login["id"]: ["pending", "processing", "need_client_code", "processing", "completed"],
            topup["id"]: ["pending", "processing", "completed"],
            service["id"]: ["pending", "processing", "completed"],
        }
        assert session.standin.orders[service["id"]].history[-1][0] - START == 12


async def test_statuses_only_move_forward_and_terminal_ones_never_change() -> None:
    async with ProductionSession(Production(seed=3)) as session:
        await session.login()
        orders = [await session.order({**KEY, "merchant_order_id": f"m-{n}"}) for n in range(20)]
        orders += [await session.order(TOPUP), await session.order(SERVICE)]
        final = await session.poll(orders, every=1.0, until=60)
        await session.advance(600)
        rank = {"pending": 0, "processing": 1, "completed": 2, "partial": 2, "failed": 2}
        for order in orders:
            history = [s for _, s in session.standin.orders[order["id"]].history]
            assert [rank[s] for s in history] == sorted(rank[s] for s in history), history
            assert history.count("pending") == 1 and history[-1] in (
                "completed",
                "partial",
                "failed",
            )
            later = await status_at(session, order["id"])
            assert later == final[order["id"]] | {"webhook": later["webhook"]}
        outcomes = {session.standin.orders[o["id"]].outcome for o in orders[:20]}
        assert outcomes == set(ALL_KEY_OUTCOMES)


async def test_the_outcome_mix_is_seeded_and_weighed() -> None:
    async def draw(seed: int) -> list[tuple[str, str]]:
        async with ProductionSession(Production(seed=seed)) as session:
            await session.login()
            orders = [await session.order({"item_id": 501, "quantity": 2}) for _ in range(10)]
            return [(o["id"], session.standin.orders[o["id"]].outcome) for o in orders]

    first, again, other = await draw(1), await draw(1), await draw(2)
    assert first == again and first != other
    counts = {name: [o for _, o in first].count(name) for name in ALL_KEY_OUTCOMES}
    assert counts == {"completed": 6, "timeout": 2, "out_of_stock": 1, "short": 1}


# -- webhooks (spec section 6) --------------------------------------------------------------------


async def test_webhooks_are_signed_strictly_200_and_retried_every_3_s() -> None:
    answers = {1: 201, 2: 500}  # a 201 is no success: spec 6 says a 200
    session = ProductionSession(
        only("completed"), webhook_answers=lambda body, attempt: answers.get(attempt, 200)
    )
    async with session:
        await session.login()
        order = await session.order(KEY)
        await session.advance(7)
        assert [e["answered"] for e in session.events if e["kind"] == "webhook"] == [201]
        view = (await status_at(session, order["id"]))["webhook"]
        assert view == {
            "url": session.standin.webhook_url,
            "last_status_code": 201,
            "next_attempt_at": "2026-03-01T10:00:10+00:00",
        }
        await session.advance(60)
        attempts = session.standin.attempts
        # The sandbox (and the spec) retry 60 s apart; this production, 3 s.
        assert [(a.at - START, a.status_code) for a in attempts] == [
            (7, 201),
            (10, 500),
            (13, 200),
        ]
        view = (await status_at(session, order["id"]))["webhook"]
        assert view["last_status_code"] == 200 and view["next_attempt_at"] is None
        secret = session.options.webhook_secret.encode()
        hooks = [e for e in session.events if e["kind"] == "webhook"]
        for attempt, hook in zip(attempts, hooks, strict=True):
            headers = dict(hook["headers"])
            expected = hmac.new(secret, attempt.body, hashlib.sha256).hexdigest()
            assert headers["X-Webhook-Signature"] == f"sha256={expected}"
            assert hook["signature_valid"] is True
        assert session.options.webhook_secret.startswith("whsec_")


async def test_at_most_three_retries_and_none_before_settling() -> None:
    session = ProductionSession(only("timeout"), webhook_answers=lambda body, attempt: 503)
    async with session:
        await session.login()
        await session.order(KEY)
        await session.advance(39)
        assert session.standin.attempts == []  # not terminal yet: no event
        await session.advance(1000)
        assert [a.at - START for a in session.standin.attempts] == [40, 43, 46, 49]


async def test_events_carry_the_spec_fields_or_a_few_more() -> None:
    async with ProductionSession(only("short")) as session:
        await session.login()
        order = await session.order({**KEY, "quantity": 3})
        await session.advance(7)
        (hook,) = [e["body"] for e in session.events if e["kind"] == "webhook"]
        assert tuple(hook) == SPEC_EVENT_FIELDS  # the seven fields of spec 6, nothing else
        answer = await status_at(session, order["id"])
        assert hook["order_id"] == order["id"] and hook["merchant_order_id"] == "k-1"
        assert hook["codes"] == answer["codes"] and hook["status"] == "partial"
        assert (hook["quantity"], hook["delivered_quantity"], hook["refund_amount"]) == (3, 1, 43.0)

    async with ProductionSession(only("timeout", event_fields="extra")) as session:
        await session.login()
        await session.order(KEY)
        await session.advance(40)
        (hook,) = [e["body"] for e in session.events if e["kind"] == "webhook"]
        assert set(hook) == {*SPEC_EVENT_FIELDS, "error", "event", "sent_at"}
        assert hook["error"] == "ORDER_TIMEOUT" and hook["event"] == "order.partial"
        assert hook["sent_at"] == "2026-03-01T10:00:40+00:00"


async def test_no_webhook_url_means_no_webhook_object_and_no_event() -> None:
    async with ProductionSession(only("completed"), webhooks=False) as session:
        await session.login()
        order = await session.order(KEY)
        assert order["webhook"] is None
        await session.advance(100)
        assert session.standin.attempts == [] and (await status_at(session, order["id"]))[
            "status"
        ] == ("completed")


# -- shapes of its own -------------------------------------------------------------------------


async def test_its_shapes_are_configurable() -> None:
    plain = Production(
        balance_as="number", expires_in=False, extra_order_fields=False, choice_echo="label"
    )
    async with ProductionSession(plain) as session:
        status, token = await session.call(
            "POST", "/api/v1/auth/token/client", {"api_key": plain.api_keys[0]}, token=""
        )
        assert set(token) == {"access_token", "token_type"}
        session.token = token["access_token"]
        assert await balance(session) == 50000.0
        order = await session.order(TOPUP)
        assert "eta_seconds" not in order and "currency" not in order
        assert order["fields"] == {"razer_id": "rz-1", "region": "North America"}
    async with ProductionSession() as session:  # the defaults: production's own shapes
        await session.login()
        assert await balance(session) == "50000.00"
        order = await session.order(TOPUP)
        assert order["fields"] == {"razer_id": "rz-1", "region": 2}  # echoed as its id
        assert order["eta_seconds"] == 4 and order["currency"] == "EUR"
        assert set(order["webhook"]) == {"url", "last_status_code", "next_attempt_at"}
        assert order["created_at"] == "2026-03-01T10:00:00+00:00"


async def test_the_plant_demo() -> None:
    async with ProductionSession() as session:
        status, plant = await session.call(
            "PUT", "/v3/plant", {"id": 1, "status": "sold", "tags": ["big"]}, token=""
        )
        assert status == 200 and plant == {"id": 1, "name": "Monstera", "status": "sold",
                                           "tags": ["big"]}  # fmt: skip
        for body, expected in (
            ({"id": "one"}, 400),
            ({"name": "x"}, 400),
            ({"id": 99}, 404),
            ({"id": 1, "status": "gone"}, 400),
        ):
            assert (await session.call("PUT", "/v3/plant", body, token=""))[0] == expected


def test_the_stand_in_is_built_from_the_spec_not_from_the_sandbox() -> None:
    source = (Path(__file__).parent / "standin" / "production.py").read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert not any(name.split(".")[0] in ("mock_server", "tests") for name in imported)


# -- a recording of it, and what compare makes of it today ----------------------------------------


def test_a_session_is_written_in_the_recorders_format(tmp_path: Path) -> None:
    path = tmp_path / "production.jsonl.gz"
    session = record_production(path, webhook_answers=refuse_first(2, {"shop-0", "shop-1"}))
    recording = read_recording(str(path))
    text = gzip.decompress(path.read_bytes()).decode()
    header = json.loads(text.split("\n", 1)[0])
    assert header["format"] == "ordering-sandbox-recording" and header["version"] == 1
    assert "codes" in header["redaction"] and "emails" in header["redaction"]
    events = recording.events()
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[0].at == START and [e.at for e in events] == sorted(e.at for e in events)
    assert {e.path for e in recording.exchanges} >= {
        "/api/v1/orders",
        "/v1/orders",
        "/v1/account/me",
        "/api/v1/auth/token/client",
    }
    # Retries of the refused deliveries, 3 s apart, as the receiver answered them.
    by_order: dict[str, list[tuple[float, int | None]]] = {}
    for hook in recording.webhooks:
        by_order.setdefault(hook.message.body["order_id"], []).append((hook.at, hook.answered))
        assert hook.signature_valid is True
        assert hook.message.header("X-Webhook-Signature").startswith("<signature:")
    retried = [v for v in by_order.values() if len(v) > 1]
    assert len(retried) == 2
    for attempts in retried:
        assert [a for _, a in attempts] == [500, 500, 200]
        assert [round(t - attempts[0][0]) for t, _ in attempts] == [0, 3, 6]
    # Redacted by the recorder's own rules: no secret the session saw is in the file.
    found = dict(session.redactor.secrets) | {session.options.webhook_secret: "webhook_secret"}
    assert scan(text, found) is None
    assert session.options.api_keys[0] not in text and session.token not in text
    codes = [c for e in recording.exchanges if isinstance(e.response.body, dict)
             for c in e.response.body.get("codes", [])]  # fmt: skip
    assert codes and all(c.startswith("<code:") for c in codes)


def test_compare_finds_productions_shapes_today(tmp_path: Path) -> None:
    """Without a shapes file (docs/shapes.md) the sandbox does not answer in production's
    shapes, and without calibrated scenarios none lives production's lives: compare
    finds both."""
    path = tmp_path / "production.jsonl"
    session = record_production(path, webhook_answers=refuse_first(2, {"shop-0"}))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = compare.main([str(path), "--json"])
    document = json.loads(out.getvalue())
    assert code == 1 and document["exit"] == 1
    summary = document["summary"]
    assert summary["exchanges"] == sum(1 for e in session.events if e["kind"] == "exchange")
    assert summary["skipped"] == 0 and summary["orders"] == 13
    found = {(f["request"], f["pointer"], f["kind"]): f for f in document["findings"]}
    balance_type = found["GET /api/v1/account/balance", "/balance", "type"]
    assert (balance_type["recorded"], balance_type["sandbox"]) == ("string", "number")
    for where in (
        ("POST /api/v1/auth/token/client", "/expires_in", "missing field"),
        ("GET /api/v1/orders/{id}", "/eta_seconds", "missing field"),
        ("GET /api/v1/orders/{id}", "/currency", "missing field"),
        ("GET /api/v1/orders/{id}", "/webhook/url", "missing field"),
        ("GET /api/v1/orders/{id}", "/fields/region", "type"),  # a choice echoed as its id
        ("webhook", "/item", "extra field"),  # the sandbox's event has more than the spec's 7
    ):
        assert where in found, where
    # Refusals are alike: the error envelopes have the same shape on both sides.
    assert not any(f["kind"] == "code" for f in document["findings"])
    classes = {c["name"]: c for c in document["classes"]}
    assert {
        "recorded_completed",
        "recorded_partial_order_timeout",
        "recorded_failed_out_of_stock",
        "recorded_completed_client_code",
    } <= set(classes)
    # Production's 7 s completions and 40 s timeouts are no built-in scenario's life.
    assert not classes["recorded_partial_order_timeout"]["explained"]
    assert not classes["recorded_completed_client_code"]["explained"]
