"""`--sandbox-rate R` (docs/hosting.md, "Rate"): each sandbox's merchant calls at most R
per second in bursts of 2R, past it 429 `rate_limited` with `Retry-After` (the token
endpoint's `{"error"}` shape there); another sandbox is not slowed; control calls are
never limited; a refused call changes nothing. The bucket is checked on a clock of our
own; over HTTP, a rate of 0.01 per second leaves one call and then 100 s to wait, so
nothing depends on how fast the test runs.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import login

from mock_server.merchant.rate_guard import HOLD_SECONDS, RateGuard


class Owner:
    """Stands in for a sandbox: the guard keeps a bucket per object it is given."""


class Tick:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_bursts_of_twice_the_rate_then_the_rate():
    tick = Tick()
    guard = RateGuard(2.0, monotonic=tick)
    one, other = Owner(), Owner()
    assert [guard.retry_after(one) for _ in range(4)] == [0, 0, 0, 0]  # a burst of 2R
    assert guard.retry_after(one) == 1
    assert guard.retry_after(other) == 0  # another sandbox has its own bucket
    tick.now += 0.5  # one call's worth at 2 per second
    assert guard.retry_after(one) == 0
    assert guard.retry_after(one) == 1
    tick.now += 60  # a quiet minute refills the burst, no more
    assert [guard.retry_after(one) for _ in range(5)] == [0, 0, 0, 0, 1]


def test_retry_after_is_the_whole_seconds_until_a_call_is_taken():
    tick = Tick()
    guard = RateGuard(0.1, monotonic=tick)
    sandbox = Owner()
    assert guard.retry_after(sandbox) == 0  # a rate under 0.5 still lets one call through
    assert guard.retry_after(sandbox) == 10
    tick.now += 7.5
    assert guard.retry_after(sandbox) == 3


def test_held_calls_are_let_go_one_at_a_time_at_the_rate():
    tick = Tick()
    guard = RateGuard(100.0, monotonic=tick)
    flooding, other = Owner(), Owner()
    while guard.retry_after(flooding) == 0:  # the burst, spent
        pass
    # Refused together, let go a call's worth of time (10 ms) apart, not together.
    assert [round(guard.hold(flooding), 6) for _ in range(3)] == [0.01, 0.02, 0.03]
    guard.retry_after(other)
    assert guard.retry_after(other) == 0 and round(guard.hold(other), 6) == 0.01
    tick.now += 0.025  # the first two were let go; the turns go on from the third
    assert round(guard.hold(flooding), 6) == 0.015
    tick.now += 10  # a quiet spell: the next turn is from now
    assert round(guard.hold(flooding), 6) == 0.01


def test_no_call_is_held_longer_than_the_hold():
    tick = Tick()
    guard = RateGuard(0.5, monotonic=tick)  # a call every 2 s
    sandbox = Owner()
    guard.retry_after(sandbox)
    assert guard.retry_after(sandbox) == 2
    assert [guard.hold(sandbox) for _ in range(3)] == [HOLD_SECONDS] * 3


async def _created(client: Any) -> dict[str, Any]:
    response = await client.post("/_mock/sandboxes", json={})
    assert response.status == 201
    return await response.json()


async def test_past_the_rate_a_merchant_call_is_429_and_changes_nothing(make_client):
    client = await make_client(sandbox_rate=0.01)
    merchant = await login(client)  # the one call the burst allows
    response = await client.post("/api/v1/orders", json={"item_id": 1001}, headers=merchant.auth)
    assert response.status == 429
    assert 90 <= int(response.headers["Retry-After"]) <= 100
    body = await response.json()
    assert body["code"] == "rate_limited" and set(body) == {"detail", "code"}
    token = await client.post("/v1/auth/token/client", json={"api_key": "ak_test_default"})
    assert token.status == 429 and set(await token.json()) == {"error"}
    assert "Retry-After" in token.headers
    # Control calls are never limited, and nothing was made or charged.
    for _ in range(5):
        assert (await client.get("/_mock/clock")).status == 200
    assert (await (await client.get("/_mock/orders")).json())["orders"] == []
    accounts = (await (await client.get("/_mock/accounts")).json())["accounts"]
    assert accounts[0]["balance"] == 1000.0
    journal = (await (await client.get("/_mock/requests?limit=2")).json())["requests"]
    assert [call["status"] for call in journal] == [429, 429]


async def test_another_sandbox_is_not_slowed(make_client):
    client = await make_client(sandbox_rate=0.01)
    created = await _created(client)
    merchant = await login(client)  # the default sandbox spends its call
    limited = await client.get("/api/v1/account/balance", headers=merchant.auth)
    assert limited.status == 429
    base = f"/_mock/sandboxes/{created['id']}"
    exchanged = await client.post(
        base + "/api/v1/auth/token/client", json={"api_key": created["api_key"]}
    )
    assert exchanged.status == 200, await exchanged.text()


@pytest.mark.parametrize("rate", ["0", "-1", "nan", "inf"])
def test_a_rate_that_is_not_a_positive_number_exits_2(rate):
    from mock_server.cli import parse_settings

    with pytest.raises(SystemExit) as exited:
        parse_settings(["--sandbox-rate", rate])
    assert exited.value.code == 2
