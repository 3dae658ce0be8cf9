"""Many isolated sandboxes in one server (docs/control-api.md, "Sandboxes").

Every test drives virtual time with `advance`; sandbox expiry runs on an injected wall
clock, so nothing here waits on wall time.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any
from urllib.parse import urlparse

import pytest
from aiohttp import web

from mock_server.app import create_app
from mock_server.webhooks import verify
from tests.conftest import BASE_SETTINGS, Merchant, login
from tests.test_real_clock import _until

ADMIN = {"Authorization": "Bearer adm1n"}


class WallClock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def wall() -> WallClock:
    return WallClock()


@pytest.fixture
def serve(make_client, wall):
    async def make(**overrides: Any):
        return await make_client(create_app(replace(BASE_SETTINGS, **overrides), wall=wall))

    return make


@pytest.fixture
async def client(serve):
    return await serve()


async def create(client, body: Any = None, headers: dict[str, str] | None = None):
    response = await client.post("/_mock/sandboxes", json=body or {}, headers=headers)
    return response.status, await response.json()


async def created(client, body: Any = None, headers: dict[str, str] | None = None) -> dict:
    status, sandbox = await create(client, body, headers)
    assert status == 201, sandbox
    sandbox["base"] = urlparse(sandbox["base_url"]).path
    return sandbox


async def sandbox_merchant(client, sandbox: dict[str, Any]) -> Merchant:
    """A merchant client logged in under the sandbox's base path: every call it makes
    (merchant or control) is prefixed with that path."""
    base = sandbox["base"]

    class Prefixed:
        def __getattr__(self, name: str) -> Any:
            method = getattr(client, name)
            if name not in ("get", "post", "put", "patch", "delete", "request"):
                return method
            if name == "request":
                return lambda verb, path, **kw: method(verb, base + path, **kw)
            return lambda path, **kw: method(base + path, **kw)

    return await login(Prefixed(), sandbox["api_key"])


async def clock_now(client, base: str = "") -> str:
    return (await (await client.get(f"{base}/_mock/clock")).json())["now"]


# -- creating one --------------------------------------------------------------------------


async def test_create_answers_where_it_is_and_the_first_accounts_credentials(client):
    sandbox = await created(client)
    assert set(sandbox) - {"base"} == {
        "id",
        "base_url",
        "control_token",
        "account_id",
        "api_key",
        "webhook_secret",
        "expires_at",
    }
    assert sandbox["id"].startswith("sbx-")
    assert sandbox["base_url"].endswith(f"/_mock/sandboxes/{sandbox['id']}")
    assert sandbox["base_url"].startswith(f"http://{client.host}:{client.port}")
    # the server's accounts, with a key of its own: ak_test_default stays the default's
    assert sandbox["api_key"].startswith(f"ak_{sandbox['id']}_")
    # ... and a webhook secret of its own, that no other tenant holds
    assert sandbox["webhook_secret"].startswith("whsec_")
    assert sandbox["webhook_secret"] != "whsec_test_default"
    accounts = await (await client.get(f"{sandbox['base']}/_mock/accounts")).json()
    assert [a["id"] for a in accounts["accounts"]] == [sandbox["account_id"]]
    assert accounts["accounts"][0]["email"] == "merchant@example.com"
    assert accounts["accounts"][0]["balance"] == 1000.0


async def test_a_sandbox_serves_the_whole_merchant_api_under_its_base_url(client):
    sandbox = await created(client)
    merchant = await sandbox_merchant(client, sandbox)
    status, order = await merchant.create({"item_id": 1001, "quantity": 2})
    assert status == 201, order
    assert await merchant.balance() == 960.0
    await merchant.advance(3)
    done = await merchant.order(order["id"])
    assert (done["status"], len(done["codes"])) == ("completed", 2)
    status, same = await merchant.call("GET", f"/v1/orders/{order['id']}")  # both prefixes
    assert (status, same["id"]) == (200, order["id"])
    status, plant = await merchant.call("PUT", "/v3/plant", json={"id": 1, "status": "sold"})
    assert (status, plant["status"]) == (200, "sold")


async def test_nothing_one_sandbox_does_is_visible_to_another_or_to_the_default(client):
    start = await clock_now(client)
    first, second = await created(client), await created(client)
    merchant = await sandbox_merchant(client, first)
    _, order = await merchant.create({"item_id": 1003, "quantity": 5})  # all the stock
    await merchant.advance(3600)
    await client.post(f"{first['base']}/_mock/faults", json={"path": "/api/v1/orders"})
    await client.post(f"{first['base']}/_mock/scenarios/next", json={"scenario": "timeout_partial"})

    assert await clock_now(client) == start
    assert await clock_now(client, second["base"]) == start
    for base in ("", second["base"]):
        orders = await (await client.get(f"{base}/_mock/orders")).json()
        assert orders == {"orders": [], "total": 0}
        faults = await (await client.get(f"{base}/_mock/faults")).json()
        assert faults == {"faults": []}
        scenarios = await (await client.get(f"{base}/_mock/scenarios")).json()
        assert scenarios["queue"] == []
        catalog = await (await client.get(f"{base}/_mock/catalog")).json()
        assert next(i for i in catalog["items"] if i["id"] == 1003)["stock"] == 5
    other = await sandbox_merchant(client, second)
    status, error = await other.call("GET", f"/api/v1/orders/{order['id']}")
    assert (status, error["code"]) == (404, "not_found")
    assert await other.balance() == 1000.0


async def test_resetting_one_sandbox_leaves_the_others_alone(client):
    first, second = await created(client), await created(client)
    for sandbox in (first, second):
        merchant = await sandbox_merchant(client, sandbox)
        assert (await merchant.create({"item_id": 1001}))[0] == 201
    await client.post(f"{first['base']}/_mock/reset", json={})
    assert (await (await client.get(f"{first['base']}/_mock/orders")).json())["orders"] == []
    assert len((await (await client.get(f"{second['base']}/_mock/orders")).json())["orders"]) == 1
    merchant = await sandbox_merchant(client, first)  # its own key survives its reset
    assert await merchant.balance() == 1000.0


async def test_create_takes_its_own_seed_clock_catalog_accounts_and_scenarios(client):
    body = {
        "seed": 7,
        "start_time": "2030-05-01T12:00:00Z",
        "clock": "manual",
        "catalog": [{"id": 5, "name": "Only key", "product_type": "key", "price": 250}],
        "accounts": {
            "accounts": [
                {"email": "shop@example.com", "api_key": "ak_shop_own", "balance": 12.5},
            ]
        },
        "scenarios": {
            "scenarios": [
                {"name": "quick_fail", "steps": [{"status": "failed", "error": "OUT_OF_STOCK"}]}
            ]
        },
        "ttl": 60,
    }
    sandbox = await created(client, body)
    assert sandbox["api_key"] == "ak_shop_own"
    assert sandbox["expires_at"] == "2027-01-15T08:01:00.000Z"  # the wall clock + 60 s
    assert await clock_now(client, sandbox["base"]) == "2030-05-01T12:00:00.000Z"
    merchant = await sandbox_merchant(client, sandbox)
    assert await merchant.balance() == 12.5
    status, order = await merchant.create({"item_id": 5}, **{"X-Mock-Scenario": "quick_fail"})
    assert (status, order["price"]) == (201, 2.5)
    status, error = await merchant.create({"item_id": 1001})
    assert (status, error["code"]) == (400, "validation_error")  # not in its catalog


async def test_same_seed_same_ids_but_never_the_same_credentials(client):
    first = await created(client, {"seed": 5})
    second = await created(client, {"seed": 5})
    assert first["account_id"] == second["account_id"]  # ids follow the seed
    assert first["api_key"] != second["api_key"]
    one, two = await sandbox_merchant(client, first), await sandbox_merchant(client, second)
    assert one.token != two.token
    assert one.token.startswith(first["id"] + ".")
    _, order_one = await one.create({"item_id": 1001})
    _, order_two = await two.create({"item_id": 1001})
    assert order_one["id"] == order_two["id"]  # isolated worlds, same random sequence


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"clock": "sundial"}, "clock"),
        ({"seed": -1}, "seed"),
        ({"time_scale": 0}, "time_scale"),
        ({"start_time": "yesterday"}, "start_time"),
        ({"ttl": 10**9}, "ttl"),
        ({"tll": 60}, "tll"),
        ({"catalog": [{"id": 1, "name": "x", "product_type": "gadget", "price": 1}]}, "catalog"),
        ({"accounts": {"accounts": [{"email": "a@b.c", "api_key": "key_1"}]}}, "ak_"),
        ({"scenarios": {"name": "x", "steps": [{"status": "pending"}]}}, "pending"),
    ],
)
async def test_a_bad_option_is_refused_and_creates_nothing(client, body, needle):
    status, error = await create(client, body)
    assert (status, error["code"]) == (400, "validation_error")
    assert needle in error["detail"]
    listing = await (await client.get("/_mock/sandboxes")).json()
    assert [s["id"] for s in listing["sandboxes"]] == ["default"]


# -- listing, reading, deleting -----------------------------------------------------------


async def test_list_read_and_delete(client, wall):
    sandbox = await created(client)
    wall.now += 5
    merchant = await sandbox_merchant(client, sandbox)
    await merchant.create({"item_id": 1001})
    listing = (await (await client.get("/_mock/sandboxes")).json())["sandboxes"]
    assert [entry["id"] for entry in listing] == ["default", sandbox["id"]]
    default, entry = listing
    assert default["expires_at"] is None and default["last_used_at"] is None
    assert entry["orders"] == 1
    assert entry["base_url"] == sandbox["base_url"]
    assert entry["created_at"] < entry["last_used_at"]

    response = await client.get(f"/_mock/sandboxes/{sandbox['id']}")
    assert (await response.json())["id"] == sandbox["id"]
    response = await client.delete(f"/_mock/sandboxes/{sandbox['id']}")
    assert response.status == 204
    response = await client.get(f"{sandbox['base']}/_mock/orders")
    error = await response.json()
    assert (response.status, error["code"]) == (404, "not_found")
    assert "was deleted" in error["detail"]


async def test_deleting_drops_its_pending_steps(client):
    sandbox = await created(client)
    merchant = await sandbox_merchant(client, sandbox)
    await merchant.create({"item_id": 1001})
    jobs = await (await client.get(f"{sandbox['base']}/_mock/jobs")).json()
    assert jobs["pending"] == 1
    dropped = client.app.sandboxes.find(sandbox["id"], touch=False).sandbox
    assert (await client.delete(f"/_mock/sandboxes/{sandbox['id']}")).status == 204
    assert dropped.scheduler.pending() == 0


async def test_unknown_sandbox_is_404_never_the_default(client):
    for path in (
        "/_mock/sandboxes/sbx-000000000000/api/v1/account/balance",
        "/_mock/sandboxes/nope/_mock/clock",
    ):
        response = await client.get(path)
        error = await response.json()
        assert (response.status, error["code"]) == (404, "not_found"), path
        assert "does not exist" in error["detail"]


async def test_the_default_sandbox_is_addressable_and_cannot_be_deleted(client):
    merchant = await login(client)
    _, order = await merchant.create({"item_id": 1001})
    detail = await (await client.get(f"/_mock/sandboxes/default/_mock/orders/{order['id']}")).json()
    assert detail["order"]["id"] == order["id"]
    response = await client.delete("/_mock/sandboxes/default")
    assert (response.status, (await response.json())["code"]) == (400, "validation_error")


# -- limits --------------------------------------------------------------------------------


async def test_an_idle_sandbox_expires_after_its_ttl(client, wall):
    kept, idle = await created(client, {"ttl": 100}), await created(client, {"ttl": 100})
    wall.now += 99
    assert (await client.get(f"{kept['base']}/_mock/clock")).status == 200  # a request: fresh
    wall.now += 2
    response = await client.get(f"{idle['base']}/_mock/clock")
    error = await response.json()
    assert response.status == 404
    assert "expired after 100 s without a request" in error["detail"]
    assert (await client.get(f"{kept['base']}/_mock/clock")).status == 200
    wall.now += 10**6
    listing = (await (await client.get("/_mock/sandboxes")).json())["sandboxes"]
    assert [entry["id"] for entry in listing] == ["default"]  # the default never expires


async def test_the_server_ttl_applies_when_the_sandbox_asks_for_none(serve, wall):
    client = await serve(sandbox_ttl=30)
    sandbox = await created(client)
    wall.now += 30
    assert (await client.get(f"{sandbox['base']}/_mock/clock")).status == 404


async def test_a_create_beyond_max_sandboxes_is_refused(serve):
    client = await serve(max_sandboxes=2)
    await created(client)
    second = await created(client)
    status, error = await create(client)
    assert (status, error["code"]) == (429, "too_many_sandboxes")
    assert "--max-sandboxes" in error["detail"]
    await client.delete(f"/_mock/sandboxes/{second['id']}")
    await created(client)  # room again


# -- root paths route by credential --------------------------------------------------------


async def test_a_sandbox_token_works_on_the_root_paths(client):
    sandbox = await created(client)
    inside = await sandbox_merchant(client, sandbox)
    _, order = await inside.create({"item_id": 1001})
    root = Merchant(client, inside.token)
    assert (await root.order(order["id"]))["id"] == order["id"]
    status, placed = await root.create({"item_id": 1002})
    assert status == 201
    orders = (await (await client.get(f"{sandbox['base']}/_mock/orders")).json())["orders"]
    assert {o["id"] for o in orders} == {order["id"], placed["id"]}
    journal = await (await client.get(f"{sandbox['base']}/_mock/requests")).json()
    assert journal["requests"][0]["path"] == "/api/v1/orders"  # its own journal
    assert (await (await client.get("/_mock/orders")).json())["orders"] == []
    # and the default sandbox's token does not reach the sandbox's orders
    default = await login(client)
    status, _ = await default.call("GET", f"/api/v1/orders/{order['id']}")
    assert status == 404


async def test_an_api_key_one_sandbox_holds_is_exchanged_on_the_root_path(client):
    sandbox = await created(client)
    response = await client.post("/api/v1/auth/token/client", json={"api_key": sandbox["api_key"]})
    assert response.status == 200
    token = (await response.json())["access_token"]
    assert token.startswith(sandbox["id"] + ".")
    assert await Merchant(client, token).balance() == 1000.0
    default = await login(client)  # ak_test_default still reaches the default sandbox
    assert not default.token.startswith("sbx-")


async def test_an_api_key_several_sandboxes_hold_is_refused_on_the_root_path(client):
    accounts = {"accounts": [{"email": "a@example.com", "api_key": "ak_shared"}]}
    first = await created(client, {"accounts": accounts})
    await created(client, {"accounts": accounts})
    response = await client.post("/api/v1/auth/token/client", json={"api_key": "ak_shared"})
    body = await response.json()
    assert response.status == 401
    assert set(body) == {"error"}
    assert first["base_url"] in body["error"]
    inside = await sandbox_merchant(client, first)  # the base URL says which
    assert await inside.balance() == 0.0


async def test_a_token_of_a_deleted_sandbox_is_refused_on_the_root_path(client):
    sandbox = await created(client)
    token = (await sandbox_merchant(client, sandbox)).token
    await client.delete(f"/_mock/sandboxes/{sandbox['id']}")
    status, error = await Merchant(client, token).call("GET", "/api/v1/account/balance")
    assert (status, error["code"]) == (401, "not_authenticated")
    assert sandbox["id"] in error["detail"]


# -- tokens that open control calls ---------------------------------------------------------


async def test_admin_and_control_tokens(serve):
    client = await serve(admin_token="adm1n")
    status, _ = await create(client)
    assert status == 401
    first = await created(client, headers=ADMIN)
    second = await created(client, headers=ADMIN)
    own = {"Authorization": f"Bearer {first['control_token']}"}
    assert (await client.get(f"{first['base']}/_mock/clock", headers=own)).status == 200
    assert (await client.get(f"/_mock/sandboxes/{first['id']}", headers=own)).status == 200
    assert (await client.get(f"{first['base']}/_mock/clock", headers=ADMIN)).status == 200
    # nothing else: another sandbox, the default one, the server's calls
    for method, path in [
        ("GET", f"{second['base']}/_mock/clock"),
        ("GET", f"/_mock/sandboxes/{second['id']}"),
        ("GET", "/_mock/clock"),
        ("GET", "/_mock/sandboxes"),
        ("POST", "/_mock/sandboxes"),
        ("DELETE", f"/_mock/sandboxes/{first['id']}"),
    ]:
        response = await client.request(method, path, headers=own)
        assert response.status == 401, (method, path)
        assert (await response.json())["code"] == "not_authenticated"
    # merchant calls under a base URL need a merchant token, not a control token
    merchant = await sandbox_merchant(client, first)
    assert await merchant.balance() == 1000.0
    assert (await client.get(f"{first['base']}/_mock/health")).status == 200


# -- clocks and webhooks of their own -------------------------------------------------------


async def test_a_real_clock_sandbox_beside_a_manual_default(client):
    sandbox = await created(client, {"clock": "real", "time_scale": 2000})
    merchant = await sandbox_merchant(client, sandbox)
    _, order = await merchant.create({"item_id": 1001})

    async def completed() -> bool:  # 3 s of virtual time: 1.5 ms of wall time
        return (await merchant.order(order["id"]))["status"] == "completed"

    await _until(completed)
    clock = await (await client.get("/_mock/clock")).json()
    assert clock["mode"] == "manual" and clock["now"] == "2026-01-01T00:00:00.000Z"


async def test_webhooks_are_signed_with_the_sandbox_secret_and_one_hanging_receiver_holds_no_other(
    client, aiohttp_server
):
    received: list[tuple[bytes, str]] = []
    entered, hang = asyncio.Event(), asyncio.Event()

    async def quick(request: web.Request) -> web.Response:
        received.append((await request.read(), request.headers["X-Webhook-Signature"]))
        return web.Response()

    async def stuck(request: web.Request) -> web.Response:
        entered.set()
        await hang.wait()
        return web.Response()

    receivers = web.Application()
    receivers.router.add_post("/quick", quick)
    receivers.router.add_post("/stuck", stuck)
    server = await aiohttp_server(receivers)
    secret = {"webhook_secret": "whsec_slow_one"}
    slow = await created(client)
    fast = await created(client)
    await client.patch(
        f"{slow['base']}/_mock/accounts/{slow['account_id']}",
        json={"webhook_url": str(server.make_url("/stuck"))} | secret,
    )
    await client.patch(
        f"{fast['base']}/_mock/accounts/{fast['account_id']}",
        json={"webhook_url": str(server.make_url("/quick")), "webhook_secret": "whsec_fast"},
    )
    for sandbox in (slow, fast):
        merchant = await sandbox_merchant(client, sandbox)
        await merchant.create({"item_id": 1001})
    waiting = asyncio.ensure_future(
        client.post(f"{slow['base']}/_mock/clock/advance", json={"seconds": 3})
    )
    await asyncio.wait_for(entered.wait(), 5)  # its delivery now hangs
    fast_merchant = await sandbox_merchant(client, fast)
    await fast_merchant.advance(3)  # returns although the other sandbox's delivery hangs
    assert not waiting.done()
    ((body, signature),) = received
    assert verify("whsec_fast", body, signature)
    hang.set()
    assert (await waiting).status == 200


async def test_a_root_call_with_another_nodes_token_is_told_where_that_sandbox_lives(serve):
    """A cluster routes root paths to its first node (docs/cluster.md): a token of a
    sandbox on another node gets 401 naming that node and the base URL that reaches it,
    and a path under that sandbox's id, 404 saying it lives elsewhere."""
    client = await serve(node_id="a")
    elsewhere = "sbx-b-0123456789ab"
    response = await client.get(
        "/api/v1/account/balance", headers={"Authorization": f"Bearer {elsewhere}.{'0' * 64}"}
    )
    assert response.status == 401
    body = await response.json()
    assert body["code"] == "not_authenticated"
    assert "lives on node b" in body["detail"]
    assert f"http://{client.host}:{client.port}/_mock/sandboxes/{elsewhere}" in body["detail"]
    response = await client.get(f"/_mock/sandboxes/{elsewhere}/_mock/clock")
    assert response.status == 404
    assert "lives on node b" in (await response.json())["detail"]

    # A sandbox of this node that was deleted is said to be deleted.
    sandbox = await created(client)
    merchant = await sandbox_merchant(client, sandbox)
    assert (await client.delete(f"/_mock/sandboxes/{sandbox['id']}")).status == 204
    response = await client.get(
        "/api/v1/account/balance", headers={"Authorization": f"Bearer {merchant.token}"}
    )
    assert response.status == 401
    assert (
        f"{sandbox['id']} that issued this token was deleted" in (await response.json())["detail"]
    )
