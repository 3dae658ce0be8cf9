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
    "sandbox_max_faults": 2,
    "sandbox_max_queue": 2,
    "sandbox_max_tokens": 2,
}
SCENARIO = {"name": "quick", "steps": [{"after": 0, "status": "completed"}]}


def test_created_sandboxes_have_quotas_and_the_default_one_none_unless_set():
    assert created_quotas(BASE_SETTINGS) == Quotas(**CREATED_DEFAULTS)
    assert default_quotas(BASE_SETTINGS) == Quotas()
    from dataclasses import replace

    tight = replace(BASE_SETTINGS, sandbox_max_orders=5, sandbox_max_tokens=7)
    assert created_quotas(tight).orders == default_quotas(tight).orders == 5
    assert created_quotas(tight).tokens == default_quotas(tight).tokens == 7
    assert default_quotas(tight).accounts is None
    assert default_quotas(tight).faults is None and default_quotas(tight).queue is None
    created = created_quotas(BASE_SETTINGS)
    assert (created.faults, created.queue, created.tokens) == (1000, 1000, 10_000)


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


@pytest.mark.parametrize(
    "flag", ["--sandbox-max-orders", "--sandbox-max-catalog", "--sandbox-max-tokens"]
)
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


def test_the_new_quotas_are_flags_and_variables():
    from mock_server.cli import parse_settings

    settings = parse_settings(
        ["--sandbox-max-faults", "3", "--sandbox-max-queue", "4", "--sandbox-max-tokens", "5"]
    )
    assert (settings.sandbox_max_faults, settings.sandbox_max_queue) == (3, 4)
    assert created_quotas(settings).tokens == 5


async def test_faults_past_the_quota_are_refused_until_room_is_freed(sandbox):
    client, base, created = sandbox
    used_once = {"path": "/api/v1/account/balance", "status": 503, "times": 1}
    first = await client.post(base + "/_mock/faults", json=used_once)
    assert first.status == 201
    second = await client.post(base + "/_mock/faults", json={"path": "/api/v1/orders/*"})
    assert second.status == 201
    refused = await client.post(base + "/_mock/faults", json={"path": "/api/v1/orders"})
    assert_quota(refused.status, await refused.json(), "--sandbox-max-faults")
    faults = (await (await client.get(base + "/_mock/faults")).json())["faults"]
    assert [f["id"] for f in faults] == [1, 2]
    # A fault used up frees its room; the refused one drew no id.
    token = await (
        await client.post(base + "/api/v1/auth/token/client", json={"api_key": created["api_key"]})
    ).json()
    auth = {"Authorization": f"Bearer {token['access_token']}"}
    assert (await client.get(base + "/api/v1/account/balance", headers=auth)).status == 503
    again = await client.post(base + "/_mock/faults", json={"path": "/api/v1/orders"})
    assert again.status == 201 and (await again.json())["id"] == 3
    full = await client.post(base + "/_mock/faults", json={"path": "/v1/orders"})
    assert_quota(full.status, await full.json(), "--sandbox-max-faults")
    assert (await client.delete(base + "/_mock/faults")).status == 200
    assert (await client.post(base + "/_mock/faults", json={"path": "/v1/orders"})).status == 201


async def test_a_fault_keeps_a_bounded_method_and_path(sandbox):
    """What bounds a fault's bytes (docs/hosting.md, "Sizing")."""
    client, base, _ = sandbox
    for body in ({"path": "/" + "a" * 2048}, {"path": "/x", "method": "M" * 33}):
        refused = await client.post(base + "/_mock/faults", json=body)
        assert refused.status == 400 and "at most" in (await refused.json())["detail"]
    longest = {"path": "/" + "a" * 2047, "method": "M" * 32}
    assert (await client.post(base + "/_mock/faults", json=longest)).status == 201


async def test_queue_entries_past_the_quota_are_refused_whatever_their_count(sandbox):
    client, base, created = sandbox
    account = created["account_id"]

    async def queue(**body: Any) -> Any:
        return await client.post(
            base + "/_mock/scenarios/next", json={"scenario": "happy_path"} | body
        )

    async def queued() -> list[dict[str, Any]]:
        return (await (await client.get(base + "/_mock/scenarios")).json())["queue"]

    assert (await queue(account_id=account)).status == 201  # one order
    assert (await queue(count=None)).status == 201  # every order: still one entry
    refused = await queue(count=1)
    assert_quota(refused.status, await refused.json(), "--sandbox-max-queue")
    assert [e["remaining"] for e in await queued()] == [1, None]
    # An entry whose orders are placed frees its room.
    token = await (
        await client.post(base + "/api/v1/auth/token/client", json={"api_key": created["api_key"]})
    ).json()
    auth = {"Authorization": f"Bearer {token['access_token']}"}
    made = await client.post(base + "/api/v1/orders", json={"item_id": 1001}, headers=auth)
    assert made.status == 201
    assert (await queue(count=3)).status == 201
    assert [e["remaining"] for e in await queued()] == [None, 3]
    # So does `replace`: the entries it drops are not counted against the new one.
    replaced = await queue(count=5, replace=True)
    assert replaced.status == 201
    assert [e["remaining"] for e in await queued()] == [5]


async def test_tokens_past_the_quota_are_refused_in_the_token_shape(sandbox):
    client, base, created = sandbox
    exchange = base + "/api/v1/auth/token/client"

    async def drawn() -> int:
        return (await (await client.get(base + "/_mock/state")).json())["random"]["tokens"]

    tokens = []
    for _ in range(2):
        answer = await client.post(exchange, json={"api_key": created["api_key"]})
        assert answer.status == 200
        tokens.append((await answer.json())["access_token"])
    before = await drawn()
    refused = await client.post(exchange, json={"api_key": created["api_key"]})
    body = await refused.json()
    assert refused.status == 429 and set(body) == {"error"}, body
    assert "--sandbox-max-tokens" in body["error"] and "/_mock/" in body["error"]
    assert await drawn() == before  # nothing issued, nothing drawn
    state = await (await client.get(base + "/_mock/state")).json()
    assert [t[0] for t in state["tokens"]] == tokens
    for token in tokens:
        auth = {"Authorization": f"Bearer {token}"}
        assert (await client.get(base + "/api/v1/account/me", headers=auth)).status == 200
    # Expiry on the virtual clock frees the room.
    advanced = await client.post(base + "/_mock/clock/advance", json={"seconds": 7200})
    assert advanced.status == 200
    assert (await client.post(exchange, json={"api_key": created["api_key"]})).status == 200
    # So does revoking a key: its tokens stop working and no longer count.
    issued = await client.post(base + f"/_mock/accounts/{created['account_id']}/api-keys")
    key = (await issued.json())["api_key"]
    revoked = (await (await client.post(exchange, json={"api_key": key})).json())["access_token"]
    full = await client.post(exchange, json={"api_key": created["api_key"]})
    assert full.status == 429
    assert (await client.delete(base + f"/_mock/api-keys/{key}")).status == 200
    auth = {"Authorization": f"Bearer {revoked}"}
    assert (await client.get(base + "/api/v1/account/me", headers=auth)).status == 401
    assert (await client.post(exchange, json={"api_key": created["api_key"]})).status == 200


async def fill(client: Any, quota: str, n: int) -> None:
    """Put `n` of what `quota` counts into the default sandbox."""
    for _ in range(n):
        if quota == "faults":
            made = await client.post("/_mock/faults", json={"path": "/api/v1/orders"})
        elif quota == "queue":
            made = await client.post("/_mock/scenarios/next", json={"scenario": "happy_path"})
        else:
            made = await client.post(
                "/api/v1/auth/token/client", json={"api_key": "ak_test_default"}
            )
        assert made.status in (200, 201), await made.text()


async def held(client: Any, quota: str) -> int:
    if quota == "faults":
        return len((await (await client.get("/_mock/faults")).json())["faults"])
    if quota == "queue":
        return len((await (await client.get("/_mock/scenarios")).json())["queue"])
    return len((await (await client.get("/_mock/state")).json())["tokens"])


@pytest.mark.parametrize("quota", ["faults", "queue", "tokens"])
async def test_a_saved_state_past_the_new_quotas_is_refused_whole(make_client, quota):
    roomy = await make_client()
    await fill(roomy, quota, 3)
    document = await (await roomy.get("/_mock/state")).json()
    client = await make_client(**{f"sandbox_max_{quota}": 2})
    before = await (await client.get("/_mock/state")).json()
    refused = await client.put("/_mock/state", json=document)
    assert_quota(refused.status, await refused.json(), f"--sandbox-max-{quota}")
    assert await (await client.get("/_mock/state")).json() == before
    # Within the quota, the same document loads.
    within = await make_client(**{f"sandbox_max_{quota}": 3})
    assert (await within.put("/_mock/state", json=document)).status == 200
    assert await held(within, quota) == 3


async def test_a_state_file_keeps_faults_queue_and_tokens_under_lower_quotas(make_client, tmp_path):
    """docs/hosting.md: what the file holds was allowed when it was written; a revoked
    key's tokens, which stop working, do not come back to count."""
    from dataclasses import replace

    from mock_server.app import create_app

    path = str(tmp_path / "state.db")
    first = await make_client(create_app(replace(BASE_SETTINGS, state=path)))
    for quota in ("faults", "queue", "tokens"):
        await fill(first, quota, 3)
    account = (await (await first.get("/_mock/accounts")).json())["accounts"][0]["id"]
    key = (await (await first.post(f"/_mock/accounts/{account}/api-keys")).json())["api_key"]
    await login(first, key)
    assert (await first.delete(f"/_mock/api-keys/{key}")).status == 200
    await first.session.close()
    await first.serving.stop()
    lower = {f"sandbox_max_{quota}": 2 for quota in ("faults", "queue", "tokens")}
    again = await make_client(create_app(replace(BASE_SETTINGS, state=path, **lower)))
    for quota in ("faults", "queue", "tokens"):
        assert await held(again, quota) == 3
    refused = await again.post("/_mock/faults", json={"path": "/api/v1/orders"})
    assert_quota(refused.status, await refused.json(), "--sandbox-max-faults")
    token = await again.post("/api/v1/auth/token/client", json={"api_key": "ak_test_default"})
    assert token.status == 429 and "--sandbox-max-tokens" in (await token.json())["error"]
    # Once the three expire, there is room again.
    assert (await again.post("/_mock/clock/advance", json={"seconds": 7200})).status == 200
    await fill(again, "tokens", 2)
    assert await held(again, "tokens") == 2


def test_the_token_count_follows_the_virtual_clock():
    """What the tokens quota counts: grants unexpired at `now`, issued or restored (in
    any order), less a revoked key's."""
    from mock_server.domain.tokens import TOKEN_LIFETIME, Grant, Tokens

    tokens = Tokens()
    tokens.issue("a", "acct", "ak_1", 0.0)
    tokens.issue("b", "acct", "ak_2", 100.0)
    assert tokens.live_count(0.0) == 2
    assert tokens.live_count(TOKEN_LIFETIME) == 1  # "a" expires at its lifetime's end
    assert tokens.expired("a", TOKEN_LIFETIME) and tokens.lookup("b", TOKEN_LIFETIME)
    assert tokens.live_count(TOKEN_LIFETIME + 100) == 0
    # A hand-made saved state may list grants out of expiry order.
    restored = Tokens()
    restored.restore("late", Grant("acct", "ak_1", 9000.0))
    restored.restore("early", Grant("acct", "ak_1", 5000.0))
    restored.restore("other", Grant("acct", "ak_2", 8000.0))
    assert restored.live_count(6000.0) == 2
    assert restored.lookup("early", 6000.0) is None and restored.expired("early", 6000.0)
    restored.revoke("ak_1")
    assert restored.live_count(6000.0) == 1 and restored.lookup("late", 6000.0) is None
    restored.issue("new", "acct", "ak_2", 6000.0)
    assert restored.live_count(8500.0) == 1  # "other" expired, "new" not
