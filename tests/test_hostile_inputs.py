"""What a hostile tenant sends (docs/hosting.md, "Inputs a tenant sends"): scenario
patterns, YAML, JSON bodies, scenario documents and catalog items, each tried on a
server set up as docs/hosting.md says, holding only a created sandbox's control token
and API key.

Each attack is written as it was tried. The server runs in this process, so
`time.process_time()` around a call measures the server's CPU as well as the client's;
the bounds are far under what each attack cost before (given in each test) and far
over what it costs now, so a loaded machine does not fail them. Nothing sleeps on wall
time: orders move on the sandbox's manual clock.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import tracemalloc
from dataclasses import replace
from typing import Any
from urllib.parse import urlparse

import pytest

from mock_server.app import create_app
from mock_server.domain.scenarios import MAX_SCENARIO_BYTES, MAX_STEPS, parse_scenarios
from mock_server.edge.jsonio import MAX_CONTAINERS, TOKEN_BODY_BYTES, YAML_BYTES
from tests.conftest import BASE_SETTINGS

ADMIN_TOKEN = "adm1n-inputs"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
YAML = {"Content-Type": "application/yaml"}
MIB = 1024 * 1024
#: Far over what any call below costs now (a few ms), far under what each attack cost.
QUICK_CPU = 0.5


@pytest.fixture
async def hosted(make_client):
    """A server set up as docs/hosting.md says: admin token, private webhooks refused,
    quotas (a created sandbox's defaults), a rate generous enough for these tests."""
    settings = replace(
        BASE_SETTINGS, admin_token=ADMIN_TOKEN, webhook_deny_private=True, sandbox_rate=1000.0
    )
    return await make_client(create_app(settings))


async def tenant(client, body: dict[str, Any] | None = None) -> dict[str, Any]:
    response = await client.post("/_mock/sandboxes", json=body or {}, headers=ADMIN)
    created = await response.json()
    assert response.status == 201, created
    created["base"] = urlparse(created["base_url"]).path
    created["control"] = {"Authorization": f"Bearer {created['control_token']}"}
    return created


async def merchant_token(client, sandbox: dict[str, Any]) -> dict[str, str]:
    response = await client.post(
        sandbox["base"] + "/api/v1/auth/token/client", json={"api_key": sandbox["api_key"]}
    )
    assert response.status == 200, await response.text()
    return {"Authorization": f"Bearer {(await response.json())['access_token']}"}


async def control(client, sandbox, method: str, path: str, **kwargs: Any):
    headers = {**sandbox["control"], **kwargs.pop("headers", {})}
    response = await client.request(method, sandbox["base"] + path, headers=headers, **kwargs)
    return response.status, await response.json(content_type=None)


async def cpu_of(call) -> tuple[Any, float]:
    """The call's answer (status, body) and the CPU the process spent on it."""
    started = time.process_time()
    answer = await call
    return answer, time.process_time() - started


def scenario(name: str, *, steps: int = 2, **extra: Any) -> dict[str, Any]:
    body = [{"after": "1s", "status": "processing"} for _ in range(steps - 1)]
    return {"name": name, "steps": [*body, {"after": "1s", "status": "completed"}], **extra}


STATUS_OF = {"validation_error": 400, "payload_too_large": 413, "quota_exceeded": 429}


def assert_refused(status: int, body: Any, code: str = "validation_error") -> None:
    """A refusal in the spec's envelope (spec 2.6)."""
    assert status == STATUS_OF[code], (status, body)
    assert set(body) >= {"detail", "code"} and body["code"] == code, body


# -- patterns in linear time -------------------------------------------------------------


async def test_a_backtracking_pattern_answers_at_once_and_stalls_no_one(hosted):
    """`^(a+)+$` and an order whose merchant_order_id is 32 x 'a' + '!' took 173 s under
    Python's `re`, with no answer to anyone meanwhile."""
    attacker, other = await tenant(hosted), await tenant(hosted)
    match = {"merchant_order_id": "^(a+)+$"}
    status, body = await control(
        hosted, attacker, "POST", "/_mock/scenarios", json=scenario("evil", match=match)
    )
    assert status == 201, body
    attacker_auth = await merchant_token(hosted, attacker)
    other_auth = await merchant_token(hosted, other)

    async def order(sandbox, auth, reference: str):
        response = await hosted.post(
            sandbox["base"] + "/api/v1/orders",
            json={"item_id": 1001, "merchant_order_id": reference},
            headers=auth,
        )
        return response.status, await response.json()

    started = time.process_time()
    (attack, attack_body), (meanwhile, _) = await asyncio.gather(
        order(attacker, attacker_auth, "a" * 32 + "!"), order(other, other_auth, "other-1")
    )
    assert time.process_time() - started < QUICK_CPU
    assert (attack, meanwhile) == (201, 201), attack_body
    # The pattern still matches what it matches: unanchored search, as before.
    status, matched = await order(attacker, attacker_auth, "a" * 32)
    status, detail = await control(hosted, attacker, "GET", f"/_mock/orders/{matched['id']}")
    assert detail["scenario"] == "evil", detail


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        (r"^(a)\1$", "backreferences"),
        (r"^(?P<x>a)(?P=x)$", "backreferences"),
        (r"^a(?=b)", "lookahead"),
        (r"^a(?!b)", "lookahead"),
        (r"(?<=a)b", "lookbehind"),
        (r"(?<!a)b", "lookbehind"),
    ],
)
async def test_backreferences_and_lookaround_are_refused_where_the_pattern_is_read(
    hosted, tmp_path, pattern, words
):
    attacker = await tenant(hosted)
    document = scenario("evil", match={"merchant_order_id": pattern})
    status, body = await control(hosted, attacker, "POST", "/_mock/scenarios", json=document)
    assert_refused(status, body)
    assert words in body["detail"] and "RE2" in body["detail"], body
    status, listed = await control(hosted, attacker, "GET", "/_mock/scenarios")
    assert "evil" not in json.dumps(listed)

    created = await hosted.post("/_mock/sandboxes", json={"scenarios": [document]}, headers=ADMIN)
    refused = await created.json()
    assert created.status == 400 and words in refused["detail"], refused

    file = tmp_path / "evil.yaml"
    file.write_text(
        f"scenarios:\n  - name: evil\n    match:\n      merchant_order_id: '{pattern}'\n"
        "    steps:\n      - status: completed\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "mock_server", "validate", str(file)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode != 0
    assert f"{file}:4: invalid regex" in run.stdout + run.stderr
    assert words in run.stdout + run.stderr


@pytest.mark.parametrize(
    ("pattern", "reference"),
    [
        (r"\pN+$", "order-42"),
        (r"^(?P<kind>vip|gold)-", "gold-7"),
        (r"[[:upper:]]{3}", "x-ABC-y"),
        (r"(?i)TIMEOUT", "a-timeout-b"),
        (r"\Qa.b\E", "xa.by"),
        (r"^(a+)+$", "aaaa"),
    ],
)
def test_every_re2_pattern_is_accepted_and_searched_anywhere(pattern, reference):
    (loaded,) = parse_scenarios(scenario("s", match={"merchant_order_id": pattern}), "body")
    assert loaded.match is not None
    args = {"item_id": 1, "product_type": "key", "quantity": 1}
    assert loaded.match.holds(merchant_order_id=reference, **args)
    assert not loaded.match.holds(merchant_order_id="-", **args)


# -- YAML, bodies and scenarios bounded -----------------------------------------------------


async def test_a_mebibyte_of_yaml_is_refused_unread_and_spends_no_quota(hosted):
    """1 MiB of YAML (a flow list) took 11.2 s to parse, and a refused document cost as
    much."""
    attacker = await tenant(hosted)
    flow = ("[" + "a, " * ((MIB - 16) // 3) + "a]").encode()
    (status, body), cpu = await cpu_of(
        control(hosted, attacker, "POST", "/_mock/scenarios", data=flow, headers=YAML)
    )
    assert cpu < QUICK_CPU
    assert_refused(status, body, "payload_too_large")
    assert str(YAML_BYTES) in body["detail"] and "JSON" in body["detail"]
    # The largest YAML taken costs well under the bound too.
    near = ("[" + "a, " * (YAML_BYTES // 3 - 1) + "a]").encode()
    assert len(near) <= YAML_BYTES
    (status, body), cpu = await cpu_of(
        control(hosted, attacker, "POST", "/_mock/scenarios", data=near, headers=YAML)
    )
    assert cpu < QUICK_CPU
    assert_refused(status, body)
    # No quota was spent: the sandbox's whole scenario quota (100) still loads.
    many = {"scenarios": [scenario(f"s{i}") for i in range(100)]}
    status, body = await control(hosted, attacker, "POST", "/_mock/scenarios", json=many)
    assert status == 201, body


ALIAS_BOMB = """\
- id: 9001
  name: bomb
  product_type: key
  price: 100
  lol1: &a1 [x, x, x, x, x, x, x, x, x, x]
  lol2: &a2 [*a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1]
  lol3: &a3 [*a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2]
  lol4: &a4 [*a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3]
  lol5: &a5 [*a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4]
  lol6: &a6 [*a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5]
  lol7: &a7 [*a6, *a6, *a6, *a6, *a6, *a6, *a6, *a6, *a6, *a6]
  lol8: &a8 [*a7, *a7, *a7, *a7, *a7, *a7, *a7, *a7, *a7, *a7]
"""


async def test_a_yaml_alias_bomb_in_a_catalog_item_is_refused(hosted):
    """600 bytes of YAML aliases kept in an item's unknown key made every catalog or
    state read write 691 MB."""
    assert len(ALIAS_BOMB) < 700
    attacker = await tenant(hosted)
    _, before = await control(hosted, attacker, "GET", "/_mock/catalog")
    (status, body), cpu = await cpu_of(
        control(hosted, attacker, "PUT", "/_mock/catalog", data=ALIAS_BOMB, headers=YAML)
    )
    assert cpu < QUICK_CPU
    assert_refused(status, body)
    assert "aliases" in body["detail"] and "request body:5" in body["detail"], body
    (status, after), cpu = await cpu_of(control(hosted, attacker, "GET", "/_mock/catalog"))
    assert cpu < QUICK_CPU and after == before


async def test_yaml_values_json_cannot_hold_are_refused_not_a_500(hosted):
    attacker = await tenant(hosted)
    for value in ("!!set {a, b}", "!!binary aGVsbG8="):
        document = f"- id: 9001\n  name: odd\n  product_type: key\n  price: 1\n  odd: {value}\n"
        status, body = await control(
            hosted, attacker, "PUT", "/_mock/catalog", data=document, headers=YAML
        )
        assert_refused(status, body)
        assert "request body:5" in body["detail"], body


async def test_yaml_nested_past_64_levels_is_refused(hosted):
    attacker = await tenant(hosted)
    deep = "[" * 500 + "]" * 500
    (status, body), cpu = await cpu_of(
        control(hosted, attacker, "PUT", "/_mock/catalog", data=deep, headers=YAML)
    )
    assert cpu < QUICK_CPU
    assert_refused(status, body)
    assert "deeper than 64" in body["detail"]


async def test_the_operators_own_yaml_keeps_its_aliases(tmp_path):
    file = tmp_path / "scenarios.yaml"
    file.write_text(
        "scenarios:\n  - name: a\n    steps: &steps\n      - status: completed\n"
        "  - name: b\n    steps: *steps\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "mock_server", "validate", str(file)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def wide(size: int) -> bytes:
    """`{"a": [{}, {}, ...]}` of `size` bytes: the cheapest bytes for a parser's work."""
    inner = b"{}," * ((size - 10) // 3)
    return b'{"a":[' + inner + b"{}]}"


async def test_a_mebibyte_of_nested_json_on_the_root_token_endpoint_is_refused_unparsed(
    hosted,
):
    """The root token endpoint took 1 MiB of nested JSON before any credential or rate
    check, 0.6 s each (parsed once to route, once more by the handler)."""
    other = await tenant(hosted)
    other_auth = await merchant_token(hosted, other)
    json_type = {"Content-Type": "application/json"}

    async def token(body: bytes):
        response = await hosted.post("/api/v1/auth/token/client", data=body, headers=json_type)
        return response.status, await response.json()

    async def balance():
        response = await hosted.get(other["base"] + "/api/v1/account/balance", headers=other_auth)
        return response.status

    started = time.process_time()
    (status, body), meanwhile = await asyncio.gather(token(wide(MIB - 16)), balance())
    assert time.process_time() - started < QUICK_CPU
    assert (status, meanwhile) == (413, 200)
    assert set(body) == {"error"} and str(TOKEN_BODY_BYTES) in body["error"]
    # Within the bound, a body is parsed once and refused in the endpoint's own shape.
    (status, body), cpu = await cpu_of(token(wide(TOKEN_BODY_BYTES)))
    assert cpu < QUICK_CPU
    assert status == 401 and set(body) == {"error"}, body


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(wide(MIB - 16), id="too-many-objects"),
        pytest.param(b"[" + b",".join([b"[" * 60 + b"]" * 60] * 8000) + b"]", id="deep-chains"),
        pytest.param(b"[" * 1000 + b"]" * 1000, id="deeper-than-64"),
    ],
)
async def test_a_mebibyte_body_of_objects_and_arrays_is_bounded(hosted, body):
    """A merchant call may carry up to 1 MiB (docs/fidelity.md, spec 7); objects and
    arrays are what a parser pays for, so a body holds at most MAX_CONTAINERS."""
    assert len(body) <= MIB
    attacker = await tenant(hosted)
    auth = await merchant_token(hosted, attacker)
    headers = {**auth, "Content-Type": "application/json"}
    started = time.process_time()
    response = await hosted.post(attacker["base"] + "/api/v1/orders", data=body, headers=headers)
    answer = await response.json()
    assert time.process_time() - started < QUICK_CPU
    assert_refused(response.status, answer)
    if body.count(b"{") + body.count(b"[") > MAX_CONTAINERS:
        assert str(MAX_CONTAINERS) in answer["detail"]


async def test_a_scenario_of_forty_thousand_steps_is_refused_and_a_hundred_play_quickly(
    hosted,
):
    """A scenario of 40,000 steps cost 6.2 s per order (its history copied at each
    step)."""
    attacker = await tenant(hosted)
    steps = [{"status": "processing"}] * 39_999 + [{"status": "completed"}]
    (status, body), cpu = await cpu_of(
        control(hosted, attacker, "POST", "/_mock/scenarios", json={"name": "x", "steps": steps})
    )
    assert cpu < 2 * QUICK_CPU
    assert_refused(status, body)
    assert f"at most {MAX_STEPS} steps" in body["detail"]

    status, body = await control(
        hosted, attacker, "POST", "/_mock/scenarios", json=scenario("long", steps=MAX_STEPS)
    )
    assert status == 201, body
    auth = await merchant_token(hosted, attacker)
    response = await hosted.post(
        attacker["base"] + "/api/v1/orders",
        json={"item_id": 1001},
        headers={**auth, "X-Mock-Scenario": "long"},
    )
    order = await response.json()
    assert response.status == 201, order
    (status, _), cpu = await cpu_of(
        control(hosted, attacker, "POST", "/_mock/clock/advance", json={"seconds": MAX_STEPS})
    )
    assert status == 200 and cpu < QUICK_CPU
    status, settled = await control(hosted, attacker, "GET", f"/_mock/orders/{order['id']}")
    assert settled["order"]["status"] == "completed"


def test_an_orders_history_is_one_tuple_at_every_step():
    """The smallest form for the many orders a sandbox keeps, and no list made and
    dropped per order; the copy each change makes is bounded by MAX_STEPS (the test
    above settles the longest scenario within its CPU bound)."""
    from mock_server.domain.orders import Order

    order = Order(
        id="o", account_id="a", created_by_email="e", item_id=1, item_name="i",
        product_type="key", quantity=1, unit_price=1, price=1, fields={},
        merchant_order_id=None, created_at=0.0, scenario=None,  # type: ignore[arg-type]
    )  # fmt: skip
    order.history += ("pending", 0.0)
    for at, status in ((1.0, "processing"), (2.0, "processing"), (3.0, "completed")):
        order.move_to(status, at)
        assert type(order.history) is tuple
    assert order.history == ("pending", 0.0, "processing", 1.0, "processing", 2.0, "completed", 3.0)


async def test_scenario_documents_of_a_mebibyte_are_refused_and_the_quota_holds_little(
    hosted,
):
    """100 scenario documents of 1 MiB each (within the scenarios quota) took one
    sandbox to 1.7 GB, re-saved on every write under --state."""
    attacker = await tenant(hosted)
    huge = scenario("huge", description="x" * (MIB - 200))
    (status, body), cpu = await cpu_of(
        control(hosted, attacker, "POST", "/_mock/scenarios", json=huge)
    )
    assert cpu < QUICK_CPU
    assert_refused(status, body)
    assert str(MAX_SCENARIO_BYTES) in body["detail"]

    # The most a sandbox can hold: its whole quota of scenarios, each as large as taken.
    def largest(index: int) -> dict[str, Any]:
        document = scenario(f"big{index}", steps=MAX_STEPS - 1)
        spare = MAX_SCENARIO_BYTES - len(json.dumps(document, separators=(",", ":")))
        document["description"] = "d" * (spare - len(',"description":""'))
        return document

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for index in range(100):
            status, body = await control(
                hosted, attacker, "POST", "/_mock/scenarios", json=largest(index)
            )
            assert status == 201, body
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    status, body = await control(
        hosted, attacker, "POST", "/_mock/scenarios", json=scenario("one-more")
    )
    assert_refused(status, body, "quota_exceeded")
    # docs/hosting.md, "Sizing": at most about 4 MiB for a sandbox's whole quota.
    assert held < 6 * MIB, held


async def test_unknown_keys_in_a_catalog_item_are_read_back_at_the_size_sent(hosted):
    attacker = await tenant(hosted)
    note = "n" * (MIB - 4096)
    item = {"id": 9001, "name": "padded", "product_type": "key", "price": 1, "note": note}
    status, body = await control(hosted, attacker, "PUT", "/_mock/catalog", json=[item])
    assert status == 200, body
    started = time.process_time()
    response = await hosted.get(attacker["base"] + "/_mock/catalog", headers=attacker["control"])
    raw = await response.read()
    assert time.process_time() - started < QUICK_CPU
    assert MIB - 4096 < len(raw) < MIB + 4096
    over = {**item, "note": "n" * (2 * MIB)}
    status, body = await control(hosted, attacker, "PUT", "/_mock/catalog", json=[over])
    assert_refused(status, body, "payload_too_large")


def test_a_huge_pattern_is_refused_by_its_size_before_it_is_compiled():
    """The hostile bench: a 1 MiB `match` pattern took RE2 41-67 ms to refuse, since the
    scenario's size was checked after its pattern was compiled."""
    from mock_server.domain.scenarios import MAX_SCENARIO_BYTES, parse_scenarios
    from mock_server.sourcefile import ConfigError

    record = {
        "name": "huge",
        "match": {"merchant_order_id": "(a|b)" * 200_000},
        "steps": [{"after": "1s", "status": "completed"}],
    }
    started = time.process_time()
    with pytest.raises(ConfigError) as refused:
        parse_scenarios(record, "body")
    assert time.process_time() - started < 0.01
    assert f"at most {MAX_SCENARIO_BYTES} bytes" in str(refused.value)


@pytest.mark.parametrize("scalar", ["1" + "0" * 5000, "2026-02-30"])
async def test_a_yaml_scalar_no_value_can_be_made_of_is_a_400_not_a_500(client, scalar):
    """An integer of over 4300 digits (Python refuses to read one) or a date that does
    not exist made PyYAML raise ValueError: the server answered 500."""
    answer = await client.put(
        "/_mock/shapes",
        data=f"shapes:\n  balance:\n    add: {{x: {{const: {scalar}}}}}\n",
        headers={"Content-Type": "application/yaml"},
    )
    assert answer.status == 400, await answer.text()
    assert "a value cannot be read" in (await answer.json())["detail"]
