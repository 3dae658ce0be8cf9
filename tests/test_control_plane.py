"""The control plane under `/_mock` (docs/control-api.md), driven through HTTP only:
accounts, API keys, the catalog, scenarios and their queue, faults, the request journal,
the ledger, reset and the admin token."""

from __future__ import annotations

import hashlib
import hmac
import json
from importlib import resources
from typing import Any

import pytest
from aiohttp import web

from tests.conftest import BUILTIN_SCENARIOS, login

CATALOG_IDS = [1001, 1002, 1003, 1004, 2001, 2002, 3001]
LOGIN_TOPUP = {
    "item_id": 2002,
    "quantity": 1,
    "fields": {"login_email": "player@example.com", "server": 1},
}
HAPPY_STEPS = [{"after": "1s", "status": "processing"}, {"after": "2s", "status": "completed"}]


# -- helpers -------------------------------------------------------------------------------


async def ctl(
    client: Any, method: str, path: str, body: Any = None, **kwargs: Any
) -> tuple[int, Any]:
    """One control-API call: (status, parsed JSON body)."""
    if body is not None:
        kwargs["json"] = body
    response = await client.request(method, path, **kwargs)
    return response.status, await response.json()


async def exchange(client: Any, api_key: str) -> tuple[int, Any]:
    response = await client.post("/api/v1/auth/token/client", json={"api_key": api_key})
    return response.status, await response.json()


async def me(merchant) -> dict[str, Any]:
    status, body = await merchant.call("GET", "/api/v1/account/me")
    assert status == 200, body
    return body


async def accounts(client: Any) -> list[dict[str, Any]]:
    status, body = await ctl(client, "GET", "/_mock/accounts")
    assert status == 200, body
    return body["accounts"]


async def catalog(client: Any) -> list[dict[str, Any]]:
    status, body = await ctl(client, "GET", "/_mock/catalog")
    assert status == 200, body
    return body["items"]


async def catalog_item(client: Any, item_id: int) -> dict[str, Any]:
    return next(item for item in await catalog(client) if item["id"] == item_id)


async def scenario_of(client: Any, order_id: str) -> str:
    status, body = await ctl(client, "GET", f"/_mock/orders/{order_id}")
    assert status == 200, body
    return body["scenario"]


async def scenario_names(client: Any) -> set[str]:
    status, body = await ctl(client, "GET", "/_mock/scenarios")
    assert status == 200, body
    return {s["name"] for s in body["scenarios"]}


async def placed(merchant, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    status, order = await merchant.create(body, **headers)
    assert status == 201, order
    return order


async def new_account(client: Any, **body: Any) -> dict[str, Any]:
    status, created = await ctl(client, "POST", "/_mock/accounts", body)
    assert status == 201, created
    return created


def assert_validation_error(status: int, body: Any) -> None:
    assert status == 400, body
    assert body["code"] == "validation_error", body
    assert body["detail"]


# -- accounts ------------------------------------------------------------------------------


async def test_default_account_id_is_the_same_in_control_api_account_me_and_orders(merchant):
    listed = await accounts(merchant.client)
    assert len(listed) == 1
    (account,) = listed
    assert account["email"] == "merchant@example.com"
    assert account["api_keys"] == ["ak_test_default"]
    assert account["balance"] == 1000.0
    assert account["has_active_subscription"] is False
    assert account["webhook_secret"] == "whsec_test_default"
    assert (await me(merchant))["id"] == account["id"]
    order = await placed(merchant, {"item_id": 1001})
    assert order["created_by"] == {"id": account["id"], "email": "merchant@example.com"}


async def test_read_one_account_by_id(client):
    (account,) = await accounts(client)
    status, body = await ctl(client, "GET", f"/_mock/accounts/{account['id']}")
    assert status == 200
    assert body == account


async def test_unknown_account_id_is_not_found(client):
    status, body = await ctl(client, "GET", "/_mock/accounts/00000000-0000-0000-0000-000000000000")
    assert status == 404
    assert body["code"] == "not_found"


async def test_created_account_gets_a_working_generated_key_and_secret(client):
    created = await new_account(client, email="shop@example.com", balance=50)
    assert created["email"] == "shop@example.com"
    assert created["balance"] == 50.0
    assert created["webhook_secret"].startswith("whsec_")
    (key,) = created["api_keys"]
    assert key.startswith("ak_")
    shop = await login(client, key)
    assert await shop.balance() == 50.0
    assert await me(shop) == {
        "id": created["id"],
        "email": "shop@example.com",
        "has_active_subscription": False,
    }
    order = await placed(shop, {"item_id": 1001})
    assert order["created_by"]["id"] == created["id"]
    assert len(await accounts(client)) == 2


async def test_created_account_response_names_its_api_key(client):
    created = await new_account(client, email="shop@example.com")
    assert created["api_key"].startswith("ak_")
    assert created["webhook_secret"].startswith("whsec_")


async def test_created_account_uses_the_given_key_email_and_secret(client):
    created = await new_account(
        client,
        email="given@example.com",
        api_key="ak_given_1",
        webhook_secret="whsec_given_1",
        balance=12.34,
        has_active_subscription=True,
    )
    assert created["api_keys"] == ["ak_given_1"]
    assert created["webhook_secret"] == "whsec_given_1"
    assert created["balance"] == 12.34
    assert created["has_active_subscription"] is True
    shop = await login(client, "ak_given_1")
    assert (await me(shop))["email"] == "given@example.com"
    assert await shop.balance() == 12.34


@pytest.mark.parametrize(
    "body",
    [
        {"email": "merchant@example.com"},
        {"email": "other@example.com", "api_key": "ak_test_default"},
    ],
    ids=["existing-email", "existing-api-key"],
)
async def test_creating_an_account_that_exists_is_a_conflict(client, body):
    status, answer = await ctl(client, "POST", "/_mock/accounts", body)
    assert status == 409, answer
    assert answer["code"] == "already_exists"
    assert len(await accounts(client)) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"email": "not-an-email"},
        {"email": "shop@example.com", "api_key": "key_without_prefix"},
        {"email": "shop@example.com", "webhook_secret": "secret_without_prefix"},
        {"email": "shop@example.com", "nickname": "shop"},
        {"email": "shop@example.com", "balance": -1},
        {"email": "shop@example.com", "balance": "10"},
        {},
    ],
    ids=[
        "bad-email",
        "key-without-ak_",
        "secret-without-whsec_",
        "unknown-key",
        "negative-balance",
        "string-balance",
        "no-email",
    ],
)
async def test_invalid_account_body_is_refused_and_creates_nothing(client, body):
    before = await accounts(client)
    status, answer = await ctl(client, "POST", "/_mock/accounts", body)
    assert_validation_error(status, answer)
    assert await accounts(client) == before
    if "api_key" in body:
        assert (await exchange(client, body["api_key"]))[0] == 401


async def test_patched_balance_is_seen_by_the_merchant_and_ledgered_as_adjustment(merchant):
    account_id = (await me(merchant))["id"]
    status, body = await ctl(
        merchant.client, "PATCH", f"/_mock/accounts/{account_id}", {"balance": 250.5}
    )
    assert status == 200, body
    assert body["balance"] == 250.5
    assert await merchant.balance() == 250.5
    _, ledger = await ctl(merchant.client, "GET", f"/_mock/accounts/{account_id}/ledger")
    assert [
        (e["kind"], e["amount"], e["balance_after"], e["order_id"]) for e in ledger["entries"]
    ] == [("adjustment", -749.5, 250.5, None)]
    assert ledger["conserved"] is True


async def test_patched_subscription_switches_later_orders_to_subscriber_price(merchant):
    account_id = (await me(merchant))["id"]
    before = await placed(merchant, {"item_id": 1001})
    assert before["price"] == 20.0
    status, body = await ctl(
        merchant.client,
        "PATCH",
        f"/_mock/accounts/{account_id}",
        {"has_active_subscription": True},
    )
    assert status == 200, body
    assert (await me(merchant))["has_active_subscription"] is True
    after = await placed(merchant, {"item_id": 1001, "quantity": 2})
    assert after["price"] == 39.2
    assert await merchant.balance() == 1000.0 - 20.0 - 39.2
    assert (await merchant.order(before["id"]))["price"] == 20.0


async def test_patched_webhook_url_secret_and_headers_shape_the_next_delivery(
    merchant, aiohttp_server
):
    received: list[tuple[dict[str, str], bytes]] = []

    async def hook(request: web.Request) -> web.Response:
        received.append((dict(request.headers), await request.read()))
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/hooks", hook)
    server = await aiohttp_server(app, host="127.0.0.1", port=0)
    url = str(server.make_url("/hooks"))
    account_id = (await me(merchant))["id"]
    change = {
        "webhook_url": url,
        "webhook_secret": "whsec_rotated_1",
        "signature_headers": ["X-Shop-Signature"],
    }
    status, body = await ctl(merchant.client, "PATCH", f"/_mock/accounts/{account_id}", change)
    assert status == 200, body
    assert body["webhook_url"] == url
    assert body["webhook_secret"] == "whsec_rotated_1"
    assert body["signature_headers"] == ["X-Shop-Signature"]
    _, read_back = await ctl(merchant.client, "GET", f"/_mock/accounts/{account_id}")
    assert read_back == body

    order = await placed(merchant, {"item_id": 1001})
    await merchant.advance(3)
    assert len(received) == 1
    headers, raw = received[0]
    expected = hmac.new(b"whsec_rotated_1", raw, hashlib.sha256).hexdigest()
    assert headers["X-Shop-Signature"] == f"sha256={expected}"
    assert "X-Webhook-Signature" not in headers
    assert "X-Signature" not in headers
    assert json.loads(raw)["order_id"] == order["id"]


@pytest.mark.parametrize(
    "change",
    [
        {"email": "renamed@example.com"},
        {"api_key": "ak_other"},
        {"balance": -5},
        {"balance": "100"},
        {"balance": 1.005},
        {"has_active_subscription": "yes"},
        {"webhook_url": "ftp://example.com/hooks"},
        {"webhook_secret": "not_a_secret"},
        {"signature_headers": ["Bad Header"]},
        {"signature_headers": "X-Signature"},
    ],
    ids=[
        "email-unchangeable",
        "api_key-unchangeable",
        "negative-balance",
        "string-balance",
        "three-decimals",
        "non-bool-subscription",
        "non-http-url",
        "secret-without-whsec_",
        "bad-header-name",
        "headers-not-a-list",
    ],
)
async def test_invalid_account_patch_is_refused_and_changes_nothing(merchant, change):
    account_id = (await me(merchant))["id"]
    (before,) = await accounts(merchant.client)
    status, body = await ctl(merchant.client, "PATCH", f"/_mock/accounts/{account_id}", change)
    assert_validation_error(status, body)
    assert await accounts(merchant.client) == [before]


async def test_patch_with_valid_balance_and_invalid_secret_leaves_balance_untouched(merchant):
    account_id = (await me(merchant))["id"]
    status, body = await ctl(
        merchant.client,
        "PATCH",
        f"/_mock/accounts/{account_id}",
        {"balance": 5, "webhook_secret": "plain-secret"},
    )
    assert_validation_error(status, body)
    assert await merchant.balance() == 1000.0
    (account,) = await accounts(merchant.client)
    assert account["webhook_secret"] == "whsec_test_default"
    _, ledger = await ctl(merchant.client, "GET", f"/_mock/accounts/{account_id}/ledger")
    assert ledger["entries"] == []


async def test_patching_an_unknown_account_is_not_found(client):
    status, body = await ctl(
        client, "PATCH", "/_mock/accounts/00000000-0000-0000-0000-000000000000", {"balance": 1}
    )
    assert status == 404
    assert body["code"] == "not_found"


async def test_put_accounts_replaces_every_account(merchant):
    document = {
        "accounts": [
            {
                "email": "shop@example.com",
                "api_key": "ak_shop_1",
                "balance": 250.0,
                "has_active_subscription": False,
                "webhook_secret": "whsec_shop_1",
                "id": "7d0c2d4e-5b1a-4f0e-9a51-2c3b4d5e6f70",
                "signature_headers": ["X-Webhook-Signature", "X-Signature"],
            },
            {"email": "second@example.com", "api_keys": ["ak_second_1", "ak_second_2"]},
        ]
    }
    status, body = await ctl(merchant.client, "PUT", "/_mock/accounts", document)
    assert status == 200, body
    assert [a["email"] for a in body["accounts"]] == ["shop@example.com", "second@example.com"]
    listed = await accounts(merchant.client)
    assert listed == body["accounts"]
    assert listed[0]["id"] == "7d0c2d4e-5b1a-4f0e-9a51-2c3b4d5e6f70"

    status, answer = await exchange(merchant.client, "ak_test_default")
    assert status == 401
    assert "error" in answer
    old_token = await merchant.call("GET", "/api/v1/account/balance")
    assert old_token[0] == 401
    assert old_token[1]["code"] == "not_authenticated"

    shop = await login(merchant.client, "ak_shop_1")
    assert await me(shop) == {
        "id": "7d0c2d4e-5b1a-4f0e-9a51-2c3b4d5e6f70",
        "email": "shop@example.com",
        "has_active_subscription": False,
    }
    assert await shop.balance() == 250.0
    second = await login(merchant.client, "ak_second_2")
    assert await second.balance() == 0.0


@pytest.mark.parametrize(
    "document",
    [
        {"accounts": [{"email": "shop@example.com", "api_key": "no_prefix"}]},
        {"accounts": []},
        {
            "accounts": [
                {"email": "a@example.com", "api_key": "ak_a"},
                {"email": "a@example.com", "api_key": "ak_b"},
            ]
        },
        [{"email": "shop@example.com", "api_key": "ak_shop_1"}],
    ],
    ids=["bad-key", "empty", "duplicate-email", "not-a-document"],
)
async def test_put_invalid_accounts_document_keeps_the_old_accounts(merchant, document):
    before = await accounts(merchant.client)
    status, body = await ctl(merchant.client, "PUT", "/_mock/accounts", document)
    assert_validation_error(status, body)
    assert await accounts(merchant.client) == before
    assert await merchant.balance() == 1000.0


async def test_put_accounts_with_an_existing_id_starts_a_conserved_ledger(merchant):
    account_id = (await me(merchant))["id"]
    await placed(merchant, {"item_id": 1001})
    await merchant.advance(3)
    document = {
        "accounts": [
            {"email": "again@example.com", "api_key": "ak_again", "id": account_id, "balance": 100}
        ]
    }
    status, body = await ctl(merchant.client, "PUT", "/_mock/accounts", document)
    assert status == 200, body
    status, ledger = await ctl(merchant.client, "GET", f"/_mock/accounts/{account_id}/ledger")
    assert status == 200
    assert ledger["balance"] == 100.0
    assert ledger["conserved"] is True


# -- API keys ------------------------------------------------------------------------------


async def test_issued_api_key_exchanges_for_a_working_token(merchant):
    account_id = (await me(merchant))["id"]
    status, body = await ctl(merchant.client, "POST", f"/_mock/accounts/{account_id}/api-keys")
    assert status == 201, body
    assert body["account_id"] == account_id
    key = body["api_key"]
    assert key.startswith("ak_") and key != "ak_test_default"
    second = await login(merchant.client, key)
    assert (await me(second))["id"] == account_id
    assert await second.balance() == 1000.0
    (account,) = await accounts(merchant.client)
    assert account["api_keys"] == ["ak_test_default", key]


async def test_issuing_a_key_for_an_unknown_account_is_not_found(client):
    status, body = await ctl(
        client, "POST", "/_mock/accounts/00000000-0000-0000-0000-000000000000/api-keys"
    )
    assert status == 404
    assert body["code"] == "not_found"


async def test_revoked_key_no_longer_exchanges_and_its_tokens_stop_working(merchant):
    account_id = (await me(merchant))["id"]
    _, issued = await ctl(merchant.client, "POST", f"/_mock/accounts/{account_id}/api-keys")
    doomed = await login(merchant.client, issued["api_key"])
    assert await doomed.balance() == 1000.0

    status, body = await ctl(merchant.client, "DELETE", f"/_mock/api-keys/{issued['api_key']}")
    assert status == 200, body

    status, answer = await exchange(merchant.client, issued["api_key"])
    assert status == 401
    assert set(answer) == {"error"}
    status, answer = await doomed.call("GET", "/api/v1/account/balance")
    assert status == 401
    assert answer["code"] == "not_authenticated"
    # The other key of the same account, and its token, are untouched.
    assert await merchant.balance() == 1000.0
    assert (await exchange(merchant.client, "ak_test_default"))[0] == 200
    (account,) = await accounts(merchant.client)
    assert account["api_keys"] == ["ak_test_default"]


async def test_revoking_an_unknown_key_is_not_found(merchant):
    status, body = await ctl(merchant.client, "DELETE", "/_mock/api-keys/ak_nobody")
    assert status == 404
    assert body["code"] == "not_found"
    assert await merchant.balance() == 1000.0


# -- catalog -------------------------------------------------------------------------------


async def test_catalog_is_served_in_the_feed_format(client):
    items = await catalog(client)
    assert [item["id"] for item in items] == CATALOG_IDS
    embedded = json.loads(
        (resources.files("mock_server") / "data" / "catalog.json").read_text("utf-8")
    )
    assert {"items": items} == embedded


async def test_patched_price_changes_the_next_charge(merchant):
    status, body = await ctl(merchant.client, "PATCH", "/_mock/catalog/items/1001", {"price": 2500})
    assert status == 200, body
    assert body["price"] == 2500
    assert (await catalog_item(merchant.client, 1001))["price"] == 2500
    order = await placed(merchant, {"item_id": 1001})
    assert order["price"] == 25.0
    assert await merchant.balance() == 975.0


async def test_item_patched_out_of_stock_cannot_be_ordered(merchant):
    status, _ = await ctl(
        merchant.client, "PATCH", "/_mock/catalog/items/1001", {"in_stock": False}
    )
    assert status == 200
    status, body = await merchant.create({"item_id": 1001})
    assert_validation_error(status, body)
    assert body["detail"] == "Item is not available"
    assert await merchant.balance() == 1000.0


async def test_patched_stock_limits_deliveries(merchant):
    status, _ = await ctl(merchant.client, "PATCH", "/_mock/catalog/items/1001", {"stock": 1})
    assert status == 200
    order = await placed(merchant, {"item_id": 1001, "quantity": 3})
    await merchant.advance(3)
    settled = await merchant.order(order["id"])
    assert settled["status"] == "partial"
    assert settled["delivered_quantity"] == 1
    assert len(settled["codes"]) == 1
    assert settled["refund_amount"] == 40.0
    assert await merchant.balance() == 980.0
    assert (await catalog_item(merchant.client, 1001))["stock"] == 0
    status, body = await merchant.create({"item_id": 1001})
    assert status == 400
    assert body["detail"] == "Item is not available"


@pytest.mark.parametrize(
    ("path", "change", "expected"),
    [
        ("/_mock/catalog/items/1001", {"price": -1}, 400),
        ("/_mock/catalog/items/1001", {"price": 19.99}, 400),
        ("/_mock/catalog/items/1001", {"stock": -1}, 400),
        ("/_mock/catalog/items/1001", {"in_stock": "no"}, 400),
        ("/_mock/catalog/items/1001", {"name": "Renamed"}, 400),
        ("/_mock/catalog/items/1001", {"price": 2500, "colour": "red"}, 400),
        ("/_mock/catalog/items/2001", {"stock": 5}, 400),
        ("/_mock/catalog/items/abc", {"price": 2500}, 400),
        ("/_mock/catalog/items/9999", {"price": 2500}, 404),
    ],
    ids=[
        "negative-price",
        "decimal-price",
        "negative-stock",
        "non-bool-in_stock",
        "unchangeable-key",
        "valid-plus-unknown-key",
        "stock-on-topup",
        "non-integer-id",
        "unknown-item",
    ],
)
async def test_invalid_item_patch_is_refused_and_changes_nothing(client, path, change, expected):
    before = await catalog(client)
    status, body = await ctl(client, "PATCH", path, change)
    assert status == expected, body
    assert body["code"] == ("not_found" if expected == 404 else "validation_error")
    assert await catalog(client) == before


async def test_put_catalog_replaces_the_whole_catalog(merchant):
    feed = {"items": [{"id": 42, "name": "Tiny Key", "product_type": "key", "price": 500}]}
    status, body = await ctl(merchant.client, "PUT", "/_mock/catalog", feed)
    assert status == 200, body
    items = await catalog(merchant.client)
    assert [item["id"] for item in items] == [42]
    assert body["items"] == items
    order = await placed(merchant, {"item_id": 42, "quantity": 2})
    assert order["price"] == 10.0
    status, answer = await merchant.create({"item_id": 1001})
    assert_validation_error(status, answer)


async def test_put_catalog_accepts_a_bare_list_of_items(client):
    feed = [{"id": 7, "name": "Bare", "product_type": "service", "price": 100}]
    status, body = await ctl(client, "PUT", "/_mock/catalog", feed)
    assert status == 200, body
    assert [item["id"] for item in await catalog(client)] == [7]


async def test_put_invalid_catalog_names_the_item_and_keeps_the_old_one(merchant):
    before = await catalog(merchant.client)
    feed = {
        "items": [
            {"id": 42, "name": "Fine", "product_type": "key", "price": 500},
            {"id": 43, "name": "Broken", "product_type": "gift", "price": 500},
        ]
    }
    status, body = await ctl(merchant.client, "PUT", "/_mock/catalog", feed)
    assert_validation_error(status, body)
    assert "item 2" in body["detail"]
    assert "product_type" in body["detail"]
    assert await catalog(merchant.client) == before
    assert (await placed(merchant, {"item_id": 1001}))["price"] == 20.0


# -- scenarios -----------------------------------------------------------------------------


async def test_builtin_scenarios_are_listed_with_descriptions(client):
    status, body = await ctl(client, "GET", "/_mock/scenarios")
    assert status == 200
    assert {s["name"] for s in body["scenarios"]} == set(BUILTIN_SCENARIOS)
    assert len(body["scenarios"]) == 10
    assert all(s["description"].strip() for s in body["scenarios"])
    assert body["queue"] == []


async def test_loaded_json_scenario_is_selectable_by_header(merchant):
    document = {
        "scenarios": [
            {
                "name": "quick_fail",
                "description": "Fails at once.",
                "steps": [{"after": "1s", "status": "failed", "error": "OUT_OF_STOCK"}],
            }
        ]
    }
    status, body = await ctl(merchant.client, "POST", "/_mock/scenarios", document)
    assert status == 201, body
    assert body == {"loaded": ["quick_fail"]}
    assert "quick_fail" in await scenario_names(merchant.client)
    order = await placed(merchant, {"item_id": 1001}, **{"X-Mock-Scenario": "quick_fail"})
    assert await scenario_of(merchant.client, order["id"]) == "quick_fail"
    await merchant.advance(1)
    settled = await merchant.order(order["id"])
    assert settled["status"] == "failed"
    assert settled["error"] == "OUT_OF_STOCK"
    assert await merchant.balance() == 1000.0


async def test_loaded_yaml_scenario_is_selectable_by_header(merchant):
    text = (
        "scenarios:\n"
        "  - name: yaml_slow\n"
        "    description: Loaded as YAML.\n"
        "    steps:\n"
        "      - after: 10s\n"
        "        status: processing\n"
        "      - after: 10s\n"
        "        status: completed\n"
    )
    response = await merchant.client.post(
        "/_mock/scenarios", data=text, headers={"Content-Type": "application/yaml"}
    )
    assert response.status == 201, await response.text()
    assert await response.json() == {"loaded": ["yaml_slow"]}
    order = await placed(merchant, {"item_id": 1001}, **{"X-Mock-Scenario": "yaml_slow"})
    assert await scenario_of(merchant.client, order["id"]) == "yaml_slow"
    await merchant.advance(10)
    assert (await merchant.order(order["id"]))["status"] == "processing"
    await merchant.advance(10)
    assert (await merchant.order(order["id"]))["status"] == "completed"


async def test_invalid_yaml_scenario_is_refused_with_its_line_and_nothing_is_loaded(client):
    text = (
        "scenarios:\n"
        "  - name: good_one\n"
        "    steps:\n"
        "      - status: completed\n"
        "  - name: back_to_pending\n"
        "    steps:\n"
        "      - after: 1s\n"
        "        status: pending\n"
    )
    response = await client.post(
        "/_mock/scenarios", data=text, headers={"Content-Type": "application/yaml"}
    )
    body = await response.json()
    assert_validation_error(response.status, body)
    assert ":8:" in body["detail"], body
    assert "pending" in body["detail"]
    assert await scenario_names(client) == set(BUILTIN_SCENARIOS)


async def test_invalid_json_scenario_is_refused_and_nothing_is_loaded(client):
    document = {
        "scenarios": [
            {"name": "good_one", "steps": [{"status": "completed"}]},
            {"name": "back_to_pending", "steps": [{"after": "1s", "status": "pending"}]},
        ]
    }
    status, body = await ctl(client, "POST", "/_mock/scenarios", document)
    assert_validation_error(status, body)
    assert "pending" in body["detail"]
    assert await scenario_names(client) == set(BUILTIN_SCENARIOS)


async def test_queued_scenario_applies_to_the_next_count_orders_then_default(merchant):
    status, body = await ctl(
        merchant.client,
        "POST",
        "/_mock/scenarios/next",
        {"scenario": "failed_out_of_stock", "count": 2},
    )
    assert status == 201, body
    assert body == {"scenario": "failed_out_of_stock", "account_id": None, "remaining": 2}
    first = await placed(merchant, {"item_id": 1001})
    _, listing = await ctl(merchant.client, "GET", "/_mock/scenarios")
    assert listing["queue"] == [
        {"scenario": "failed_out_of_stock", "account_id": None, "remaining": 1}
    ]
    second = await placed(merchant, {"item_id": 1001})
    third = await placed(merchant, {"item_id": 1001})
    assert [await scenario_of(merchant.client, o["id"]) for o in (first, second, third)] == [
        "failed_out_of_stock",
        "failed_out_of_stock",
        "happy_path",
    ]
    _, listing = await ctl(merchant.client, "GET", "/_mock/scenarios")
    assert listing["queue"] == []
    await merchant.advance(3)
    statuses = [(await merchant.order(o["id"]))["status"] for o in (first, second, third)]
    assert statuses == ["failed", "failed", "completed"]


async def test_queue_entry_with_account_id_applies_only_to_that_account(merchant):
    created = await new_account(merchant.client, email="second@example.com", balance=100)
    other = await login(merchant.client, created["api_keys"][0])
    status, body = await ctl(
        merchant.client,
        "POST",
        "/_mock/scenarios/next",
        {"scenario": "slow_fulfillment", "account_id": created["id"]},
    )
    assert status == 201, body
    assert body["account_id"] == created["id"]
    mine = await placed(merchant, {"item_id": 1001})
    theirs = await placed(other, {"item_id": 1001})
    after = await placed(other, {"item_id": 1001})
    assert await scenario_of(merchant.client, mine["id"]) == "happy_path"
    assert await scenario_of(merchant.client, theirs["id"]) == "slow_fulfillment"
    assert await scenario_of(merchant.client, after["id"]) == "happy_path"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"scenario": "no_such_scenario"}, 400),
        ({}, 400),
        ({"scenario": "happy_path", "count": 0}, 400),
        ({"scenario": "happy_path", "count": "2"}, 400),
        ({"scenario": "happy_path", "account_id": "00000000-0000-0000-0000-000000000000"}, 404),
    ],
    ids=["unknown-scenario", "no-scenario", "zero-count", "string-count", "unknown-account"],
)
async def test_invalid_queue_request_is_refused_and_queues_nothing(client, body, expected):
    status, answer = await ctl(client, "POST", "/_mock/scenarios/next", body)
    assert status == expected, answer
    assert answer["code"] == ("not_found" if expected == 404 else "validation_error")
    _, listing = await ctl(client, "GET", "/_mock/scenarios")
    assert listing["queue"] == []


async def test_unknown_queued_scenario_error_lists_the_known_names(client):
    status, answer = await ctl(client, "POST", "/_mock/scenarios/next", {"scenario": "nope"})
    assert status == 400
    assert "happy_path" in answer["detail"]


async def test_refused_order_does_not_consume_the_queue(merchant):
    account_id = (await me(merchant))["id"]
    await ctl(merchant.client, "POST", "/_mock/scenarios/next", {"scenario": "failed_out_of_stock"})
    await ctl(merchant.client, "PATCH", f"/_mock/accounts/{account_id}", {"balance": 1})
    status, body = await merchant.create({"item_id": 1001})
    assert status == 400
    assert body["code"] == "insufficient_balance"
    status, body = await merchant.create({"item_id": 999999})
    assert_validation_error(status, body)
    _, listing = await ctl(merchant.client, "GET", "/_mock/scenarios")
    assert listing["queue"][0]["remaining"] == 1
    await ctl(merchant.client, "PATCH", f"/_mock/accounts/{account_id}", {"balance": 100})
    order = await placed(merchant, {"item_id": 1001})
    assert await scenario_of(merchant.client, order["id"]) == "failed_out_of_stock"


async def _load_matching_scenario(client: Any) -> None:
    document = {
        "scenarios": [
            {
                "name": "matched",
                "description": "Chosen for merchant_order_id auto-*.",
                "match": {"merchant_order_id": "^auto-"},
                "steps": HAPPY_STEPS,
            }
        ]
    }
    status, body = await ctl(client, "POST", "/_mock/scenarios", document)
    assert status == 201, body


async def test_header_beats_queue_and_leaves_it_for_the_next_order(merchant):
    await ctl(merchant.client, "POST", "/_mock/scenarios/next", {"scenario": "failed_out_of_stock"})
    forced = await placed(merchant, {"item_id": 1001}, **{"X-Mock-Scenario": "slow_fulfillment"})
    queued = await placed(merchant, {"item_id": 1001})
    assert await scenario_of(merchant.client, forced["id"]) == "slow_fulfillment"
    assert await scenario_of(merchant.client, queued["id"]) == "failed_out_of_stock"


async def test_queue_beats_match(merchant):
    await _load_matching_scenario(merchant.client)
    await ctl(merchant.client, "POST", "/_mock/scenarios/next", {"scenario": "failed_out_of_stock"})
    queued = await placed(merchant, {"item_id": 1001, "merchant_order_id": "auto-1"})
    matched = await placed(merchant, {"item_id": 1001, "merchant_order_id": "auto-2"})
    unmatched = await placed(merchant, {"item_id": 1001, "merchant_order_id": "manual-3"})
    assert await scenario_of(merchant.client, queued["id"]) == "failed_out_of_stock"
    assert await scenario_of(merchant.client, matched["id"]) == "matched"
    assert await scenario_of(merchant.client, unmatched["id"]) == "happy_path"


async def test_header_beats_match(merchant):
    await _load_matching_scenario(merchant.client)
    order = await placed(
        merchant,
        {"item_id": 1001, "merchant_order_id": "auto-1"},
        **{"X-Mock-Scenario": "timeout_partial"},
    )
    assert await scenario_of(merchant.client, order["id"]) == "timeout_partial"


async def test_match_beats_the_client_code_default_of_an_item(merchant):
    await _load_matching_scenario(merchant.client)
    matched = await placed(merchant, {**LOGIN_TOPUP, "merchant_order_id": "auto-1"})
    plain = await placed(merchant, {**LOGIN_TOPUP, "merchant_order_id": "manual-2"})
    assert await scenario_of(merchant.client, matched["id"]) == "matched"
    assert await scenario_of(merchant.client, plain["id"]) == "need_client_code"
    await merchant.advance(3)
    assert (await merchant.order(matched["id"]))["status"] == "completed"
    assert (await merchant.order(plain["id"]))["status"] == "need_client_code"


async def test_client_code_item_alone_gets_need_client_code(merchant):
    order = await placed(merchant, LOGIN_TOPUP)
    assert await scenario_of(merchant.client, order["id"]) == "need_client_code"
    other = await placed(merchant, {"item_id": 1001})
    assert await scenario_of(merchant.client, other["id"]) == "happy_path"


# -- faults --------------------------------------------------------------------------------


async def test_fault_answers_times_times_in_the_envelope_then_clears_itself(merchant):
    fault = {"method": "GET", "path": "/api/v1/account/balance", "status": 503, "times": 2}
    status, body = await ctl(merchant.client, "POST", "/_mock/faults", fault)
    assert status == 201, body
    assert body["status"] == 503 and body["times"] == 2
    for _ in range(2):
        status, answer = await merchant.call("GET", "/api/v1/account/balance")
        assert status == 503
        assert set(answer) == {"detail", "code"}
    assert await merchant.balance() == 1000.0
    _, listing = await ctl(merchant.client, "GET", "/_mock/faults")
    assert listing == {"faults": []}
    _, journal = await ctl(merchant.client, "GET", "/_mock/requests?limit=3")
    assert [call["status"] for call in journal["requests"]] == [200, 503, 503]


async def test_fault_matches_only_its_method_and_path(merchant):
    await ctl(
        merchant.client,
        "POST",
        "/_mock/faults",
        {"method": "GET", "path": "/api/v1/account/balance", "status": 500},
    )
    assert (await merchant.call("GET", "/api/v1/account/me"))[0] == 200
    assert (await merchant.call("GET", "/v1/account/balance"))[0] == 200
    assert (await merchant.call("GET", "/api/v1/account/balance"))[0] == 500


async def test_faults_are_listed_and_cleared(merchant):
    first = {"method": "GET", "path": "/api/v1/account/balance", "status": 503, "times": 2}
    second = {"path": "/api/v1/orders", "status": 502}
    await ctl(merchant.client, "POST", "/_mock/faults", first)
    await ctl(merchant.client, "POST", "/_mock/faults", second)
    status, listing = await ctl(merchant.client, "GET", "/_mock/faults")
    assert status == 200
    shown = [
        {k: f[k] for k in ("method", "path", "status", "times", "after_commit")}
        for f in listing["faults"]
    ]
    assert shown == [
        {**first, "after_commit": False},
        {
            "method": "*",
            "path": "/api/v1/orders",
            "status": 502,
            "times": None,
            "after_commit": False,
        },
    ]
    status, body = await ctl(merchant.client, "DELETE", "/_mock/faults")
    assert status == 200
    assert body == {"faults": []}
    assert (await ctl(merchant.client, "GET", "/_mock/faults"))[1] == {"faults": []}
    assert await merchant.balance() == 1000.0


async def test_fault_path_is_an_fnmatch_pattern(merchant):
    await ctl(
        merchant.client,
        "POST",
        "/_mock/faults",
        {"method": "GET", "path": "/api/v1/orders/*", "status": 502},
    )
    order = await placed(merchant, {"item_id": 1001})
    status, body = await merchant.call("GET", f"/api/v1/orders/{order['id']}")
    assert status == 502
    assert set(body) == {"detail", "code"}
    status, _ = await merchant.call("GET", "/api/v1/orders/another-id")
    assert status == 502


async def test_after_commit_fault_creates_and_charges_then_retry_is_rejected(merchant):
    """Spec 7: a 5xx may come after the order was created; the retry with the same
    merchant_order_id is refused (rule 5) instead of creating a duplicate."""
    await ctl(
        merchant.client,
        "POST",
        "/_mock/faults",
        {
            "method": "POST",
            "path": "/api/v1/orders",
            "status": 500,
            "times": 1,
            "after_commit": True,
        },
    )
    body = {"item_id": 1001, "merchant_order_id": "retry-me"}
    status, answer = await merchant.create(body)
    assert status == 500
    assert set(answer) == {"detail", "code"}

    _, listing = await ctl(merchant.client, "GET", "/_mock/orders?merchant_order_id=retry-me")
    (order,) = listing["orders"]
    assert order["price"] == 20.0
    assert await merchant.balance() == 980.0

    status, answer = await merchant.create(body)
    assert_validation_error(status, answer)
    _, listing = await ctl(merchant.client, "GET", "/_mock/orders")
    assert len(listing["orders"]) == 1
    assert await merchant.balance() == 980.0
    assert (await merchant.order(order["id"]))["merchant_order_id"] == "retry-me"


async def test_fault_without_after_commit_creates_nothing(merchant):
    await ctl(
        merchant.client,
        "POST",
        "/_mock/faults",
        {"method": "POST", "path": "/api/v1/orders", "status": 500, "times": 1},
    )
    body = {"item_id": 1001, "merchant_order_id": "never-made"}
    assert (await merchant.create(body))[0] == 500
    assert (await ctl(merchant.client, "GET", "/_mock/orders"))[1] == {"orders": [], "total": 0}
    assert await merchant.balance() == 1000.0
    assert (await merchant.create(body))[0] == 201


@pytest.mark.parametrize(
    "fault",
    [
        {"path": "/_mock/health", "status": 500},
        {"path": "/_mock/*", "status": 500},
        {"path": "/api/v1/orders", "status": 200},
        {"path": "/api/v1/orders", "status": 600},
        {"path": "/api/v1/orders", "status": "500"},
        {"path": "/api/v1/orders", "status": 500, "times": 0},
        {"path": "/api/v1/orders", "status": 500, "colour": "red"},
        {"path": "/api/v1/orders", "status": 500, "after_commit": "yes"},
        {"path": "/api/v1/orders", "status": 500, "latency_ms": -1},
        {"path": "api/v1/orders", "status": 500},
        {"status": 500},
    ],
    ids=[
        "control-path",
        "control-pattern",
        "status-200",
        "status-600",
        "string-status",
        "times-0",
        "unknown-key",
        "non-bool-after_commit",
        "negative-latency",
        "relative-path",
        "no-path",
    ],
)
async def test_invalid_fault_is_refused_and_installs_nothing(merchant, fault):
    status, body = await ctl(merchant.client, "POST", "/_mock/faults", fault)
    assert_validation_error(status, body)
    assert (await ctl(merchant.client, "GET", "/_mock/faults"))[1] == {"faults": []}
    assert (await placed(merchant, {"item_id": 1001}))["status"] == "pending"


# -- request journal -----------------------------------------------------------------------


async def test_journal_lists_merchant_calls_newest_first(merchant):
    await merchant.balance()
    await merchant.advance(5)
    sent = {"item_id": 1001, "merchant_order_id": "journal-1"}
    await placed(merchant, sent)
    await ctl(merchant.client, "GET", "/_mock/orders")
    status, body = await ctl(merchant.client, "GET", "/_mock/requests")
    assert status == 200
    calls = body["requests"]
    assert [(c["method"], c["path"], c["status"]) for c in calls] == [
        ("POST", "/api/v1/orders", 201),
        ("GET", "/api/v1/account/balance", 200),
        ("POST", "/api/v1/auth/token/client", 200),
    ]
    assert json.loads(calls[0]["body"]) == sent
    assert calls[1]["body"] == ""
    assert json.loads(calls[2]["body"]) == {"api_key": "ak_test_default"}
    assert calls[0]["time"] == "2026-01-01T00:00:05.000Z"
    assert calls[1]["time"] == "2026-01-01T00:00:00.000Z"
    assert set(calls[0]) >= {"method", "path", "status", "body", "time"}


async def test_journal_keeps_refused_calls_with_their_status(merchant):
    await merchant.create({"item_id": 999999})
    _, body = await ctl(merchant.client, "GET", "/_mock/requests?limit=1")
    (call,) = body["requests"]
    assert (call["method"], call["path"], call["status"]) == ("POST", "/api/v1/orders", 400)


async def test_journal_limit_returns_the_newest_calls(merchant):
    await merchant.balance()
    await merchant.call("GET", "/api/v1/account/me")
    status, body = await ctl(merchant.client, "GET", "/_mock/requests?limit=1")
    assert status == 200
    assert [c["path"] for c in body["requests"]] == ["/api/v1/account/me"]
    _, body = await ctl(merchant.client, "GET", "/_mock/requests?limit=0")
    assert body["requests"] == []


async def test_control_calls_are_not_journaled(client):
    await ctl(client, "GET", "/_mock/accounts")
    await ctl(client, "GET", "/_mock/catalog")
    await ctl(client, "POST", "/_mock/clock/advance", {"seconds": 1})
    await ctl(client, "GET", "/_mock/requests")
    _, body = await ctl(client, "GET", "/_mock/requests")
    assert body == {"requests": []}


async def test_journal_keeps_only_the_newest_journal_size_calls(make_client):
    client = await make_client(journal_size=3)
    merchant = await login(client)
    await merchant.balance()
    await merchant.call("GET", "/api/v1/account/me")
    await merchant.call("GET", "/v1/account/balance")
    await merchant.call("GET", "/v1/account/me")
    _, body = await ctl(client, "GET", "/_mock/requests")
    assert [c["path"] for c in body["requests"]] == [
        "/v1/account/me",
        "/v1/account/balance",
        "/api/v1/account/me",
    ]


@pytest.mark.parametrize("limit", ["abc", "-1", "1.5", ""])
async def test_journal_refuses_a_bad_limit(client, limit):
    status, body = await ctl(client, "GET", f"/_mock/requests?limit={limit}")
    assert_validation_error(status, body)


# -- ledger --------------------------------------------------------------------------------


async def test_ledger_records_charge_refund_and_adjustment_and_is_conserved(merchant):
    account_id = (await me(merchant))["id"]
    order = await placed(
        merchant, {"item_id": 1001, "quantity": 4}, **{"X-Mock-Scenario": "timeout_partial"}
    )
    await merchant.advance(31)
    settled = await merchant.order(order["id"])
    assert settled["status"] == "partial"
    assert settled["delivered_quantity"] == 1
    assert settled["refund_amount"] == 60.0
    status, _ = await ctl(
        merchant.client, "PATCH", f"/_mock/accounts/{account_id}", {"balance": 500}
    )
    assert status == 200

    status, ledger = await ctl(merchant.client, "GET", f"/_mock/accounts/{account_id}/ledger")
    assert status == 200
    assert ledger["account_id"] == account_id
    assert ledger["opening_balance"] == 1000.0
    assert ledger["balance"] == 500.0
    assert ledger["conserved"] is True
    rows = [(e["kind"], e["amount"], e["balance_after"], e["order_id"]) for e in ledger["entries"]]
    assert rows == [
        ("charge", -80.0, 920.0, order["id"]),
        ("refund", 60.0, 980.0, order["id"]),
        ("adjustment", -480.0, 500.0, None),
    ]
    times = [e["at"] for e in ledger["entries"]]
    assert times == [order["created_at"], "2026-01-01T00:00:31.000Z", "2026-01-01T00:00:31.000Z"]


async def test_ledger_of_unknown_account_is_not_found(client):
    status, body = await ctl(
        client, "GET", "/_mock/accounts/00000000-0000-0000-0000-000000000000/ledger"
    )
    assert status == 404
    assert body["code"] == "not_found"


# -- reset ---------------------------------------------------------------------------------


async def test_reset_clears_queue_faults_journal_and_loaded_scenarios(merchant):
    await _load_matching_scenario(merchant.client)
    await ctl(merchant.client, "POST", "/_mock/scenarios/next", {"scenario": "failed_out_of_stock"})
    await ctl(
        merchant.client, "POST", "/_mock/faults", {"path": "/api/v1/account/me", "status": 500}
    )
    await ctl(merchant.client, "PATCH", "/_mock/catalog/items/1001", {"price": 2500})
    await merchant.balance()

    status, _ = await ctl(merchant.client, "POST", "/_mock/reset")
    assert status == 200

    _, listing = await ctl(merchant.client, "GET", "/_mock/scenarios")
    assert listing["queue"] == []
    assert {s["name"] for s in listing["scenarios"]} == set(BUILTIN_SCENARIOS)
    assert (await ctl(merchant.client, "GET", "/_mock/faults"))[1] == {"faults": []}
    assert (await ctl(merchant.client, "GET", "/_mock/requests"))[1] == {"requests": []}
    assert (await catalog_item(merchant.client, 1001))["price"] == 2000

    fresh = await login(merchant.client)
    assert (await fresh.call("GET", "/api/v1/account/me"))[0] == 200
    order = await placed(fresh, {"item_id": 1001, "merchant_order_id": "auto-1"})
    assert await scenario_of(merchant.client, order["id"]) == "happy_path"
    assert order["price"] == 20.0


async def test_reset_restores_replaced_accounts_and_revoked_keys(merchant):
    await ctl(merchant.client, "DELETE", "/_mock/api-keys/ak_test_default")
    await new_account(merchant.client, email="extra@example.com")
    await ctl(merchant.client, "POST", "/_mock/reset")
    listed = await accounts(merchant.client)
    assert [a["email"] for a in listed] == ["merchant@example.com"]
    assert listed[0]["api_keys"] == ["ak_test_default"]
    assert (await exchange(merchant.client, "ak_test_default"))[0] == 200


async def test_same_requests_after_reset_give_the_same_fault_answers(merchant):
    fault = {"method": "GET", "path": "/api/v1/account/balance", "status": 503, "times": 1}

    async def run() -> tuple[Any, Any]:
        _, added = await ctl(merchant.client, "POST", "/_mock/faults", fault)
        fresh = await login(merchant.client)
        return added, await fresh.call("GET", "/api/v1/account/balance")

    first = await run()
    await ctl(merchant.client, "POST", "/_mock/reset", {"seed": 42})
    second = await run()
    assert second == first


# -- admin token ---------------------------------------------------------------------------

ADMIN = {"Authorization": "Bearer t"}
DEFAULT_ID = "{account_id}"
PROTECTED = [
    ("GET", "/_mock/accounts", None),
    ("POST", "/_mock/accounts", {"email": "intruder@example.com", "api_key": "ak_intruder"}),
    ("PUT", "/_mock/accounts", {"accounts": [{"email": "x@example.com", "api_key": "ak_x"}]}),
    ("GET", f"/_mock/accounts/{DEFAULT_ID}", None),
    ("PATCH", f"/_mock/accounts/{DEFAULT_ID}", {"balance": 1}),
    ("GET", f"/_mock/accounts/{DEFAULT_ID}/ledger", None),
    ("POST", f"/_mock/accounts/{DEFAULT_ID}/api-keys", None),
    ("DELETE", "/_mock/api-keys/ak_test_default", None),
    ("GET", "/_mock/catalog", None),
    ("PUT", "/_mock/catalog", [{"id": 1, "name": "x", "product_type": "key", "price": 1}]),
    ("PATCH", "/_mock/catalog/items/1001", {"price": 1}),
    ("GET", "/_mock/scenarios", None),
    ("POST", "/_mock/scenarios", {"name": "sneaky", "steps": [{"status": "completed"}]}),
    ("POST", "/_mock/scenarios/next", {"scenario": "failed_out_of_stock"}),
    ("GET", "/_mock/faults", None),
    ("POST", "/_mock/faults", {"path": "/api/v1/account/balance", "status": 500}),
    ("DELETE", "/_mock/faults", None),
    ("GET", "/_mock/requests", None),
    ("GET", "/_mock/orders", None),
    ("POST", "/_mock/reset", None),
    ("POST", "/_mock/clock/advance", {"seconds": 60}),
]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    PROTECTED,
    ids=[f"{m} {p}" for m, p, _ in PROTECTED],
)
async def test_admin_token_guards_every_control_route(make_client, method, path, body):
    client = await make_client(admin_token="t")
    _, listing = await ctl(client, "GET", "/_mock/accounts", headers=ADMIN)
    account_id = listing["accounts"][0]["id"]
    merchant = await login(client)
    fault = {"path": "/api/v1/account/me", "status": 500}
    await ctl(client, "POST", "/_mock/faults", fault, headers=ADMIN)
    url = path.replace(DEFAULT_ID, account_id)
    for headers in ({}, {"Authorization": "Bearer wrong"}, merchant.auth):
        status, answer = await ctl(client, method, url, body, headers=headers)
        assert status == 401, answer
        assert answer["code"] == "not_authenticated"

    # Nothing changed behind the refusals.
    assert await merchant.balance() == 1000.0
    assert (await exchange(client, "ak_test_default"))[0] == 200
    listed = (await ctl(client, "GET", "/_mock/accounts", headers=ADMIN))[1]["accounts"]
    assert [a["email"] for a in listed] == ["merchant@example.com"]
    items = (await ctl(client, "GET", "/_mock/catalog", headers=ADMIN))[1]["items"]
    assert [i["id"] for i in items] == CATALOG_IDS
    assert items[0]["price"] == 2000
    scenarios = (await ctl(client, "GET", "/_mock/scenarios", headers=ADMIN))[1]
    assert scenarios["queue"] == []
    assert {s["name"] for s in scenarios["scenarios"]} == set(BUILTIN_SCENARIOS)
    faults = (await ctl(client, "GET", "/_mock/faults", headers=ADMIN))[1]["faults"]
    assert [f["path"] for f in faults] == ["/api/v1/account/me"]
    clock = (await ctl(client, "GET", "/_mock/clock", headers=ADMIN))[1]
    assert clock["now"] == "2026-01-01T00:00:00.000Z"

    # With the token the same call gets past the guard.
    status, answer = await ctl(client, method, url, body, headers=ADMIN)
    assert status != 401, answer


async def test_refused_account_creation_draws_no_random_numbers(make_client):
    plain, refused = await make_client(), await make_client()
    await refused.post("/_mock/accounts", json={"email": "merchant@example.com"})
    first = await (await plain.post("/_mock/accounts", json={"email": "n@example.com"})).json()
    second = await (await refused.post("/_mock/accounts", json={"email": "n@example.com"})).json()
    assert first == second


async def test_put_catalog_accepts_yaml(client):
    yaml_feed = "- id: 5\n  name: Five\n  product_type: key\n  price: 500\n"
    response = await client.put(
        "/_mock/catalog", data=yaml_feed, headers={"Content-Type": "application/yaml"}
    )
    assert response.status == 200
    assert [item["id"] for item in (await response.json())["items"]] == [5]


async def test_put_accounts_drops_queue_entries_of_replaced_accounts(client):
    account_id = (await (await client.get("/_mock/accounts")).json())["accounts"][0]["id"]
    await client.post(
        "/_mock/scenarios/next", json={"scenario": "timeout_partial", "account_id": account_id}
    )
    document = {"accounts": [{"email": "x@example.com", "api_key": "ak_x", "balance": 1}]}
    assert (await client.put("/_mock/accounts", json=document)).status == 200
    assert (await (await client.get("/_mock/scenarios")).json())["queue"] == []
