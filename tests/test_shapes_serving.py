"""Production's shapes on a serving sandbox (docs/shapes.md): `--shapes`, a created
sandbox's `shapes`, `PUT`/`GET /_mock/shapes`, kept by `--state`; merchant answers under
both prefixes and webhook events reshaped, signatures over the bytes sent; `/_mock`
never reshaped; without shapes every byte as before."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from aiohttp import web
from conftest import BASE_SETTINGS, login

from mock_server.app import create_app
from mock_server.webhooks import verify

SHAPES = """\
shapes:
  token:
    add: {expires_in: {copy: token.expires_in}}
  balance:
    as: {balance: decimal_string}
    add: {currency: {const: EUR}}
  account:
    add: {company_name: {const: "Shop GmbH"}}
  order:
    add:
      item_id: {copy: item}
      eta_seconds: {int: [5, 5]}
    drop: [item, source]
    choice_fields: id
  order.webhook:
    add: {url: {copy: delivery.url}}
    drop: [last_attempt_at]
  error:
    add: {request_id: uuid}
  error.not_found:
    drop: [detail]
  event:
    drop: [item, item_name, price, error, error_message, created_at, completed_at]
    add: {event: {const: order.completed}, sent_at: now}
  plant:
    add: {shaped: {const: true}}
"""
LOGIN = {"item_id": 2002, "quantity": 1, "fields": {"login_email": "p@example.com", "server": 2}}


class Receiver:
    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.signatures: list[str] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.bodies.append(await request.read())
        self.signatures.append(request.headers.get("X-Webhook-Signature", ""))
        return web.Response(status=200)


@pytest.fixture
async def receiver(aiohttp_server):
    found = Receiver()
    app = web.Application()
    app.router.add_post("/hooks", found.handle)
    server = await aiohttp_server(app, host="127.0.0.1", port=0)
    found.url = str(server.make_url("/hooks"))
    return found


@pytest.fixture
def shapes_file(tmp_path: Path) -> Path:
    path = tmp_path / "shapes.yaml"
    path.write_text(SHAPES)
    return path


async def test_every_merchant_answer_takes_production_s_shape(make_client, shapes_file, receiver):
    client = await make_client(shapes=str(shapes_file), webhook_url=receiver.url)
    token = await client.post("/api/v1/auth/token/client", json={"api_key": "ak_test_default"})
    exchanged = await token.json()
    assert exchanged["expires_in"] == 7200 and exchanged["token_type"] == "Bearer"
    merchant = await login(client)
    for prefix in ("/api/v1", "/v1"):
        status, balance = await merchant.call("GET", f"{prefix}/account/balance")
        assert status == 200 and isinstance(balance["balance"], str)
        assert balance["balance"].endswith(".00") and balance["currency"] == "EUR"
        status, me = await merchant.call("GET", f"{prefix}/account/me")
        assert me["company_name"] == "Shop GmbH"
    status, order = await merchant.create(LOGIN)
    assert status == 201, order
    assert order["item_id"] == 2002 and "item" not in order and "source" not in order
    assert order["eta_seconds"] == 5 and order["fields"]["server"] == 2  # the id, not a label
    assert order["status"] == "pending" and isinstance(order["price"], float)  # untouched
    status, looked_up = await merchant.call("GET", f"/v1/orders/{order['id']}")
    assert looked_up["item_id"] == 2002 and "item" not in looked_up
    status, missing = await merchant.call("GET", "/api/v1/orders/nope")
    assert status == 404 and missing["code"] == "not_found" and "detail" not in missing
    assert len(missing["request_id"]) == 36
    status, refused = await merchant.create({"item_id": 424242})
    assert status == 400 and refused["detail"] and refused["request_id"]
    plant = await client.put("/v3/plant", json={"id": 1, "name": "fern"})
    assert (await plant.json())["shaped"] is True


async def test_the_event_is_shaped_signed_as_sent_and_shown_as_sent(
    make_client, shapes_file, receiver
):
    client = await make_client(shapes=str(shapes_file), webhook_url=receiver.url)
    merchant = await login(client)
    status, order = await merchant.create({"item_id": 1001, "merchant_order_id": "m-1"})
    await merchant.advance(3)
    (raw,) = receiver.bodies
    event = json.loads(raw)
    assert set(event) == {
        "order_id",
        "status",
        "merchant_order_id",
        "quantity",
        "delivered_quantity",
        "codes",
        "refund_amount",
        "event",
        "sent_at",
    }
    assert event["event"] == "order.completed" and event["sent_at"].endswith("Z")
    assert verify("whsec_test_default", raw, receiver.signatures[0])
    deliveries = await (await client.get(f"/_mock/webhooks?order_id={order['id']}")).json()
    assert deliveries["deliveries"][0]["body"].encode() == raw  # what was sent, signed
    shown = (await merchant.order(order["id"]))["webhook"]
    assert shown["url"] == receiver.url and "last_attempt_at" not in shown
    assert shown["status"] == "delivered"


async def test_control_answers_are_never_shaped(make_client, shapes_file):
    client = await make_client(shapes=str(shapes_file))
    merchant = await login(client)
    status, order = await merchant.create({"item_id": 1001})
    detail = await (await client.get(f"/_mock/orders/{order['id']}")).json()
    assert detail["order"]["item"] == 1001 and "item_id" not in detail["order"]
    accounts = await (await client.get("/_mock/accounts")).json()
    assert isinstance(accounts["accounts"][0]["balance"], int | float)


async def test_without_shapes_every_byte_is_as_before(make_client, tmp_path):
    plain = await make_client()
    empty = tmp_path / "empty.yaml"
    empty.write_text("shapes: {}\n")
    shaped = await make_client(shapes=str(empty))
    for client in (plain, shaped):
        client.answers = []
        merchant = await login(client)
        for path in ("/api/v1/account/balance", "/v1/account/me"):
            response = await client.get(path, headers=merchant.auth)
            client.answers.append(await response.read())
    assert plain.answers == shaped.answers


async def test_put_and_get_shapes_per_sandbox(make_client):
    client = await make_client()
    created = await (await client.post("/_mock/sandboxes", json={})).json()
    base = f"/_mock/sandboxes/{created['id']}"
    rules = {"balance": {"as": {"balance": "int_string"}}}
    put = await client.put(f"{base}/_mock/shapes", json={"shapes": rules})
    assert put.status == 200 and (await put.json()) == {"shapes": rules}
    assert (await (await client.get(f"{base}/_mock/shapes")).json()) == {"shapes": rules}
    token = await client.post(
        f"{base}/api/v1/auth/token/client", json={"api_key": created["api_key"]}
    )
    headers = {"Authorization": f"Bearer {(await token.json())['access_token']}"}
    balance = await (await client.get(f"{base}/api/v1/account/balance", headers=headers)).json()
    assert isinstance(balance["balance"], str)
    default = await login(client)  # another sandbox: untouched
    status, own = await default.call("GET", "/api/v1/account/balance")
    assert isinstance(own["balance"], int | float)
    removed = await client.put(f"{base}/_mock/shapes", json={"shapes": {}})
    assert (await removed.json()) == {"shapes": {}}
    balance = await (await client.get(f"{base}/api/v1/account/balance", headers=headers)).json()
    assert isinstance(balance["balance"], int | float)


async def test_a_created_sandbox_takes_shapes_in_its_body_and_refuses_a_forbidden_rule(
    make_client,
):
    client = await make_client()
    good = {"shapes": {"token": {"add": {"expires_in": {"const": 3600}}}}}
    created = await client.post("/_mock/sandboxes", json=good)
    assert created.status == 201, await created.text()
    base = f"/_mock/sandboxes/{(await created.json())['id']}"
    assert (await (await client.get(f"{base}/_mock/shapes")).json()) == good
    bad = {"shapes": {"order": {"drop": ["status"]}}}
    refused = await client.post("/_mock/sandboxes", json=bad)
    assert refused.status == 400
    assert "the spec defines 'status'" in (await refused.json())["detail"]
    put = await client.put(f"{base}/_mock/shapes", json=bad)
    assert put.status == 400 and "drop 'status'" in (await put.json())["detail"]
    assert (await (await client.get(f"{base}/_mock/shapes")).json()) == good  # unchanged


async def test_a_yaml_shapes_document_is_taken_by_put(client):
    put = await client.put(
        "/_mock/shapes",
        data="shapes:\n  balance:\n    as: {balance: number}\n",
        headers={"Content-Type": "application/yaml"},
    )
    assert put.status == 200, await put.text()
    assert (await put.json())["shapes"] == {"balance": {"as": {"balance": "number"}}}


async def test_shapes_are_kept_across_a_restart_on_state(make_client, tmp_path):
    path = str(tmp_path / "state.db")
    first = await make_client(create_app(replace(BASE_SETTINGS, state=path)))
    created = await (await first.post("/_mock/sandboxes", json={})).json()
    base = f"/_mock/sandboxes/{created['id']}"
    rules = {"account": {"add": {"tier": {"const": "gold"}}}}
    assert (await first.put(f"{base}/_mock/shapes", json={"shapes": rules})).status == 200
    await first.session.close()
    await first.serving.stop()
    again = await make_client(create_app(replace(BASE_SETTINGS, state=path)))
    assert (await (await again.get(f"{base}/_mock/shapes")).json()) == {"shapes": rules}


def test_a_shapes_file_with_a_forbidden_rule_stops_the_start(tmp_path, capsys):
    from mock_server.cli import main

    path = tmp_path / "shapes.yaml"
    path.write_text("shapes:\n  event:\n    drop: [codes]\n")
    assert main(["serve", "--shapes", str(path), "--port", "0"]) != 0
    assert f"{path}:3: event: drop 'codes'" in capsys.readouterr().err


async def test_the_server_s_shapes_reach_created_sandboxes_unless_their_body_says(
    make_client, tmp_path
):
    path = tmp_path / "shapes.yaml"
    path.write_text("shapes:\n  balance:\n    as: {balance: int_string}\n")
    client = await make_client(shapes=str(path))

    async def balance_of(body: dict) -> object:
        created = await (await client.post("/_mock/sandboxes", json=body)).json()
        base = f"/_mock/sandboxes/{created['id']}"
        token = await client.post(
            f"{base}/api/v1/auth/token/client", json={"api_key": created["api_key"]}
        )
        headers = {"Authorization": f"Bearer {(await token.json())['access_token']}"}
        answer = await client.get(f"{base}/api/v1/account/balance", headers=headers)
        return (await answer.json())["balance"]

    assert isinstance(await balance_of({}), str)  # the server's
    assert isinstance(await balance_of({"shapes": {}}), int | float)  # its own: none


async def test_a_reset_goes_back_to_the_shapes_it_started_with(make_client, shapes_file):
    client = await make_client(shapes=str(shapes_file))
    await client.put("/_mock/shapes", json={"shapes": {}})
    assert (await (await client.get("/_mock/shapes")).json()) == {"shapes": {}}
    assert (await client.post("/_mock/reset")).status == 200
    assert "balance" in (await (await client.get("/_mock/shapes")).json())["shapes"]
