"""The front door (api.front) answers merchant calls before aiohttp's router: the same
application must answer every request the same way with it and without it."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
from conftest import BASE_SETTINGS

from mock_server.api.front import FrontDoor
from mock_server.app import create_app
from mock_server.config import MAX_BODY_BYTES

SB = "/_mock/sandboxes/"
# (method, path, body or None, extra headers); "{order}" is the order created first,
# "{token}" the server's own bearer token.
SCRIPT: list[tuple[str, str, Any, dict[str, str]]] = [
    ("POST", "/api/v1/auth/token/client", {"api_key": "ak_test_default"}, {}),
    ("POST", "/v1/auth/token/client", {"api_key": "nope"}, {}),
    ("POST", "/api/v1/auth/token/client", b"{not json", {}),
    ("POST", "/api/v1/auth/token/client", None, {}),
    ("GET", "/api/v1/account/balance", None, {}),
    ("GET", "/v1/account/me", None, {}),
    ("GET", "/api/v1/account/me", None, {"Authorization": "Bearer wrong"}),
    ("POST", "/api/v1/orders", {"item_id": 1001, "merchant_order_id": "m-1"}, {}),
    ("POST", "/api/v1/orders", {"item_id": 1001, "merchant_order_id": "m-1"}, {}),
    ("POST", "/v1/orders", {"item_id": "x"}, {}),
    ("POST", "/v1/orders", b"[1, 2", {}),
    ("POST", "/api/v1/orders", {"item_id": 1001}, {"Content-Type": "text/plain"}),
    ("POST", "/api/v1/orders", {"item_id": 1001}, {"X-Mock-Scenario": "no-such-scenario"}),
    ("GET", "/api/v1/orders/{order}", None, {}),
    ("GET", "/v1/orders/{order}", None, {"Origin": "https://shop.example"}),
    ("HEAD", "/api/v1/orders/{order}", None, {}),
    ("GET", "/api/v1/orders/no-such-order", None, {}),
    ("GET", "/api/v1/orders/{order}/", None, {}),
    ("GET", "/api/v1/orders/a%7Bb", None, {}),
    ("GET", "/api/v1/orders/a%2Fb", None, {}),
    ("GET", "/api/v1/orders", None, {}),
    ("DELETE", "/api/v1/orders/{order}", None, {}),
    ("POST", "/api/v1/orders/{order}/client-code", {"code": "1234"}, {}),
    ("GET", "/api/v1/orders/{order}/client-code", None, {}),
    ("PUT", "/v3/plant", {"id": 1, "status": "sold"}, {}),
    ("GET", "/v3/plant", None, {}),
    ("OPTIONS", "/api/v1/orders", None, {"Origin": "x", "Access-Control-Request-Method": "POST"}),
    ("GET", "/api/v2/orders", None, {}),
    ("POST", "/_mock/faults", {"method": "GET", "path": "/v1/account/me", "status": 503}, {}),
    ("GET", "/v1/account/me", None, {}),
    ("GET", SB + "sb_gone/api/v1/account/me", None, {}),
    ("GET", SB + "default/api/v1/orders/{order}", None, {}),
    ("POST", "/api/v1/orders", {"item_id": 1001}, {"Expect": "100-continue"}),
    ("POST", "/api/v1/orders", b'{"item_id": 1001, "pad": "' + b"x" * MAX_BODY_BYTES + b'"}', {}),
    ("POST", "/v1/auth/token/client", b'{"api_key": "' + b"x" * MAX_BODY_BYTES + b'"}', {}),
]
COMPARED_HEADERS = ("Content-Type", "Access-Control-Allow-Origin", "Vary", "Allow")


async def _run_script(client: Any) -> list[tuple]:
    token, order = "", ""
    answers = []
    for method, path, body, headers in SCRIPT:
        headers = {"Authorization": f"Bearer {token}", **headers}
        path = path.replace("{order}", order)
        kwargs: dict[str, Any] = {"headers": headers}
        if isinstance(body, bytes):
            kwargs["data"] = body
            headers.setdefault("Content-Type", "application/json")
        elif body is not None:
            if "Content-Type" in headers:
                kwargs["data"] = repr(body).encode()
            else:
                kwargs["json"] = body
        response = await client.request(method, path, **kwargs)
        text = await response.text()
        if path == "/api/v1/auth/token/client" and response.status == 200 and not token:
            token = (await response.json())["access_token"]
        if method == "POST" and path == "/api/v1/orders" and response.status == 201 and not order:
            order = (await response.json())["id"]
        text = text.replace(token, "<token>") if token else text
        kept = {h: response.headers.get(h) for h in COMPARED_HEADERS}
        answers.append((method, path, response.status, text, kept))
    journal = await (await client.get("/_mock/requests")).json()
    coverage = await (await client.get("/_mock/coverage")).json()
    balance = await (await client.get("/_mock/accounts")).json()
    return [*answers, _without_tokens(journal, token), coverage, balance]


def _without_tokens(document: Any, token: str) -> Any:
    return re.sub(re.escape(token), "<token>", repr(document)) if token else repr(document)


@pytest.fixture
def settings():
    return replace(BASE_SETTINGS, cors_origin="https://shop.example")


async def test_the_front_door_answers_every_request_as_the_router_does(
    aiohttp_client, make_client, settings
):
    through_router = await aiohttp_client(create_app(settings))
    through_front_door = await make_client(cors_origin=settings.cors_origin)
    assert isinstance(through_front_door.server.runner.server.request_handler, FrontDoor)
    expected = await _run_script(through_router)
    assert await _run_script(through_front_door) == expected
    statuses = [answer[2] for answer in expected[: len(SCRIPT)]]
    # The script does reach every kind of answer (not all 404s, say).
    assert {200, 201, 204, 400, 401, 404, 405, 413, 503}.issubset(statuses), statuses


async def test_merchant_calls_skip_the_router_and_the_rest_reach_it(aiohttp_client, settings):
    client = await aiohttp_client(create_app(settings))
    server = client.server.runner.server
    behind = server.request_handler
    reached: list[str] = []

    async def router(request):
        reached.append(f"{request.method} {request.path}")
        return await behind(request)

    server.request_handler = FrontDoor(client.server.app, router)
    token = (
        await (
            await client.post("/api/v1/auth/token/client", json={"api_key": "ak_test_default"})
        ).json()
    )["access_token"]
    auth = {"Authorization": f"Bearer {token}"}
    created = await client.post("/v1/orders", json={"item_id": 1001}, headers=auth)
    order_id = (await created.json())["id"]
    assert (await client.get(f"/api/v1/orders/{order_id}", headers=auth)).status == 200
    assert (await client.get(f"{SB}default/v1/account/balance", headers=auth)).status == 200
    assert reached == []
    await client.get("/_mock/clock")
    await client.get("/api/v1/orders")
    await client.get(f"/api/v1/orders/{order_id}/")
    assert reached == ["GET /_mock/clock", "GET /api/v1/orders", f"GET /api/v1/orders/{order_id}/"]


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("POST", "/api/v1/orders", ""),
        ("GET", "/v1/orders/ord_1", "ord_1"),
        ("POST", "/v1/orders/ord_1/client-code", "ord_1"),
        ("GET", "/api/v1/account/balance", ""),
        ("PUT", "/v3/plant", ""),
        ("GET", "/api/v1/orders/ord_1/client-code", None),
        ("GET", "/api/v1/orders/", None),
        ("GET", "/api/v1/orders/a/b", None),
        ("GET", "/api/v1/orders/a{b", None),
        ("HEAD", "/api/v1/orders/ord_1", None),
        ("POST", "/api/v1/orders/ord_1", None),
        ("POST", "/api/v1/orders//client-code", None),
        ("GET", "/_mock/orders/ord_1", None),
    ],
)
def test_what_the_front_door_matches(method, path, expected):
    door = FrontDoor(create_app(BASE_SETTINGS), behind=None)  # type: ignore[arg-type]
    match = door.match(method, path)
    if expected is None:
        assert match is None
    else:
        assert match is not None and match[1] == expected
