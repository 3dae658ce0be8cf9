"""A corpus of bad input against every endpoint that takes a body: each gets a 4xx in
its envelope, never a 5xx, and leaves state exactly as it was."""

from __future__ import annotations

import json

import pytest

from tests.conftest import login

MERCHANT_BODY_ENDPOINTS = [
    ("POST", "/api/v1/orders"),
    ("POST", "/v1/orders"),
    ("POST", "/api/v1/orders/{order_id}/client-code"),
    ("PUT", "/v3/plant"),
]
CONTROL_BODY_ENDPOINTS = [
    ("POST", "/_mock/clock/advance"),
    ("POST", "/_mock/reset"),
    ("POST", "/_mock/accounts"),
    ("PUT", "/_mock/accounts"),
    ("PATCH", "/_mock/accounts/{account_id}"),
    ("PUT", "/_mock/catalog"),
    ("PATCH", "/_mock/catalog/items/1001"),
    ("POST", "/_mock/scenarios"),
    ("POST", "/_mock/scenarios/next"),
    ("POST", "/_mock/faults"),
]
JSON = {"Content-Type": "application/json"}

CORPUS = {
    "truncated": (b'{"item_id": 10', JSON),
    "trailing comma": (b'{"item_id": 1001,}', JSON),
    "single quotes": (b"{'item_id': 1001}", JSON),
    "nan": (b'{"item_id": NaN}', JSON),
    "infinity": (b'{"item_id": Infinity, "seconds": -Infinity}', JSON),
    "huge integer": (b'{"item_id": ' + b"9" * 5000 + b"}", JSON),
    "huge exponent": (b'{"item_id": 1e999999, "seconds": 1e999999}', JSON),
    "deep nesting": (b'{"a": ' + b"[" * 200 + b"]" * 200 + b"}", JSON),
    "very deep nesting": (b"[" * 100_000 + b"]" * 100_000, JSON),
    "non-utf8": (b'{"item_id": "\xff\xfe\xfd"}', JSON),
    "utf16 bom": ('{"item_id": 1001}'.encode("utf-16"), JSON),
    "array": (b"[1, 2, 3]", JSON),
    "string": (b'"hello"', JSON),
    "null": (b"null", JSON),
    "form encoded": (
        b"item_id=1001&quantity=1",
        {"Content-Type": "application/x-www-form-urlencoded"},
    ),
    "xml": (b"<order><item_id>1001</item_id></order>", {"Content-Type": "application/xml"}),
    "multipart": (b"--x\r\n\r\n--x--", {"Content-Type": "multipart/form-data; boundary=x"}),
    "long string": (json.dumps({"merchant_order_id": "x" * 500_000}).encode(), JSON),
}

#: Well-formed JSON objects (only their values are bad).
WELL_FORMED = {"huge exponent", "long string"}


async def _snapshot(client) -> dict:
    """Everything a refused request must leave untouched."""
    accounts = await (await client.get("/_mock/accounts")).json()
    return {
        "accounts": accounts,
        "orders": await (await client.get("/_mock/orders")).json(),
        "catalog": await (await client.get("/_mock/catalog")).json(),
        "clock": await (await client.get("/_mock/clock")).json(),
        "scenarios": await (await client.get("/_mock/scenarios")).json(),
        "faults": await (await client.get("/_mock/faults")).json(),
        "webhooks": await (await client.get("/_mock/webhooks")).json(),
    }


@pytest.fixture
async def world(client):
    merchant = await login(client)
    status, order = await merchant.create({"item_id": 1001, "merchant_order_id": "seed"})
    assert status == 201
    account_id = order["created_by"]["id"]
    return merchant, {"order_id": order["id"], "account_id": account_id}


def _assert_envelope(status: int, body: object, path: str) -> None:
    assert 400 <= status < 500, (path, status, body)
    assert isinstance(body, dict) and isinstance(body.get("detail"), str), body
    assert isinstance(body.get("code"), str), body


@pytest.mark.parametrize("case", sorted(CORPUS))
async def test_bad_bodies_get_4xx_envelopes_and_change_nothing(world, case):
    merchant, ids = world
    client = merchant.client
    before = await _snapshot(client)
    body, headers = CORPUS[case]
    for method, template in MERCHANT_BODY_ENDPOINTS + CONTROL_BODY_ENDPOINTS:
        if case in WELL_FORMED and template == "/_mock/reset":
            continue  # reset ignores fields it does not know, as every endpoint does
        path = template.format(**ids)
        response = await client.request(
            method, path, data=body, headers={**merchant.auth, **headers}
        )
        _assert_envelope(response.status, await response.json(content_type=None), path)
    after = await _snapshot(client)
    assert after == before


async def test_two_mebibyte_bodies_are_413_everywhere(world):
    merchant, ids = world
    before = await _snapshot(merchant.client)
    big = b'{"item_id": 1001, "pad": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    for method, template in MERCHANT_BODY_ENDPOINTS + CONTROL_BODY_ENDPOINTS:
        response = await merchant.client.request(
            method, template.format(**ids), data=big, headers={**merchant.auth, **JSON}
        )
        assert response.status == 413
        assert (await response.json())["code"] == "payload_too_large"
    token = await merchant.client.post("/api/v1/auth/token/client", data=big, headers=JSON)
    assert token.status == 413
    assert set(await token.json()) == {"error"}
    assert await _snapshot(merchant.client) == before


@pytest.mark.parametrize(
    "value",
    [
        "ref\r\nX-Injected: yes",
        "ref\nSet-Cookie: a=b",
        "ref\x00tail",
        "ref\u0085next",
        "ref\x1b[31mred",
    ],
)
async def test_header_injection_in_merchant_order_id_is_refused(world, value):
    merchant, _ = world
    before = await _snapshot(merchant.client)
    status, body = await merchant.create({"item_id": 1001, "merchant_order_id": value})
    assert status == 400
    assert body["code"] == "validation_error"
    assert await _snapshot(merchant.client) == before


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": "Bearer " + "x" * 8000},
        {"Authorization": "Bearer \u00e9t\u00e9"},
        {"Authorization": "Bearer a b c"},
        {"X-Mock-Scenario": "../../etc/passwd"},
        {"X-Mock-Scenario": "x" * 4000},
    ],
)
async def test_odd_headers_get_4xx(world, headers):
    merchant, _ = world
    response = await merchant.client.post(
        "/api/v1/orders", json={"item_id": 1001}, headers={**merchant.auth, **headers}
    )
    assert 400 <= response.status < 500
    _assert_envelope(response.status, await response.json(), "/api/v1/orders")
