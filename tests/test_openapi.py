"""The OpenAPI document is valid, complete and true, and /docs works offline.

Complete: every route the app serves is documented with the same method, and every
documented route is served, so adding a route without documenting it fails here. True:
real responses validate against the schemas documented for their status.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import pytest
from aiohttp import web
from jsonschema import Draft202012Validator
from openapi_spec_validator import OpenAPIV31SpecValidator, validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from mock_server.app import App, create_app
from mock_server.merchant.api import PREFIXES
from mock_server.openapi import DOCUMENT_PATHS, build_openapi
from tests.conftest import BASE_SETTINGS, SPEC_ORDER_FIELDS, Merchant, login

DOC = build_openapi()
#: The dashboard's page and the redirects to it: a page, not an API operation.
PAGE_PATHS = ("/", "/_mock/ui", "/_mock/ui/", "/_mock/ui/{name}")
HTTP_METHODS = {"get", "put", "post", "delete", "patch", "options", "head", "trace"}
REGISTRY = Registry().with_resource(
    "urn:openapi", Resource.from_contents(DOC, default_specification=DRAFT202012)
)
ORDER = "/api/v1/orders/{order_id}"
ORDERS = "/api/v1/orders"


# -- helpers -----------------------------------------------------------------------------


def all_routes(app: App) -> set[tuple[str, str]]:
    """(method, path template) of every route the app serves, merchant and control,
    HEAD included; aiohttp `{name:regex}` shown as `{name}`."""
    merchant = {(method.lower(), path) for method, path, _ in app.merchant_api.routes()}
    return merchant | {
        (route.method.lower(), re.sub(r"\{(\w+):[^}]*\}", r"{\1}", resource.canonical))
        for resource in app.control_router.resources()
        for route in resource
    }


def served_operations(app: App) -> set[tuple[str, str]]:
    """Every route but HEAD (added with each GET) and the document's own pages."""
    return {
        (method, path)
        for method, path in all_routes(app)
        if method != "head" and path not in DOCUMENT_PATHS + PAGE_PATHS
    }


def documented_operations(doc: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (method, path)
        for path, item in doc["paths"].items()
        for method in item
        if method in HTTP_METHODS
    }


def all_operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for section in ("paths", "webhooks"):
        for path, item in doc.get(section, {}).items():
            for method, op in item.items():
                if method in HTTP_METHODS:
                    yield method, path, op


def walk(node: Any, trail: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield trail, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk(value, (*trail, str(key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, (*trail, str(index)))


def pointer(*parts: str) -> str:
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts)


def schema_pointer(path: str, method: str, status: int) -> str:
    """JSON pointer to the JSON schema documented for this status (or its `NXX`)."""
    responses = DOC["paths"][path][method]["responses"]
    key = str(status) if str(status) in responses else f"{str(status)[0]}XX"
    assert key in responses, f"{method.upper()} {path} does not document {status}"
    documented = responses[key]
    if "$ref" in documented:
        base = documented["$ref"].removeprefix("#")
    else:
        base = pointer("paths", path, method, "responses", key)
    return base + pointer("content", "application/json", "schema")


def validator_for(json_pointer: str) -> Draft202012Validator:
    return Draft202012Validator(
        {"$ref": "urn:openapi#" + json_pointer},
        registry=REGISTRY,
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )


def assert_valid(instance: Any, json_pointer: str) -> None:
    errors = sorted(validator_for(json_pointer).iter_errors(instance), key=str)
    assert not errors, "\n".join(
        f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in errors[:10]
    )


async def conforms(response: Any, path: str, method: str) -> Any:
    """The response's body, after checking it against the document."""
    assert response.content_type == "application/json"
    payload = await response.json()
    assert_valid(payload, schema_pointer(path, method, response.status))
    return payload


async def call(
    client: Any,
    method: str,
    path: str,
    status: int,
    *,
    path_params: dict[str, str] | None = None,
    **kwargs: Any,
) -> Any:
    """Send `method path` (a documented template, filled from `path_params`), expect
    `status`, and validate the body against the documented schema."""
    response = await client.request(method, path.format(**(path_params or {})), **kwargs)
    assert response.status == status, await response.text()
    return await conforms(response, path, method.lower())


# -- the document itself -------------------------------------------------------------------


def test_document_is_valid_openapi_3_1():
    validate(DOC, cls=OpenAPIV31SpecValidator)
    assert DOC["openapi"].startswith("3.1.")


def test_every_component_is_valid_and_used():
    refs = {node for trail, node in walk(DOC) if trail and trail[-1] == "$ref"}
    for section in ("schemas", "responses"):
        for name, component in DOC["components"][section].items():
            assert f"#/components/{section}/{name}" in refs, f"{section}/{name} is never used"
            if section == "schemas":
                Draft202012Validator.check_schema(component)


def test_examples_match_their_schemas():
    checked = 0
    for trail, node in walk(DOC):
        if isinstance(node, dict) and "example" in node and "schema" in node:
            assert_valid(node["example"], pointer(*trail, "schema"))
            checked += 1
    assert checked >= 10


def test_operation_ids_are_unique():
    ids = [op["operationId"] for _, _, op in all_operations(DOC)]
    duplicates = {i for i in ids if ids.count(i) > 1}
    assert not duplicates
    assert all(re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", i) for i in ids)


def test_both_prefixes_document_the_same_operations():
    primary, alias = PREFIXES
    for path, item in DOC["paths"].items():
        if not path.startswith(primary + "/"):
            continue
        twin = DOC["paths"][alias + path.removeprefix(primary)]
        assert set(twin) == set(item)
        for method, op in item.items():
            copy = twin[method]
            assert copy["operationId"] == op["operationId"] + "V1"
            assert copy["x-alias-of"] == op["operationId"]
            for key in ("responses", "security", "parameters", "requestBody", "tags"):
                assert copy.get(key) == op.get(key), (path, method, key)


def test_security_requirements():
    for method, path, op in all_operations(DOC):
        if path.startswith("/_mock"):
            expected = [] if path == "/_mock/health" else [{"adminToken": []}, {}]
        elif path.endswith("/auth/token/client") or path == "/v3/plant":
            expected = []
        elif path in DOC.get("webhooks", {}):
            continue
        else:
            expected = [{"bearerAuth": []}]
        assert op["security"] == expected, (method, path)
        if expected == [{"bearerAuth": []}]:
            assert op["responses"]["401"] == {"$ref": "#/components/responses/NotAuthenticated"}


def test_scenario_header_is_documented_on_order_creation_only():
    for method, path, op in all_operations(DOC):
        headers = [p["name"] for p in op.get("parameters", []) if p["in"] == "header"]
        creates = method == "post" and path in (f"{prefix}/orders" for prefix in PREFIXES)
        assert ("X-Mock-Scenario" in headers) == creates, (method, path)


def test_order_schema_has_every_field_of_spec_2_1():
    order = DOC["components"]["schemas"]["Order"]
    assert tuple(order["properties"]) == SPEC_ORDER_FIELDS
    assert tuple(order["required"]) == SPEC_ORDER_FIELDS
    assert order["properties"]["completed_at"]["type"] == ["string", "null"]
    assert {"type": "null"} in order["properties"]["webhook"]["oneOf"]


@pytest.mark.parametrize(
    ("body", "path", "method", "status"),
    [
        ({"balance": "1000", "currency": "USD"}, "/api/v1/account/balance", "get", 200),
        ({"detail": "x", "code": "not_found"}, "/api/v1/account/balance", "get", 401),
        ({"detail": "x", "code": "validation_error", "more": 1}, ORDERS, "post", 400),
        ({"detail": "x", "code": "price_mismatch"}, ORDERS, "post", 400),
        ({"error": "x", "code": "not_authenticated"}, "/api/v1/auth/token/client", "post", 401),
        ({"now": "yesterday", "mode": "manual", "time_scale": 1.0}, "/_mock/clock", "get", 200),
    ],
)
def test_a_body_that_breaks_the_document_is_caught(body, path, method, status):
    with pytest.raises(AssertionError):
        assert_valid(body, schema_pointer(path, method, status))


# -- routes: documented == served -----------------------------------------------------------


async def test_every_route_is_documented_and_every_documented_route_served(client):
    served = served_operations(client.app)
    documented = documented_operations(DOC)
    assert not served - documented, f"served but not documented: {sorted(served - documented)}"
    assert not documented - served, f"documented but not served: {sorted(documented - served)}"


#: Reads that stay open: a GET of them never ends (tests/test_events.py, tests/test_listen.py).
STREAMS = ("/_mock/events", "/_mock/listen")


async def test_every_route_but_the_sandbox_entries_is_served_under_a_sandboxes_base_path(
    client,
):
    """docs/control-api.md, "Sandboxes": the whole API under a sandbox's base path, but
    `/_mock/sandboxes` itself, which acts on the server."""
    created = await (await client.post("/_mock/sandboxes", json={})).json()
    base = f"/_mock/sandboxes/{created['id']}"
    reads = sorted(
        path
        for method, path in all_routes(client.app)
        if method == "get" and "{" not in path and path not in STREAMS
    )
    assert "/_mock/sandboxes" in reads and "/_mock/clock" in reads
    for path in reads:
        response = await client.get(base + path, allow_redirects=False)
        body = await response.read()
        if path.startswith("/_mock/sandboxes"):
            assert response.status == 404, (path, body)
        else:
            assert response.status != 404, (path, body)
            assert b"No such endpoint" not in body


async def test_an_undocumented_route_is_caught():
    app = create_app(BASE_SETTINGS)

    async def extra(request: web.Request) -> web.Response:
        return web.Response()

    app.control_router.add_get("/_mock/something-new", extra)
    app.control_router.add_route("*", "/anything/{rest:.*}", extra)
    missing = served_operations(app) - documented_operations(DOC)
    assert missing == {("get", "/_mock/something-new"), ("*", "/anything/{rest}")}


async def test_the_document_and_its_page_are_served_but_not_documented(client):
    routes = {resource.canonical for resource in client.app.control_router.resources()}
    for path in DOCUMENT_PATHS:
        assert path in routes
        assert path not in DOC["paths"]


# -- real responses match their schemas -------------------------------------------------------


async def test_token_exchange_answers_match(client):
    token = "/api/v1/auth/token/client"
    answer = await call(client, "POST", token, 200, json={"api_key": "ak_test_default"})
    assert answer["token_type"] == "Bearer"
    answer = await call(client, "POST", token, 401, json={"api_key": "ak_nobody"})
    assert set(answer) == {"error"}
    json_headers = {"Content-Type": "application/json"}
    answer = await call(client, "POST", token, 400, data=b"{not json", headers=json_headers)
    assert set(answer) == {"error"}
    await call(client, "POST", "/v1/auth/token/client", 401, json={})


async def test_token_exchange_payload_too_large_keeps_its_own_shape(client):
    big = b'{"api_key": "' + b"a" * (1024 * 1024) + b'"}'
    headers = {"Content-Type": "application/json"}
    await call(client, "POST", "/api/v1/auth/token/client", 413, data=big, headers=headers)
    # Past the endpoint's bound, a body of blanks is as large as any other.
    blank = b" " * (128 * 1024)
    answer = await call(
        client, "POST", "/api/v1/auth/token/client", 413, data=blank, headers=headers
    )
    assert set(answer) == {"error"}


async def test_account_reads_match(merchant: Merchant):
    client, auth = merchant.client, merchant.auth
    balance = await call(client, "GET", "/api/v1/account/balance", 200, headers=auth)
    assert balance == {"balance": 1000.0, "currency": "USD"}
    me = await call(client, "GET", "/v1/account/me", 200, headers=auth)
    assert me["email"] == "merchant@example.com"
    await call(client, "GET", "/api/v1/account/balance", 401)
    await call(client, "GET", "/api/v1/account/me", 401, headers={"Authorization": "Bearer x"})


async def test_order_answers_match(merchant: Merchant):
    client, auth = merchant.client, merchant.auth
    order = await call(
        client,
        "POST",
        ORDERS,
        201,
        headers=auth,
        json={"item_id": 1001, "quantity": 2, "merchant_order_id": "doc-1", "price": 40.0},
    )
    assert order["status"] == "pending" and order["webhook"] is None
    error = await call(client, "POST", ORDERS, 400, headers=auth, json={"item_id": 999999})
    assert error["code"] == "validation_error"
    error = await call(
        client, "POST", ORDERS, 400, headers=auth, json={"item_id": 1001, "price": 1.0}
    )
    assert error["code"] == "price_mismatch" and error["actual_price"] == 20.0
    big = {"item_id": 1001, "padding": "x" * (1024 * 1024)}
    error = await call(client, "POST", ORDERS, 413, headers=auth, json=big)
    assert error["code"] == "payload_too_large"
    await call(client, "POST", "/v1/orders", 401, json={"item_id": 1001})
    await merchant.advance(5)
    settled = await call(
        client, "GET", ORDER, 200, headers=auth, path_params={"order_id": order["id"]}
    )
    assert settled["status"] == "completed" and settled["completed_at"]
    missing = {"order_id": "00000000-0000-4000-8000-000000000000"}
    error = await call(client, "GET", ORDER, 404, headers=auth, path_params=missing)
    assert error["code"] == "not_found"


async def test_insufficient_balance_and_method_not_allowed_match(merchant: Merchant):
    client, auth = merchant.client, merchant.auth
    accounts = await call(client, "GET", "/_mock/accounts", 200)
    account = {"account_id": accounts["accounts"][0]["id"]}
    await call(
        client,
        "PATCH",
        "/_mock/accounts/{account_id}",
        200,
        path_params=account,
        json={"balance": 0},
    )
    error = await call(client, "POST", ORDERS, 400, headers=auth, json={"item_id": 1001})
    assert error["code"] == "insufficient_balance"
    response = await client.delete(ORDERS, headers=auth)
    assert response.status == 405 and "POST" in response.headers["Allow"]
    assert (await conforms(response, ORDERS, "post"))["code"] == "method_not_allowed"


async def test_client_code_answers_match(merchant: Merchant):
    client, auth = merchant.client, merchant.auth
    body = {"item_id": 2002, "quantity": 1, "fields": {"login_email": "p@example.com", "server": 2}}
    order = await call(client, "POST", ORDERS, 201, headers=auth, json=body)
    code_path = "/api/v1/orders/{order_id}/client-code"
    path_params = {"order_id": order["id"]}
    await merchant.advance(5)
    assert (await merchant.order(order["id"]))["status"] == "need_client_code"
    released = await call(
        client,
        "POST",
        code_path,
        200,
        headers=auth,
        path_params=path_params,
        json={"code": "123456"},
    )
    assert released["status"] == "processing"
    error = await call(
        client,
        "POST",
        code_path,
        400,
        headers=auth,
        path_params=path_params,
        json={"code": "123456"},
    )
    assert error["code"] == "validation_error"


async def test_plant_answers_match(client):
    plant = await call(client, "PUT", "/v3/plant", 200, json={"id": 3, "status": "sold"})
    assert plant["status"] == "sold"
    await call(client, "PUT", "/v3/plant", 400, json={"name": "no id"})
    await call(client, "PUT", "/v3/plant", 404, json={"id": 99})


@pytest.mark.parametrize("receiver_status", [200, 500])
async def test_settled_order_and_webhooks_match(make_client, aiohttp_server, receiver_status):
    async def hook(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=receiver_status)

    receiver = web.Application()
    receiver.router.add_post("/hooks", hook)
    server = await aiohttp_server(receiver)
    client = await make_client(webhook_url=str(server.make_url("/hooks")))
    merchant = await login(client)
    status, order = await merchant.create({"item_id": 1001, "merchant_order_id": "hook-1"})
    assert status == 201 and order["webhook"]["status"] == "pending"
    await merchant.advance(5)
    detail = await call(
        client, "GET", "/_mock/orders/{order_id}", 200, path_params={"order_id": order["id"]}
    )
    webhook = detail["order"]["webhook"]
    assert webhook["last_status_code"] == receiver_status
    assert webhook["status"] == ("delivered" if receiver_status == 200 else "retrying")
    listed = await call(client, "GET", "/_mock/webhooks", 200, params={"order_id": order["id"]})
    delivery = listed["deliveries"][0]
    assert json.loads(delivery["body"])["order_id"] == order["id"]
    assert_valid(json.loads(delivery["body"]), "/components/schemas/OrderEvent")
    redelivered = await call(
        client,
        "POST",
        "/_mock/webhooks/{delivery_id}/redeliver",
        200,
        path_params={"delivery_id": delivery["id"]},
    )
    assert redelivered["attempts"][-1]["manual"] is True


async def test_control_answers_match(merchant: Merchant):
    client = merchant.client
    await call(client, "GET", "/_mock/health", 200)
    await call(client, "GET", "/_mock/clock", 200)
    await call(client, "POST", "/_mock/clock/advance", 200, json={"seconds": 1})
    await call(client, "POST", "/_mock/clock/advance", 400, json={"seconds": -1})
    await merchant.create({"item_id": 1001})
    await call(client, "GET", "/_mock/orders", 200)
    await call(client, "GET", "/_mock/orders", 400, params={"status": "x"})
    await call(client, "GET", "/_mock/orders/{order_id}", 404, path_params={"order_id": "nope"})
    created = await call(client, "POST", "/_mock/accounts", 201, json={"email": "ci@example.com"})
    await call(client, "POST", "/_mock/accounts", 409, json={"email": "ci@example.com"})
    account = {"account_id": created["id"]}
    await call(client, "GET", "/_mock/accounts/{account_id}", 200, path_params=account)
    await call(client, "GET", "/_mock/accounts/{account_id}/ledger", 200, path_params=account)
    issued = await call(
        client, "POST", "/_mock/accounts/{account_id}/api-keys", 201, path_params=account
    )
    await call(
        client, "DELETE", "/_mock/api-keys/{key}", 200, path_params={"key": issued["api_key"]}
    )
    await call(
        client, "DELETE", "/_mock/api-keys/{key}", 404, path_params={"key": issued["api_key"]}
    )
    catalog = await call(client, "GET", "/_mock/catalog", 200)
    await call(client, "PUT", "/_mock/catalog", 200, json=catalog)
    await call(
        client,
        "PATCH",
        "/_mock/catalog/items/{item_id}",
        200,
        path_params={"item_id": "1003"},
        json={"stock": 2},
    )
    await call(client, "GET", "/_mock/scenarios", 200)
    scenario = {
        "name": "fast_fail",
        "steps": [{"after": "1s", "status": "failed", "error": "PROVIDER_DOWN"}],
    }
    await call(client, "POST", "/_mock/scenarios", 201, json=scenario)
    await call(client, "POST", "/_mock/scenarios/next", 201, json={"scenario": "fast_fail"})
    await call(client, "POST", "/_mock/faults", 201, json={"path": "/api/v1/orders/*"})
    await call(client, "GET", "/_mock/faults", 200)
    await call(client, "DELETE", "/_mock/faults", 200)
    await call(client, "GET", "/_mock/requests", 200)
    accounts = {"accounts": [{"email": "shop@example.com", "api_key": "ak_shop_1"}]}
    await call(client, "PUT", "/_mock/accounts", 200, json=accounts)
    await call(client, "POST", "/_mock/reset", 200, json={"seed": 7})


async def test_admin_token_answers_match(make_client):
    client = await make_client(admin_token="s3cret")
    error = await call(client, "GET", "/_mock/clock", 401)
    assert error["code"] == "not_authenticated"
    await call(client, "GET", "/_mock/health", 200)
    await call(client, "GET", "/_mock/clock", 200, headers={"Authorization": "Bearer s3cret"})


# -- /openapi.json and /docs -----------------------------------------------------------------


async def test_openapi_json_is_served(client):
    response = await client.get("/openapi.json")
    assert response.status == 200
    assert response.content_type == "application/json"
    assert await response.json() == DOC


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.links += [value or "" for name, value in attrs if name in ("src", "href")]


@pytest.mark.parametrize(
    ("path", "content_type"),
    [("/docs", "text/html"), ("/docs/app.js", "text/javascript"), ("/docs/style.css", "text/css")],
)
async def test_docs_page_is_served_and_entirely_local(client, path, content_type):
    response = await client.get(path)
    assert response.status == 200
    assert response.content_type == content_type
    assert response.charset == "utf-8"
    assert "default-src 'none'" in response.headers["Content-Security-Policy"]
    text = await response.text()
    assert "://" not in text, "the page must make no request outside the sandbox"
    assert "@import" not in text and not re.search(r"url\((?!\s*['\"]?data:)", text)


async def test_docs_html_references_only_its_own_assets(client):
    parser = _Links()
    parser.feed(await (await client.get("/docs")).text())
    assert {"/docs/app.js", "/docs/style.css", "/openapi.json"} <= set(parser.links)
    for link in parser.links:
        assert link.startswith(("/", "#", "data:")) and not link.startswith("//"), link
        if link.startswith("/"):
            assert (await client.get(link)).status == 200, link
