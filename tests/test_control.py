"""The control API core: health, clock, orders, admin token protection."""

from __future__ import annotations

import pytest

from tests.conftest import START, login


async def test_health(client):
    response = await client.get("/_mock/health")
    assert response.status == 200
    assert await response.json() == {"status": "ok"}


async def test_clock_reads_mode_and_start_time(client):
    body = await (await client.get("/_mock/clock")).json()
    assert body == {"now": "2026-01-01T00:00:00.000Z", "mode": "manual", "time_scale": 1.0}


async def test_advance_answers_the_new_time(client):
    response = await client.post("/_mock/clock/advance", json={"seconds": 90.5})
    assert response.status == 200
    assert await response.json() == {"now": "2026-01-01T00:01:30.500Z"}


@pytest.mark.parametrize(
    "body", [{"seconds": -1}, {"seconds": "5"}, {}, {"seconds": True}, [], {"seconds": 1e20}]
)
async def test_advance_refuses_bad_seconds(client, body):
    response = await client.post("/_mock/clock/advance", json=body)
    assert response.status == 400
    assert (await response.json())["code"] == "validation_error"
    clock = await (await client.get("/_mock/clock")).json()
    assert clock["now"] == START.replace("Z", ".000Z")


async def test_order_detail_shows_scenario_history_and_account(merchant):
    _, created = await merchant.create({"item_id": 1001, "merchant_order_id": "ref-1"})
    await merchant.advance(3)
    response = await merchant.client.get(f"/_mock/orders/{created['id']}")
    detail = await response.json()
    assert detail["scenario"] == "happy_path"
    assert detail["account_id"] == created["created_by"]["id"]
    assert detail["order"]["status"] == "completed"
    assert [h["status"] for h in detail["history"]] == ["pending", "processing", "completed"]
    assert detail["deliveries"] == []


async def test_unknown_order_in_control_api_is_not_found(client):
    response = await client.get("/_mock/orders/nope")
    assert response.status == 404
    assert (await response.json())["code"] == "not_found"


async def test_orders_list_filters(merchant):
    _, first = await merchant.create({"item_id": 1001, "merchant_order_id": "a"})
    await merchant.create({"item_id": 1001, "merchant_order_id": "b"})
    listing = await (await merchant.client.get("/_mock/orders?merchant_order_id=a")).json()
    assert [o["id"] for o in listing["orders"]] == [first["id"]]
    bad = await merchant.client.get("/_mock/orders?status=weird")
    assert bad.status == 400


async def test_reset_returns_to_startup_state(merchant):
    _, created = await merchant.create({"item_id": 1001})
    await merchant.advance(10)
    response = await merchant.client.post("/_mock/reset")
    assert response.status == 200
    assert (await (await merchant.client.get("/_mock/orders")).json()) == {"orders": [], "total": 0}
    clock = await (await merchant.client.get("/_mock/clock")).json()
    assert clock["now"] == "2026-01-01T00:00:00.000Z"
    fresh = await login(merchant.client)
    assert await fresh.balance() == 1000.0
    status, _ = await fresh.call("GET", f"/api/v1/orders/{created['id']}")
    assert status == 404


async def test_reset_with_same_seed_replays_identical_ids(merchant):
    _, first = await merchant.create({"item_id": 1001})
    await merchant.client.post("/_mock/reset", json={"seed": 42})
    again = await login(merchant.client)
    _, second = await again.create({"item_id": 1001})
    assert first == second


async def test_reset_refuses_bad_start_time(client):
    response = await client.post("/_mock/reset", json={"start_time": "yesterday"})
    assert response.status == 400


# -- admin token ---------------------------------------------------------------------------


async def test_admin_token_protects_control_api(make_client):
    client = await make_client(admin_token="s3cret")
    assert (await client.get("/_mock/clock")).status == 401
    wrong = await client.get("/_mock/clock", headers={"Authorization": "Bearer nope"})
    assert wrong.status == 401
    assert (await wrong.json())["code"] == "not_authenticated"
    right = await client.get("/_mock/clock", headers={"Authorization": "Bearer s3cret"})
    assert right.status == 200


async def test_health_stays_open_for_container_healthchecks(make_client):
    client = await make_client(admin_token="s3cret")
    response = await client.get("/_mock/health")
    assert response.status == 200
    assert await response.json() == {"status": "ok"}


async def test_merchant_token_never_opens_control_api(make_client):
    client = await make_client(admin_token="s3cret")
    merchant = await login(client)
    response = await client.get("/_mock/orders", headers=merchant.auth)
    assert response.status == 401


async def test_admin_token_does_not_guard_merchant_api(make_client):
    client = await make_client(admin_token="s3cret")
    merchant = await login(client)
    assert await merchant.balance() == 1000.0


async def test_a_crashed_job_is_kept_and_shown_not_lost(merchant, monkeypatch):
    def broken(self, count):
        raise RuntimeError("code generator exploded")

    monkeypatch.setattr("mock_server.domain.randomness.Randomness.codes", broken)
    await merchant.create({"item_id": 1001})
    await merchant.advance(3)  # the advance itself still answers
    jobs = await (await merchant.client.get("/_mock/jobs")).json()
    (failure,) = jobs["failures"]
    assert "code generator exploded" in failure["error"]
    assert failure["due"] == "2026-01-01T00:00:03.000Z"
    assert "step 2" in failure["job"]
    assert jobs["pending"] == 0


async def test_jobs_counts_what_waits_on_the_clock(merchant):
    _, order = await merchant.create({"item_id": 1001})
    jobs = await (await merchant.client.get("/_mock/jobs")).json()
    account = order["created_by"]["id"]
    assert jobs == {
        "pending": 1,
        "upcoming": [
            {
                "due": "2026-01-01T00:00:01.000Z",
                "job": f"order {order['id']} step 1 processing",
                "owner": account,
            }
        ],
        "failures": [],
    }


async def test_upcoming_jobs_come_in_the_order_they_will_run(merchant):
    first = (await merchant.create({"item_id": 1001}, **{"X-Mock-Scenario": "slow_fulfillment"}))[1]
    second = (await merchant.create({"item_id": 1001}))[1]
    await merchant.advance(1)  # the second is processing; its completion is due at 3 s
    jobs = await (await merchant.client.get("/_mock/jobs?upcoming=5")).json()
    assert [(job["due"], job["job"].split()[1]) for job in jobs["upcoming"]] == [
        ("2026-01-01T00:00:03.000Z", second["id"]),
        ("2026-01-01T00:00:30.000Z", first["id"]),
    ]
    limited = await (await merchant.client.get("/_mock/jobs?upcoming=1")).json()
    assert len(limited["upcoming"]) == 1 and limited["pending"] == 2
    response = await merchant.client.get("/_mock/jobs?upcoming=-1")
    assert response.status == 400


async def test_orders_are_listed_a_page_at_a_time_newest_first_on_request(merchant):
    created = [(await merchant.create({"item_id": 1001}))[1]["id"] for _ in range(5)]
    page = await (await merchant.client.get("/_mock/orders?sort=newest&limit=2")).json()
    assert [o["id"] for o in page["orders"]] == created[::-1][:2]
    assert page["total"] == 5
    page = await (await merchant.client.get("/_mock/orders?offset=4&limit=2")).json()
    assert [o["id"] for o in page["orders"]] == created[4:]
    for bad in ("sort=random", "offset=-1", "limit=x"):
        assert (await merchant.client.get(f"/_mock/orders?{bad}")).status == 400


async def test_lookup_after_reset_never_shows_the_previous_order_with_that_id(merchant):
    _, first = await merchant.create({"item_id": 1001})
    assert (await merchant.order(first["id"]))["item"] == 1001  # rendered once
    await merchant.client.post("/_mock/reset")
    again = await login(merchant.client)
    _, second = await again.create({"item_id": 3001, "fields": {"riot_id": "a", "region": 1}})
    assert second["id"] == first["id"], "same seed, same id"
    assert (await again.order(second["id"]))["item"] == 3001


@pytest.mark.parametrize("seed", [-1, 2**63, 2**70])
async def test_reset_refuses_seeds_beyond_63_bits(client, seed):
    response = await client.post("/_mock/reset", json={"seed": seed})
    assert response.status == 400
    assert (await response.json())["code"] == "validation_error"


async def test_reset_accepts_the_largest_seed_and_shows_it(client):
    response = await client.post("/_mock/reset", json={"seed": 2**63 - 1})
    assert response.status == 200
    assert (await response.json())["seed"] == 2**63 - 1


async def test_the_ledger_can_be_read_for_one_order(merchant):
    _, first = await merchant.create({"item_id": 1001})
    await merchant.create({"item_id": 1002})
    account = first["created_by"]["id"]
    path = f"/_mock/accounts/{account}/ledger?order_id={first['id']}"
    ledger = await (await merchant.client.get(path)).json()
    assert [(e["kind"], e["order_id"]) for e in ledger["entries"]] == [("charge", first["id"])]
    assert ledger["conserved"] is True and ledger["balance"] == 965.01


async def test_an_upcoming_webhook_retry_names_its_delivery_and_order(merchant):
    accounts = (await (await merchant.client.get("/_mock/accounts")).json())["accounts"]
    await merchant.client.patch(
        f"/_mock/accounts/{accounts[0]['id']}", json={"webhook_url": "http://127.0.0.1:9/hooks"}
    )
    _, order = await merchant.create({"item_id": 1001})
    await merchant.advance(3)  # settled; the first attempt fails (nothing listens on 9)
    jobs = await (await merchant.client.get("/_mock/jobs")).json()
    (retry,) = jobs["upcoming"]
    delivery = (await (await merchant.client.get("/_mock/webhooks")).json())["deliveries"][0]
    assert retry["job"] == f"webhook {delivery['id']} attempt 2 order {order['id']}"
    assert retry["due"] == "2026-01-01T00:01:03.000Z"
