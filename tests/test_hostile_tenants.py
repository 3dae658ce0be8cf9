"""A hostile tenant on a hosted server (docs/hosting.md): holding only its own created
sandbox's control token and API key, it can neither reach another tenant's sandbox nor
take the default sandbox's documented key, and a client that never reads its answers
holds no more than a bounded amount of the server's memory.

Each attack is written as it was tried, with bounds on the attacker's answer time and,
where it applies, on another tenant's call made meanwhile. Sandbox expiry runs on an
injected wall clock; nothing here sleeps on wall time.
"""

from __future__ import annotations

import asyncio
import fcntl
import gc
import socket
import termios
import time
from dataclasses import replace
from typing import Any
from urllib.parse import urlparse

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from mock_server.app import create_app
from mock_server.edge.server import PIECE_BYTES, WAITING_BYTES, Answers
from tests.conftest import BASE_SETTINGS, Merchant, login

ADMIN_TOKEN = "adm1n-hosted"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
#: A rate whose burst is one call, after which the next waits 100 s: a call that spent
#: the owner's allowance shows as the owner's 429.
SCARCE_RATE = 0.01
#: A 401 is a few dictionary lookups: far under this even on a loaded CI machine. A
#: refused call held by the rate guard would take up to a second.
QUICK_SECONDS = 0.5


class WallClock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def wall() -> WallClock:
    return WallClock()


@pytest.fixture
def hosted(make_client, wall):
    """A server set up as docs/hosting.md says (admin token, private webhooks refused,
    quotas, a rate), on the injected wall clock."""

    async def make(**overrides: Any):
        hosting = {
            "admin_token": ADMIN_TOKEN,
            "webhook_deny_private": True,
            "sandbox_rate": SCARCE_RATE,
        }
        settings = replace(BASE_SETTINGS, **(hosting | overrides))
        return await make_client(create_app(settings, wall=wall))

    return make


async def tenant(client, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """A created sandbox, as the operator's portal hands it to a tenant."""
    response = await client.post("/_mock/sandboxes", json=body or {}, headers=ADMIN)
    created = await response.json()
    assert response.status == 201, created
    created["base"] = urlparse(created["base_url"]).path
    created["control"] = {"Authorization": f"Bearer {created['control_token']}"}
    return created


async def own_token(client, victim: dict[str, Any]) -> str:
    response = await client.post(
        victim["base"] + "/api/v1/auth/token/client", json={"api_key": victim["api_key"]}
    )
    assert response.status == 200, await response.text()
    return (await response.json())["access_token"]


async def journal(client, victim: dict[str, Any]) -> list[dict[str, Any]]:
    response = await client.get(victim["base"] + "/_mock/requests", headers=victim["control"])
    assert response.status == 200, await response.text()
    return (await response.json())["requests"]


async def timed(call) -> tuple[Any, float]:
    started = time.perf_counter()
    response = await call
    await response.read()
    return response, time.perf_counter() - started


def strangers_calls(client, victim: dict[str, Any], attacker: dict[str, Any]):
    """What an attacker tried with only the victim's id: merchant calls under its base
    path with no token, a wrong one, its own (another sandbox's) token; a root call with
    a token forged on the victim's id; the token endpoint with a wrong key; a path no
    route serves; control calls without the victim's control token."""
    base, forged = victim["base"], f"{victim['id']}.{'0' * 64}"
    yield client.get(base + "/api/v1/account/balance")
    yield client.get(base + "/api/v1/account/balance", headers={"Authorization": "Bearer nope"})
    yield client.get(base + "/v1/account/me", headers={"Authorization": f"Bearer {forged}"})
    yield client.get("/api/v1/account/balance", headers={"Authorization": f"Bearer {forged}"})
    yield client.post(base + "/api/v1/orders", json={"item_id": 1001})
    yield client.post(base + "/api/v1/auth/token/client", json={"api_key": attacker["api_key"]})
    yield client.post(base + "/api/v1/auth/token/client", json={"api_key": "ak_guess"})
    yield client.post(base + "/v1/auth/token/client", data=b"not json")
    yield client.get(base + "/api/v1/nothing-here")
    yield client.get(base + "/_mock/requests")
    yield client.post(
        base + "/_mock/clock/advance", json={"seconds": 1}, headers=attacker["control"]
    )


# -- calls that name another sandbox without its credentials -------------------------------


async def test_a_stranger_spends_none_of_a_sandboxs_rate(hosted):
    client = await hosted()
    victim, attacker = await tenant(client), await tenant(client)
    attacker_token = await own_token(client, attacker)
    for call in strangers_calls(client, victim, attacker):
        response, seconds = await timed(call)
        assert response.status in (400, 401, 404), (response.url, response.status)
        assert seconds < QUICK_SECONDS  # refused at once, never held by the rate guard
    wrong = await client.get(
        victim["base"] + "/api/v1/account/balance",
        headers={"Authorization": f"Bearer {attacker_token}"},
    )
    assert wrong.status == 401
    body = await wrong.json()
    assert body["code"] == "not_authenticated" and set(body) == {"detail", "code"}
    # The owner's one call of the burst is still there: its exchange is taken.
    response, seconds = await timed(
        client.post(
            victim["base"] + "/api/v1/auth/token/client", json={"api_key": victim["api_key"]}
        )
    )
    assert response.status == 200, await response.text()
    assert seconds < QUICK_SECONDS


async def test_a_stranger_does_not_reach_a_sandboxs_journal(hosted):
    client = await hosted(sandbox_rate=None)
    victim, attacker = await tenant(client), await tenant(client)
    for call in strangers_calls(client, victim, attacker):
        await (await call).read()
    assert await journal(client, victim) == []
    # The owner's own calls are journaled, a refused one included.
    owner = Merchant(client, await own_token(client, victim))
    status, _ = await owner.call("POST", victim["base"] + "/api/v1/orders", json={})
    assert status == 400
    assert [(c["path"], c["status"]) for c in await journal(client, victim)] == [
        ("/api/v1/orders", 400),
        ("/api/v1/auth/token/client", 200),
    ]


async def test_a_stranger_does_not_keep_a_sandbox_alive(hosted, wall):
    client = await hosted(sandbox_rate=None)
    victim, attacker = await tenant(client, {"ttl": 100}), await tenant(client)
    wall.now += 60
    for call in strangers_calls(client, victim, attacker):
        await (await call).read()
    wall.now += 60  # 120 s since the owner's last call, whatever the stranger did
    gone = await client.get(victim["base"] + "/_mock/clock", headers=ADMIN)
    assert gone.status == 404
    assert "expired after 100 s without a request" in (await gone.json())["detail"]


async def test_a_stranger_meets_none_of_a_sandboxs_faults(hosted):
    client = await hosted(sandbox_rate=None)
    victim, attacker = await tenant(client), await tenant(client)
    fault = {"path": "/api/v1/account/balance", "status": 503, "times": 1}
    response = await client.post(
        victim["base"] + "/_mock/faults", json=fault, headers=victim["control"]
    )
    assert response.status == 201, await response.text()
    for call in strangers_calls(client, victim, attacker):
        assert (await call).status != 503
    owner = Merchant(client, await own_token(client, victim))
    status, _ = await owner.call("GET", victim["base"] + "/api/v1/account/balance")
    assert status == 503  # the owner's fault waited for the owner


async def test_the_owners_calls_keep_their_rate_and_are_journaled_when_refused(hosted):
    client = await hosted()
    victim = await tenant(client)
    token = await own_token(client, victim)  # the burst's one call
    limited = await client.get(
        victim["base"] + "/api/v1/account/balance", headers={"Authorization": f"Bearer {token}"}
    )
    assert limited.status == 429 and "Retry-After" in limited.headers
    assert [c["status"] for c in await journal(client, victim)] == [429, 200]


# -- the default sandbox's documented key ---------------------------------------------------


def _accounts(key: str) -> dict[str, Any]:
    return {"accounts": [{"email": "shop@example.com", "api_key": key}]}


async def test_no_created_sandbox_may_hold_the_default_key(hosted):
    client = await hosted(sandbox_rate=None)
    attacker = await tenant(client)
    base, control = attacker["base"], attacker["control"]
    tries = [
        client.post(
            "/_mock/sandboxes", json={"accounts": _accounts("ak_test_default")}, headers=ADMIN
        ),
        client.post(
            "/_mock/sandboxes",
            json={
                "accounts": {
                    "accounts": [{"email": "a@b.c", "api_keys": ["ak_x", "ak_test_default"]}]
                }
            },
            headers=ADMIN,
        ),
        client.post(
            base + "/_mock/accounts",
            json={"email": "thief@example.com", "api_key": "ak_test_default"},
            headers=control,
        ),
        client.post(
            base + "/_mock/accounts",
            json={"email": "thief@example.com", "api_keys": ["ak_test_default"]},
            headers=control,
        ),
        client.put(base + "/_mock/accounts", json=_accounts("ak_test_default"), headers=control),
    ]
    state = await (await client.get(base + "/_mock/state", headers=control)).json()
    state["accounts"][0]["api_keys"].append("ak_test_default")
    tries.append(client.put(base + "/_mock/state", json=state, headers=control))
    for attempt in tries:
        response = await attempt
        body = await response.json()
        assert response.status == 400, (response.url, body)
        assert body["code"] == "validation_error" and "ak_test_default" in body["detail"]
    listing = await (await client.get("/_mock/sandboxes", headers=ADMIN)).json()
    assert len(listing["sandboxes"]) == 2  # the default and the attacker's: nothing made
    accounts = await (await client.get(base + "/_mock/accounts", headers=control)).json()
    assert [a["api_keys"] for a in accounts["accounts"]] == [[attacker["api_key"]]]
    # The root exchange of the documented key still reaches the default sandbox.
    merchant = await login(client)
    assert not merchant.token.startswith("sbx-")
    assert await merchant.balance() == 1000.0


async def test_the_default_sandbox_keeps_its_key_through_its_own_state(hosted):
    client = await hosted(sandbox_rate=None)
    state = await (await client.get("/_mock/state", headers=ADMIN)).json()
    assert (await client.put("/_mock/state", json=state, headers=ADMIN)).status == 200
    assert not (await login(client)).token.startswith("sbx-")


async def test_a_restored_sandbox_holding_the_default_key_does_not_take_it(hosted, wall):
    """A sandbox an earlier run kept (its `--state` file) may hold the key: the root
    exchange of the key still goes to the default sandbox."""
    client = await hosted(sandbox_rate=None)
    body = {"accounts": _accounts("ak_test_default")}
    sandboxes = client.app.sandboxes
    entry = sandboxes.restore("sbx-0123456789ab", body, [], "ctl_x", wall.now, wall.now, 3600)
    assert "ak_test_default" in entry.sandbox.state.account_by_key
    merchant = await login(client)
    assert not merchant.token.startswith("sbx-")


# -- clients that never read ---------------------------------------------------------------

#: Connections that ask for a large answer and never read it.
NEVER_READ = 64
#: Requests one more connection pipelines without reading (aiohttp takes them one at a
#: time: the next is read only once the answer before it has left).
PIPELINED = 16
MIB = 1024 * 1024


def rss_mib() -> float:
    gc.collect()
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def unread_bytes(connection: socket.socket) -> int:
    """What has arrived on a connection, left unread (FIONREAD)."""
    return int.from_bytes(fcntl.ioctl(connection, termios.FIONREAD, b"\0" * 4), "little")


async def until(predicate, timeout: float = 20.0) -> None:
    """Wait for the server to get somewhere (not a sleep: it polls what it waits for)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "the server did not get there"
        await asyncio.sleep(0.01)


async def big_catalog(client, sandbox: dict[str, Any]) -> int:
    """The quota's 10000 items: a catalog answer of about 1.7 MB. Answers its size."""
    items = [{"id": i, "name": "n", "product_type": "key", "price": 1} for i in range(1, 10001)]
    base, control = sandbox["base"], sandbox["control"]
    response = await client.put(base + "/_mock/catalog", json={"items": items}, headers=control)
    assert response.status == 200, await response.text()
    return len(await response.read())


async def never_reading(client, path: str, headers: dict[str, str], times: int = 1):
    """A raw connection on loopback that asks `times` (pipelined) and never reads."""
    loop = asyncio.get_running_loop()
    connection = socket.socket()
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    connection.setblocking(False)
    await loop.sock_connect(connection, (client.host, client.port))
    lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    request = f"GET {path} HTTP/1.1\r\nHost: sandbox\r\n{lines}\r\n".encode()
    await loop.sock_sendall(connection, request * times)
    return connection


async def test_clients_that_never_read_hold_a_bounded_amount_of_memory(hosted):
    client = await hosted(sandbox_rate=None)
    attacker, neighbour = await tenant(client), await tenant(client)
    size = await big_catalog(client, attacker)
    assert size > 16 * PIECE_BYTES
    await big_catalog(client, neighbour)
    edge = client.app.edge
    path = attacker["base"] + "/_mock/catalog"
    before = rss_mib()
    connections = [
        await never_reading(client, path, attacker["control"]) for _ in range(NEVER_READ)
    ]
    connections.append(await never_reading(client, path, attacker["control"], PIPELINED))
    try:
        await until(lambda: all(unread_bytes(c) for c in connections))  # every one answered
        grown = rss_mib() - before
        # Unbounded, this held a whole answer a connection: 65 x 1.7 MB, about 110 MiB.
        assert grown < WAITING_BYTES / MIB + 16, f"{grown:.1f} MiB for {NEVER_READ} answers"
        assert edge.answers.held(attacker["id"]) <= WAITING_BYTES + size
        # Meanwhile another tenant's large answer is written whole, and at once.
        started = time.perf_counter()
        response = await client.get(
            neighbour["base"] + "/_mock/catalog", headers=neighbour["control"]
        )
        assert response.status == 200 and len(await response.read()) == size
        assert time.perf_counter() - started < 5.0
    finally:
        for connection in connections:
            connection.close()
    # What the closed connections held is let go.
    await until(lambda: edge.answers.held(attacker["id"]) == 0)
    response = await client.get(path, headers=attacker["control"])
    assert response.status == 200 and len(await response.read()) == size


class StalledWriter:
    """A connection whose client reads nothing: each piece handed to it waits until
    `read` is set (what `StreamResponse.write` does while the buffer is full)."""

    def __init__(self) -> None:
        self.length: int | None = None
        self.buffer_size = self.output_size = self.handed = 0
        self.read = asyncio.Event()

    def enable_chunking(self) -> None:
        raise AssertionError("a large answer keeps its Content-Length")

    async def write_headers(self, status_line: str, headers: Any) -> None:
        pass

    def send_headers(self) -> None:
        pass

    async def write(self, data: Any) -> None:
        self.handed += len(data)
        await self.read.wait()

    async def write_eof(self, data: bytes = b"") -> None:
        pass

    async def drain(self) -> None:
        pass


def _answer(size: int) -> web.Response:
    return web.Response(body=b"x" * size, content_type="application/json")


async def test_large_answers_wait_in_pieces_and_a_sandbox_holds_at_most_its_allowance():
    answers = Answers(piece=1000, waiting=10_000)
    stalled = [StalledWriter() for _ in range(4)]

    def call(writer: StalledWriter, method: str = "GET") -> web.BaseRequest:
        return make_mocked_request(method, "/_mock/catalog", writer=writer)

    first = asyncio.create_task(answers.send(call(stalled[0]), _answer(6000), "sbx-a"))
    await until(lambda: answers.held("sbx-a") == 6000)
    assert stalled[0].handed == 1000  # one piece, not the whole answer, per connection
    # A second read past the allowance is refused at once; its body is let go.
    refused = await answers.send(call(stalled[1]), _answer(6000), "sbx-a")
    assert refused.status == 429 and b"quota_exceeded" in refused.body
    assert stalled[1].handed == 0
    # Another sandbox has its own allowance; a change that was made is always answered.
    other = asyncio.create_task(answers.send(call(stalled[2]), _answer(6000), "sbx-b"))
    change = asyncio.create_task(answers.send(call(stalled[3], "PUT"), _answer(6000), "sbx-a"))
    await until(lambda: answers.held("sbx-b") == 6000 and answers.held("sbx-a") == 12_000)
    assert answers.full("sbx-a") and not answers.full("sbx-b")
    for writer in stalled:
        writer.read.set()
    assert (await first).status == 200 and stalled[0].handed == 6000
    await asyncio.gather(other, change)
    assert answers.held("sbx-a") == answers.held("sbx-b") == 0


async def test_a_root_token_request_past_the_body_bound_is_413_in_its_own_shape(hosted):
    """The hostile bench: a root token request of 1 MiB + 1 byte was read (to route it)
    past the server's bound, then answered 401 'api_key is required', its body gone."""
    client = await hosted()
    await tenant(client)  # more than the default sandbox: the root endpoint routes by key
    answer = await client.post(
        "/api/v1/auth/token/client",
        data=b" " * (1024 * 1024 + 1),
        headers={"Content-Type": "application/json"},
    )
    assert answer.status == 413
    assert set(await answer.json()) == {"error"}
