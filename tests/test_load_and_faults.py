"""Load and faults: many concurrent clients, misbehaving webhook receivers, SIGTERM under
load. Bounds are generous on purpose: they separate "keeps serving" from "blocked for
a 10 s webhook timeout", not fast from slow (speed is measured under bench/)."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import time

import aiohttp
import pytest
from aiohttp import web

from tests.conftest import login

ACCOUNTS = """\
accounts:
  - email: load@example.com
    api_key: ak_load
    balance: 1000.00
    webhook_secret: whsec_load
"""


async def test_hundreds_of_concurrent_clients_never_overdraw_or_duplicate(make_client, tmp_path):
    path = tmp_path / "accounts.yaml"
    path.write_text(ACCOUNTS)
    client = await make_client(accounts=str(path))
    merchants = [await login(client, "ak_load") for _ in range(10)]
    # 300 orders of 20.00 against 1000.00, every reference used three times.
    bodies = [{"item_id": 1001, "merchant_order_id": f"ref-{n % 100}"} for n in range(300)]
    results = await asyncio.gather(
        *(merchants[n % 10].create(body) for n, body in enumerate(bodies))
    )
    created = [body for status, body in results if status == 201]
    refused = [body["code"] for status, body in results if status != 201]
    assert len(created) == 50, "1000.00 buys exactly fifty 20.00 orders"
    assert len({order["merchant_order_id"] for order in created}) == 50
    assert set(refused) <= {"validation_error", "insufficient_balance"}
    assert await merchants[0].balance() == 0.0
    orders = (await (await client.get("/_mock/orders")).json())["orders"]
    assert len(orders) == 50
    account_id = created[0]["created_by"]["id"]
    ledger = await (await client.get(f"/_mock/accounts/{account_id}/ledger")).json()
    assert ledger["conserved"] is True


class BadReceiver:
    """Three kinds of trouble: hangs forever, resets the connection, answers slowly."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.hits = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.hits += 1
        await request.read()
        if self.mode == "hang":
            await asyncio.sleep(3600)
        if self.mode == "reset":
            assert request.transport is not None
            request.transport.abort()
            return web.Response(status=500)
        await asyncio.sleep(0.5)  # slow
        return web.Response(status=200)


@pytest.mark.parametrize("mode", ["hang", "reset", "slow"])
async def test_misbehaving_receivers_do_not_hold_up_the_merchant_api(
    make_client, aiohttp_server, monkeypatch, mode
):
    monkeypatch.setattr("mock_server.webhooks.ATTEMPT_TIMEOUT", 2.0)
    receiver = BadReceiver(mode)
    app = web.Application()
    app.router.add_post("/hooks", receiver.handle)
    server = await aiohttp_server(app, host="127.0.0.1", port=0)
    merchant = await login(await make_client(webhook_url=str(server.make_url("/hooks"))))
    for _ in range(50):
        status, _ = await merchant.create({"item_id": 1001, "quantity": 1})
        assert status == 201
    advance = asyncio.create_task(merchant.advance(3))
    while receiver.hits < 50 and not advance.done():
        await asyncio.sleep(0.01)
    started = time.perf_counter()
    for _ in range(20):  # the merchant API answers while 50 deliveries are in flight
        assert await merchant.balance() == 0.0
    assert time.perf_counter() - started < 1.5, "merchant calls waited on webhook I/O"
    await advance
    deliveries = (await (await merchant.client.get("/_mock/webhooks")).json())["deliveries"]
    assert len(deliveries) == 50
    expected = "delivered" if mode == "slow" else "retrying"
    assert {d["status"] for d in deliveries} == {expected}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_sigterm_under_load_stops_within_a_second_without_traceback(tmp_path):
    # stderr goes to a file: an undrained pipe fills with access lines and blocks the
    # server's writes, which would measure the pipe, not the server.
    log = (tmp_path / "stderr.log").open("w+")
    process = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "--port", "0", "--clock", "manual"],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    try:
        line = process.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:"), line
        url = line.split()[-1]

        async def hammer(stop: asyncio.Event) -> int:
            done = 0
            timeout = aiohttp.ClientTimeout(total=2)
            async with aiohttp.ClientSession(timeout=timeout) as session:
                while not stop.is_set():
                    try:
                        async with session.post(
                            f"{url}/api/v1/auth/token/client", json={"api_key": "ak_test_default"}
                        ) as response:
                            await response.read()
                            done += 1
                    except (aiohttp.ClientError, TimeoutError):  # the server has gone
                        return done
            return done

        async def run() -> float:
            stop = asyncio.Event()
            workers = [asyncio.create_task(hammer(stop)) for _ in range(20)]
            await asyncio.sleep(0.3)  # load is flowing
            started = time.perf_counter()
            process.send_signal(signal.SIGTERM)
            while process.poll() is None and time.perf_counter() - started < 5:
                await asyncio.sleep(0.01)
            elapsed = time.perf_counter() - started
            stop.set()
            counts = await asyncio.gather(*workers)
            assert sum(counts) > 0
            return elapsed

        elapsed = asyncio.run(run())
        assert process.wait(timeout=5) == 0
        assert elapsed < 1.0, f"stopped after {elapsed:.2f} s"
        log.seek(0)
        assert "Traceback" not in log.read()
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
        log.close()
