"""Settlement arithmetic: how a scripted terminal step becomes a spec-valid outcome.

Pure functions, no server: spec 2.1 (error, refund_amount, delivered_quantity) and
spec 3.2 rules 4-5 (docs/scenarios.md, "What is refused": at run time the spec wins).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import pytest

from mock_server.domain.settlement import DEFAULT_MESSAGES, Outcome, partial_target, settle

KEY_PRICE = 2400  # cents per unit, like item 1003
TOPUP_PRICE = 103  # cents per unit, like item 2001


def key_settle(requested: str, quantity: int = 3, **overrides: Any) -> Outcome:
    arguments: dict[str, Any] = {
        "requested": requested,
        "quantity": quantity,
        "product_type": "key",
        "unit_price": KEY_PRICE,
        "charged": quantity * KEY_PRICE,
        "target": None,
        "stock": None,
    }
    return settle(**(arguments | overrides))


def round_half_up(value: Decimal) -> int:
    return int(value.to_integral_value(rounding=ROUND_HALF_UP))


# -- completed ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("product_type", "quantity", "unit_price"),
    [
        ("key", 3, KEY_PRICE),
        ("topup", Decimal("10.5"), TOPUP_PRICE),
        ("topup", 7, TOPUP_PRICE),
        ("service", 1, 2499),
    ],
)
def test_completed_delivers_everything_with_no_refund_and_no_error(
    product_type: str, quantity: int | Decimal, unit_price: int
) -> None:
    charged = round_half_up(Decimal(quantity) * unit_price)
    outcome = settle(
        requested="completed",
        quantity=quantity,
        product_type=product_type,
        unit_price=unit_price,
        charged=charged,
        target=None,
        stock=None,
    )
    assert outcome == Outcome("completed", quantity, 0, "", "")


@pytest.mark.parametrize("stock", [3, 4, 100])
def test_completed_key_order_with_enough_stock_delivers_everything(stock: int) -> None:
    assert key_settle("completed", stock=stock) == Outcome("completed", 3, 0, "", "")


@pytest.mark.parametrize(
    ("quantity", "stock", "delivered"),
    [(3, 2, 2), (3, 1, 1), (10, 9, 9), (5, 2, 2)],
)
def test_key_stock_short_on_completed_settles_partial_with_empty_error(
    quantity: int, stock: int, delivered: int
) -> None:
    outcome = key_settle("completed", quantity, stock=stock)
    assert outcome.status == "partial"
    assert outcome.delivered == delivered
    assert outcome.refund == (quantity - delivered) * KEY_PRICE
    assert (outcome.error, outcome.error_message) == ("", "")


@pytest.mark.parametrize("requested", ["completed", "partial"])
def test_zero_key_stock_fails_out_of_stock_with_full_refund(requested: str) -> None:
    outcome = key_settle(requested, 3, stock=0, target=1)
    assert outcome.status == "failed"
    assert outcome.delivered == 0
    assert outcome.refund == 3 * KEY_PRICE
    assert outcome.error == "OUT_OF_STOCK"
    assert outcome.error_message == DEFAULT_MESSAGES["OUT_OF_STOCK"]


def test_stock_is_ignored_for_non_key_items() -> None:
    outcome = settle(
        requested="completed",
        quantity=10,
        product_type="topup",
        unit_price=TOPUP_PRICE,
        charged=10 * TOPUP_PRICE,
        target=None,
        stock=0,
    )
    assert outcome.status == "completed"


# -- failed -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "message", "expected_message"),
    [
        ("INVALID_FIELDS", "The provider rejected it.", "The provider rejected it."),
        ("INVALID_FIELDS", "", DEFAULT_MESSAGES["INVALID_FIELDS"]),
        ("OUT_OF_STOCK", "Gone.", "Gone."),
        ("SOMETHING_NEW", "", "Something new."),
    ],
)
def test_failed_delivers_nothing_refunds_everything_and_keeps_scripted_error(
    error: str, message: str, expected_message: str
) -> None:
    outcome = key_settle("failed", 3, error=error, error_message=message)
    assert outcome == Outcome("failed", 0, 3 * KEY_PRICE, error, expected_message)


def test_failed_without_a_scripted_error_still_has_an_error_code() -> None:
    outcome = key_settle("failed", 2)
    assert outcome.error == "OUT_OF_STOCK"  # spec 2.1: always populated when failed
    assert outcome.error_message != ""


def test_failed_keeps_scripted_error_even_when_stock_is_short() -> None:
    outcome = key_settle("failed", 3, stock=0, error="INVALID_FIELDS")
    assert (outcome.status, outcome.error) == ("failed", "INVALID_FIELDS")


@pytest.mark.parametrize(
    ("product_type", "quantity", "charged"),
    [("key", 4, 9600), ("topup", Decimal("12.34"), 1271), ("service", 1, 2499)],
)
def test_failed_refund_is_exactly_the_charge(
    product_type: str, quantity: int | Decimal, charged: int
) -> None:
    outcome = settle(
        requested="failed",
        quantity=quantity,
        product_type=product_type,
        unit_price=1,
        charged=charged,
        target=None,
        stock=None,
        error="ORDER_TIMEOUT",
    )
    assert (outcome.status, outcome.delivered, outcome.refund) == ("failed", 0, charged)


# -- partial ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quantity", "target", "refund"),
    [(3, 1, 2 * KEY_PRICE), (4, 2, 2 * KEY_PRICE), (10, 9, KEY_PRICE)],
)
def test_key_partial_refunds_undelivered_units_at_unit_price(
    quantity: int, target: int, refund: int
) -> None:
    outcome = key_settle("partial", quantity, target=target)
    assert (outcome.status, outcome.delivered, outcome.refund) == ("partial", target, refund)
    assert (outcome.error, outcome.error_message) == ("", "")


def test_timeout_partial_keeps_order_timeout_and_its_message() -> None:
    outcome = key_settle(
        "partial", 3, target=1, error="ORDER_TIMEOUT", error_message="Took too long."
    )
    assert outcome == Outcome("partial", 1, 2 * KEY_PRICE, "ORDER_TIMEOUT", "Took too long.")


def test_timeout_partial_without_message_gets_the_default_one() -> None:
    outcome = key_settle("partial", 3, target=1, error="ORDER_TIMEOUT")
    assert outcome.error_message == DEFAULT_MESSAGES["ORDER_TIMEOUT"]


def test_partial_short_of_stock_delivers_what_is_left() -> None:
    outcome = key_settle("partial", 5, target=3, stock=2)
    assert (outcome.status, outcome.delivered, outcome.refund) == ("partial", 2, 3 * KEY_PRICE)


@pytest.mark.parametrize(
    ("error", "expected_error"), [("", "OUT_OF_STOCK"), ("ORDER_TIMEOUT", "ORDER_TIMEOUT")]
)
def test_partial_for_quantity_one_becomes_failed_with_full_refund(
    error: str, expected_error: str
) -> None:
    target = partial_target(1, "key", units=None, percent=Decimal(50))
    assert target == 0
    outcome = key_settle("partial", 1, target=target, error=error)
    assert (outcome.status, outcome.delivered) == ("failed", 0)
    assert outcome.refund == KEY_PRICE
    assert outcome.error == expected_error


@pytest.mark.parametrize("target", [None, 0])
def test_partial_with_nothing_to_deliver_becomes_failed(target: int | None) -> None:
    outcome = key_settle("partial", 3, target=target)
    assert (outcome.status, outcome.delivered, outcome.refund) == ("failed", 0, 3 * KEY_PRICE)
    assert outcome.error == "OUT_OF_STOCK"


@pytest.mark.parametrize(
    ("units", "percent", "error", "expected_error"),
    [
        (None, Decimal(50), "", "OUT_OF_STOCK"),
        (Decimal(1), None, "ORDER_TIMEOUT", "ORDER_TIMEOUT"),
        (None, None, "", "OUT_OF_STOCK"),
    ],
)
def test_service_partial_becomes_failed_with_full_refund(
    units: Decimal | None, percent: Decimal | None, error: str, expected_error: str
) -> None:
    # Spec 3.2 rule 4: a service settles completed or failed, never partial.
    target = partial_target(1, "service", units=units, percent=percent)
    outcome = settle(
        requested="partial",
        quantity=1,
        product_type="service",
        unit_price=2499,
        charged=2499,
        target=target,
        stock=None,
        error=error,
    )
    assert (outcome.status, outcome.delivered, outcome.refund) == ("failed", 0, 2499)
    assert outcome.error == expected_error


@pytest.mark.parametrize(
    ("quantity", "unit_price", "delivered"),
    [
        (Decimal("10.5"), 103, Decimal("5.25")),
        (Decimal("5.5"), 103, Decimal("2.75")),
        (5, 101, Decimal("2.5")),  # 2.5 x 101 = 252.5 -> 253 charged for what was delivered
        (Decimal("7.77"), 1499, Decimal("3.33")),
    ],
)
def test_topup_partial_refunds_charge_minus_rounded_delivered_value(
    quantity: int | Decimal, unit_price: int, delivered: Decimal
) -> None:
    charged = round_half_up(Decimal(quantity) * unit_price)
    outcome = settle(
        requested="partial",
        quantity=quantity,
        product_type="topup",
        unit_price=unit_price,
        charged=charged,
        target=delivered,
        stock=None,
    )
    assert (outcome.status, outcome.delivered) == ("partial", delivered)
    assert outcome.refund == charged - round_half_up(delivered * unit_price)
    assert 0 < outcome.refund < charged


def test_topup_partial_of_half_a_cent_rounding_refunds_the_rounded_down_half() -> None:
    # charged 505 for 5 units at 101; 2.5 units delivered are worth 252.5 -> 253.
    outcome = settle(
        requested="partial",
        quantity=5,
        product_type="topup",
        unit_price=101,
        charged=505,
        target=Decimal("2.5"),
        stock=None,
    )
    assert outcome.refund == 252


def test_refund_plus_delivered_value_equals_the_charge_for_keys() -> None:
    outcome = key_settle("partial", 7, target=3)
    assert outcome.refund + 3 * KEY_PRICE == 7 * KEY_PRICE


# -- partial_target -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quantity", "percent", "expected"),
    [
        (3, 50, 1),  # half of 3 is 1
        (2, 50, 1),
        (4, 50, 2),
        (10, 50, 5),
        (3, 10, 1),  # a share of 2+ units delivers at least one
        (3, 99, 2),  # never the whole quantity
        (10, Decimal("33.3"), 3),
        (1, 50, 0),  # a single unit cannot be partial
    ],
)
def test_partial_target_percent_of_key_quantity(quantity: int, percent: Any, expected: int) -> None:
    target = partial_target(quantity, "key", units=None, percent=Decimal(percent))
    assert target == expected
    assert isinstance(target, int)


def test_partial_target_defaults_to_half() -> None:
    assert partial_target(4, "key", units=None, percent=None) == 2


@pytest.mark.parametrize(
    ("quantity", "units", "expected"),
    [
        (3, 1, 1),
        (3, 2, 2),
        (3, 3, 2),  # capped below the quantity
        (3, 50, 2),
        (1, 1, 0),  # nothing can be partial of a single unit
        (5, Decimal("2.9"), 2),  # whole units only for keys
    ],
)
def test_partial_target_units_are_capped_below_quantity(
    quantity: int, units: Any, expected: int
) -> None:
    assert partial_target(quantity, "key", units=Decimal(units), percent=None) == expected


def test_partial_target_units_below_one_key_deliver_nothing() -> None:
    assert partial_target(5, "key", units=Decimal("0.5"), percent=None) == 0


@pytest.mark.parametrize(
    ("quantity", "units", "percent", "expected"),
    [
        (Decimal("10.5"), None, 50, Decimal("5.25")),
        (Decimal("10.55"), None, 50, Decimal("5.27")),  # cents, rounded down
        (10, None, 50, 5),
        (Decimal("5.5"), Decimal("2.345"), None, Decimal("2.34")),
        (10, Decimal("20"), None, Decimal("9.99")),  # capped one cent below quantity
        (Decimal("0.01"), None, 50, 0),
    ],
)
def test_partial_target_for_topups_works_in_cents(
    quantity: Any, units: Any, percent: Any, expected: Any
) -> None:
    target = partial_target(
        quantity,
        "topup",
        units=units,
        percent=Decimal(percent) if percent is not None else None,
    )
    assert target == expected
    assert target < quantity


def test_partial_target_is_never_quantity_or_more() -> None:
    for quantity in range(1, 30):
        for percent in (1, 25, 50, 75, 99):
            target = partial_target(quantity, "key", units=None, percent=Decimal(percent))
            assert 0 <= target < quantity
