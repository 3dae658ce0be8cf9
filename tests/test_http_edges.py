"""The HTTP edge: envelopes for unknown paths and methods, CORS, order lookup, plants."""

from __future__ import annotations

import pytest

from tests.conftest import login

ACCOUNTS_YAML = """\
accounts:
  - email: one@example.com
    api_key: ak_one
    balance: 100.00
    webhook_secret: whsec_one
  - email: two@example.com
    api_key: ak_two
    balance: 100.00
    webhook_secret: whsec_two
"""


async def test_unknown_path_is_not_found_envelope(client):
    response = await client.get("/api/v1/nothing-here")
    assert response.status == 404
    body = await response.json()
    assert body["code"] == "not_found"
    assert "/api/v1/nothing-here" in body["detail"]


async def test_wrong_method_is_an_envelope_too(merchant):
    response = await merchant.client.delete("/api/v1/orders", headers=merchant.auth)
    assert response.status == 405
    body = await response.json()
    assert body["code"] == "method_not_allowed"
    assert "POST" in response.headers["Allow"]


async def test_non_json_content_type_is_validation_error(merchant):
    response = await merchant.client.post(
        "/api/v1/orders",
        data="item_id=1001",
        headers={**merchant.auth, "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status == 400
    assert (await response.json())["code"] == "validation_error"


async def test_non_utf8_body_is_validation_error(merchant):
    response = await merchant.client.post(
        "/api/v1/orders",
        data=b'{"item_id": "\xff\xfe"}',
        headers={**merchant.auth, "Content-Type": "application/json"},
    )
    assert response.status == 400
    assert (await response.json())["code"] == "validation_error"


# -- CORS ----------------------------------------------------------------------------------


async def test_every_response_carries_cors_headers_errors_included(client):
    ok = await client.get("/_mock/health", headers={"Origin": "https://docs.example"})
    missing = await client.get("/nope", headers={"Origin": "https://docs.example"})
    denied = await client.get("/api/v1/account/balance", headers={"Origin": "https://x.example"})
    for response in (ok, missing, denied):
        assert response.headers["Access-Control-Allow-Origin"] == "*"


async def test_preflight_lists_authorization_explicitly(client):
    response = await client.options(
        "/api/v1/orders",
        headers={
            "Origin": "https://docs.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    assert response.status == 204
    allowed = {h.strip() for h in response.headers["Access-Control-Allow-Headers"].split(",")}
    assert {"Authorization", "Content-Type", "X-Mock-Scenario"} <= allowed
    assert "POST" in response.headers["Access-Control-Allow-Methods"]
    assert response.headers["Access-Control-Allow-Origin"] == "*"


async def test_cors_origin_setting_limits_allowed_origins(make_client):
    client = await make_client(cors_origin="https://docs.example")
    allowed = await client.get("/_mock/health", headers={"Origin": "https://docs.example"})
    other = await client.get("/_mock/health", headers={"Origin": "https://evil.example"})
    assert allowed.headers["Access-Control-Allow-Origin"] == "https://docs.example"
    assert "Access-Control-Allow-Origin" not in other.headers


# -- order lookup --------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["/api/v1", "/v1"])
async def test_order_lookup_under_both_prefixes(merchant, prefix):
    status, created = await merchant.create({"item_id": 1001})
    assert status == 201
    status, body = await merchant.call("GET", f"{prefix}/orders/{created['id']}")
    assert status == 200
    assert body == created


@pytest.mark.parametrize("order_id", ["not-a-uuid", "00000000-0000-4000-8000-000000000000"])
async def test_unknown_order_is_not_found(merchant, order_id):
    status, body = await merchant.call("GET", f"/api/v1/orders/{order_id}")
    assert status == 404
    assert body["code"] == "not_found"


async def test_another_accounts_order_is_not_found(make_client, tmp_path):
    accounts = tmp_path / "accounts.yaml"
    accounts.write_text(ACCOUNTS_YAML)
    client = await make_client(accounts=str(accounts))
    one, two = await login(client, "ak_one"), await login(client, "ak_two")
    status, created = await one.create({"item_id": 1001})
    assert status == 201
    status, body = await two.call("GET", f"/api/v1/orders/{created['id']}")
    assert status == 404
    assert body["code"] == "not_found"
    status, body = await two.call(
        "POST", f"/api/v1/orders/{created['id']}/client-code", json={"code": "1"}
    )
    assert status == 404


# -- plant demo ----------------------------------------------------------------------------


async def test_plant_update_returns_plant_response(client):
    response = await client.put(
        "/v3/plant", json={"id": 3, "name": "Sansevieria", "status": "sold", "tags": ["a"]}
    )
    assert response.status == 200
    assert await response.json() == {
        "id": 3,
        "name": "Sansevieria",
        "status": "sold",
        "tags": ["a"],
    }


async def test_plant_partial_update_keeps_other_fields(client):
    response = await client.put("/v3/plant", json={"id": 1, "status": "pending"})
    body = await response.json()
    assert response.status == 200
    assert body["name"] == "Monstera" and body["status"] == "pending"


@pytest.mark.parametrize("body", [{}, {"id": None}, {"id": "3"}, {"id": 2.5}, {"id": True}])
async def test_plant_without_integer_id_is_400(client, body):
    response = await client.put("/v3/plant", json=body)
    assert response.status == 400


async def test_unknown_plant_is_404(client):
    response = await client.put("/v3/plant", json={"id": 11, "name": "Cactus"})
    assert response.status == 404


@pytest.mark.parametrize("status", ["dead", None, "", "SOLD", 1, ["sold"]])
async def test_plant_status_outside_enum_is_400_and_changes_nothing(client, status):
    response = await client.put("/v3/plant", json={"id": 2, "name": "Changed", "status": status})
    assert response.status == 400
    after = await (await client.put("/v3/plant", json={"id": 2})).json()
    assert after["name"] == "Fiddle-leaf fig" and after["status"] == "available"
