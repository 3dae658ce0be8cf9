"""`--state PATH` (docs/state.md): state that survives a restart and a `kill -9`, refused
honestly when the file cannot be used, and never written without the flag.

The servers are real processes (as a CI container runs them), on the manual clock.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import urllib.request
from pathlib import Path
from typing import Any

from tests.test_cli import launch  # noqa: F401 - the fixture, shared by import

ARGS = ("--port", "0", "--clock", "manual", "--seed", "5", "--start-time", "2026-01-01T00:00:00Z")


def call(
    base: str,
    method: str,
    path: str,
    body: Any = None,
    token: str | None = None,
    headers: dict[str, str] | None = None,
):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers or {})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def login(base: str, api_key: str = "ak_test_default") -> str:
    status, body = call(base, "POST", "/api/v1/auth/token/client", {"api_key": api_key})
    assert status == 200, body
    return body["access_token"]


def started(launch, state: Path, *extra: str):
    server = launch(*ARGS, "--state", str(state), *extra)
    server.wait_ready()
    return server


def test_acknowledged_orders_survive_kill_9(launch, tmp_path):
    state = tmp_path / "sandbox.db"
    server = started(launch, state)
    assert any(line.strip() == f"state        {state}" for line in server.banner)
    base = server.url
    token = login(base)
    created = []
    for index in range(24):  # 960.00 of the 1000.00
        scenario = {"X-Mock-Scenario": "timeout_partial"} if index % 3 == 0 else {}
        body = {"item_id": 1001, "quantity": 2, "merchant_order_id": f"kill-{index}"}  # 40.00
        request = urllib.request.Request(
            base + "/api/v1/orders",
            data=json.dumps(body).encode(),
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {token}",
                **scenario,
            },
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 201
            created.append(json.loads(response.read())["id"])
        if index == 11:
            call(base, "POST", "/_mock/clock/advance", {"seconds": 3})  # half of them settle
    before = call(base, "GET", "/_mock/orders")[1]["orders"]
    account = call(base, "GET", "/_mock/accounts")[1]["accounts"][0]
    server.proc.send_signal(signal.SIGKILL)  # no chance to write anything more
    server.proc.wait(timeout=5)

    again = started(launch, state)
    base = again.url
    after = call(base, "GET", "/_mock/orders")[1]["orders"]
    assert [o["id"] for o in after] == created
    assert after == before
    ledger = call(base, "GET", f"/_mock/accounts/{account['id']}/ledger")[1]
    assert ledger["balance"] == account["balance"]
    assert ledger["conserved"] is True
    assert call(base, "GET", "/api/v1/account/balance", token=token)[0] == 200  # tokens too
    status, error = call(
        base, "POST", "/api/v1/orders", {"item_id": 1001, "merchant_order_id": "kill-3"}, token
    )
    assert (status, error["code"]) == (400, "validation_error")  # references too
    # The pending steps resume at their virtual due times.
    call(base, "POST", "/_mock/clock/advance", {"seconds": 60})
    settled = call(base, "GET", "/_mock/orders")[1]["orders"]
    assert {o["status"] for o in settled} == {"completed", "partial"}
    assert call(base, "GET", f"/_mock/accounts/{account['id']}/ledger")[1]["conserved"] is True


def test_sandboxes_and_their_clocks_come_back(launch, tmp_path):
    state = tmp_path / "sandbox.db"
    server = started(launch, state)
    created = call(server.url, "POST", "/_mock/sandboxes", {"seed": 3})[1]
    gone = call(server.url, "POST", "/_mock/sandboxes", {})[1]
    path = "/_mock/sandboxes/" + created["id"]
    token = login(server.url + path, created["api_key"])
    call(server.url + path, "POST", "/api/v1/orders", {"item_id": 1001}, token)
    call(server.url + path, "POST", "/_mock/clock/advance", {"seconds": 1})
    call(server.url, "DELETE", "/_mock/sandboxes/" + gone["id"])
    server.stop(signal.SIGTERM)

    again = started(launch, state)
    base = again.url + path
    assert call(base, "GET", "/_mock/clock")[1]["now"] == "2026-01-01T00:00:01.000Z"
    assert call(again.url, "GET", "/_mock/clock")[1]["now"] == "2026-01-01T00:00:00.000Z"
    orders = call(base, "GET", "/_mock/orders")[1]["orders"]
    assert [o["status"] for o in orders] == ["processing"]
    assert call(base, "GET", "/api/v1/account/balance", token=token)[1]["balance"] == 980.0
    assert call(again.url, "GET", "/_mock/sandboxes/" + gone["id"])[0] == 404
    call(base, "POST", "/_mock/reset", {})  # back to how it was created, keys included
    assert login(base, created["api_key"])


def test_a_second_server_on_the_same_file_refuses_to_start(launch, tmp_path):
    state = tmp_path / "sandbox.db"
    started(launch, state)
    second = launch(*ARGS, "--state", str(state))
    assert second.finish() == 1
    assert "another server is using this state file" in second.stderr()
    assert "Traceback" not in second.stderr()


def test_a_corrupt_file_stops_the_start_with_its_name_and_a_way_out(launch, tmp_path):
    state = tmp_path / "sandbox.db"
    state.write_bytes(b"this is not a database, just some bytes " * 100)
    server = launch(*ARGS, "--state", str(state))
    assert server.finish() == 1
    stderr = server.stderr()
    assert str(state) in stderr and "start fresh" in stderr
    assert "Traceback" not in stderr
    assert state.read_bytes().startswith(b"this is not a database")  # left as it was


def test_a_file_of_a_newer_version_is_refused(launch, tmp_path):
    state = tmp_path / "sandbox.db"
    server = started(launch, state)
    server.stop(signal.SIGTERM)
    with sqlite3.connect(state) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'format'")
    again = launch(*ARGS, "--state", str(state))
    assert again.finish() == 1
    assert "newer" in again.stderr()


def test_without_state_nothing_is_written(launch, tmp_path):
    server = launch(*ARGS)
    server.wait_ready()
    token = login(server.url)
    call(server.url, "POST", "/api/v1/orders", {"item_id": 1001}, token)
    server.stop(signal.SIGTERM)
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith("stderr-")] == []


def test_damaged_rows_stop_the_start_with_the_sandbox_and_the_reason(launch, tmp_path):
    state = tmp_path / "sandbox.db"
    server = started(launch, state)
    token = login(server.url)
    call(server.url, "POST", "/api/v1/orders", {"item_id": 1001}, token)
    server.stop(signal.SIGTERM)
    with sqlite3.connect(state) as db:
        db.execute("UPDATE orders SET doc = '{\"id\": 1, broken'")
    again = launch(*ARGS, "--state", str(state))
    assert again.finish() == 1
    stderr = again.stderr()
    assert f"{state}: sandbox default cannot be restored" in stderr
    assert "start fresh" in stderr and "Traceback" not in stderr


# -- lists keep their creation order (docs/state.md) --------------------------------------

#: A webhook receiver that is never there (connection refused): attempts fail at once.
NOBODY_LISTENS = "http://127.0.0.1:9/hooks"


def saved_out_of_order(base: str) -> None:
    """Orders and deliveries whose rows are last saved in another order than they were
    made: the first order moves on after later ones exist, and a manual redelivery
    changes the middle copy of a duplicated webhook after later deliveries were made.
    Around them, something in every other list: a second account, another API key, a
    loaded scenario, a queue, faults, a stock change, a second token."""
    accounts = call(base, "GET", "/_mock/accounts")[1]["accounts"]
    call(base, "PATCH", f"/_mock/accounts/{accounts[0]['id']}", {"webhook_url": NOBODY_LISTENS})
    token = login(base, accounts[0]["api_keys"][0])

    def order(scenario: str) -> str:
        body = {"item_id": 1001}
        status, created = call(
            base, "POST", "/api/v1/orders", body, token, {"X-Mock-Scenario": scenario}
        )
        assert status == 201, created
        return created["id"]

    order("slow_fulfillment")  # processing at 30 s, after every other order was made
    duplicated = order("webhook_duplicate")  # completes at 3 s: three deliveries
    order("happy_path")  # completes at 3 s: one delivery
    call(base, "POST", "/_mock/clock/advance", {"seconds": 3})
    order("happy_path")  # completes at 6 s
    call(base, "POST", "/_mock/clock/advance", {"seconds": 30})
    copies = call(base, "GET", f"/_mock/webhooks?order_id={duplicated}")[1]["deliveries"]
    assert call(base, "POST", f"/_mock/webhooks/{copies[1]['id']}/redeliver")[0] == 200

    login(base)  # a second token
    status, _ = call(base, "POST", "/_mock/accounts", {"email": "second@example.com"})
    assert status == 201
    assert call(base, "POST", f"/_mock/accounts/{accounts[0]['id']}/api-keys")[0] == 201
    scenario = {"name": "later", "steps": [{"after": "5s", "status": "completed"}]}
    assert call(base, "POST", "/_mock/scenarios", scenario)[0] == 201
    for name in ("failed_out_of_stock", "later"):
        assert call(base, "POST", "/_mock/scenarios/next", {"scenario": name})[0] == 201
    for path in ("/api/v1/account/balance", "/api/v1/account/me"):
        assert call(base, "POST", "/_mock/faults", {"path": path, "status": 503})[0] == 201
    assert call(base, "PATCH", "/_mock/catalog/items/1001", {"stock": 7})[0] == 200
    # Reads last: what they count (coverage, a fault's use) is not written before they
    # answer, yet survives a clean stop.
    assert call(base, "GET", "/api/v1/account/balance", token=token)[0] == 503
    first = call(base, "GET", "/_mock/orders")[1]["orders"][0]["id"]
    assert call(base, "GET", f"/v1/orders/{first}", token=token)[0] == 200
    assert call(base, "GET", "/v1/orders/nope", token=token)[0] == 404


def every_list(base: str) -> dict[str, Any]:
    """What every list of one sandbox's control API answers, pages included. (The
    request journal is not state: it starts empty, docs/state.md.)"""
    orders = call(base, "GET", "/_mock/orders")[1]["orders"]
    accounts = call(base, "GET", "/_mock/accounts")[1]["accounts"]
    paths = [
        "/_mock/orders",
        "/_mock/orders?offset=1&limit=2",
        "/_mock/orders?sort=newest&offset=1&limit=2",
        "/_mock/webhooks",
        *(f"/_mock/orders/{order['id']}" for order in orders),  # each one's deliveries
        "/_mock/accounts",
        *(f"/_mock/accounts/{account['id']}/ledger" for account in accounts),
        "/_mock/catalog",
        "/_mock/scenarios",  # and the queue
        "/_mock/faults",
        "/_mock/jobs?upcoming=100",
        "/_mock/coverage",
        "/_mock/state",  # tokens too
    ]
    answers = {}
    for path in paths:
        status, answers[path] = call(base, "GET", path)
        assert status == 200, (path, answers[path])
    return without_provenance(answers)


def without_provenance(answers: dict[str, Any]) -> dict[str, Any]:
    """What each list holds, and in which order, stays (a loaded scenario's `source`
    and a planned job's label included), except among jobs due at the same instant:
    webhook attempts that fall due together go out concurrently, so their retries are
    planned in the order the attempts ended."""
    jobs = answers["/_mock/jobs?upcoming=100"]["upcoming"]
    jobs.sort(key=lambda job: (job["due"], job["job"]))  # stable for distinct instants
    return answers


def sandbox_entries(server: str) -> list[dict[str, Any]]:
    """Every sandbox's entry but when it was last used (reads are not saved), its base
    URL without the server's (a restarted server has another port)."""
    listed = call(server, "GET", "/_mock/sandboxes")[1]["sandboxes"]
    for entry in listed:
        del entry["last_used_at"]
        entry["base_url"] = entry["base_url"].removeprefix(server)
    return listed


def test_every_list_keeps_its_creation_order_across_a_restart(launch, tmp_path):
    state = tmp_path / "sandbox.db"
    server = started(launch, state)
    saved_out_of_order(server.url)
    before = every_list(server.url)
    entries = sandbox_entries(server.url)
    assert before["/_mock/coverage"]["exercised"]["prefixes"]["/v1"] == 2
    made = [order["id"] for order in before["/_mock/orders"]["orders"]]
    statuses = [order["status"] for order in before["/_mock/orders"]["orders"]]
    # The first order was made first and changed last.
    assert statuses == ["processing", "completed", "completed", "completed"]
    server.stop(signal.SIGTERM)

    again = started(launch, state)
    after = every_list(again.url)
    assert [path for path, answer in before.items() if after[path] != answer] == []
    assert [order["id"] for order in after["/_mock/orders"]["orders"]] == made
    assert sandbox_entries(again.url) == entries  # the default sandbox's created_at too


def test_created_sandboxes_keep_their_order_across_a_restart(launch, tmp_path):
    state = tmp_path / "sandbox.db"
    server = started(launch, state)
    first = call(server.url, "POST", "/_mock/sandboxes", {})[1]["id"]
    second = call(server.url, "POST", "/_mock/sandboxes", {})[1]["id"]
    advance = f"/_mock/sandboxes/{first}/_mock/clock/advance"
    assert call(server.url, "POST", advance, {"seconds": 1})[0] == 200  # first changes last
    listed = call(server.url, "GET", "/_mock/sandboxes")[1]["sandboxes"]
    assert [s["id"] for s in listed] == ["default", first, second]
    server.stop(signal.SIGTERM)

    again = started(launch, state)
    listed_again = call(again.url, "GET", "/_mock/sandboxes")[1]["sandboxes"]
    assert [s["id"] for s in listed_again] == [s["id"] for s in listed]
    # Reads are not saved, so last_used_at may be older; when each was made is exact.
    assert [s["created_at"] for s in listed_again] == [s["created_at"] for s in listed]


def _renamed(data: Any) -> Any:
    return json.loads(json.dumps(data).replace('"ak_test_default"', '"ak_copied_key"'))


def test_a_loaded_state_keeps_its_order_then_and_across_a_restart(launch, tmp_path):
    state = tmp_path / "sandbox.db"
    server = started(launch, state)
    saved_out_of_order(server.url)
    # A created sandbox may not hold the default key (docs/hosting.md): the copy's is renamed.
    document = _renamed(call(server.url, "GET", "/_mock/state")[1])
    created = call(server.url, "POST", "/_mock/sandboxes", {})[1]
    copy = "/_mock/sandboxes/" + created["id"]
    assert call(server.url + copy, "PUT", "/_mock/state", document)[0] == 200
    assert every_list(server.url + copy) == _renamed(every_list(server.url))
    # The loaded copy moves on: retries rewrite its deliveries, its first order settles last.
    assert call(server.url + copy, "POST", "/_mock/clock/advance", {"seconds": 300})[0] == 200
    before = every_list(server.url + copy)
    assert before["/_mock/orders"]["orders"][0]["status"] == "completed"
    server.stop(signal.SIGTERM)

    again = started(launch, state)
    after = every_list(again.url + copy)
    assert [path for path, answer in before.items() if after[path] != answer] == []
