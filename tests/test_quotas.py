"""What a sandbox may hold (docs/hosting.md, "Quotas"): past a quota, 429
`quota_exceeded` in the spec's envelope, naming the quota and how to free room, with
nothing made, charged or stored. A created sandbox has quotas by default; the default
sandbox has none unless they are set."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import BASE_SETTINGS, login

from mock_server.config import created_quotas, default_quotas
from mock_server.domain.quotas import CREATED_DEFAULTS, Quotas

TIGHT = {
    "sandbox_max_orders": 2,
    "sandbox_max_scenarios": 1,
    "sandbox_max_accounts": 2,
    "sandbox_max_catalog": 3,
}
SCENARIO = {"name": "quick", "steps": [{"after": 0, "status": "completed"}]}


def test_created_sandboxes_have_quotas_and_the_default_one_none_unless_set():
    assert created_quotas(BASE_SETTINGS) == Quotas(**CREATED_DEFAULTS)
    assert default_quotas(BASE_SETTINGS) == Quotas()
    from dataclasses import replace

    tight = replace(BASE_SETTINGS, sandbox_max_orders=5)
    assert created_quotas(tight).orders == default_quotas(tight).orders == 5
    assert default_quotas(tight).accounts is None


def assert_quota(status: int, body: dict[str, Any], quota_flag: str) -> None:
    assert status == 429, body
    assert body["code"] == "quota_exceeded" and set(body) == {"detail", "code"}
    assert quota_flag in body["detail"] and "/_mock/" in body["detail"]  # how to free room


@pytest.fixture
async def sandbox(make_client) -> tuple[Any, str, dict[str, Any]]:
    """A server with tight quotas, and one created sandbox's base path and answer."""
    client = await make_client(**TIGHT)
    created = await (await client.post("/_mock/sandboxes", json={})).json()
    return client, f"/_mock/sandboxes/{created['id']}", created


async def test_orders_past_the_quota_are_refused_and_nothing_is_charged(sandbox):
    client, base, created = sandbox
    token = await (
        await client.post(base + "/api/v1/auth/token/client", json={"api_key": created["api_key"]})
    ).json()
    auth = {"Authorization": f"Bearer {token['access_token']}"}
    for _ in range(2):
        made = await client.post(base + "/api/v1/orders", json={"item_id": 1001}, headers=auth)
        assert made.status == 201
    balance = await (await client.get(base + "/api/v1/account/balance", headers=auth)).json()
    refused = await client.post(base + "/api/v1/orders", json={"item_id": 1001}, headers=auth)
    assert_quota(refused.status, await refused.json(), "--sandbox-max-orders")
    after = await (await client.get(base + "/api/v1/account/balance", headers=auth)).json()
    assert after == balance
    orders = (await (await client.get(base + "/_mock/orders")).json())["orders"]
    assert len(orders) == 2
    # A reset frees the room.
    assert (await client.post(base + "/_mock/reset", json={})).status == 200
    token = await (
        await client.post(base + "/api/v1/auth/token/client", json={"api_key": created["api_key"]})
    ).json()
    auth = {"Authorization": f"Bearer {token['access_token']}"}
    again = await client.post(base + "/api/v1/orders", json={"item_id": 1001}, headers=auth)
    assert again.status == 201


async def test_accounts_past_the_quota_are_refused(sandbox):
    client, base, _ = sandbox
    before = await (await client.get(base + "/_mock/accounts")).json()
    made = await client.post(base + "/_mock/accounts", json={"email": "b@example.com"})
    assert made.status == 201  # the second of two
    refused = await client.post(base + "/_mock/accounts", json={"email": "c@example.com"})
    assert_quota(refused.status, await refused.json(), "--sandbox-max-accounts")
    accounts = [{"email": f"{n}@example.com", "api_key": f"ak_{n}"} for n in ("x", "y", "z")]
    replaced = await client.put(base + "/_mock/accounts", json={"accounts": accounts})
    assert_quota(replaced.status, await replaced.json(), "--sandbox-max-accounts")
    now = (await (await client.get(base + "/_mock/accounts")).json())["accounts"]
    assert len(now) == len(before["accounts"]) + 1


async def test_a_catalog_past_the_quota_is_refused(sandbox):
    client, base, _ = sandbox
    before = await (await client.get(base + "/_mock/catalog")).json()
    items = [
        {"id": 5000 + n, "name": f"Key {n}", "product_type": "key", "price": 100} for n in range(4)
    ]
    refused = await client.put(base + "/_mock/catalog", json=items)
    assert_quota(refused.status, await refused.json(), "--sandbox-max-catalog")
    assert await (await client.get(base + "/_mock/catalog")).json() == before


async def test_scenarios_loaded_past_the_quota_are_refused_until_a_reset(sandbox):
    client, base, _ = sandbox
    assert (await client.post(base + "/_mock/scenarios", json=SCENARIO)).status == 201
    again = await client.post(base + "/_mock/scenarios", json=SCENARIO | {"name": "other"})
    assert_quota(again.status, await again.json(), "--sandbox-max-scenarios")
    names = [
        s["name"] for s in (await (await client.get(base + "/_mock/scenarios")).json())["scenarios"]
    ]
    assert "other" not in names
    assert (await client.post(base + "/_mock/reset", json={})).status == 200
    assert (await client.post(base + "/_mock/scenarios", json=SCENARIO)).status == 201


async def test_a_sandbox_body_past_a_quota_creates_nothing(make_client):
    client = await make_client(**TIGHT)
    accounts = [{"email": f"{n}@example.com", "api_key": f"ak_{n}"} for n in ("x", "y", "z")]
    refused = await client.post("/_mock/sandboxes", json={"accounts": {"accounts": accounts}})
    assert_quota(refused.status, await refused.json(), "--sandbox-max-accounts")
    listed = (await (await client.get("/_mock/sandboxes")).json())["sandboxes"]
    assert len(listed) == 1


async def test_a_saved_state_past_a_quota_is_refused_whole(make_client):
    roomy = await make_client()
    merchant = await login(roomy)
    for _ in range(3):
        assert (await merchant.create({"item_id": 1001}))[0] == 201
    document = await (await roomy.get("/_mock/state")).json()
    client = await make_client(sandbox_max_orders=2)
    before = await (await client.get("/_mock/state")).json()
    refused = await client.put("/_mock/state", json=document)
    assert_quota(refused.status, await refused.json(), "--sandbox-max-orders")
    assert await (await client.get("/_mock/state")).json() == before


async def test_the_default_sandbox_has_no_quota_unless_set(client):
    merchant = await login(client)
    for n in range(3):
        made = await client.post("/_mock/accounts", json={"email": f"d{n}@example.com"})
        assert made.status == 201
    assert (await merchant.create({"item_id": 1001}))[0] == 201


@pytest.mark.parametrize("flag", ["--sandbox-max-orders", "--sandbox-max-catalog"])
def test_a_negative_quota_exits_2(flag):
    from mock_server.cli import parse_settings

    with pytest.raises(SystemExit) as exited:
        parse_settings([flag, "-1"])
    assert exited.value.code == 2


async def test_a_state_file_comes_back_whole_under_lower_quotas(make_client, tmp_path):
    """docs/hosting.md: what the file holds was allowed when it was written."""
    from dataclasses import replace

    from mock_server.app import create_app

    path = str(tmp_path / "state.db")
    first = await make_client(create_app(replace(BASE_SETTINGS, state=path)))
    merchant = await login(first)
    for _ in range(3):
        assert (await merchant.create({"item_id": 1001}))[0] == 201
    await first.session.close()
    await first.serving.stop()
    again = await make_client(create_app(replace(BASE_SETTINGS, state=path, sandbox_max_orders=2)))
    orders = (await (await again.get("/_mock/orders")).json())["orders"]
    assert len(orders) == 3
    refused = await (await login(again)).create({"item_id": 1001})
    assert refused[0] == 429
