"""A hostile tenant on a hosted server (docs/hosting.md): holding only its own created
sandbox's control token and API key, it can neither reach another tenant's sandbox nor
take the default sandbox's documented key, and a client that never reads its answers
holds no more than a bounded amount of the server's memory.

Each attack is written as it was tried, with bounds on the attacker's answer time and,
where it applies, on another tenant's call made meanwhile. Sandbox expiry runs on an
injected wall clock; nothing here sleeps on wall time.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any
from urllib.parse import urlparse

import pytest

from mock_server.app import create_app
from tests.conftest import BASE_SETTINGS, Merchant, login

ADMIN_TOKEN = "adm1n-hosted"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
#: A rate whose burst is one call, after which the next waits 100 s: a call that spent
#: the owner's allowance shows as the owner's 429.
SCARCE_RATE = 0.01
#: A 401 is a few dictionary lookups: far under this even on a loaded CI machine. A
#: refused call held by the rate guard would take up to a second.
QUICK_SECONDS = 0.5


class WallClock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def wall() -> WallClock:
    return WallClock()


@pytest.fixture
def hosted(make_client, wall):
    """A server set up as docs/hosting.md says (admin token, private webhooks refused,
    quotas, a rate), on the injected wall clock."""

    async def make(**overrides: Any):
        hosting = {
            "admin_token": ADMIN_TOKEN,
            "webhook_deny_private": True,
            "sandbox_rate": SCARCE_RATE,
        }
        settings = replace(BASE_SETTINGS, **(hosting | overrides))
        return await make_client(create_app(settings, wall=wall))

    return make


async def tenant(client, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """A created sandbox, as the operator's portal hands it to a tenant."""
    response = await client.post("/_mock/sandboxes", json=body or {}, headers=ADMIN)
    created = await response.json()
    assert response.status == 201, created
    created["base"] = urlparse(created["base_url"]).path
    created["control"] = {"Authorization": f"Bearer {created['control_token']}"}
    return created


async def own_token(client, victim: dict[str, Any]) -> str:
    response = await client.post(
        victim["base"] + "/api/v1/auth/token/client", json={"api_key": victim["api_key"]}
    )
    assert response.status == 200, await response.text()
    return (await response.json())["access_token"]


async def journal(client, victim: dict[str, Any]) -> list[dict[str, Any]]:
    response = await client.get(victim["base"] + "/_mock/requests", headers=victim["control"])
    assert response.status == 200, await response.text()
    return (await response.json())["requests"]


async def timed(call) -> tuple[Any, float]:
    started = time.perf_counter()
    response = await call
    await response.read()
    return response, time.perf_counter() - started


def strangers_calls(client, victim: dict[str, Any], attacker: dict[str, Any]):
    """What an attacker tried with only the victim's id: merchant calls under its base
    path with no token, a wrong one, its own (another sandbox's) token; a root call with
    a token forged on the victim's id; the token endpoint with a wrong key; a path no
    route serves; control calls without the victim's control token."""
    base, forged = victim["base"], f"{victim['id']}.{'0' * 64}"
    yield client.get(base + "/api/v1/account/balance")
    yield client.get(base + "/api/v1/account/balance", headers={"Authorization": "Bearer nope"})
    yield client.get(base + "/v1/account/me", headers={"Authorization": f"Bearer {forged}"})
    yield client.get("/api/v1/account/balance", headers={"Authorization": f"Bearer {forged}"})
    yield client.post(base + "/api/v1/orders", json={"item_id": 1001})
    yield client.post(base + "/api/v1/auth/token/client", json={"api_key": attacker["api_key"]})
    yield client.post(base + "/api/v1/auth/token/client", json={"api_key": "ak_guess"})
    yield client.post(base + "/v1/auth/token/client", data=b"not json")
    yield client.get(base + "/api/v1/nothing-here")
    yield client.get(base + "/_mock/requests")
    yield client.post(
        base + "/_mock/clock/advance", json={"seconds": 1}, headers=attacker["control"]
    )


# -- calls that name another sandbox without its credentials -------------------------------


async def test_a_stranger_spends_none_of_a_sandboxs_rate(hosted):
    client = await hosted()
    victim, attacker = await tenant(client), await tenant(client)
    attacker_token = await own_token(client, attacker)
    for call in strangers_calls(client, victim, attacker):
        response, seconds = await timed(call)
        assert response.status in (400, 401, 404), (response.url, response.status)
        assert seconds < QUICK_SECONDS  # refused at once, never held by the rate guard
    wrong = await client.get(
        victim["base"] + "/api/v1/account/balance",
        headers={"Authorization": f"Bearer {attacker_token}"},
    )
    assert wrong.status == 401
    body = await wrong.json()
    assert body["code"] == "not_authenticated" and set(body) == {"detail", "code"}
    # The owner's one call of the burst is still there: its exchange is taken.
    response, seconds = await timed(
        client.post(
            victim["base"] + "/api/v1/auth/token/client", json={"api_key": victim["api_key"]}
        )
    )
    assert response.status == 200, await response.text()
    assert seconds < QUICK_SECONDS


async def test_a_stranger_does_not_reach_a_sandboxs_journal(hosted):
    client = await hosted(sandbox_rate=None)
    victim, attacker = await tenant(client), await tenant(client)
    for call in strangers_calls(client, victim, attacker):
        await (await call).read()
    assert await journal(client, victim) == []
    # The owner's own calls are journaled, a refused one included.
    owner = Merchant(client, await own_token(client, victim))
    status, _ = await owner.call("POST", victim["base"] + "/api/v1/orders", json={})
    assert status == 400
    assert [(c["path"], c["status"]) for c in await journal(client, victim)] == [
        ("/api/v1/orders", 400),
        ("/api/v1/auth/token/client", 200),
    ]


async def test_a_stranger_does_not_keep_a_sandbox_alive(hosted, wall):
    client = await hosted(sandbox_rate=None)
    victim, attacker = await tenant(client, {"ttl": 100}), await tenant(client)
    wall.now += 60
    for call in strangers_calls(client, victim, attacker):
        await (await call).read()
    wall.now += 60  # 120 s since the owner's last call, whatever the stranger did
    gone = await client.get(victim["base"] + "/_mock/clock", headers=ADMIN)
    assert gone.status == 404
    assert "expired after 100 s without a request" in (await gone.json())["detail"]


async def test_a_stranger_meets_none_of_a_sandboxs_faults(hosted):
    client = await hosted(sandbox_rate=None)
    victim, attacker = await tenant(client), await tenant(client)
    fault = {"path": "/api/v1/account/balance", "status": 503, "times": 1}
    response = await client.post(
        victim["base"] + "/_mock/faults", json=fault, headers=victim["control"]
    )
    assert response.status == 201, await response.text()
    for call in strangers_calls(client, victim, attacker):
        assert (await call).status != 503
    owner = Merchant(client, await own_token(client, victim))
    status, _ = await owner.call("GET", victim["base"] + "/api/v1/account/balance")
    assert status == 503  # the owner's fault waited for the owner


async def test_the_owners_calls_keep_their_rate_and_are_journaled_when_refused(hosted):
    client = await hosted()
    victim = await tenant(client)
    token = await own_token(client, victim)  # the burst's one call
    limited = await client.get(
        victim["base"] + "/api/v1/account/balance", headers={"Authorization": f"Bearer {token}"}
    )
    assert limited.status == 429 and "Retry-After" in limited.headers
    assert [c["status"] for c in await journal(client, victim)] == [429, 200]


# -- the default sandbox's documented key ---------------------------------------------------


def _accounts(key: str) -> dict[str, Any]:
    return {"accounts": [{"email": "shop@example.com", "api_key": key}]}


async def test_no_created_sandbox_may_hold_the_default_key(hosted):
    client = await hosted(sandbox_rate=None)
    attacker = await tenant(client)
    base, control = attacker["base"], attacker["control"]
    tries = [
        client.post(
            "/_mock/sandboxes", json={"accounts": _accounts("ak_test_default")}, headers=ADMIN
        ),
        client.post(
            "/_mock/sandboxes",
            json={
                "accounts": {
                    "accounts": [{"email": "a@b.c", "api_keys": ["ak_x", "ak_test_default"]}]
                }
            },
            headers=ADMIN,
        ),
        client.post(
            base + "/_mock/accounts",
            json={"email": "thief@example.com", "api_key": "ak_test_default"},
            headers=control,
        ),
        client.post(
            base + "/_mock/accounts",
            json={"email": "thief@example.com", "api_keys": ["ak_test_default"]},
            headers=control,
        ),
        client.put(base + "/_mock/accounts", json=_accounts("ak_test_default"), headers=control),
    ]
    state = await (await client.get(base + "/_mock/state", headers=control)).json()
    state["accounts"][0]["api_keys"].append("ak_test_default")
    tries.append(client.put(base + "/_mock/state", json=state, headers=control))
    for attempt in tries:
        response = await attempt
        body = await response.json()
        assert response.status == 400, (response.url, body)
        assert body["code"] == "validation_error" and "ak_test_default" in body["detail"]
    listing = await (await client.get("/_mock/sandboxes", headers=ADMIN)).json()
    assert len(listing["sandboxes"]) == 2  # the default and the attacker's: nothing made
    accounts = await (await client.get(base + "/_mock/accounts", headers=control)).json()
    assert [a["api_keys"] for a in accounts["accounts"]] == [[attacker["api_key"]]]
    # The root exchange of the documented key still reaches the default sandbox.
    merchant = await login(client)
    assert not merchant.token.startswith("sbx-")
    assert await merchant.balance() == 1000.0


async def test_the_default_sandbox_keeps_its_key_through_its_own_state(hosted):
    client = await hosted(sandbox_rate=None)
    state = await (await client.get("/_mock/state", headers=ADMIN)).json()
    assert (await client.put("/_mock/state", json=state, headers=ADMIN)).status == 200
    assert not (await login(client)).token.startswith("sbx-")


async def test_a_restored_sandbox_holding_the_default_key_does_not_take_it(hosted, wall):
    """A sandbox an earlier run kept (its `--state` file) may hold the key: the root
    exchange of the key still goes to the default sandbox."""
    client = await hosted(sandbox_rate=None)
    body = {"accounts": _accounts("ak_test_default")}
    sandboxes = client.app.sandboxes
    entry = sandboxes.restore("sbx-0123456789ab", body, [], "ctl_x", wall.now, wall.now, 3600)
    assert "ak_test_default" in entry.sandbox.state.account_by_key
    merchant = await login(client)
    assert not merchant.token.startswith("sbx-")
