"""`mock-server validate` on state documents (docs/state.md).

Whatever state a sandbox reaches, the document `GET /_mock/state` answers must pass
`mock-server validate` and load with `PUT /_mock/state` into a fresh server: one rule
for both. A document refers to nothing it does not carry (its scenarios included),
since validate knows no server flags. A corrupted copy is refused with `file: reason`.

Every server here is in-process on a manual clock; webhook receivers listen on
127.0.0.1 only.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from aiohttp import web

from mock_server.cli import main as cli_main
from tests.conftest import Merchant, login

LOGIN_TOPUP = {"item_id": 2002, "quantity": 1, "fields": {"login_email": "a@b.c", "server": 2}}
SLOW_FAIL = {
    "name": "slow_fail",
    "steps": [{"after": "90s", "status": "failed", "error": "OUT_OF_STOCK"}],
}
YAML_SCENARIOS = (
    "scenarios:\n"
    "  - name: yaml_slow\n"
    "    match:\n"
    "      merchant_order_id: '^slow-'\n"
    "    steps:\n"
    "      - after: 10s\n"
    "        status: processing\n"
    "      - after: 50s\n"
    "        status: completed\n"
    "  - name: yaml_coded\n"
    "    steps:\n"
    "      - after: 1s\n"
    "        status: need_client_code\n"
    "        expect_code: '4242'\n"
    "      - after: 1s\n"
    "        status: completed\n"
)
SANDBOX_SCENARIOS = {
    "scenarios": [
        {
            "name": "own_slow",
            "steps": [
                {"after": "1m", "status": "processing"},
                {"after": "1m", "status": "completed"},
            ],
        },
        {"name": "own_fail", "steps": [{"status": "failed", "error": "OUT_OF_STOCK"}]},
    ]
}


# -- helpers ------------------------------------------------------------------------------


class Prefixed:
    """A test client whose every call goes under a sandbox's base path."""

    def __init__(self, client: Any, base: str) -> None:
        self._client, self._base = client, base

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._client.request(method, self._base + path, **kwargs)

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Any:
        return self.request("POST", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> Any:
        return self.request("PUT", path, **kwargs)

    def patch(self, path: str, **kwargs: Any) -> Any:
        return self.request("PATCH", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Any:
        return self.request("DELETE", path, **kwargs)


async def exported(client: Any) -> dict[str, Any]:
    response = await client.get("/_mock/state")
    assert response.status == 200, await response.text()
    return await response.json()


async def put_state(client: Any, document: Any) -> tuple[int, Any]:
    response = await client.put("/_mock/state", json=document)
    return response.status, await response.json()


async def ok(response: Any) -> Any:
    assert response.status in (200, 201, 204), await response.text()
    return await response.json() if response.status != 204 else None


async def created(merchant: Merchant, body: dict[str, Any], **headers: str) -> str:
    status, order = await merchant.create(body, **headers)
    assert status == 201, order
    return order["id"]


async def statuses(client: Any) -> set[str]:
    orders = (await ok(await client.get("/_mock/orders")))["orders"]
    return {order["status"] for order in orders}


class Validate:
    """`mock-server validate FILE` in this process (what the console script runs)."""

    def __init__(self, folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.folder, self.capsys = folder, capsys

    def text(self, text: str, name: str, *options: str) -> tuple[Path, int, str, str]:
        path = self.folder / name
        path.write_text(text)
        self.capsys.readouterr()
        code = cli_main(["validate", *options, str(path)])
        out, err = self.capsys.readouterr()
        return path, code, out, err

    def __call__(self, document: Any, name: str, *options: str) -> tuple[Path, int, str, str]:
        return self.text(json.dumps(document, indent=1), name, *options)


@pytest.fixture
def validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Validate:
    return Validate(tmp_path, capsys)


@pytest.fixture
async def hooks(aiohttp_server) -> dict[str, str]:
    """Webhook receivers on 127.0.0.1: one that takes every delivery, one that never does."""

    async def taken(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def refused(request: web.Request) -> web.Response:
        return web.Response(status=500)

    app = web.Application()
    app.router.add_post("/ok", taken)
    app.router.add_post("/fail", refused)
    server = await aiohttp_server(app, host="127.0.0.1", port=0)
    return {"ok": str(server.make_url("/ok")), "fail": str(server.make_url("/fail"))}


# -- the states a server can reach ---------------------------------------------------------

Reach = Callable[[Any, dict[str, str], Path], Awaitable[Any]]


async def fresh(make_client: Any, hooks: dict[str, str], folder: Path) -> Any:
    return await make_client()


async def every_status(make_client: Any, hooks: dict[str, str], folder: Path) -> Any:
    merchant = await login(await make_client())
    await created(merchant, {"item_id": 1001})
    await created(
        merchant, {"item_id": 1001, "quantity": 4}, **{"X-Mock-Scenario": "timeout_partial"}
    )
    await created(merchant, {"item_id": 1002}, **{"X-Mock-Scenario": "failed_out_of_stock"})
    await merchant.advance(40)
    await created(merchant, LOGIN_TOPUP, **{"X-Mock-Scenario": "need_client_code"})
    await merchant.advance(5)
    await created(merchant, {"item_id": 1003, "merchant_order_id": "m-1"})
    await merchant.advance(1)
    await created(
        merchant, {"item_id": 2001, "quantity": 12.5, "fields": {"razer_id": "r", "region": 2}}
    )
    assert await statuses(merchant.client) == {
        "pending",
        "processing",
        "need_client_code",
        "completed",
        "partial",
        "failed",
    }
    return merchant.client


async def runtime_scenarios(make_client: Any, hooks: dict[str, str], folder: Path) -> Any:
    """Scenarios loaded at run time (JSON and YAML) drive orders, by header, by match and
    by the queue; some orders wait on a step of theirs; the plant demo changed too."""
    merchant = await login(await make_client())
    client = merchant.client
    await ok(await client.post("/_mock/scenarios", json=SLOW_FAIL))
    yaml_type = {"Content-Type": "application/yaml"}
    await ok(await client.post("/_mock/scenarios", data=YAML_SCENARIOS, headers=yaml_type))
    redefined = {"name": "happy_path", "steps": [{"after": "5s", "status": "completed"}]}
    await ok(await client.post("/_mock/scenarios", json=[redefined]))
    await created(merchant, {"item_id": 1001}, **{"X-Mock-Scenario": "slow_fail"})
    await created(merchant, {"item_id": 1001, "merchant_order_id": "slow-1"})
    coded = await created(merchant, LOGIN_TOPUP, **{"X-Mock-Scenario": "yaml_coded"})
    await ok(await client.post("/_mock/scenarios/next", json={"scenario": "slow_fail"}))
    await created(merchant, {"item_id": 1002})
    await created(merchant, {"item_id": 1001})  # the redefined happy_path
    await merchant.advance(12)
    status, _ = await merchant.call(
        "POST", f"/api/v1/orders/{coded}/client-code", json={"code": "4242"}
    )
    assert status == 200
    await client.put("/v3/plant", json={"id": 4, "status": "sold"})
    orders = (await ok(await client.get("/_mock/orders")))["orders"]
    scenarios = set()
    for order in orders:
        scenarios.add((await ok(await client.get(f"/_mock/orders/{order['id']}")))["scenario"])
    assert {"slow_fail", "yaml_slow", "yaml_coded", "happy_path"} <= scenarios
    return client


async def queued(make_client: Any, hooks: dict[str, str], folder: Path) -> Any:
    merchant = await login(await make_client())
    client = merchant.client
    account_id = (await ok(await client.get("/_mock/accounts")))["accounts"][0]["id"]
    await ok(await client.post("/_mock/scenarios", json=SLOW_FAIL))
    await ok(await client.post("/_mock/scenarios/next", json={"scenario": "slow_fail", "count": 3}))
    await created(merchant, {"item_id": 1001})  # takes one of the three
    next_ones = [
        {"scenario": "timeout_partial", "account_id": account_id, "count": 2},
        {"scenario": "need_client_code", "count": None},
    ]
    for body in next_ones:
        await ok(await client.post("/_mock/scenarios/next", json=body))
    listing = await ok(await client.get("/_mock/scenarios"))
    assert len(listing["queue"]) == 3
    return client


async def faults(make_client: Any, hooks: dict[str, str], folder: Path) -> Any:
    merchant = await login(await make_client())
    client = merchant.client
    for fault in (
        {"path": "/api/v1/account/balance", "status": 503, "times": 2},
        {"method": "POST", "path": "/api/v1/orders", "status": 500, "after_commit": True},
        {"path": "/api/v1/orders", "status": 502, "latency_ms": 20, "times": 5},
    ):
        await ok(await client.post("/_mock/faults", json=fault))
    assert (await merchant.call("GET", "/api/v1/account/balance"))[0] == 503  # one used
    return client


async def accounts(make_client: Any, hooks: dict[str, str], folder: Path) -> Any:
    """Accounts created and patched; more keys issued, one revoked after it got a token."""
    merchant = await login(await make_client())
    client = merchant.client
    first = (await ok(await client.get("/_mock/accounts")))["accounts"][0]["id"]
    shop = await ok(
        await client.post("/_mock/accounts", json={"email": "shop@example.com", "balance": 75.5})
    )
    await ok(
        await client.post(
            "/_mock/accounts",
            json={"email": "own@example.com", "api_key": "ak_own_1", "webhook_secret": "whsec_own"},
        )
    )
    patch = {
        "balance": 123.45,
        "has_active_subscription": True,
        "webhook_url": hooks["ok"],
        "webhook_secret": "whsec_patched",
        "signature_headers": ["X-Webhook-Signature"],
    }
    await ok(await client.patch(f"/_mock/accounts/{shop['id']}", json=patch))
    await ok(await client.patch(f"/_mock/accounts/{first}", json={"balance": 500}))
    kept = (await ok(await client.post(f"/_mock/accounts/{shop['id']}/api-keys")))["api_key"]
    revoked = (await ok(await client.post(f"/_mock/accounts/{first}/api-keys")))["api_key"]
    shopper = await login(client, kept)
    await login(client, revoked)
    await ok(await client.delete(f"/_mock/api-keys/{revoked}"))
    await created(shopper, {"item_id": 1001})
    await created(merchant, {"item_id": 1002})
    await merchant.advance(5)
    return client


async def replaced_accounts(make_client: Any, hooks: dict[str, str], folder: Path) -> Any:
    merchant = await login(await make_client())
    client = merchant.client
    await created(merchant, {"item_id": 1001})
    body = {"accounts": [{"email": "new@example.com", "api_key": "ak_new_1", "balance": 40}]}
    await ok(await client.put("/_mock/accounts", json=body))
    await created(await login(client, "ak_new_1"), {"item_id": 1001})
    return client


async def catalog(make_client: Any, hooks: dict[str, str], folder: Path) -> Any:
    merchant = await login(await make_client())
    client = merchant.client
    await ok(await client.patch("/_mock/catalog/items/1003", json={"stock": 1}))
    await ok(await client.patch("/_mock/catalog/items/1001", json={"price": 2500}))
    await ok(await client.patch("/_mock/catalog/items/1002", json={"in_stock": False}))
    await created(merchant, {"item_id": 1001, "quantity": 2})
    await created(merchant, {"item_id": 1003, "quantity": 1})
    await merchant.advance(5)
    return client


async def replaced_catalog(make_client: Any, hooks: dict[str, str], folder: Path) -> Any:
    merchant = await login(await make_client())
    feed = [{"id": 7, "name": "Only key", "product_type": "key", "price": 250, "stock": 3}]
    await ok(await merchant.client.put("/_mock/catalog", json=feed))
    await created(merchant, {"item_id": 7, "quantity": 2})
    return merchant.client


async def webhooks(make_client: Any, hooks: dict[str, str], folder: Path) -> Any:
    """Deliveries delivered, failed for good, retrying, dropped, duplicated, redelivered."""
    merchant = await login(await make_client(webhook_url=hooks["ok"]))
    client = merchant.client
    await created(merchant, {"item_id": 1001})
    await created(merchant, {"item_id": 1001}, **{"X-Mock-Scenario": "webhook_dropped"})
    await created(merchant, {"item_id": 1001}, **{"X-Mock-Scenario": "webhook_duplicate"})
    failing = await ok(
        await client.post(
            "/_mock/accounts",
            json={"email": "f@example.com", "balance": 100, "webhook_url": hooks["fail"]},
        )
    )
    failer = await login(client, failing["api_key"])
    await created(failer, {"item_id": 1001})
    await merchant.advance(400)  # the first failing delivery runs out of retries
    await created(failer, {"item_id": 1002})
    await merchant.advance(10)  # its first attempt failed; a retry is due
    deliveries = (await ok(await client.get("/_mock/webhooks")))["deliveries"]
    failed = next(d for d in deliveries if d["status"] == "failed")
    await ok(await client.post(f"/_mock/webhooks/{failed['id']}/redeliver"))
    deliveries = (await ok(await client.get("/_mock/webhooks")))["deliveries"]
    assert {"delivered", "failed", "retrying"} <= {d["status"] for d in deliveries}
    return client


async def sandbox(make_client: Any, hooks: dict[str, str], folder: Path) -> Any:
    """A created sandbox with its own clock, catalog, accounts and scenarios: its orders
    play the scenarios it was created with, and one loaded into it at run time."""
    client = await make_client()
    body = {
        "seed": 9,
        "start_time": "2030-05-01T12:00:00Z",
        "clock": "manual",
        "catalog": [
            {"id": 5, "name": "Own key", "product_type": "key", "price": 250, "stock": 10},
            {"id": 6, "name": "Own other", "product_type": "key", "price": 990},
        ],
        "accounts": {
            "accounts": [
                {
                    "email": "shop@example.com",
                    "api_key": "ak_shop_own",
                    "balance": 100,
                    "webhook_url": hooks["ok"],
                    "webhook_secret": "whsec_shop",
                }
            ]
        },
        "scenarios": SANDBOX_SCENARIOS,
        "ttl": 600,
    }
    entry = await ok(await client.post("/_mock/sandboxes", json=body))
    own = Prefixed(client, urlparse(entry["base_url"]).path)
    merchant = await login(own, entry["api_key"])
    await ok(await own.post("/_mock/scenarios", json=SLOW_FAIL))
    await created(merchant, {"item_id": 5}, **{"X-Mock-Scenario": "own_fail"})
    await created(merchant, {"item_id": 5, "quantity": 2}, **{"X-Mock-Scenario": "own_slow"})
    await created(merchant, {"item_id": 6}, **{"X-Mock-Scenario": "slow_fail"})
    await ok(await own.post("/_mock/scenarios/next", json={"scenario": "own_slow", "count": 2}))
    await merchant.advance(70)
    await created(merchant, {"item_id": 6})  # the queue's own_slow
    assert (await ok(await own.get("/_mock/clock")))["now"].startswith("2030-05-01T12:01")
    await created(await login(client), {"item_id": 1001})  # the default sandbox is busy too
    return own


async def after_reset(make_client: Any, hooks: dict[str, str], folder: Path) -> Any:
    merchant = await login(await make_client())
    client = merchant.client
    await ok(await client.post("/_mock/scenarios", json=SLOW_FAIL))
    await created(merchant, {"item_id": 1001}, **{"X-Mock-Scenario": "slow_fail"})
    await ok(await client.post("/_mock/faults", json={"path": "/api/v1/orders", "status": 500}))
    await ok(
        await client.post("/_mock/reset", json={"seed": 5, "start_time": "2027-02-03T04:05:06Z"})
    )
    await created(await login(client), {"item_id": 1001})
    return client


async def startup_files(make_client: Any, hooks: dict[str, str], folder: Path) -> Any:
    """A server started with --scenarios (a folder and a file), --catalog and --accounts."""
    scenarios = folder / "scenarios"
    scenarios.mkdir()
    (scenarios / "a.yaml").write_text(
        "scenarios:\n"
        "  - name: happy_path\n"
        "    steps:\n"
        "      - after: 30s\n"
        "        status: completed\n"
    )
    (scenarios / "b.json").write_text(
        json.dumps([{"name": "from_folder", "steps": [{"after": "1m", "status": "completed"}]}])
    )
    single = folder / "single.yaml"
    single.write_text(
        "name: from_file\nsteps:\n  - after: 2m\n    status: failed\n    error: ORDER_TIMEOUT\n"
    )
    catalog_file = folder / "catalog.yaml"
    catalog_file.write_text(
        "- id: 11\n  name: File key\n  product_type: key\n  price: 300\n  stock: 4\n"
    )
    accounts_file = folder / "accounts.yaml"
    accounts_file.write_text(
        "accounts:\n"
        "  - email: file@example.com\n"
        "    api_key: ak_file_1\n"
        "    balance: 90\n"
        "    webhook_secret: whsec_file\n"
    )
    client = await make_client(
        scenarios=(str(scenarios), str(single)),
        catalog=str(catalog_file),
        accounts=str(accounts_file),
    )
    merchant = await login(client, "ak_file_1")
    await created(merchant, {"item_id": 11})  # the file's happy_path
    await created(merchant, {"item_id": 11}, **{"X-Mock-Scenario": "from_folder"})
    await created(merchant, {"item_id": 11}, **{"X-Mock-Scenario": "from_file"})
    await ok(await client.post("/_mock/scenarios/next", json={"scenario": "from_file"}))
    await merchant.advance(5)
    return client


STATES: dict[str, Reach] = {
    reach.__name__: reach
    for reach in (
        fresh,
        every_status,
        runtime_scenarios,
        queued,
        faults,
        accounts,
        replaced_accounts,
        catalog,
        replaced_catalog,
        webhooks,
        sandbox,
        after_reset,
        startup_files,
    )
}


def corrupted(document: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A copy with one mistake, and where validate must say it is."""
    changed = copy.deepcopy(document)
    if changed["orders"]:
        changed["orders"][-1]["status"] = "shipped"
        return changed, f"state.orders[{len(changed['orders']) - 1}].status"
    changed["clock"]["mode"] = "sundial"
    return changed, "state.clock.mode"


# -- what validate and PUT make of them -----------------------------------------------------


@pytest.mark.parametrize("reach", STATES)
async def test_validate_accepts_every_exported_state_and_refuses_a_corrupted_copy(
    make_client, hooks, tmp_path, validate, reach
):
    client = await STATES[reach](make_client, hooks, tmp_path)
    document = await exported(client)

    path, code, out, err = validate(document, f"{reach}.json")
    assert (code, err) == (0, ""), err
    assert out == f"{path}: ok (state)\n"

    bad, where = corrupted(document)
    path, code, out, err = validate(bad, f"{reach}-bad.json")
    assert (code, out) == (1, "")
    assert err.startswith(f"{path}: {where}: "), err
    assert err.count("\n") == 1

    path, code, out, err = validate.text(json.dumps(document, indent=1)[:-40], f"{reach}-cut.json")
    assert code == 1 and out == ""
    assert re.fullmatch(rf"{re.escape(str(path))}:\d+: invalid JSON: .+\n", err), err


@pytest.mark.parametrize("reach", STATES)
async def test_what_validate_accepts_loads_into_a_fresh_server_as_the_same_state(
    make_client, hooks, tmp_path, reach
):
    document = await exported(await STATES[reach](make_client, hooks, tmp_path))
    fresh_server = await make_client(seed=777)  # never loaded a scenario, has no flags
    status, answer = await put_state(fresh_server, document)
    assert status == 200, answer
    assert await exported(fresh_server) == document


async def test_a_state_document_carries_the_startup_scenarios_beyond_the_built_in_set(
    make_client, hooks, tmp_path
):
    client = await startup_files(make_client, hooks, tmp_path)
    document = await exported(client)
    (carried,) = document["scenarios_loaded"]  # one document, in the server's load order
    assert carried == {
        "scenarios": [
            {"name": "happy_path", "steps": [{"after": "30s", "status": "completed"}]},
            {"name": "from_folder", "steps": [{"after": "1m", "status": "completed"}]},
            {
                "name": "from_file",
                "steps": [{"after": "2m", "status": "failed", "error": "ORDER_TIMEOUT"}],
            },
        ]
    }

    # Loaded back where it came from, nothing is carried twice.
    status, answer = await put_state(client, document)
    assert status == 200, answer
    assert await exported(client) == document
    await ok(await client.post("/_mock/reset"))
    assert (await exported(client))["scenarios_loaded"] == [carried]  # startup ones stay


async def test_a_created_sandbox_carries_the_scenarios_it_was_created_with(
    make_client, hooks, tmp_path
):
    own = await sandbox(make_client, hooks, tmp_path)
    document = await exported(own)
    assert document["scenarios_loaded"] == [SANDBOX_SCENARIOS, SLOW_FAIL]

    status, answer = await put_state(own, document)  # back into itself: not doubled
    assert status == 200, answer
    assert await exported(own) == document


async def test_a_document_naming_a_scenario_it_does_not_carry_says_what_to_do(
    make_client, hooks, tmp_path, validate
):
    document = await exported(await runtime_scenarios(make_client, hooks, tmp_path))
    document["scenarios_loaded"] = []
    path, code, _, err = validate(document, "uncarried.json")
    assert code == 1
    assert err.startswith(f"{path}: state.orders[0]: scenario 'slow_fail' is not loaded"), err
    assert "scenarios_loaded" in err and "add" in err

    status, error = await put_state(await make_client(), document)  # the same rule
    assert status == 400
    assert error["detail"] in err

    document["orders"] = []
    document["deliveries"] = []
    document["queue"] = [{"scenario": "yaml_slow", "account_id": None, "remaining": 1}]
    _, code, _, err = validate(document, "uncarried-queue.json")
    assert code == 1
    assert "state: queue: scenario 'yaml_slow' is not loaded" in err
    assert "scenarios_loaded" in err


async def test_validate_on_the_command_line_checks_each_exported_document(
    make_client, hooks, tmp_path
):
    """The console command itself, on a created sandbox's saved state (its scenarios came
    with its creation), a corrupted copy of it and a catalog: exit 1, one line for the
    bad file, `ok` for the others."""
    document = await exported(await sandbox(make_client, hooks, tmp_path))
    good, bad = tmp_path / "sandbox.json", tmp_path / "sandbox-bad.json"
    good.write_text(json.dumps(document))
    broken, where = corrupted(document)
    bad.write_text(json.dumps(broken))
    catalog_file = tmp_path / "catalog.json"
    catalog_file.write_text(json.dumps([{"id": 1, "name": "k", "product_type": "key", "price": 1}]))
    command = [sys.executable, "-m", "mock_server", "validate", str(good), str(bad)]
    result = subprocess.run(
        [*command, str(catalog_file)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 1
    assert result.stdout.splitlines() == [f"{good}: ok (state)", f"{catalog_file}: ok (catalog)"]
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"{bad}: {where}: ")


async def test_validate_checks_a_documents_webhook_urls_against_the_given_rules(
    make_client, validate
):
    """`--webhook-deny-private` / `--webhook-allow`: a document whose account's webhook
    URL a server with those rules would refuse is reported, and `PUT /_mock/state` into
    such a server refuses it for the same reason; without them it passes, as it loads
    into a server without them."""
    document = await exported(await make_client())
    document["accounts"][0]["webhook_url"] = "http://10.20.30.40:9000/hooks"
    path, code, out, err = validate(document, "private-hook.json")
    assert (code, err) == (0, ""), err
    assert out == f"{path}: ok (state)\n"

    _, code, _, err = validate(document, "private-hook.json", "--webhook-deny-private")
    assert code == 1
    (line,) = err.splitlines()
    assert line.startswith(f"{path}: state: account {document['accounts'][0]['id']}: ")
    assert "10.20.30.40" in line and "--webhook-deny-private" in line
    status, error = await put_state(await make_client(webhook_deny_private=True), document)
    assert status == 400
    assert line == f"{path}: {error['detail']}"

    _, code, _, err = validate(document, "private-hook.json", "--webhook-allow", "10.0.0.0/8")
    assert code == 0, err
    _, code, _, err = validate(document, "private-hook.json", "--webhook-allow", "*.example.com")
    assert code == 1
    assert "not allowed by --webhook-allow" in err
