"""Memory bounded per sandbox, and open streams (docs/hosting.md, "Quotas" and "Sizing"):
on a server set up as docs/hosting.md says, a tenant holding only its own sandbox's
control token and API key cannot hold more than the quotas allow, nor keep what it
replaced, nor stall another tenant with streams it leaves open. Each test is an attack,
written as it was tried.

CPU is measured with `time.process_time()` around an in-process call; a concurrent call
of another tenant is bounded on the wall clock, well under what the attack once cost.
"""

from __future__ import annotations

import asyncio
import gc
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import pytest

from mock_server.cli import parse_settings
from mock_server.config import created_quotas, default_quotas
from mock_server.domain.events import EventHub, encode_json
from mock_server.domain.listeners import MAX_REPORTED_ERROR, Listeners
from mock_server.domain.plants import MAX_TAGS, MAX_TEXT
from mock_server.domain.quotas import CREATED_DEFAULTS
from mock_server.domain.sandbox import Sandbox

ADMIN_TOKEN = "adm1n"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
#: docs/hosting.md, "A public test mode" (the default quotas of a created sandbox).
HOSTED = {"admin_token": ADMIN_TOKEN, "webhook_deny_private": True, "sandbox_rate": 1000.0}
#: What a call may cost in these tests: the docs' 50 ms, with room for a loaded machine.
CPU_BOUND = 0.25
#: How long another tenant's call may wait on the shared event loop meanwhile.
WALL_BOUND = 2.0
FAR = {"name": "far", "steps": [{"after": "999999h", "status": "completed"}]}


@dataclass
class Tenant:
    """One created sandbox, as its tenant holds it: its base path and credentials."""

    client: Any
    base: str
    control: dict[str, str]
    auth: dict[str, str]
    sandbox: Sandbox  # the same sandbox in-process

    async def call(self, method: str, path: str, **options: Any) -> tuple[int, Any]:
        own = self.auth if path.startswith(("/api/", "/v3/")) else self.control
        headers = {**own, **options.pop("headers", {})}
        response = await self.client.request(method, self.base + path, headers=headers, **options)
        return response.status, await response.json()

    async def login(self, api_key: str) -> None:
        status, token = await self.call(
            "POST", "/api/v1/auth/token/client", json={"api_key": api_key}
        )
        assert status == 200, token
        self.auth = {"Authorization": f"Bearer {token['access_token']}"}


async def tenant(client: Any) -> Tenant:
    response = await client.post("/_mock/sandboxes", json={}, headers=ADMIN)
    created = await response.json()
    assert response.status == 201, created
    base = urlparse(created["base_url"]).path
    sandbox = client.app.sandboxes.find(created["id"]).sandbox
    control = {"Authorization": f"Bearer {created['control_token']}"}
    made = Tenant(client, base, control, {}, sandbox)
    await made.login(created["api_key"])
    return made


async def hosted(make_client: Any, **quotas: Any) -> tuple[Tenant, Tenant]:
    """Two tenants of one hosted server: an attacker and a bystander."""
    client = await make_client(**HOSTED, **quotas)
    return await tenant(client), await tenant(client)


def assert_quota(status: int, body: dict[str, Any], flag: str) -> None:
    assert status == 429, body
    assert body["code"] == "quota_exceeded" and set(body) == {"detail", "code"}
    assert flag in body["detail"], body


async def bystander_waits(bystander: Tenant) -> float:
    started = time.perf_counter()
    status, _ = await bystander.call("GET", "/api/v1/account/balance")
    assert status == 200
    return time.perf_counter() - started


# -- open streams -----------------------------------------------------------------------


async def open_stream(attacker: Tenant, path: str) -> Any:
    response = await attacker.client.get(attacker.base + path, headers=attacker.control)
    if response.status == 200:
        await asyncio.wait_for(response.content.readuntil(b"\n\n"), 5)  # ready: it is open
    return response


async def test_streams_past_the_quota_are_refused_before_they_open(make_client):
    """Attack: thousands of `/_mock/events` and `/_mock/listen` streams held open, each
    woken by every change (once 2,000-8,000 of them took 57-98% of the server's CPU and
    other tenants' reads up to 4.6 s)."""
    attacker, bystander = await hosted(make_client)
    limit = CREATED_DEFAULTS["streams"]
    streams = [
        await open_stream(attacker, "/_mock/events" if n % 2 else "/_mock/listen")
        for n in range(limit)
    ]
    assert [s.status for s in streams] == [200] * limit
    for path in ("/_mock/events", "/_mock/listen"):
        started = time.process_time()
        refused = await open_stream(attacker, path)
        assert time.process_time() - started < CPU_BOUND
        assert_quota(refused.status, await refused.json(), "--sandbox-max-streams")
        assert "close" in (await refused.json())["detail"]  # how to free room
    assert len(attacker.sandbox.streams) == limit
    # The other tenant's streams and calls are its own.
    own = await open_stream(bystander, "/_mock/events")
    assert own.status == 200
    assert await bystander_waits(bystander) < WALL_BOUND
    # Every open stream is woken by a change: bounded by the quota, a change costs little.
    started = time.process_time()
    status, _ = await attacker.call("POST", "/_mock/clock/advance", json={"seconds": 1})
    assert status == 200 and time.process_time() - started < CPU_BOUND
    own.close()
    for stream in streams:
        stream.close()


async def test_a_closed_stream_frees_its_place_at_once(make_client):
    """A stream whose client hung up gives its place back, without waiting for its next
    event or keep-alive."""
    attacker, _ = await hosted(make_client, sandbox_max_streams=2)
    first = await open_stream(attacker, "/_mock/events")
    second = await open_stream(attacker, "/_mock/listen")
    assert (first.status, second.status) == (200, 200)
    assert (await open_stream(attacker, "/_mock/events")).status == 429
    first.close()
    second.close()
    status, _ = await attacker.call("GET", "/_mock/health")  # the hang-ups are seen
    assert status == 200
    again = [await open_stream(attacker, path) for path in ("/_mock/listen", "/_mock/events")]
    assert [s.status for s in again] == [200, 200]
    for stream in again:
        stream.close()


async def test_the_default_sandbox_has_no_stream_quota_unless_set(make_client):
    assert default_quotas(parse_settings([])).streams is None
    assert created_quotas(parse_settings([])).streams == CREATED_DEFAULTS["streams"]
    client = await make_client(sandbox_max_streams=1)
    first = await client.get("/_mock/events")
    assert first.status == 200
    refused = await client.get("/_mock/events")
    assert_quota(refused.status, await refused.json(), "--sandbox-max-streams")
    first.close()


def test_a_publish_costs_the_same_for_each_reader_whatever_their_number():
    """Attack: every reader's take looked at every other reader to trim the shared log,
    so a change cost readers x readers (2,000 readers: 0.2 s of CPU per change)."""
    hub = EventHub(encode_json)
    readers = [hub.subscribe() for _ in range(2000)]
    started = time.process_time()
    for n in range(20):
        hub.publish("clock", {"now": n})
        for reader in readers:
            assert reader.take()
    assert time.process_time() - started < CPU_BOUND
    for reader in readers:
        hub.unsubscribe(reader)
    hub.publish("clock", {"now": 21})  # nobody reads: nothing kept
    assert not hub.active


def test_a_reader_left_behind_keeps_a_bounded_log():
    hub = EventHub(encode_json, limit=100)
    slow, fast = hub.subscribe(), hub.subscribe()
    for n in range(1000):
        hub.publish("clock", {"now": n})
        fast.take()
    assert slow.overflowed and not fast.overflowed
    assert len(fast.take()) == 0


# -- what a tenant replaces is released -------------------------------------------------


def place(sandbox: Sandbox, count: int, *scenarios: str) -> None:
    """`count` orders of the sandbox's first account, taking turns at `scenarios`: made
    in-process, as an order answered over HTTP is also in the server's bounded cache of
    recent renderings, which is not what these tests are about."""
    account = next(iter(sandbox.state.accounts.values()))
    for n in range(count):
        scenario = scenarios[n % len(scenarios)]
        sandbox.create_order(account, {"item_id": 1001}, scenario_name=scenario)


class Held:
    """Objects (orders, deliveries: slotted, so no weak references) watched by identity
    and type alone: how many are still alive, once the garbage is collected."""

    def __init__(self, objects: Any) -> None:
        self._watched = {(id(o), type(o)) for o in objects}

    def alive(self) -> int:
        gc.collect()
        return sum((id(o), type(o)) in self._watched for o in gc.get_objects())


async def test_replaced_accounts_release_the_orders_their_far_timers_held(make_client):
    """Attack: orders scripted `after: 999999h`, their account then replaced (PUT
    /_mock/accounts): each step's timer stayed in the scheduler, holding its order
    (+16 MiB per 20,000 orders, for good). Deliveries whose first attempt waits
    `delay: 999999h` are held the same way."""
    attacker, bystander = await hosted(make_client)
    late_hook = {
        "name": "late_hook",
        "steps": [{"after": 0, "status": "completed", "webhook": {"delay": "999999h"}}],
    }
    status, body = await attacker.call(
        "POST", "/_mock/scenarios", json={"scenarios": [FAR, late_hook]}
    )
    assert status == 201, body
    accounts = {
        "accounts": [
            {
                "email": "shop@example.com",
                "api_key": "ak_shop_hostile_1",
                "balance": 10**6,
                "webhook_url": "http://receiver.invalid/hook",
            }
        ]
    }
    status, body = await attacker.call("PUT", "/_mock/accounts", json=accounts)
    assert status == 200, body
    sandbox = attacker.sandbox
    place(sandbox, 100, "far", "late_hook")
    status, _ = await attacker.call("POST", "/_mock/clock/advance", json={"seconds": 1})
    assert status == 200
    held = Held([*sandbox.state.orders.values(), *sandbox.state.deliveries.values()])
    assert held.alive() == 150
    status, jobs = await attacker.call("GET", "/_mock/jobs")
    assert jobs["pending"] == 100  # 50 far steps and 50 far first attempts

    started = time.process_time()
    status, body = await attacker.call("PUT", "/_mock/accounts", json=accounts)
    assert status == 200 and time.process_time() - started < CPU_BOUND
    assert held.alive() == 0
    status, jobs = await attacker.call("GET", "/_mock/jobs")
    assert jobs["pending"] == 0 and jobs["upcoming"] == []
    assert await bystander_waits(bystander) < WALL_BOUND


async def test_a_reset_and_a_deleted_sandbox_release_their_far_timers(make_client):
    attacker, _ = await hosted(make_client)
    for _ in range(2):
        status, _ = await attacker.call("POST", "/_mock/scenarios", json={"scenarios": [FAR]})
        assert status == 201
        place(attacker.sandbox, 10, "far")
        held = Held(attacker.sandbox.state.orders.values())
        assert held.alive() == 10
        status, _ = await attacker.call("POST", "/_mock/reset", json={})
        assert status == 200
        assert held.alive() == 0
    status, _ = await attacker.call("POST", "/_mock/scenarios", json={"scenarios": [FAR]})
    place(attacker.sandbox, 10, "far")
    held = Held(attacker.sandbox.state.orders.values())
    sandbox_id = attacker.base.rstrip("/").rpartition("/")[2]
    deleted = await attacker.client.delete(f"/_mock/sandboxes/{sandbox_id}", headers=ADMIN)
    assert deleted.status in (200, 204), await deleted.text()
    scheduler = attacker.sandbox.scheduler
    for _ in range(10):
        await asyncio.sleep(0)  # its close runs as a task
    assert scheduler.pending() == 0 and scheduler.upcoming(1) == []
    attacker.sandbox = None  # type: ignore[assignment]
    assert held.alive() == 0


# -- the plant demo: unauthenticated, bounded ---------------------------------------------


async def test_the_plant_demo_keeps_bounded_tags_and_text(client):
    """Attack: `PUT /v3/plant` (no credentials) with a 1 MiB list of tags, again and
    again: the default sandbox kept every one."""
    huge = {"id": 1, "tags": [f"t{n}" for n in range(100_000)]}
    started = time.process_time()
    refused = await client.put("/v3/plant", json=huge)
    assert time.process_time() - started < CPU_BOUND
    body = await refused.json()
    assert refused.status == 400 and body["code"] == "validation_error", body
    assert str(MAX_TAGS) in body["detail"]
    for bad in (
        {"id": 1, "tags": ["x" * (MAX_TEXT + 1)]},
        {"id": 1, "name": "x" * (MAX_TEXT + 1)},
        {"id": 1, "category": "x" * (MAX_TEXT + 1)},
    ):
        refused = await client.put("/v3/plant", json=bad)
        assert refused.status == 400 and (await refused.json())["code"] == "validation_error"
    plant = client.app.sandbox.state.plants.dump()[0]
    assert plant["tags"] == ["tropical"] and plant["name"] == "Monstera"  # unchanged
    most = {"id": 1, "name": "n" * MAX_TEXT, "tags": ["t" * MAX_TEXT] * MAX_TAGS}
    accepted = await client.put("/v3/plant", json=most)
    assert accepted.status == 200
    assert (await accepted.json())["tags"] == most["tags"]


# -- API keys, ledger adjustments, redeliveries ------------------------------------------


async def test_api_keys_past_the_quota_are_refused_until_one_is_revoked(make_client):
    """Attack: `POST /_mock/accounts/{id}/api-keys` in a loop: every key was kept."""
    attacker, _ = await hosted(make_client, sandbox_max_api_keys=3)
    account_id = next(iter(attacker.sandbox.state.accounts))
    issued = []
    for _ in range(2):  # the sandbox's own key, and two more
        status, body = await attacker.call("POST", f"/_mock/accounts/{account_id}/api-keys")
        assert status == 201, body
        issued.append(body["api_key"])
    status, body = await attacker.call("POST", f"/_mock/accounts/{account_id}/api-keys")
    assert_quota(status, body, "--sandbox-max-api-keys")
    assert "DELETE /_mock/api-keys" in body["detail"]
    assert len(attacker.sandbox.state.account_by_key) == 3
    status, body = await attacker.call(
        "POST", "/_mock/accounts", json={"email": "more@example.com", "api_keys": ["ak_x_1"]}
    )
    assert_quota(status, body, "--sandbox-max-api-keys")
    too_many = {
        "accounts": [{"email": "a@example.com", "api_keys": ["ak_1", "ak_2", "ak_3", "ak_4"]}]
    }
    status, body = await attacker.call("PUT", "/_mock/accounts", json=too_many)
    assert_quota(status, body, "--sandbox-max-api-keys")
    assert len(attacker.sandbox.state.accounts) == 1  # nothing replaced
    status, _ = await attacker.call("DELETE", f"/_mock/api-keys/{issued[0]}")
    assert status == 200
    status, body = await attacker.call("POST", f"/_mock/accounts/{account_id}/api-keys")
    assert status == 201, body


async def test_ledger_adjustments_past_the_quota_are_refused_and_change_nothing(make_client):
    """Attack: `PATCH /_mock/accounts/{id}` with a new balance in a loop: each one was a
    ledger entry kept for good."""
    attacker, _ = await hosted(make_client, sandbox_max_adjustments=3)
    account_id = next(iter(attacker.sandbox.state.accounts))
    path = f"/_mock/accounts/{account_id}"
    for balance in (10, 20, 30):
        status, body = await attacker.call("PATCH", path, json={"balance": balance})
        assert status == 200, body
    status, body = await attacker.call("PATCH", path, json={"balance": 40})
    assert_quota(status, body, "--sandbox-max-adjustments")
    status, account = await attacker.call("GET", path)
    assert account["balance"] == 30
    status, ledger = await attacker.call("GET", f"{path}/ledger")
    assert [e["kind"] for e in ledger["entries"]] == ["adjustment"] * 3 and ledger["conserved"]
    status, body = await attacker.call("PATCH", path, json={"has_active_subscription": True})
    assert status == 200, body  # no balance, no adjustment
    status, _ = await attacker.call("POST", "/_mock/reset", json={})
    status, body = await attacker.call("PATCH", path, json={"balance": 40})
    assert status == 200, body


async def test_redeliveries_past_the_quota_are_refused_and_keep_no_attempt(make_client):
    """Attack: `POST /_mock/webhooks/{id}/redeliver` in a loop: each manual attempt was
    kept on its delivery for good."""
    client = await make_client(admin_token=ADMIN_TOKEN, sandbox_max_redeliveries=2)
    attacker = await tenant(client)
    accounts = {
        "accounts": [
            {
                "email": "shop@example.com",
                "api_key": "ak_shop_hostile_2",
                "balance": 1000,
                "webhook_url": "http://127.0.0.1:9/hook",  # nothing listens: refused at once
            }
        ]
    }
    status, body = await attacker.call("PUT", "/_mock/accounts", json=accounts)
    assert status == 200, body
    await attacker.login("ak_shop_hostile_2")
    status, order = await attacker.call("POST", "/api/v1/orders", json={"item_id": 1001})
    assert status == 201, order
    status, _ = await attacker.call("POST", "/_mock/clock/advance", json={"seconds": 5})
    status, body = await attacker.call("GET", "/_mock/webhooks")
    delivery_id = body["deliveries"][0]["id"]
    path = f"/_mock/webhooks/{delivery_id}/redeliver"
    for _ in range(2):
        status, body = await attacker.call("POST", path)
        assert status == 200, body
    attempts = len(body["attempts"])
    status, body = await attacker.call("POST", path)
    assert_quota(status, body, "--sandbox-max-redeliveries")
    status, body = await attacker.call("GET", "/_mock/webhooks")
    assert len(body["deliveries"][0]["attempts"]) == attempts
    status, _ = await attacker.call("PUT", "/_mock/accounts", json=accounts)  # frees room
    assert attacker.sandbox.state.manual_attempts == 0


async def test_a_listener_report_keeps_a_bounded_error():
    """Attack: a listener reports its attempts with a 1 MiB `error` each: every attempt
    kept its text."""
    listeners = Listeners()
    listener = listeners.connect("acc_1")
    pending = asyncio.ensure_future(listeners.forward("acc_1", {}, 5))
    await asyncio.sleep(0)
    name, frame = await listener.next_frame(1)
    listeners.report(frame["attempt_id"], None, "x" * (1024 * 1024))
    status_code, error = await pending
    assert status_code is None and error is not None
    assert len(error) == MAX_REPORTED_ERROR and error.startswith("xxx")


# -- the new quotas are flags and variables -----------------------------------------------


@pytest.mark.parametrize(
    ("flag", "variable", "quota"),
    [
        ("--sandbox-max-streams", "MOCK_SANDBOX_MAX_STREAMS", "streams"),
        ("--sandbox-max-api-keys", "MOCK_SANDBOX_MAX_API_KEYS", "api_keys"),
        ("--sandbox-max-adjustments", "MOCK_SANDBOX_MAX_ADJUSTMENTS", "adjustments"),
        ("--sandbox-max-redeliveries", "MOCK_SANDBOX_MAX_REDELIVERIES", "redeliveries"),
    ],
)
def test_the_memory_quotas_are_flags_and_variables(monkeypatch, flag, variable, quota):
    assert getattr(created_quotas(parse_settings([flag, "7"])), quota) == 7
    assert getattr(default_quotas(parse_settings([flag, "7"])), quota) == 7
    monkeypatch.setenv(variable, "9")
    assert getattr(created_quotas(parse_settings([])), quota) == 9
    with pytest.raises(SystemExit):
        parse_settings([flag, "-1"])


def test_faults_added_and_cleared_leave_no_compiled_pattern_behind():
    """Each fault of a new 2048-character path once left a compiled pattern in the
    process-wide cache of `fnmatch` (about 20 KB each, up to 32768 of them: 650 MB); a
    fault's pattern now goes with it, a long one kept in no cache of `re` either."""
    import tracemalloc

    from mock_server.domain.faults import MAX_PATH, Faults

    def churn(faults: Faults, rounds: range) -> None:
        for n in rounds:
            path = f"/api/v1/{n:06d}*" + "ab?" * ((MAX_PATH - 16) // 3)
            fault = faults.add({"path": path[:MAX_PATH], "status": 503})
            assert faults.take("GET", "/api/v1/orders/x") is None
            assert fault.matches("GET", path[:MAX_PATH].replace("*", "x").replace("?", "c"))
            faults.clear()  # DELETE /_mock/faults

    faults = Faults()
    churn(faults, range(20))  # warm up what every run allocates once
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        churn(faults, range(20, 1220))
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # 1200 patterns of about 20 KB: 24 MB kept by fnmatch's cache; a long one is not
    # left in re's either.
    assert grown < 1_000_000, f"{grown} bytes held after 1200 faults came and went"


async def test_long_fault_patterns_are_bounded_in_all(make_client):
    """The hostile bench: 1000 faults of 2048-character patterns (`/a*a*a*...`) held
    about 230 KiB each once compiled, over 200 MiB a sandbox. Their paths now hold at
    most MAX_PATHS_TOTAL characters in all, through POST /_mock/faults and a state
    document alike; the default sandbox keeps no such bound unless a quota is set."""
    from mock_server.domain.faults import MAX_PATH, MAX_PATHS_TOTAL

    client = await make_client()
    created = await (await client.post("/_mock/sandboxes", json={})).json()
    base = f"/_mock/sandboxes/{created['id']}"
    path = "/" + "a*" * ((MAX_PATH - 1) // 2)
    taken = 0
    while True:
        answer = await client.post(f"{base}/_mock/faults", json={"path": path, "status": 503})
        if answer.status != 201:
            break
        taken += 1
    assert answer.status == 429 and taken == MAX_PATHS_TOTAL // len(path)
    assert "DELETE /_mock/faults" in (await answer.json())["detail"]
    document = await (await client.get(f"{base}/_mock/state")).json()
    fault = document["faults"]["faults"][0]
    document["faults"]["faults"] = [
        {**fault, "id": n + 1} for n in range(MAX_PATHS_TOTAL // len(path) + 1)
    ]
    document["faults"]["next_id"] = len(document["faults"]["faults"]) + 1
    refused = await client.put(f"{base}/_mock/state", json=document)
    assert refused.status == 429, await refused.text()
    assert (await client.delete(f"{base}/_mock/faults")).status == 200
    for _ in range(MAX_PATHS_TOTAL // len(path) + 1):  # the default sandbox: no bound
        assert (await client.post("/_mock/faults", json={"path": path})).status == 201


def test_the_renderings_kept_of_orders_are_bounded_in_bytes():
    """An order of 1000 codes is 20 KB of JSON: 10,000 of them read once each would have
    kept 200 MB of renderings for the whole process."""
    import tracemalloc
    from types import SimpleNamespace

    from mock_server.edge.jsonio import OrderRenderings

    codes = ["X" * 17] * 1000
    orders = [
        SimpleNamespace(id=f"o-{n}", version=1, to_json=lambda: {"codes": codes})
        for n in range(2000)
    ]
    tracemalloc.start()
    try:
        renderings = OrderRenderings()
        for order in orders:
            assert len(renderings.body(order)) > 20_000
        kept = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert kept < OrderRenderings.BYTES + 2 * 1024 * 1024  # not 2000 x 20 KB = 40 MB


def test_a_new_orders_answer_is_kept_only_once_it_is_read():
    """Creating orders keeps none of their answers (most are read seldom, if ever); the
    first read renders one and keeps it for the next."""
    import tracemalloc
    from types import SimpleNamespace

    from mock_server.edge.jsonio import OrderRenderings

    codes = ["X" * 17] * 1000
    rendered: list[str] = []

    def order(n: int) -> Any:
        def to_json() -> dict[str, Any]:
            rendered.append(f"o-{n}")
            return {"id": f"o-{n}", "codes": codes}

        return SimpleNamespace(id=f"o-{n}", version=1, to_json=to_json)

    orders = [order(n) for n in range(500)]
    renderings = OrderRenderings()
    tracemalloc.start()
    try:
        answers = [renderings.response(o, 201, keep=False) for o in orders]
        del answers
        kept = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert kept < 1024 * 1024  # not 500 x 20 KB = 10 MB
    created = renderings.response(orders[0], 201, keep=False)
    assert (created.status, created.mapping["id"]) == (201, "o-0")
    first, second = renderings.response(orders[0]), renderings.response(orders[0])
    assert first.body == second.body == created.body
    assert rendered.count("o-0") == 3  # at its creation, at the one above, at its first read
