"""Every merchant route, held to the contract as a whole table.

For each route of the merchant API's own table (`MerchantApi.routes()`: spec section 4
under both prefixes, and the plant demo), on the root paths and under a sandbox's base
path, every method the route does not take is a 405 `method_not_allowed` in the spec's
envelope with an `Allow` header (docs/fidelity.md, spec 7), HEAD answers as GET without
a body, a percent-encoded path is the path it encodes, `Expect: 100-continue` is
honoured, and an unknown path under a prefix is a 404 `not_found`. Each of these is a
merchant call (docs/control-api.md, "Request journal"): journaled with the path as a
whole server sees it, counted in coverage's `prefixes` for the spec's two prefixes, and
never touching the balance. The expectations come from those documents, not from a
second implementation.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import pytest

from mock_server.edge.jsonio import OrderRenderings
from mock_server.merchant.api import ORDER_ID, MerchantApi
from mock_server.merchant.table import MerchantTable
from tests.conftest import Merchant

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
SPEC_PREFIXES = ("/api/v1", "/v1")
BASES = ("root", "sandbox")


def route_table() -> dict[str, set[str]]:
    """Path template -> the methods the table serves it with."""
    table: dict[str, set[str]] = defaultdict(set)
    for method, template, _ in MerchantApi(OrderRenderings()).routes():
        table[template].add(method)
    return dict(table)


TABLE = route_table()
WRONG_METHODS = [
    (template, method)
    for template, allowed in TABLE.items()
    for method in METHODS
    if method not in allowed and not (method == "HEAD" and "GET" in allowed)
]


class World:
    """One base path (the root, or a created sandbox's) with a merchant logged in and
    one order made."""

    def __init__(self, client: Any, base: str, merchant: Merchant, order_id: str) -> None:
        self.client = client
        self.base = base
        self.merchant = merchant
        self.order_id = order_id

    def path(self, template: str) -> str:
        return template.replace("{" + ORDER_ID + "}", self.order_id)

    async def control(self, path: str) -> Any:
        response = await self.client.get(self.base + path)
        assert response.status == 200, await response.text()
        return await response.json()

    async def last_call(self) -> dict[str, Any]:
        (entry,) = (await self.control("/_mock/requests?limit=1"))["requests"]
        return entry

    async def prefixes(self) -> dict[str, int]:
        return (await self.control("/_mock/coverage"))["exercised"].get("prefixes", {})

    async def balance(self) -> float:
        status, body = await self.merchant.call("GET", self.base + "/api/v1/account/balance")
        assert status == 200, body
        return body["balance"]


@pytest.fixture(params=BASES)
async def world(request, client) -> World:
    base, api_key = "", "ak_test_default"
    if request.param == "sandbox":
        response = await client.post("/_mock/sandboxes", json={})
        created = await response.json()
        base, api_key = f"/_mock/sandboxes/{created['id']}", created["api_key"]
    response = await client.post(base + "/api/v1/auth/token/client", json={"api_key": api_key})
    assert response.status == 200, await response.text()
    merchant = Merchant(client, (await response.json())["access_token"])
    status, order = await merchant.call("POST", base + "/api/v1/orders", json={"item_id": 1001})
    assert status == 201, order
    return World(client, base, merchant, order["id"])


def _counted_prefix(template: str) -> str | None:
    return next((p for p in SPEC_PREFIXES if template.startswith(p + "/")), None)


@pytest.mark.parametrize(("template", "method"), WRONG_METHODS)
async def test_a_method_the_route_does_not_take_is_a_405_merchant_call(world, template, method):
    path = world.path(template)
    balance, prefixes = await world.balance(), await world.prefixes()
    response = await world.client.request(
        method, world.base + path, headers={**world.merchant.auth, "Origin": "https://x.test"}
    )
    assert response.status == 405
    allowed = TABLE[template] | ({"HEAD"} if "GET" in TABLE[template] else set())
    assert set(re.split(r",\s*", response.headers["Allow"])) == allowed
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    if method != "HEAD":
        body = await response.json()
        assert set(body) == {"detail", "code"} and body["code"] == "method_not_allowed"
        assert isinstance(body["detail"], str) and body["detail"]
    journaled = await world.last_call()
    assert (journaled["method"], journaled["path"], journaled["status"]) == (method, path, 405)
    counted = _counted_prefix(template)
    after = await world.prefixes()
    for prefix in SPEC_PREFIXES:
        expected = prefixes.get(prefix, 0) + (1 if prefix == counted else 0)
        assert after.get(prefix, 0) == expected, (prefix, after)
    assert await world.balance() == balance


@pytest.mark.parametrize("template", [t for t, allowed in TABLE.items() if "GET" in allowed])
async def test_head_answers_as_get_without_a_body(world, template):
    path = world.base + world.path(template)
    get = await world.client.get(path, headers=world.merchant.auth)
    head = await world.client.head(path, headers=world.merchant.auth)
    assert head.status == get.status == 200
    assert head.headers["Content-Type"] == get.headers["Content-Type"]
    assert await head.read() == b""
    journaled = await world.last_call()
    assert (journaled["method"], journaled["status"]) == ("HEAD", 200)


@pytest.mark.parametrize("prefix", SPEC_PREFIXES)
async def test_a_percent_encoded_path_is_the_path_it_encodes(world, prefix):
    encoded = "".join(f"%{ord(c):02X}" if c.isalpha() else c for c in world.order_id)
    response = await world.client.get(
        world.base + f"{prefix}/orders/{encoded}", headers=world.merchant.auth
    )
    assert response.status == 200
    assert (await response.json())["id"] == world.order_id
    journaled = await world.last_call()
    assert journaled["path"] == f"{prefix}/orders/{world.order_id}"


@pytest.mark.parametrize("prefix", SPEC_PREFIXES)
async def test_expect_100_continue_is_honoured(world, prefix):
    status, order = await world.merchant.call(
        "POST",
        world.base + f"{prefix}/orders",
        json={"item_id": 1001},
        headers={"Expect": "100-continue"},
    )
    assert status == 201 and order["status"] == "pending"


@pytest.mark.parametrize("prefix", SPEC_PREFIXES)
async def test_an_unknown_path_under_a_prefix_is_a_404_merchant_call(world, prefix):
    prefixes = await world.prefixes()
    for path in (f"{prefix}/nothing-here", f"{prefix}/orders/{world.order_id}/nope"):
        status, body = await world.merchant.call("GET", world.base + path)
        assert status == 404 and body["code"] == "not_found", body
        assert set(body) == {"detail", "code"}
        journaled = await world.last_call()
        assert (journaled["method"], journaled["path"], journaled["status"]) == (
            "GET",
            path,
            404,
        )
    assert (await world.prefixes()).get(prefix, 0) == prefixes.get(prefix, 0) + 2


def test_the_table_serves_both_spec_prefixes_alike():
    """Spec section 4: every operation under /api/v1 is under /v1 too, same methods."""
    for prefix in SPEC_PREFIXES:
        other = SPEC_PREFIXES[1] if prefix == SPEC_PREFIXES[0] else SPEC_PREFIXES[0]
        for template, methods in TABLE.items():
            if template.startswith(prefix + "/"):
                twin = other + template[len(prefix) :]
                assert TABLE.get(twin) == methods, (template, twin)


def _handler(name: str) -> Any:
    async def handler(request: Any, sandbox: Any, order_id: str) -> Any:
        return name

    handler.__name__ = name
    return handler


def test_matching_takes_a_whole_nonempty_segment_as_the_order_id():
    get, code = _handler("get"), _handler("code")
    table = MerchantTable(
        [
            ("GET", "/v1/orders/{order_id}", get),
            ("POST", "/v1/orders/{order_id}/client-code", code),
            ("GET", "/v1/orders/latest", get),
        ]
    )
    assert table.match("GET", "/v1/orders/o-1") == (get, "o-1")
    assert table.match("HEAD", "/v1/orders/o-1") == (get, "o-1")
    assert table.match("POST", "/v1/orders/o-1/client-code") == (code, "o-1")
    assert table.match("GET", "/v1/orders/client-code") == (get, "client-code")
    assert table.match("GET", "/v1/orders/latest") == (get, "")  # a path of its own first
    for path in (
        "/v1/orders/",
        "/v1/orders//client-code",
        "/v1/orders/o-1/",
        "/v1/orders/o-1/nope",
        "/v1/orders/o-1/client-code/x",
        "/v1/orders",
        "/v1/x/orders/o-1",
        "/client-code",
        "",
    ):
        handler, order_id = table.match("GET", path)
        assert (handler.__name__, order_id) == ("_not_found", ""), path
    refused, order_id = table.match("GET", "/v1/orders/o-1/client-code")
    assert (type(refused).__name__, order_id) == ("_NotAllowed", "")


@pytest.mark.parametrize(
    "routes",
    [
        [("GET", "/v1/orders/x{order_id}", None)],
        [("GET", "/v1/orders/{order_id}.json", None)],
        [("GET", "/v1/orders/{order_id}/a/b", None)],
        [("GET", "/v1/{order_id}/codes", None), ("GET", "/v1/orders/{order_id}", None)],
    ],
)
def test_a_table_whose_paths_would_be_ambiguous_is_refused(routes):
    with pytest.raises(ValueError):
        MerchantTable(routes)
