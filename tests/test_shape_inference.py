"""Rules inferred from pairs of answers (docs/recording.md, "Calibrate the shapes"): each
consistent difference one rule, what no rule expresses a comment, and the file written
one that `parse_shapes` reads back and that reshapes the sandbox's answers into
production's."""

from __future__ import annotations

import random

import pytest

from mock_server.domain.shapes import Facts, parse_shapes
from mock_server.recording.analysis.shape_inference import Pair, infer, render
from mock_server.sourcefile import parse_text

HOOK = "http://127.0.0.1:8081/_record/webhook"
REPLAY_HOOK = "http://127.0.0.1:40000/hooks"


def order_pair(n: int) -> Pair:
    """Production: price as the sandbox, `item` echoed as `item_id`, extra `currency` and
    `eta_seconds`, no `source`, a choice field as its id, a timestamp of its own."""
    sandbox = {
        "id": f"o-{n}",
        "item": 1000 + n,
        "price": 24.0,
        "status": "pending",
        "codes": [],
        "source": "api",
        "fields": {"server": "EU West"},
        "created_at": "2026-03-01T10:00:00.000Z",
    }
    recorded = {
        "id": f"p-{n}",
        "item_id": 1000 + n,
        "price": 24.0,
        "status": "pending",
        "codes": [],
        "currency": "USD",
        "eta_seconds": 5 + n,
        "fields": {"server": 2},
        "created_at": f"2026-03-0{n + 1}T09:00:00Z",
        "request_id": f"1b4e28ba-2fa1-11d2-883f-0016d3cca4{n:02d}",
    }
    return Pair("order", recorded, sandbox)


PAIRS = [order_pair(n) for n in range(3)] + [
    Pair("balance", {"balance": "50000.00"}, {"balance": 50000}),
    Pair("balance", {"balance": "120.50"}, {"balance": 120.5}),
    Pair(
        "order.webhook",
        {"url": HOOK, "status": "success", "attempts": 1},
        {"status": "delivered", "attempts": 1},
        {"delivery.url": REPLAY_HOOK, "delivery.attempts": 1},
    ),
    Pair(
        "order.webhook",
        {"url": HOOK, "status": "pending", "attempts": 0},
        {"status": "scheduled", "attempts": 0},
        {"delivery.url": REPLAY_HOOK, "delivery.attempts": 0},
    ),
]


def rules_of(pairs: list[Pair]) -> dict:
    return parse_text(render(infer(pairs), ["test"]), "shapes.yaml")


def test_each_consistent_difference_is_one_rule():
    shapes = rules_of(PAIRS)["shapes"]
    order = shapes["order"]
    assert order["add"]["item_id"] == {"copy": "item"}
    assert order["add"]["currency"] == {"const": "USD"}
    assert order["add"]["eta_seconds"] == {"int": [5, 7]}
    assert order["add"]["request_id"] == "uuid"
    assert order["drop"] == ["item", "source"]
    assert order["choice_fields"] == "id"
    assert shapes["balance"] == {"as": {"balance": "decimal_string"}}
    webhook = shapes["order.webhook"]
    assert webhook["add"]["url"] == {"copy": "delivery.url"}  # the recorder's receiver
    assert webhook["values"]["status"] == {"delivered": "success", "scheduled": "pending"}


def test_what_the_spec_defines_is_never_a_rule_and_ids_are_left_alone():
    shapes = rules_of(PAIRS)["shapes"]
    order = shapes["order"]
    for rules in order.values():
        if isinstance(rules, dict):
            assert not {"id", "price", "status", "codes"} & set(rules)


def test_the_file_written_reads_back_and_reshapes_the_sandbox_into_production():
    shapes = parse_shapes(rules_of(PAIRS), "shapes.yaml")
    for pair in PAIRS:
        facts = Facts(named=pair.facts, choices={"server": {"EU West": 2}}, rng=random.Random(1))
        shaped = shapes.shape(pair.kind, pair.sandbox, facts)
        assert set(shaped) == set(pair.recorded), pair.kind
        for name, value in pair.recorded.items():
            assert type(shaped[name]) is type(value), (pair.kind, name)
    balance = shapes.shape("balance", {"balance": 50000})
    assert balance == {"balance": "50000.00"}


def test_a_rule_one_answer_decides_is_warned_about():
    text = render(infer([Pair("token", {"expires_in": 7200, "a": 1}, {"b": 2})]), ["t"])
    assert "# warning: one answer decides this rule" in text


def test_a_difference_no_rule_expresses_is_a_comment_not_a_guess():
    pairs = [
        Pair("account", {"owner": {"name": "A"}, "tier": "gold"}, {"owner": {"n": "A"}, "tier": 3}),
        Pair("account", {"owner": {"name": "B"}, "tier": "gold"}, {"owner": {"n": "B"}, "tier": 4}),
    ]
    text = render(infer(pairs), ["t"])
    assert "not expressed: owner: its content differs" in text
    shapes = parse_text(text, "s.yaml")["shapes"]
    assert "owner" not in str(shapes.get("account", {}))


def test_a_field_null_on_one_side_is_timing_not_shape():
    pairs = [
        Pair(
            "order",
            {"completed_at": None, "id": "a"},
            {"completed_at": "2026-03-01T10:00:00Z", "id": "b"},
        )
    ]
    assert infer(pairs) == {}


def test_no_difference_writes_an_empty_shapes_file():
    same = [Pair("balance", {"balance": 1}, {"balance": 1})]
    text = render(infer(same), ["t"])
    assert parse_text(text, "s.yaml") == {"shapes": {}}


@pytest.mark.parametrize(
    ("recorded", "sandbox", "rule"),
    [
        (["12", "7"], [12, 7], "int_string"),
        (["12.500", "1.000"], [12.5, 1], {"decimal_string": 3}),
        ([12, 7], ["12", "7"], "number"),
    ],
)
def test_conversions(recorded, sandbox, rule):
    pairs = [Pair("balance", {"v": r}, {"v": s}) for r, s in zip(recorded, sandbox, strict=True)]
    assert rules_of(pairs)["shapes"]["balance"]["as"]["v"] == rule


def test_numbers_of_the_same_type_are_data_never_a_constant():
    """A balance read once is one value: still the account's, not production's shape."""
    pairs = [Pair("balance", {"balance": 1000.0}, {"balance": 1000000000.0})]
    assert infer(pairs) == {}
