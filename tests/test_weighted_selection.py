"""Weighted selection (docs/scenarios.md, "Weighted selection"; spec sections 6 and 19):
a scenario with a `weight` is drawn, among the weighted scenarios whose `match` holds,
where no header, queue entry or unweighted match chose, before the client-code rule and
`happy_path`. The draw has a seeded stream of its own: reproducible under a seed, never
shifting ids, tokens or codes, and resumed by a saved state."""

from __future__ import annotations

import asyncio
import math
import signal
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from mock_server import validate
from mock_server.domain.scenarios import load_scenario_file
from mock_server.sourcefile import ConfigError
from tests.conftest import Merchant, login
from tests.test_cli import launch  # noqa: F401 - the fixture, shared by import
from tests.test_openapi import call as conforming
from tests.test_state_file import ARGS, call

KEY = {"item_id": 1001, "quantity": 2}  # a key, 40.00
SERVICE = {"item_id": 3001, "fields": {"riot_id": "Player#EUW", "region": 1}}
LOGIN_TOPUP = {"item_id": 2002, "quantity": 1, "fields": {"login_email": "a@b.c", "server": 2}}
WEIGHTED_YAML = """\
scenarios:
  - name: mostly
    description: Three orders in four complete.
    weight: 3
    match:
      product_type: key
    steps:
      - after: 1s
        status: completed
  - name: sometimes
    description: One in four delivers a single key, then times out.
    weight: 1
    match:
      product_type: key
    steps:
      - after: 2s
        status: partial
        deliver: 1
        error: ORDER_TIMEOUT
  - name: topups
    description: Never drawn for a key or a service.
    weight: 5
    match:
      product_type: topup
    steps:
      - after: 1s
        status: completed
"""
POOL = "'mostly' (weight 3, 75%), 'sometimes' (weight 1, 25%)"


def weighted(**changes: Any) -> dict[str, Any]:
    """`WEIGHTED_YAML` as JSON, each scenario updated from `changes[its name]`."""
    document = yaml.safe_load(WEIGHTED_YAML)
    for scenario in document["scenarios"]:
        scenario.update(changes.get(scenario["name"], {}))
    return document


async def load(merchant: Merchant, document: dict[str, Any]) -> None:
    response = await merchant.client.post("/_mock/scenarios", json=document)
    assert response.status == 201, await response.text()


async def rich(merchant: Merchant) -> None:
    """Enough balance for thousands of orders."""
    accounts = (await (await merchant.client.get("/_mock/accounts")).json())["accounts"]
    response = await merchant.client.patch(
        f"/_mock/accounts/{accounts[0]['id']}", json={"balance": 1_000_000}
    )
    assert response.status == 200, await response.text()


async def weighted_server(make_client: Any, **settings: Any) -> Merchant:
    """A server (on the tests' settings and `settings`) with `weighted()` loaded, and a
    client logged in with enough balance for thousands of orders."""
    merchant = await login(await make_client(**settings))
    await load(merchant, weighted())
    await rich(merchant)
    return merchant


@pytest.fixture
async def scripted(make_client: Any) -> Merchant:
    return await weighted_server(make_client)


async def place(merchant: Merchant, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    status, order = await merchant.create(body, **headers)
    assert status == 201, order
    return order


async def detail(merchant: Merchant, order_id: str) -> dict[str, Any]:
    response = await merchant.client.get(f"/_mock/orders/{order_id}")
    assert response.status == 200
    return await response.json()


async def drawn(merchant: Merchant) -> int:
    """How many draws among weighted scenarios the sandbox has made."""
    state = await (await merchant.client.get("/_mock/state")).json()
    return state["random"]["weights"]


async def scenarios_of(merchant: Merchant, count: int, body: dict[str, Any] = KEY) -> list[str]:
    """Place `count` orders one after another; the scenario each got."""
    names = []
    for _ in range(count):
        order = await place(merchant, body)
        names.append((await detail(merchant, order["id"]))["scenario"])
    return names


# -- loading -------------------------------------------------------------------------------


def write(tmp_path: Path, text: str, name: str = "weighted.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "value",
    ["0", "-1", "0.0", "true", "'3'", ".nan", ".inf", "-.inf", "1e16", "[1]", "{a: 1}"],
)
def test_the_loader_refuses_a_weight_that_is_not_a_positive_number_with_file_and_line(
    tmp_path, value
):
    path = write(
        tmp_path,
        f"""\
        scenarios:
          - name: fine
            weight: 2
            steps:
              - status: completed
          - name: bad
            description: its weight is wrong
            weight: {value}
            steps:
              - status: completed
        """,
    )
    with pytest.raises(ConfigError) as caught:
        load_scenario_file(path)
    (problem,) = caught.value.problems
    assert problem.startswith(f"{path}:8: "), problem  # the line of `weight: {value}`
    assert "'weight'" in problem and "number" in problem


def test_good_weights_load_and_validate(tmp_path, capsys):
    path = write(
        tmp_path,
        """\
        - name: whole
          weight: 90
          steps:
            - status: completed
        - name: fraction
          weight: 0.5
          match:
            item_id: 1001
          steps:
            - status: completed
        - name: unweighted
          weight: null
          steps:
            - status: completed
        """,
    )
    whole, fraction, unweighted = load_scenario_file(path)
    assert (whole.weight, fraction.weight, unweighted.weight) == (90, 0.5, None)
    assert validate.run([str(path)]) == 0
    assert f"{path}: ok (scenarios)" in capsys.readouterr().out


async def test_a_bad_weight_over_http_names_the_line_and_loads_nothing(merchant: Merchant):
    yaml = "name: bad\nweight: -2\nsteps:\n  - status: completed\n"
    response = await merchant.client.post(
        "/_mock/scenarios", data=yaml, headers={"Content-Type": "application/yaml"}
    )
    assert response.status == 400
    error = await response.json()
    assert error["code"] == "validation_error"
    assert error["detail"].startswith("request body:2: 'weight'"), error
    names = [
        s["name"]
        for s in (await (await merchant.client.get("/_mock/scenarios")).json())["scenarios"]
    ]
    assert "bad" not in names


async def test_the_scenario_list_shows_each_weight(scripted: Merchant):
    listed = await conforming(scripted.client, "GET", "/_mock/scenarios", 200)
    weights = {s["name"]: s["weight"] for s in listed["scenarios"]}
    assert weights["mostly"] == 3 and weights["topups"] == 5
    assert weights["happy_path"] is None


# -- the order of the rules ----------------------------------------------------------------


async def test_a_drawn_order_says_so_and_which_scenarios_it_was_drawn_among(scripted):
    merchant = scripted
    order = await place(merchant, KEY)
    seen = await conforming(
        merchant.client,
        "GET",
        "/_mock/orders/{order_id}",
        200,
        path_params={"order_id": order["id"]},
    )
    assert seen["scenario_reason"] == {
        "source": "weight",
        "detail": f"drawn among {POOL}: {seen['scenario']!r}",
    }
    assert await drawn(merchant) == 1


async def test_header_queue_and_an_unweighted_match_win_over_the_weights(scripted):
    merchant = scripted
    vip = {
        "name": "vip",
        "match": {"merchant_order_id": "^vip-"},
        "steps": [{"status": "completed"}],
    }
    await load(merchant, {"scenarios": [vip]})  # loaded after the weighted ones: still first
    forced = await place(merchant, KEY, **{"X-Mock-Scenario": "slow_fulfillment"})
    assert (await detail(merchant, forced["id"]))["scenario_reason"]["source"] == "header"
    await merchant.client.post("/_mock/scenarios/next", json={"scenario": "failed_out_of_stock"})
    queued = await place(merchant, KEY)
    assert (await detail(merchant, queued["id"]))["scenario"] == "failed_out_of_stock"
    matched = await place(merchant, {**KEY, "merchant_order_id": "vip-1"})
    assert (await detail(merchant, matched["id"]))["scenario_reason"] == {
        "source": "match",
        "detail": "'vip' matches: merchant_order_id ~ '^vip-'",
    }
    assert await drawn(merchant) == 0  # none of them drew
    plain = await place(merchant, {**KEY, "merchant_order_id": "plain-1"})
    assert (await detail(merchant, plain["id"]))["scenario_reason"]["source"] == "weight"
    assert await drawn(merchant) == 1


async def test_the_weights_win_over_client_code_and_happy_path(merchant: Merchant):
    # No match: every order that reaches the draw is drawn, client-code items included.
    await load(merchant, {"name": "anything", "weight": 1, "steps": [{"status": "completed"}]})
    coded = await place(merchant, LOGIN_TOPUP)
    plain = await place(merchant, SERVICE)
    for order in (coded, plain):
        seen = await detail(merchant, order["id"])
        assert seen["scenario"] == "anything"
        assert seen["scenario_reason"] == {
            "source": "weight",
            "detail": "drawn among 'anything' (weight 1, 100%): 'anything'",
        }
    assert await drawn(merchant) == 2  # one candidate is a draw too


async def test_a_weighted_scenario_whose_match_fails_is_not_drawn(scripted: Merchant):
    merchant = scripted
    names = await scenarios_of(merchant, 40)
    assert set(names) == {"mostly", "sometimes"}  # never `topups`, the heaviest
    coded = await detail(merchant, (await place(merchant, LOGIN_TOPUP))["id"])
    assert coded["scenario_reason"]["detail"] == "drawn among 'topups' (weight 5, 100%): 'topups'"
    assert await drawn(merchant) == 41
    # A service matches no weighted scenario: no draw, the rules after it apply.
    service = await detail(merchant, (await place(merchant, SERVICE))["id"])
    assert (service["scenario"], service["scenario_reason"]["source"]) == ("happy_path", "default")
    assert await drawn(merchant) == 41


async def test_a_refused_order_uses_no_draw(scripted: Merchant):
    merchant = scripted
    status, body = await merchant.create({**KEY, "price": 1.00})  # a wrong price guard
    assert (status, body["code"]) == (400, "price_mismatch")
    accounts = (await (await merchant.client.get("/_mock/accounts")).json())["accounts"]
    await merchant.client.patch(f"/_mock/accounts/{accounts[0]['id']}", json={"balance": 1})
    status, body = await merchant.create(KEY)
    assert (status, body["code"]) == (400, "insufficient_balance")
    assert await drawn(merchant) == 0


# -- shares and reproducibility ------------------------------------------------------------


async def test_shares_follow_the_weights_and_are_the_same_for_the_same_seed(make_client):
    """2000 key orders drawn 3:1. The draws are seeded, so the counts are exact; they
    are also within four standard deviations of 1500 (sd = sqrt(2000 * 3/4 * 1/4))."""

    async def counts(seed: int) -> dict[str, int]:
        merchant = await weighted_server(make_client, seed=seed)
        for _ in range(20):  # 100 at a time: each creation is atomic, the draws in turn
            batch = [merchant.create(KEY) for _ in range(100)]
            assert all(status == 201 for status, _ in await asyncio.gather(*batch))
        coverage = await (await merchant.client.get("/_mock/coverage")).json()
        assert await drawn(merchant) == 2000
        return coverage["exercised"]["scenarios"]

    seen = await counts(42)
    assert seen == {"mostly": 1535, "sometimes": 465}
    assert abs(seen["mostly"] - 1500) <= 4 * math.sqrt(2000 * 0.75 * 0.25)
    assert await counts(42) == seen  # the same seed: the same outcome
    other = await counts(43)
    assert sum(other.values()) == 2000 and other != seen


async def test_the_same_seed_draws_the_same_sequence_on_two_servers(make_client):
    sequences = []
    for _ in range(2):
        merchant = await weighted_server(make_client, seed=7)
        sequences.append(await scenarios_of(merchant, 30))
    assert sequences[0] == sequences[1]
    assert set(sequences[0]) == {"mostly", "sometimes"}


async def test_draws_never_shift_ids_tokens_or_codes(make_client):
    """The same orders, drawn on one server and forced by header on another whose
    scenarios carry no weight: the same tokens, order ids and delivered codes."""
    drawn_server = await login(await make_client())
    await load(drawn_server, weighted())
    forced_server = await login(await make_client())
    await load(forced_server, weighted(mostly={"weight": None}, sometimes={"weight": None}))
    assert drawn_server.token == forced_server.token
    ids = []
    for _ in range(12):
        order = await place(drawn_server, KEY)
        scenario = (await detail(drawn_server, order["id"]))["scenario"]
        twin = await place(forced_server, KEY, **{"X-Mock-Scenario": scenario})
        ids.append((order["id"], twin["id"]))
    assert all(left == right for left, right in ids)
    await drawn_server.advance(3)
    await forced_server.advance(3)
    for order_id, _ in ids:
        drawn_order = await drawn_server.order(order_id)
        forced_order = await forced_server.order(order_id)
        assert drawn_order["codes"] and drawn_order["codes"] == forced_order["codes"]
        assert drawn_order == forced_order
    assert await drawn(drawn_server) == 12
    assert await drawn(forced_server) == 0


# -- saved state ---------------------------------------------------------------------------


async def test_a_saved_state_continues_the_draw_sequence(make_client):
    whole = await weighted_server(make_client, seed=11)
    expected = await scenarios_of(whole, 40)

    first = await weighted_server(make_client, seed=11)
    assert await scenarios_of(first, 15) == expected[:15]
    document = await (await first.client.get("/_mock/state")).json()
    assert document["random"]["weights"] == 15

    other = await make_client(seed=999)  # another seed and no weighted scenario loaded
    response = await other.put("/_mock/state", json=document)
    assert response.status == 200, await response.text()
    resumed = await login(other)
    assert await scenarios_of(resumed, 25) == expected[15:]
    whole_orders = (await (await whole.client.get("/_mock/orders")).json())["orders"]
    resumed_orders = (await (await other.get("/_mock/orders")).json())["orders"]
    assert [o["id"] for o in resumed_orders] == [o["id"] for o in whole_orders]


async def test_a_document_without_weights_loads_and_starts_the_draws_afresh(make_client):
    """An older document has no `weights` in `random`: it counts as none drawn."""
    fresh = await login(await make_client())
    await load(fresh, weighted())
    expected = await scenarios_of(fresh, 10)

    saved = await login(await make_client())
    await load(saved, weighted())
    document = await (await saved.client.get("/_mock/state")).json()
    del document["random"]["weights"]
    response = await saved.client.put("/_mock/state", json=document)
    assert response.status == 200, await response.text()
    assert await scenarios_of(saved, 10) == expected


def test_a_state_file_restart_continues_the_draw_sequence(launch, tmp_path):  # noqa: F811
    scenarios = write(tmp_path, WEIGHTED_YAML)
    state = tmp_path / "sandbox.db"
    options = (*ARGS, "--scenarios", str(scenarios), "--state", str(state))

    def orders(base: str, count: int) -> list[tuple[str, str]]:
        token = call(base, "POST", "/api/v1/auth/token/client", {"api_key": "ak_test_default"})[1][
            "access_token"
        ]
        made = []
        for _ in range(count):
            status, order = call(base, "POST", "/api/v1/orders", KEY, token)
            assert status == 201, order
            made.append(
                (order["id"], call(base, "GET", f"/_mock/orders/{order['id']}")[1]["scenario"])
            )
        return made

    server = launch(*options)
    server.wait_ready()
    before = orders(server.url, 12)
    server.stop(signal.SIGTERM)
    again = launch(*options)
    again.wait_ready()
    after = orders(again.url, 12)
    assert call(again.url, "GET", "/_mock/state")[1]["random"]["weights"] == 24

    whole = launch(*ARGS, "--scenarios", str(scenarios))  # the same run, uninterrupted
    whole.wait_ready()
    assert before + after == orders(whole.url, 24)
    assert {name for _, name in before + after} == {"mostly", "sometimes"}


async def test_a_reset_restarts_the_draws(scripted: Merchant):
    merchant = scripted
    first = await scenarios_of(merchant, 10)
    await merchant.client.post("/_mock/reset", json={})
    merchant = await login(merchant.client)
    await load(merchant, weighted())
    assert await scenarios_of(merchant, 10) == first


# -- explain and coverage ------------------------------------------------------------------


async def test_explain_names_the_candidates_and_draws_nothing(scripted: Merchant):
    merchant = scripted
    ask = {"body": {**KEY, "merchant_order_id": "k-1"}}
    for _ in range(3):  # reading never uses the sequence
        explained = await conforming(
            merchant.client, "POST", "/_mock/scenarios/explain", 200, json=ask
        )
        assert explained == {
            "scenario": None,
            "reason": {"source": "weight", "detail": f"drawn among {POOL}"},
            "near_misses": [
                {
                    "scenario": "topups",
                    "key": "product_type",
                    "why": "product_type 'key' is not 'topup'",
                }
            ],
            "candidates": [
                {"scenario": "mostly", "weight": 3, "share": 0.75},
                {"scenario": "sometimes", "weight": 1, "share": 0.25},
            ],
        }
    assert await drawn(merchant) == 0
    forced = {**ask, "headers": {"X-Mock-Scenario": "happy_path"}}
    explained = await (await merchant.client.post("/_mock/scenarios/explain", json=forced)).json()
    assert (explained["scenario"], explained["candidates"]) == ("happy_path", [])


async def test_explaining_leaves_the_next_draw_as_it_was(make_client):
    plain = await login(await make_client())
    await load(plain, weighted())
    expected = await scenarios_of(plain, 5)
    asked = await login(await make_client())
    await load(asked, weighted())
    for _ in range(5):
        await asked.client.post("/_mock/scenarios/explain", json={"body": KEY})
    assert await scenarios_of(asked, 5) == expected


async def test_coverage_counts_drawn_orders_by_scenario(scripted: Merchant):
    merchant = scripted
    names = await scenarios_of(merchant, 20)
    report = await conforming(merchant.client, "GET", "/_mock/coverage", 200)
    assert report["exercised"]["scenarios"] == {
        name: names.count(name) for name in ("mostly", "sometimes")
    }
    assert "scenarios: topups" in report["never"]
