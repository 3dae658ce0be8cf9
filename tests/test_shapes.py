"""Shapes files, parsed and applied as plain data (docs/shapes.md). How a server applies
them to its answers and events is tested in tests/test_shapes_serving.py."""

from __future__ import annotations

import random

import pytest

from mock_server.domain.shapes import Facts, parse_shapes
from mock_server.sourcefile import ConfigError, parse_text


def shapes_of(text: str):
    return parse_shapes(parse_text(text, "shapes.yaml"), "shapes.yaml")


def refusal(text: str) -> str:
    with pytest.raises(ConfigError) as refused:
        shapes_of(text)
    return str(refused.value)


ORDER = {
    "id": "o-1",
    "item": 1001,
    "price": 48.0,
    "refund_amount": 0.0,
    "status": "completed",
    "codes": ["A"],
    "fields": {"server": "EU West", "login_email": "p@example.com"},
    "completed_at": "2026-03-01T10:00:03.000Z",
}


def test_rules_apply_in_the_order_add_values_as_drop():
    shapes = shapes_of(
        """
shapes:
  order:
    add:
      item_id: {copy: item}
      currency: {const: USD}
      eta_seconds: {int: [5, 5]}
    values: {currency: {USD: usd}}
    as: {eta_seconds: int_string}
    drop: [item]
"""
    )
    shaped = shapes.shape("order", ORDER)
    assert shaped["item_id"] == 1001 and "item" not in shaped
    assert shaped["currency"] == "usd" and shaped["eta_seconds"] == "5"
    assert ORDER["item"] == 1001  # the answer handed in is not changed


def test_a_balance_as_a_decimal_string_with_the_places_given():
    shapes = shapes_of("shapes: {balance: {as: {balance: {decimal_string: 2}}}}")
    assert shapes.shape("balance", {"balance": 50000})["balance"] == "50000.00"
    assert shapes.shape("balance", {"balance": 12.5})["balance"] == "12.50"
    plain = shapes_of("shapes: {balance: {as: {balance: decimal_string, n: number}}}")
    assert plain.shape("balance", {"balance": 1, "n": "42"}) == {"balance": "1.00", "n": 42}


def test_now_and_uuid_come_from_the_facts():
    shapes = shapes_of(
        """
shapes:
  event:
    add:
      sent_at: now
      sent_unix: {now: unix}
      day: {now: "%Y-%m-%d"}
      id: uuid
"""
    )
    facts = Facts(now=1772359200.0, rng=random.Random(3))
    shaped = shapes.shape("event", {"order_id": "o-1"}, facts)
    assert shaped["sent_at"] == "2026-03-01T10:00:00.000Z"
    assert shaped["sent_unix"] == 1772359200 and shaped["day"] == "2026-03-01"
    again = shapes.shape("event", {"order_id": "o-1"}, Facts(now=0, rng=random.Random(3)))
    assert again["id"] == shaped["id"]  # seeded


def test_copy_reads_named_facts_and_the_order():
    shapes = shapes_of(
        """
shapes:
  order.webhook:
    add:
      url: {copy: delivery.url}
      last_status_code: {copy: delivery.last_status_code}
      order_status: {copy: order.status}
    drop: [status]
"""
    )
    facts = Facts(
        named={"delivery.url": "https://hooks.example/x", "delivery.last_status_code": 500},
        order=ORDER,
    )
    shaped = shapes.shape("order.webhook", {"status": "retrying", "attempts": 1}, facts)
    assert shaped == {
        "attempts": 1,
        "url": "https://hooks.example/x",
        "last_status_code": 500,
        "order_status": "completed",
    }


def test_a_choice_field_echoed_as_its_id():
    shapes = shapes_of("shapes: {order: {choice_fields: id}}")
    facts = Facts(choices={"server": {"EU West": 2}})
    shaped = shapes.shape("order", ORDER, facts)
    assert shaped["fields"] == {"server": 2, "login_email": "p@example.com"}


def test_an_error_kind_and_one_per_code():
    shapes = shapes_of(
        """
shapes:
  error: {add: {request_id: {const: r-1}}}
  error.price_mismatch: {drop: [detail]}
"""
    )
    mismatch = shapes.shape("error", {"code": "price_mismatch", "detail": "x"})
    assert mismatch == {"code": "price_mismatch", "request_id": "r-1"}
    other = shapes.shape("error", {"code": "not_found", "detail": "x"})
    assert other == {"code": "not_found", "detail": "x", "request_id": "r-1"}


def test_no_rule_leaves_every_answer_as_it_is():
    shapes = shapes_of("shapes: {}")
    assert not shapes and shapes.shape("order", ORDER) == ORDER


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("shapes: {order: {drop: [status]}}", "shapes.yaml:1: order: drop 'status'"),
        ("shapes: {order: {as: {price: decimal_string}}}", "the sandbox decides it"),
        ("shapes: {order: {add: {codes: {const: []}}}}", "add 'codes'"),
        ("shapes: {event: {drop: [delivered_quantity]}}", "drop 'delivered_quantity'"),
        ("shapes: {error.not_found: {values: {code: {not_found: nf}}}}", "values 'code'"),
        ("shapes: {orders: {}}", "unknown kind 'orders'"),
        ("shapes: {order: {rename: {}}}", "unknown rule 'rename'"),
        ("shapes: {balance: {choice_fields: id}}", "unknown rule 'choice_fields'"),
        ("shapes: {order: {add: {x: {copy: delivery.url}}}}", "delivery.url is a fact of"),
        ("shapes: {order: {add: {x: {int: [5, 1]}}}}", "int is [LO, HI]"),
        ("shapes: {order: {as: {x: float}}}", "as is one of"),
        ("shapes: {order: {add: {x: {now: yesterday}}}}", "now takes"),
        ("shapes: {order: {choice_fields: name}}", "choice_fields is 'label' or 'id'"),
        ("shapez: {}", "unknown key 'shapez'"),
    ],
)
def test_a_rule_the_spec_forbids_or_that_is_wrong_is_refused_with_its_line(text, says):
    assert says in refusal(text)


def test_every_problem_is_listed_with_its_own_line():
    problems = refusal(
        """shapes:
  order:
    drop: [status]
  event:
    add:
      order_id: {const: x}
"""
    ).splitlines()
    assert problems[0].startswith("shapes.yaml:3: order: drop 'status'")
    assert problems[1].startswith("shapes.yaml:6: event: add 'order_id'")


def test_a_shapes_document_past_its_size_is_refused():
    from mock_server.domain.shapes import MAX_SHAPES_BYTES, parse_kinds

    huge = {"balance": {"add": {"note": {"const": "x" * MAX_SHAPES_BYTES}}}}
    with pytest.raises(ConfigError) as refused:
        parse_kinds(huge, "body")
    assert f"at most {MAX_SHAPES_BYTES} bytes" in str(refused.value)
