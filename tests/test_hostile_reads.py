"""The large reads and the saves a hosted sandbox makes (docs/hosting.md, "What one
request may cost", "Quotas" and "Sizing"): on a server set up as docs/hosting.md says,
a tenant holding only its own sandbox's control token and API key cannot make a read of
everything it holds stall another tenant, nor make a `--state` save cost the whole of
its catalog, nor hold codes without bound. Each test is an attack, written as it was
tried.

CPU is measured with `time.process_time()` around an in-process call; how long the
shared event loop is held is the longest gap between two turns of a task that does
nothing but yield, while the attack is under way.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
import pytest
from hosted import HOSTED, Tenant, tenant

from mock_server.domain import state_document
from mock_server.domain.admin import ledger_view
from mock_server.edge.json_stream import PACED_PER_SANDBOX, PIECE_BYTES, paced, pieces
from mock_server.edge.jsonio import dumps

#: What a piece, or a call, may cost: the docs' 50 ms, with room for a loaded machine.
CPU_BOUND = 0.05
#: The longest the event loop may be held while a large read is written: a few pieces'
#: worth with room for a loaded machine (the whole read held it 0.35 to 0.7 s).
STALL_BOUND = 0.1
#: Orders in the sandbox read: enough that rendering a read whole held the loop for
#: several times `STALL_BOUND`.
ORDERS = 40_000


async def fill(attacker: Tenant, orders: int = ORDERS) -> str:
    """`orders` orders, settled with their ledger entries; the account's id."""
    sandbox = attacker.sandbox
    account = next(iter(sandbox.state.accounts.values()))
    status, _ = await attacker.call(
        "PATCH", f"/_mock/accounts/{account.id}", json={"balance": 10**9}
    )
    assert status == 200
    for n in range(orders):
        sandbox.create_order(account, {"item_id": 1001, "merchant_order_id": f"o{n}"})
    status, _ = await attacker.call("POST", "/_mock/clock/advance", json={"seconds": 600})
    assert status == 200
    return account.id


@pytest.fixture
async def tenants(make_client) -> tuple[Tenant, Tenant]:
    """Two tenants of one hosted server: an attacker and a bystander."""
    client = await make_client(**HOSTED)
    return await tenant(client), await tenant(client)


async def read_beside(attacker: Tenant, path: str, bystander: Tenant) -> tuple[Any, bytes, float]:
    """Read `path` whole while the bystander calls: the answer, its body, and the
    longest the event loop was held meanwhile."""
    done = False
    longest = 0.0
    answered: list[int] = []

    async def watch() -> None:
        nonlocal longest
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0)
            now = time.perf_counter()
            longest, last = max(longest, now - last), now

    async def call() -> None:
        while not done:
            answered.append((await bystander.call("GET", "/api/v1/account/balance"))[0])

    watching = asyncio.ensure_future(watch())
    calling = asyncio.ensure_future(call())
    await asyncio.sleep(0)
    response = await attacker.client.get(attacker.base + path, headers=attacker.control)
    parts = [part async for part in response.content.iter_any()]
    done = True
    await watching
    await calling
    assert answered and set(answered) == {200}  # the bystander was answered meanwhile
    return response, b"".join(parts), longest


# -- large reads -------------------------------------------------------------------------


async def test_the_whole_orders_list_is_written_in_pieces_beside_other_tenants(tenants):
    """Attack: `GET /_mock/orders` without `limit` at the order quota, which rendered
    52 MB at once and held the event loop for 0.96 s."""
    attacker, bystander = tenants
    await fill(attacker)
    response, body, held = await read_beside(attacker, "/_mock/orders", bystander)
    assert response.status == 200
    assert response.headers["Transfer-Encoding"] == "chunked"
    orders = attacker.sandbox.state.orders.values()
    assert body == dumps({"orders": [o.to_json() for o in orders], "total": ORDERS})
    assert held < STALL_BOUND, f"the event loop was held {held:.3f} s"
    # A page is as it was: small, whole, with its length.
    page = await attacker.client.get(
        attacker.base + "/_mock/orders?limit=2&sort=newest", headers=attacker.control
    )
    assert "Content-Length" in page.headers
    assert [o["id"] for o in (await page.json())["orders"]] == list(attacker.sandbox.state.orders)[
        :-3:-1
    ]


async def test_the_state_document_is_written_in_pieces_and_loads_back(tenants):
    """Attack: `GET /_mock/state` at the order quota, 83 MB rendered at once (1.9 s)."""
    attacker, bystander = tenants
    await fill(attacker)
    response, body, held = await read_beside(attacker, "/_mock/state", bystander)
    assert response.status == 200
    assert response.headers["Transfer-Encoding"] == "chunked"
    assert body == dumps(attacker.sandbox.dump_state())
    assert held < STALL_BOUND, f"the event loop was held {held:.3f} s"
    attacker.sandbox.load_state(orjson.loads(body))  # it loads back (past PUT's 1 MiB)
    assert len(attacker.sandbox.state.orders) == ORDERS


async def test_the_webhook_deliveries_are_written_in_pieces(make_client):
    """Attack: `GET /_mock/webhooks` at the order quota, every delivery's body signed
    and rendered at once (0.4 s of the event loop at 20,000 orders)."""
    client = await make_client(**HOSTED, webhook_allow="127.0.0.1")
    attacker, bystander = await tenant(client), await tenant(client)
    account = next(iter(attacker.sandbox.state.accounts.values()))
    listener = await asyncio.start_server(_answer_200, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    async with listener:
        status, _ = await attacker.call(
            "PATCH",
            f"/_mock/accounts/{account.id}",
            json={"webhook_url": f"http://127.0.0.1:{port}/h"},
        )
        assert status == 200
        await fill(attacker, 2000)
        response, body, held = await read_beside(attacker, "/_mock/webhooks", bystander)
    assert response.status == 200
    assert response.headers["Transfer-Encoding"] == "chunked"
    deliveries = attacker.sandbox.deliveries(None)
    assert len(deliveries) == 2000
    assert body == dumps({"deliveries": [d.to_json() for d in deliveries]})
    assert held < STALL_BOUND, f"the event loop was held {held:.3f} s"


async def _answer_200(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A webhook receiver on loopback: 200 to every request of its connection."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                 if line.lower().startswith(b"content-length:")),
                0,
            )  # fmt: skip
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def test_an_accounts_ledger_is_written_in_pieces(tenants):
    """Attack: an account's ledger at the order quota (two entries an order)."""
    attacker, bystander = tenants
    account_id = await fill(attacker)
    path = f"/_mock/accounts/{account_id}/ledger"
    response, body, held = await read_beside(attacker, path, bystander)
    assert response.status == 200
    assert response.headers["Transfer-Encoding"] == "chunked"
    view = ledger_view(attacker.sandbox.state, account_id)
    assert body == dumps(view | {"entries": list(view["entries"])})
    assert held < STALL_BOUND, f"the event loop was held {held:.3f} s"


async def test_one_orders_ledger_costs_its_entries_not_the_accounts(tenants):
    """Attack: the ledger filtered by `order_id`, which scanned every entry of the
    account (200 ms at the order quota): now found by index."""
    attacker, _ = tenants
    account_id = await fill(attacker)
    status, failed = await attacker.call(
        "POST",
        "/api/v1/orders",
        json={"item_id": 1001},
        headers={"X-Mock-Scenario": "failed_out_of_stock"},
    )
    assert status == 201, failed
    assert (await attacker.call("POST", "/_mock/clock/advance", json={"seconds": 600}))[0] == 200
    state = attacker.sandbox.state
    assert state.ledger.length(account_id) == ORDERS + 3  # the PATCH, the charges, a refund
    last = failed["id"]

    def read() -> list[Any]:
        return list(ledger_view(state, account_id, last)["entries"])

    started = time.process_time()
    for _ in range(100):
        entries = read()
    spent = (time.process_time() - started) / 100
    # Scanning 80,000 entries took over 10 ms; the index takes microseconds.
    assert spent < 0.001, f"{spent * 1000:.2f} ms for one order's entries"
    assert [e["kind"] for e in entries] == ["charge", "refund"]
    path = f"/_mock/accounts/{account_id}/ledger?order_id={last}"
    status, body = await attacker.call("GET", path)
    assert status == 200 and body["entries"] == entries


async def test_each_piece_of_a_large_read_costs_little(tenants):
    """Whatever a sandbox holds at its quotas, one piece is rendered within the docs'
    50 ms: the largest order is 1000 codes."""
    attacker, _ = tenants
    await fill(attacker, 5000)
    huge = {"id": 9001, "name": "Keys", "product_type": "key", "price": 0, "max_quantity": 1000}
    assert (await attacker.call("PUT", "/_mock/catalog", json=[huge]))[0] == 200
    for _ in range(20):
        order = {"item_id": 9001, "quantity": 1000}
        assert (await attacker.call("POST", "/api/v1/orders", json=order))[0] == 201
    assert (await attacker.call("POST", "/_mock/clock/advance", json={"seconds": 600}))[0] == 200
    rendered = pieces(state_document.dump_as_read(attacker.sandbox))
    costs = []
    while True:
        started = time.process_time()
        piece = next(rendered, None)
        costs.append(time.process_time() - started)
        if piece is None:
            break
        assert len(piece) < PIECE_BYTES + 64 * 1024  # a piece and at most one item more
    assert len(costs) > 50 and max(costs) < CPU_BOUND, max(costs)


async def test_large_reads_left_unread_are_bounded_per_sandbox(tenants):
    """Attack: many connections ask for the whole orders list and never read. Each
    answer being written holds its list of orders; past `PACED_PER_SANDBOX` the next is
    refused, until one of them is read or closed; another sandbox's reads are its own."""
    attacker, bystander = tenants
    await fill(attacker, 20_000)  # 10 MB of JSON: more than loopback's buffers take
    client = attacker.client
    request = (
        f"GET {attacker.base}/_mock/orders HTTP/1.1\r\nHost: {client.host}\r\n"
        f"Authorization: {attacker.control['Authorization']}\r\n\r\n"
    ).encode()
    unread = []
    for _ in range(PACED_PER_SANDBOX):
        reader, writer = await asyncio.open_connection(client.host, client.port)
        writer.write(request)
        assert b"Transfer-Encoding: chunked" in await reader.readuntil(b"\r\n\r\n")
        unread.append(writer)
    status, body = await attacker.call("GET", "/_mock/orders")
    assert status == 429, body
    assert body["code"] == "quota_exceeded" and "close the connections" in body["detail"]
    status, _ = await bystander.call("GET", "/_mock/orders")
    assert status == 200
    unread.pop().close()
    for _ in range(1000):  # the server sees the hang-up at its next write
        status, body = await attacker.call("GET", "/_mock/orders?limit=1")
        assert status == 200
        if paced.writing(attacker.sandbox) < PACED_PER_SANDBOX:
            break
    status, body = await attacker.call("GET", "/_mock/orders")
    assert status == 200 and body["total"] == 20_000
    for writer in unread:
        writer.close()


# -- saves with --state ------------------------------------------------------------------

#: A catalog at the quota, every item's stock counted: about 1.7 MB as JSON.
FULL_CATALOG = [
    {"id": 5000 + n, "name": f"item {n}", "product_type": "key", "price": 1, "stock": 10**6}
    for n in range(10_000)
]


async def test_a_merchant_calls_save_costs_what_it_changed(make_client, tmp_path):
    """Attack: a catalog and faults at their quotas with `--state`, then merchant calls:
    each save re-encoded and rewrote the whole catalog, faults and accounts (15 to 65 ms
    of CPU and 1.2 MB written a call). Now an order's save writes its order, ledger
    entry, account and (at settlement) its item; what changed comes back after a
    restart."""
    from dataclasses import replace

    from conftest import BASE_SETTINGS

    from mock_server.app import create_app

    path = str(tmp_path / "state.db")
    settings = replace(BASE_SETTINGS, **HOSTED, state=path)
    first = await make_client(create_app(settings))
    attacker = await tenant(first)
    assert (await attacker.call("PUT", "/_mock/catalog", json=FULL_CATALOG))[0] == 200
    # The faults quota, their paths as long as the sandbox's bound on all of them allows.
    for n in range(999):
        attacker.sandbox.faults.add({"path": f"/api/v1/x{n:03d}/" + "a" * 50, "status": 503})
    fault = {"path": "/api/v1/orders", "method": "GET", "status": 503, "times": 1000}
    assert (await attacker.call("POST", "/_mock/faults", json=fault))[0] == 201
    costs = []
    for _ in range(5):
        started = time.process_time()
        status, order = await attacker.call("POST", "/api/v1/orders", json={"item_id": 5001})
        costs.append(time.process_time() - started)
        assert status == 201, order
        status, _ = await attacker.call("GET", "/api/v1/orders")  # uses the fault
        assert status == 503
    status, _ = await attacker.call("POST", "/api/v1/orders", json={"item_id": 5002})
    assert (await attacker.call("POST", "/_mock/clock/advance", json={"seconds": 600}))[0] == 200
    costs.sort()
    # The HTTP call itself, client included, is about 2 ms; the whole rest took 15 ms more.
    assert costs[2] < 0.008, f"an order's call cost {costs[2] * 1000:.1f} ms of CPU"
    _, before = await attacker.call("GET", "/_mock/state")
    base = attacker.base
    await first.session.close()
    await first.serving.stop()
    again = await make_client(create_app(settings))
    response = await again.get(base + "/_mock/state", headers=attacker.control)
    after = await response.json()
    assert after == before
    stock = {item["id"]: item.get("stock") for item in after["catalog"]}
    assert (stock[5001], stock[5002], stock[5003]) == (10**6 - 5, 10**6 - 1, 10**6)
    assert after["faults"]["faults"][-1]["times"] == 995


async def test_a_state_file_of_the_first_format_is_read_and_migrated(make_client, tmp_path):
    """docs/state.md: a file of an older format is brought up to date as it is opened.
    The first kept the whole rest of a sandbox's document (catalog, accounts, faults,
    scenarios) in its one row."""
    import sqlite3
    from dataclasses import replace

    from conftest import BASE_SETTINGS, login

    from mock_server.app import create_app

    path = str(tmp_path / "state.db")
    first = await make_client(create_app(replace(BASE_SETTINGS, state=path)))
    merchant = await login(first)
    assert (await merchant.create({"item_id": 1001}))[0] == 201
    fault = {"path": "/api/v1/plants", "status": 503, "times": 3}
    assert (await first.post("/_mock/faults", json=fault)).status == 201
    before = await (await first.get("/_mock/state")).json()
    await first.session.close()
    await first.serving.stop()
    with sqlite3.connect(path) as db:  # as the first format wrote it
        parts: dict[str, list[Any]] = {}
        for part, doc in db.execute("SELECT part, doc FROM parts ORDER BY rowid"):
            parts.setdefault(part, []).append(orjson.loads(doc))
        [(rest,)] = db.execute("SELECT rest FROM sandboxes")
        whole = state_document.join_rest(orjson.loads(rest), parts)
        db.execute("UPDATE sandboxes SET rest = ?", (orjson.dumps(whole).decode(),))
        db.execute("DROP TABLE parts")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'format'")
    again = await make_client(create_app(replace(BASE_SETTINGS, state=path)))
    assert await (await again.get("/_mock/state")).json() == before
    merchant = await login(again)
    assert (await merchant.create({"item_id": 1001}))[0] == 201
    after = await (await again.get("/_mock/state")).json()
    await again.session.close()
    await again.serving.stop()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone() == ("2",)
        [(rest,)] = db.execute("SELECT rest FROM sandboxes")
        assert "catalog" not in orjson.loads(rest)  # its items are rows of their own now
    third = await make_client(create_app(replace(BASE_SETTINGS, state=path)))
    assert await (await third.get("/_mock/state")).json() == after


# -- delivered codes ---------------------------------------------------------------------

KEYS = {"id": 9001, "name": "Keys", "product_type": "key", "price": 1, "max_quantity": 1000}


async def test_key_units_past_the_codes_quota_are_refused_at_creation(make_client):
    """Attack: key orders of 1000 units up to the order quota: 100,000 of them held 10^8
    codes, about 7 GB. Past `--sandbox-max-codes` an order is refused whole."""
    client = await make_client(**HOSTED, sandbox_max_codes=2500)
    attacker, bystander = await tenant(client), await tenant(client)
    assert (await attacker.call("PUT", "/_mock/catalog", json=[KEYS]))[0] == 200
    for quantity in (1000, 1000, 500):
        order = {"item_id": 9001, "quantity": quantity}
        assert (await attacker.call("POST", "/api/v1/orders", json=order))[0] == 201
    _, balance = await attacker.call("GET", "/api/v1/account/balance")
    drawn = dict(attacker.sandbox.state.randomness.drawn)
    status, body = await attacker.call(
        "POST", "/api/v1/orders", json={"item_id": 9001, "quantity": 1}
    )
    assert status == 429, body
    assert body["code"] == "quota_exceeded"
    assert "--sandbox-max-codes" in body["detail"] and "POST /_mock/reset" in body["detail"]
    assert (await attacker.call("GET", "/api/v1/account/balance"))[1] == balance
    assert attacker.sandbox.state.randomness.drawn == drawn
    assert (await attacker.call("GET", "/_mock/orders"))[1]["total"] == 3
    # Another sandbox's codes are its own.
    assert (await bystander.call("PUT", "/_mock/catalog", json=[KEYS]))[0] == 200
    order = {"item_id": 9001, "quantity": 1000}
    assert (await bystander.call("POST", "/api/v1/orders", json=order))[0] == 201
    # A document holding more is refused whole (a settled order's units are history,
    # but they are codes held); a reset frees room.
    assert (await attacker.call("POST", "/_mock/clock/advance", json={"seconds": 600}))[0] == 200
    _, document = await attacker.call("GET", "/_mock/state")
    document["orders"][0]["quantity"] = 1001
    status, body = await attacker.call("PUT", "/_mock/state", json=document)
    assert status == 429 and "--sandbox-max-codes" in body["detail"], body
    assert (await attacker.call("POST", "/_mock/reset"))[0] == 200
    assert attacker.sandbox.state.key_units == 0


async def test_a_created_sandbox_has_a_codes_quota_and_the_default_none(make_client):
    from mock_server.config import Settings, created_quotas, default_quotas
    from mock_server.domain.quotas import CREATED_DEFAULTS

    assert created_quotas(Settings()).codes == CREATED_DEFAULTS["codes"] == 1_000_000
    assert default_quotas(Settings()).codes is None
    assert default_quotas(Settings(sandbox_max_codes=5)).codes == 5


async def test_a_code_costs_what_the_sizing_says(make_client):
    """docs/hosting.md, "Sizing": about 75 bytes a delivered code (its string of 17
    characters and its place in the order's tuple), so a sandbox at the default codes
    quota holds at most about 72 MiB of them."""
    import gc
    import tracemalloc

    client = await make_client(**HOSTED)
    attacker = await tenant(client)
    assert (await attacker.call("PUT", "/_mock/catalog", json=[KEYS]))[0] == 200
    sandbox = attacker.sandbox
    account = next(iter(sandbox.state.accounts.values()))
    sandbox.create_order(account, {"item_id": 9001, "quantity": 1000})
    await sandbox.advance(600)  # what settling allocates once
    orders = [sandbox.create_order(account, {"item_id": 9001, "quantity": 1000}) for _ in range(20)]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        await sandbox.advance(600)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert all(len(order.codes) == 1000 for order in orders)
    per_code = grown / 20_000
    assert 60 < per_code < 90, f"{per_code:.1f} bytes a code"


async def test_a_state_document_read_while_the_sandbox_works_still_loads(tenants):
    """docs/state.md: the orders there were when the call came, each as it is when its
    piece is written; an order made meanwhile is left out; a state replaced meanwhile
    cuts the document off."""
    attacker, _ = tenants
    sandbox = attacker.sandbox
    account = next(iter(sandbox.state.accounts.values()))
    first = sandbox.create_order(account, {"item_id": 1001})
    document = state_document.dump_as_read(sandbox)
    rendered = pieces(document, size=1)
    written = b""
    while not written.endswith(b'"orders":['):
        written += next(rendered)
    later = sandbox.create_order(account, {"item_id": 1001})
    await sandbox.advance(600)  # the first settles while it is read
    body = b"".join(rendered)
    orders = orjson.loads(b"[" + body.partition(b',"deliveries"')[0])
    assert [o["id"] for o in orders[0:1]] == [first.id] and later.id not in body.decode()
    assert orders[0]["status"] == "completed"
    reading = state_document.dump_as_read(sandbox)["orders"]
    next(reading)
    sandbox.reset()
    with pytest.raises(state_document.Replaced):
        next(reading)
