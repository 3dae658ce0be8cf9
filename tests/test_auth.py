"""Token exchange (spec 4.1), bearer authentication (spec 5), balance and account read."""

from __future__ import annotations

import pytest

from tests.conftest import login

TOKEN_PATHS = ["/api/v1/auth/token/client", "/v1/auth/token/client"]


@pytest.mark.parametrize("path", TOKEN_PATHS)
async def test_token_exchange_returns_bearer_token(client, path):
    response = await client.post(path, json={"api_key": "ak_test_default"})
    assert response.status == 200
    body = await response.json()
    assert set(body) == {"access_token", "token_type"}
    assert body["token_type"] == "Bearer"
    assert body["access_token"]


@pytest.mark.parametrize(
    "body",
    [{"api_key": "ak_wrong"}, {"api_key": ""}, {}, {"api_key": 12}, {"key": "ak_test_default"}],
)
async def test_token_exchange_failure_uses_error_shape_not_envelope(client, body):
    response = await client.post("/api/v1/auth/token/client", json=body)
    assert response.status == 401
    payload = await response.json()
    assert set(payload) == {"error"}
    assert isinstance(payload["error"], str) and payload["error"]


async def test_token_exchange_with_malformed_json_keeps_error_shape(client):
    response = await client.post(
        "/api/v1/auth/token/client", data=b"{nope", headers={"Content-Type": "application/json"}
    )
    assert response.status == 400
    assert set(await response.json()) == {"error"}


async def test_each_exchange_issues_a_distinct_token(client):
    first = await login(client)
    second = await login(client)
    assert first.token != second.token
    assert (await first.call("GET", "/api/v1/account/balance"))[0] == 200
    assert (await second.call("GET", "/api/v1/account/balance"))[0] == 200


@pytest.mark.parametrize("prefix", ["/api/v1", "/v1"])
async def test_balance_in_major_units(merchant, prefix):
    status, body = await merchant.call("GET", f"{prefix}/account/balance")
    assert status == 200
    assert body == {"balance": 1000.0, "currency": "USD"}


@pytest.mark.parametrize("prefix", ["/api/v1", "/v1"])
async def test_account_me_shows_id_email_and_subscription(merchant, prefix):
    status, body = await merchant.call("GET", f"{prefix}/account/me")
    assert status == 200
    assert set(body) == {"id", "email", "has_active_subscription"}
    assert body["email"] == "merchant@example.com"
    assert body["has_active_subscription"] is False


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer not-a-token"},
        {"Authorization": "Basic YWs6eA=="},
        {"Authorization": "ak_test_default"},
    ],
)
@pytest.mark.parametrize(
    "method,path",
    [
        ("GET", "/api/v1/account/balance"),
        ("GET", "/v1/account/me"),
        ("POST", "/api/v1/orders"),
        ("GET", "/api/v1/orders/00000000-0000-4000-8000-000000000000"),
        ("POST", "/v1/orders/00000000-0000-4000-8000-000000000000/client-code"),
    ],
)
async def test_missing_or_invalid_token_is_not_authenticated(client, headers, method, path):
    response = await client.request(method, path, headers=headers, json={"item_id": 1001})
    assert response.status == 401
    body = await response.json()
    assert body["code"] == "not_authenticated"
    assert body["detail"]


async def test_api_key_is_not_a_bearer_token(client):
    response = await client.get(
        "/api/v1/account/balance", headers={"Authorization": "Bearer ak_test_default"}
    )
    assert response.status == 401


async def test_token_lives_two_hours_of_virtual_time(merchant):
    await merchant.advance(2 * 3600 - 1)
    assert (await merchant.call("GET", "/api/v1/account/balance"))[0] == 200
    await merchant.advance(1)
    status, body = await merchant.call("GET", "/api/v1/account/balance")
    assert status == 401
    assert body["code"] == "not_authenticated"


async def test_expired_token_does_not_create_orders(merchant):
    await merchant.advance(2 * 3600)
    status, _ = await merchant.create({"item_id": 1001})
    assert status == 401
    fresh = await login(merchant.client)
    assert await fresh.balance() == 1000.0
    orders = await (await merchant.client.get("/_mock/orders")).json()
    assert orders == {"orders": [], "total": 0}


async def test_bearer_scheme_is_case_insensitive(merchant):
    response = await merchant.client.get(
        "/api/v1/account/balance", headers={"Authorization": f"bearer {merchant.token}"}
    )
    assert response.status == 200
