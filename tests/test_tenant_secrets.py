"""What one tenant of a shared server can compute of another's (docs/hosting.md, "What a
tenant can see"): nothing. Created sandboxes' ids, control tokens, API keys and webhook
secrets come from the operating system's random source, their access tokens are keyed by
a secret of the server, and no created sandbox shows the server's seed; the default
sandbox stays byte-for-byte reproducible under `--seed`.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import random
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any
from urllib.parse import urlparse

import aiohttp

from mock_server.app import create_app
from mock_server.config import Settings
from mock_server.serving import Serving
from tests.conftest import BASE_SETTINGS, Client

ADMIN_TOKEN = "adm1n"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
#: A server seed no answer could contain by chance.
SERVER_SEED = 7_364_912_083_517_209_441
HOSTED = replace(BASE_SETTINGS, seed=SERVER_SEED, admin_token=ADMIN_TOKEN)


async def create(client, body: dict[str, Any] | None = None) -> dict[str, Any]:
    response = await client.post("/_mock/sandboxes", json=body or {}, headers=ADMIN)
    sandbox = await response.json()
    assert response.status == 201, sandbox
    sandbox["base"] = urlparse(sandbox["base_url"]).path
    sandbox["control"] = {"Authorization": f"Bearer {sandbox['control_token']}"}
    return sandbox


async def token_of(client, base: str, api_key: str) -> str:
    response = await client.post(f"{base}/api/v1/auth/token/client", json={"api_key": api_key})
    assert response.status == 200, await response.text()
    return (await response.json())["access_token"]


def replayed_first_sandbox(seed: int) -> tuple[str, str]:
    """The id and control token the first created sandbox got when they were drawn from
    `random.Random(f"{seed}:sandboxes")` (id, one API key per account, control token)."""
    drawn = random.Random(f"{seed}:sandboxes")

    def hex_digits(digits: int) -> str:
        return f"{drawn.getrandbits(digits * 4):0{digits}x}"

    sandbox_id = f"sbx-{hex_digits(12)}"
    hex_digits(12)  # the default account's API key
    return sandbox_id, f"ctl_{hex_digits(32)}"


async def test_a_tenant_cannot_compute_another_tenants_control_token(make_client):
    client = await make_client(create_app(HOSTED))
    victim = await create(client)
    attacker = await create(client)
    # What the attacker sees of its own sandbox: the seed its reset answers.
    response = await client.post(f"{attacker['base']}/_mock/reset", headers=attacker["control"])
    assert response.status == 200
    seen_seed = (await response.json())["seed"]
    assert seen_seed != SERVER_SEED
    for seed in (seen_seed, SERVER_SEED):
        sandbox_id, control_token = replayed_first_sandbox(seed)
        assert sandbox_id != victim["id"]
        assert control_token != victim["control_token"]
        for base in (f"/_mock/sandboxes/{sandbox_id}", victim["base"]):
            response = await client.get(
                f"{base}/_mock/orders", headers={"Authorization": f"Bearer {control_token}"}
            )
            assert response.status in (401, 403, 404)
    # The victim's own control token still opens its own sandbox, and only that.
    response = await client.get(f"{victim['base']}/_mock/orders", headers=victim["control"])
    assert response.status == 200
    response = await client.get(f"{attacker['base']}/_mock/orders", headers=victim["control"])
    assert response.status == 401


async def test_a_sandbox_without_a_seed_draws_its_own_and_shows_the_servers_nowhere(make_client):
    client = await make_client(create_app(HOSTED))
    sandboxes = [await create(client) for _ in range(2)]
    seeds = set()
    for sandbox in sandboxes:
        base, control = sandbox["base"], sandbox["control"]
        token = await token_of(client, base, sandbox["api_key"])
        merchant = {"Authorization": f"Bearer {token}"}
        await client.post(f"{base}/api/v1/orders", json={"item_id": 1001}, headers=merchant)
        await client.post(f"{base}/_mock/clock/advance", json={"seconds": 5}, headers=control)
        answers = [
            await (await client.get(f"{base}{path}", headers=control)).text() for path in GET_PATHS
        ]
        answers += [
            await (await client.get(f"{base}{path}", headers=merchant)).text()
            for path in ("/api/v1/account/me", "/api/v1/account/balance")
        ]
        reset = await client.post(f"{base}/_mock/reset", headers=control)
        answers.append(await reset.text())
        assert not [a for a in answers if str(SERVER_SEED) in a]
        state = await (await client.get(f"{base}/_mock/state", headers=control)).json()
        seeds.add(state["seed"])
        assert (await reset.json())["seed"] == state["seed"]
    assert len(seeds) == 2 and SERVER_SEED not in seeds


#: Every read of a sandbox's control API that takes no parameter.
GET_PATHS = (
    "/_mock/health",
    "/_mock/clock",
    "/_mock/accounts",
    "/_mock/catalog",
    "/_mock/orders",
    "/_mock/scenarios",
    "/_mock/webhooks",
    "/_mock/faults",
    "/_mock/requests",
    "/_mock/coverage",
    "/_mock/state",
    "/openapi.json",
)


async def test_a_sandbox_created_with_a_seed_keeps_it_and_its_reproducible_answers(make_client):
    first = await make_client(create_app(HOSTED))
    second = await make_client(create_app(HOSTED))
    orders = []
    for client in (first, second):
        sandbox = await create(client, {"seed": 11})
        token = await token_of(client, sandbox["base"], sandbox["api_key"])
        response = await client.post(
            f"{sandbox['base']}/api/v1/orders",
            json={"item_id": 1001, "quantity": 2},
            headers={"Authorization": f"Bearer {token}"},
        )
        order = await response.json()
        await client.post(
            f"{sandbox['base']}/_mock/clock/advance",
            json={"seconds": 5},
            headers=sandbox["control"],
        )
        response = await client.get(
            f"{sandbox['base']}/api/v1/orders/{order['id']}",
            headers={"Authorization": f"Bearer {token}"},
        )
        orders.append(await response.json())
        state = await (
            await client.get(f"{sandbox['base']}/_mock/state", headers=sandbox["control"])
        ).json()
        assert state["seed"] == 11
    # Order ids, delivered codes and timestamps: the same on both servers.
    assert orders[0]["id"] == orders[1]["id"]
    assert orders[0]["codes"] == orders[1]["codes"] and len(orders[0]["codes"]) == 2


async def test_two_servers_on_one_seed_hand_out_different_credentials(make_client):
    answers = []
    for _ in range(2):
        client = await make_client(create_app(HOSTED))
        sandbox = await create(client, {"seed": 3})
        token = await token_of(client, sandbox["base"], sandbox["api_key"])
        response = await client.post(
            f"{sandbox['base']}/_mock/accounts",
            json={"email": "second@example.com"},
            headers=sandbox["control"],
        )
        added = await response.json()
        answers.append(
            (
                sandbox["id"],
                sandbox["control_token"],
                sandbox["api_key"],
                sandbox["webhook_secret"],
                token,
                added["api_key"],
                added["webhook_secret"],
            )
        )
    for one, other in zip(*answers, strict=True):
        assert one != other


async def test_no_two_created_sandboxes_share_a_webhook_secret(make_client):
    client = await make_client(create_app(HOSTED))
    accounts = {"accounts": {"accounts": [{"email": "shop@example.com", "api_key": "ak_shop"}]}}
    secrets = []
    for body in ({}, {}, {"seed": 5}, {"seed": 5}, accounts):
        sandbox = await create(client, body)
        secrets.append(sandbox["webhook_secret"])
        # Accounts made at run time without a secret get one of the sandbox's own too,
        # whether one at a time or a whole document.
        response = await client.post(
            f"{sandbox['base']}/_mock/accounts",
            json={"email": "later@example.com"},
            headers=sandbox["control"],
        )
        secrets.append((await response.json())["webhook_secret"])
        response = await client.put(
            f"{sandbox['base']}/_mock/accounts",
            json={"accounts": [{"email": "put@example.com", "api_key": f"ak_{len(secrets)}"}]},
            headers=sandbox["control"],
        )
        assert response.status == 200, await response.text()
        listed = await (
            await client.get(f"{sandbox['base']}/_mock/accounts", headers=sandbox["control"])
        ).json()
        secrets.append(listed["accounts"][0]["webhook_secret"])
    assert len(set(secrets)) == len(secrets)
    assert "whsec_test_default" not in secrets
    assert all(s.startswith("whsec_") and len(s) == 38 for s in secrets)


async def test_a_reset_keeps_a_created_sandboxs_credentials(make_client):
    client = await make_client(create_app(HOSTED))
    sandbox = await create(client)
    before = await (
        await client.get(f"{sandbox['base']}/_mock/accounts", headers=sandbox["control"])
    ).json()
    await client.post(f"{sandbox['base']}/_mock/reset", headers=sandbox["control"])
    after = await (
        await client.get(f"{sandbox['base']}/_mock/accounts", headers=sandbox["control"])
    ).json()
    assert after == before
    assert before["accounts"][0]["webhook_secret"] == sandbox["webhook_secret"]
    assert before["accounts"][0]["api_keys"] == [sandbox["api_key"]]


async def test_a_token_moved_to_another_sandbox_is_refused_everywhere(make_client):
    client = await make_client(create_app(HOSTED))
    # Same seed, same accounts: before tokens were keyed, the two differed only by id.
    one = await create(client, {"seed": 9})
    two = await create(client, {"seed": 9})
    token_one = await token_of(client, one["base"], one["api_key"])
    token_two = await token_of(client, two["base"], two["api_key"])
    assert token_one.startswith(f"{one['id']}.") and token_two.startswith(f"{two['id']}.")
    assert token_one.partition(".")[2] != token_two.partition(".")[2]
    moved = f"{one['id']}.{token_two.partition('.')[2]}"
    for path in ("/api/v1/account/balance", "/v1/account/me"):
        for base in ("", one["base"], two["base"]):
            response = await client.get(
                f"{base}{path}", headers={"Authorization": f"Bearer {moved}"}
            )
            assert response.status == 401
            assert (await response.json())["code"] == "not_authenticated"
    # Each token works where it belongs: its sandbox's base path and the root paths.
    for base in ("", one["base"]):
        response = await client.get(
            f"{base}/api/v1/account/balance", headers={"Authorization": f"Bearer {token_one}"}
        )
        assert response.status == 200


async def test_access_tokens_are_keyed_by_the_server_not_the_seed(make_client):
    """The token of a sandbox created with a known seed is not the seeded draw the
    default sandbox's tokens are, nor any HMAC an outsider could key."""
    client = await make_client(create_app(HOSTED))
    sandbox = await create(client, {"seed": SERVER_SEED})
    token = await token_of(client, sandbox["base"], sandbox["api_key"])
    seeded = f"{random.Random(f'{SERVER_SEED}:tokens').getrandbits(256):064x}"
    default_token = await token_of(client, "", "ak_test_default")
    assert default_token == seeded  # the default sandbox: reproducible from --seed
    assert token.partition(".")[2] != seeded
    guess = hmac.new(b"", f"{sandbox['id']}.{seeded}".encode(), hashlib.sha256).hexdigest()
    assert token.partition(".")[2] != guess


async def test_a_state_file_keeps_tokens_valid_and_the_server_secret_unseen(tmp_path):
    path = tmp_path / "state.db"
    settings = replace(HOSTED, state=str(path))
    async with served(settings) as client:
        sandbox = await create(client, {"seed": 4})
        token = await token_of(client, sandbox["base"], sandbox["api_key"])
    (secret_hex,) = (
        sqlite3.connect(path).execute("SELECT value FROM meta WHERE key = 'secret'").fetchone()
    )
    assert len(bytes.fromhex(secret_hex)) == 32

    async with served(settings) as client:
        for base in ("", sandbox["base"]):
            response = await client.get(
                f"{base}/api/v1/account/balance", headers={"Authorization": f"Bearer {token}"}
            )
            assert response.status == 200, await response.text()
        # The next token goes on with the same keyed sequence, and is valid too.
        later = await token_of(client, sandbox["base"], sandbox["api_key"])
        assert later != token
        response = await client.get(f"{sandbox['base']}/_mock/state", headers=sandbox["control"])
        assert secret_hex not in await response.text()
    assert sqlite3.connect(path).execute(
        "SELECT value FROM meta WHERE key = 'secret'"
    ).fetchone() == (secret_hex,)


@contextlib.asynccontextmanager
async def served(settings: Settings) -> AsyncIterator[Client]:
    """A server on `settings`, stopped (its state file closed) on leaving the block."""
    app = create_app(settings)
    async with (
        Serving(app, "127.0.0.1", 0, access_log=None) as serving,
        aiohttp.ClientSession(base_url=serving.url) as session,
    ):
        yield Client(app, serving, session)


async def test_the_default_sandbox_keeps_its_documented_credentials(make_client):
    client = await make_client(create_app(HOSTED))
    response = await client.get("/_mock/accounts", headers=ADMIN)
    (account,) = (await response.json())["accounts"]
    assert account["api_keys"] == ["ak_test_default"]
    assert account["webhook_secret"] == "whsec_test_default"
    assert client.app.sandbox.startup.credential_key is None


def test_the_server_secret_is_never_in_a_repr(tmp_path):
    app = create_app(HOSTED)
    entry = app.sandboxes.create({})
    assert entry.sandbox.startup.credential_key is not None
    assert repr(entry.sandbox.startup.credential_key) not in repr(entry.sandbox.startup)
