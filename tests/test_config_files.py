"""The file loaders: catalog, accounts and scenarios (the README's "Files",
docs/scenarios.md).

Unit tests, no server. A refusal must name the file, the line of the offending key
(YAML) and the reason; `line_no` finds the expected line in the test's own text, so
the line numbers checked are exact.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mock_server.config import Settings, embedded_catalog, load_startup
from mock_server.domain.accounts import default_accounts, load_accounts
from mock_server.domain.catalog import load_catalog, parse_catalog
from mock_server.domain.scenarios import (
    builtin_scenarios,
    load_scenario_paths,
    parse_duration,
    parse_scenarios,
)
from mock_server.sourcefile import ConfigError, parse_text
from tests.conftest import BUILTIN_SCENARIOS


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def line_no(path: Path, needle: str, occurrence: int = 1) -> int:
    """1-based line of the `occurrence`-th line of `path` containing `needle`."""
    hits = [n for n, line in enumerate(path.read_text().splitlines(), start=1) if needle in line]
    assert len(hits) >= occurrence, f"{needle!r} not in {path}"
    return hits[occurrence - 1]


def problems_of(load: Any, *args: Any) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load(*args)
    assert caught.value.problems, "a ConfigError must list at least one problem"
    return caught.value.problems


def key_item(item_id: int = 1, **extra: Any) -> dict[str, Any]:
    return {"id": item_id, "name": f"Key {item_id}", "product_type": "key", "price": 100} | extra


def topup_item(item_id: int = 2, **extra: Any) -> dict[str, Any]:
    return {
        "id": item_id,
        "name": f"Gems {item_id}",
        "product_type": "topup",
        "price": 5,
        "fields": [
            {"name": "player_id", "type": "text"},
            {"name": "server", "type": "choice", "options": [{"id": 1, "name": "EU"}]},
        ],
    } | extra


# -- catalog ------------------------------------------------------------------------------


def test_catalog_loads_from_a_json_array(tmp_path):
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps([key_item(1), topup_item(2)]))
    catalog = load_catalog(path)
    assert len(catalog) == 2
    assert catalog.get(1).product_type == "key"
    assert catalog.get(2).product_type == "topup"


def test_catalog_loads_from_a_json_items_object(tmp_path):
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"items": [key_item(1), topup_item(2)]}))
    assert list(load_catalog(path).items) == [1, 2]


def test_catalog_loads_from_yaml_list_and_items_object(tmp_path):
    as_list = write(
        tmp_path,
        "list.yaml",
        """
        - id: 1
          name: Steam card
          product_type: key
          price: 2000
        """,
    )
    as_object = write(
        tmp_path,
        "object.yml",
        """
        items:
          - id: 1
            name: Steam card
            product_type: key
            price: 2000
        """,
    )
    for path in (as_list, as_object):
        item = load_catalog(path).get(1)
        assert (item.name, item.product_type, item.price) == ("Steam card", "key", 2000)


def test_catalog_applies_defaults_for_optional_prices_and_quantities():
    item = parse_catalog([key_item(1)], "c.json").get(1)
    assert item.base_price == item.price == item.subscriber_price == 100
    assert item.min_quantity == 1
    assert item.in_stock is True
    assert item.stock is None
    assert item.client_code is False
    assert item.available


def test_catalog_option_labels_come_from_name_or_label():
    item = topup_item(
        2,
        fields=[
            {
                "name": "server",
                "type": "choice",
                "options": [{"id": 1, "name": "Europe"}, {"id": 2, "label": "Asia"}],
            }
        ],
    )
    field = parse_catalog([item], "c.json").get(2).fields[0]
    assert field.label_of(1) == "Europe"
    assert field.label_of(2) == "Asia"
    assert field.label_of(3) is None


def test_catalog_ignores_but_keeps_unknown_keys_through_to_feed():
    record = key_item(1, region_lock="EU", tags=["new", "promo"])
    catalog = parse_catalog([record], "c.json")
    item = catalog.get(1)
    assert item.extra == {"region_lock": "EU", "tags": ["new", "promo"]}
    feed = catalog.to_feed()
    assert feed[0]["region_lock"] == "EU"
    assert feed[0]["tags"] == ["new", "promo"]
    assert parse_catalog(feed, "again.json").to_feed() == feed


def test_embedded_catalog_round_trips_through_to_feed():
    catalog = embedded_catalog()
    assert len(catalog) == 7
    feed = catalog.to_feed()
    assert parse_catalog(feed, "again.json").to_feed() == feed
    assert parse_catalog({"items": feed}, "again.json").to_feed() == feed


def test_catalog_reads_stock_and_client_code():
    catalog = parse_catalog(
        [key_item(1, stock=3), key_item(2, stock=0), topup_item(3, client_code=True)], "c.json"
    )
    assert catalog.get(1).stock == 3
    assert catalog.get(1).available
    assert catalog.get(2).stock == 0
    assert not catalog.get(2).available
    assert catalog.get(3).client_code is True
    feed = {record["id"]: record for record in catalog.to_feed()}
    assert feed[1]["stock"] == 3
    assert feed[3]["client_code"] is True
    assert "client_code" not in feed[1]


def test_catalog_decimal_topup_quantities_are_allowed():
    item = parse_catalog([topup_item(2, min_quantity=0.5, max_quantity=2.5)], "c.json").get(2)
    assert float(item.min_quantity) == 0.5
    assert float(item.max_quantity) == 2.5


# Each mistake: the YAML item (as item 2 of a file), the key whose line must be named
# (a needle found on that line), and a word the reason must contain.
CATALOG_MISTAKES = {
    "missing_id": (
        """
        - name: No id here
          product_type: key
          price: 100
        """,
        "name: No id here",
        "id",
    ),
    "bad_product_type": (
        """
        - id: 2
          name: Gadget
          product_type: gadget
          price: 100
        """,
        "product_type: gadget",
        "product_type",
    ),
    "price_not_integer": (
        """
        - id: 2
          name: Decimal price
          product_type: key
          price: 19.99
        """,
        "price: 19.99",
        "price",
    ),
    "min_above_max": (
        """
        - id: 2
          name: Backwards
          product_type: key
          price: 100
          min_quantity: 5
          max_quantity: 2
        """,
        "min_quantity: 5",
        "min_quantity",
    ),
    "choice_without_options": (
        """
        - id: 2
          name: No options
          product_type: topup
          price: 5
          fields:
            - name: server
              type: choice
        """,
        "fields:",
        "options",
    ),
    "option_id_not_integer": (
        """
        - id: 2
          name: Text option id
          product_type: topup
          price: 5
          fields:
            - name: server
              type: choice
              options:
                - id: eu
                  name: Europe
        """,
        "fields:",
        "id",
    ),
    "duplicate_id": (
        """
        - id: 1
          name: Same id again
          product_type: key
          price: 100
        """,
        "id: 1",
        "duplicate",
    ),
    "stock_on_topup": (
        """
        - id: 2
          name: Counted gems
          product_type: topup
          price: 5
          stock: 10
        """,
        "stock: 10",
        "stock",
    ),
    "client_code_on_key": (
        """
        - id: 2
          name: Login key
          product_type: key
          price: 100
          client_code: true
        """,
        "client_code: true",
        "client_code",
    ),
}

GOOD_FIRST_ITEM = """
- id: 1
  name: Fine key
  product_type: key
  price: 100
"""


@pytest.mark.parametrize("mistake", CATALOG_MISTAKES)
def test_catalog_mistake_names_yaml_file_line_and_item(tmp_path, mistake):
    second_item, needle, word = CATALOG_MISTAKES[mistake]
    text = GOOD_FIRST_ITEM.lstrip("\n") + textwrap.dedent(second_item).lstrip("\n")
    path = tmp_path / "catalog.yaml"
    path.write_text(text)
    expected_line = line_no(path, needle, occurrence=2 if mistake == "duplicate_id" else 1)
    problems = problems_of(load_catalog, path)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{path}:{expected_line}: item 2: "), problems
    assert word in problems[0].split(": item 2: ", 1)[1]


@pytest.mark.parametrize("mistake", CATALOG_MISTAKES)
def test_catalog_mistake_in_json_names_file_and_item(tmp_path, mistake):
    second_item, _, word = CATALOG_MISTAKES[mistake]
    records = parse_text(GOOD_FIRST_ITEM + textwrap.dedent(second_item), "x.yaml")
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(records, indent=2))
    problems = problems_of(load_catalog, path)
    assert len(problems) == 1, problems
    # JSON is parsed without line numbers: the item number locates the mistake.
    assert re.match(rf"{re.escape(str(path))}(:\d+)?: item 2: ", problems[0]), problems
    assert word in problems[0].split(": item 2: ", 1)[1]


def test_catalog_reports_every_bad_item_at_once(tmp_path):
    path = write(
        tmp_path,
        "catalog.yaml",
        """
        - id: 1
          name: Fine
          product_type: key
          price: 100
        - id: 2
          name: Bad type
          product_type: gadget
          price: 100
        - id: 3
          name: Bad price
          product_type: key
          price: cheap
        - id: 1
          name: Duplicate
          product_type: key
          price: 100
        """,
    )
    problems = problems_of(load_catalog, path)
    assert len(problems) == 3, problems
    assert problems[0].startswith(f"{path}:{line_no(path, 'product_type: gadget')}: item 2: ")
    assert problems[1].startswith(f"{path}:{line_no(path, 'price: cheap')}: item 3: ")
    assert problems[2].startswith(f"{path}:{line_no(path, 'id: 1', 2)}: item 4: duplicate id")


def test_catalog_of_the_wrong_shape_is_refused(tmp_path):
    path = write(tmp_path, "catalog.yaml", "catalog: nope\n")
    problems = problems_of(load_catalog, path)
    assert problems[0].startswith(f"{path}:1: ")


def test_catalog_with_broken_yaml_names_the_line(tmp_path):
    path = write(
        tmp_path,
        "catalog.yaml",
        """
        - id: 1
          name: [unclosed
          product_type: key
        """,
    )
    problems = problems_of(load_catalog, path)
    assert problems[0].startswith(f"{path}:")
    assert "invalid YAML" in problems[0]


def test_catalog_with_broken_json_names_the_line(tmp_path):
    path = tmp_path / "catalog.json"
    path.write_text('[\n  {"id": 1,\n   "name": }\n]\n')
    problems = problems_of(load_catalog, path)
    assert problems[0].startswith(f"{path}:3: invalid JSON")


# -- accounts -----------------------------------------------------------------------------

DESIGN_ACCOUNTS = """
accounts:
  - email: shop@example.com
    api_key: ak_shop_1          # prefix ak_ required
    balance: 250.00             # major units
    has_active_subscription: false
    webhook_url: http://127.0.0.1:9000/hooks   # optional
    webhook_secret: whsec_shop_1               # prefix whsec_ required
    id: 7d0c2d4e-5b1a-4f0e-9a51-2c3b4d5e6f70  # optional; else derived from the seed
    signature_headers: [X-Webhook-Signature, X-Signature]   # optional; the default
  - email: second@example.com
    api_key: ak_second
    balance: 12.5
    has_active_subscription: true
"""


def test_accounts_file_from_design_loads_with_balance_in_cents(tmp_path):
    path = write(tmp_path, "accounts.yaml", DESIGN_ACCOUNTS)
    shop, second = load_accounts(path)
    assert shop.email == "shop@example.com"
    assert shop.api_keys == ("ak_shop_1",)
    assert shop.balance == 25000
    assert shop.has_active_subscription is False
    assert shop.webhook_url == "http://127.0.0.1:9000/hooks"
    assert shop.webhook_secret == "whsec_shop_1"
    assert shop.id == "7d0c2d4e-5b1a-4f0e-9a51-2c3b4d5e6f70"
    assert shop.signature_headers == ("X-Webhook-Signature", "X-Signature")
    assert second.balance == 1250
    assert second.has_active_subscription is True
    assert second.id is None
    assert second.webhook_url is None


def test_accounts_file_replaces_the_default_account(tmp_path):
    path = write(tmp_path, "accounts.yaml", DESIGN_ACCOUNTS)
    startup = load_startup(Settings(accounts=str(path), seed=1))
    assert [spec.email for spec in startup.accounts] == ["shop@example.com", "second@example.com"]


GOOD_ACCOUNT_HEAD = """\
accounts:
  - email: good@example.com
    api_key: ak_good
    balance: 10
"""


def account_file(tmp_path: Path, body: str) -> Path:
    """An accounts file whose first account is good and whose second is `body`."""
    second = textwrap.indent(textwrap.dedent(body).lstrip("\n"), " " * 2)
    return write(tmp_path, "accounts.yaml", GOOD_ACCOUNT_HEAD + second)


ACCOUNT_MISTAKES = {
    "api_key_prefix": (
        """
        - email: bad@example.com
          api_key: sk_live_123
        """,
        "api_key: sk_live_123",
        "ak_",
    ),
    "webhook_secret_prefix": (
        """
        - email: bad@example.com
          api_key: ak_bad
          webhook_secret: secret_123
        """,
        "webhook_secret: secret_123",
        "whsec_",
    ),
    "unknown_key": (
        """
        - email: bad@example.com
          api_key: ak_bad
          ballance: 10
        """,
        "ballance: 10",
        "ballance",
    ),
    "duplicate_email": (
        """
        - email: good@example.com
          api_key: ak_other
        """,
        "email: good@example.com",
        "duplicate",
    ),
    "bad_id": (
        """
        - email: bad@example.com
          api_key: ak_bad
          id: not-a-uuid
        """,
        "id: not-a-uuid",
        "UUID",
    ),
    "balance_with_three_decimals": (
        """
        - email: bad@example.com
          api_key: ak_bad
          balance: 1.005
        """,
        "balance: 1.005",
        "balance",
    ),
    "negative_balance": (
        """
        - email: bad@example.com
          api_key: ak_bad
          balance: -1
        """,
        "balance: -1",
        "balance",
    ),
    "duplicate_api_key": (
        """
        - email: other@example.com
          api_key: ak_good
        """,
        "api_key: ak_good",
        "duplicate",
    ),
}


@pytest.mark.parametrize("mistake", ACCOUNT_MISTAKES)
def test_accounts_mistake_names_file_line_and_reason(tmp_path, mistake):
    body, needle, word = ACCOUNT_MISTAKES[mistake]
    path = account_file(tmp_path, body)
    occurrence = 2 if mistake in ("duplicate_email", "duplicate_api_key") else 1
    problems = problems_of(load_accounts, path)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{path}:{line_no(path, needle, occurrence)}: "), problems
    assert word in problems[0]


def test_accounts_file_without_accounts_list_is_refused(tmp_path):
    path = write(tmp_path, "accounts.yaml", "users:\n  - email: a@example.com\n")
    problems = problems_of(load_accounts, path)
    assert problems[0].startswith(f"{path}:1: ")


def test_no_accounts_file_gives_the_default_account():
    startup = load_startup(Settings(seed=1))
    (account,) = startup.accounts
    assert account.email == "merchant@example.com"
    assert account.api_keys == ("ak_test_default",)
    assert account.webhook_secret == "whsec_test_default"
    assert account.balance == 100_000
    assert account.has_active_subscription is False
    assert account.webhook_url is None


def test_webhook_url_setting_goes_to_the_default_account():
    (account,) = load_startup(Settings(seed=1, webhook_url="http://127.0.0.1:9/h")).accounts
    assert account.webhook_url == "http://127.0.0.1:9/h"
    assert default_accounts("http://x/h")[0].webhook_url == "http://x/h"


# -- scenarios: durations -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("500ms", 0.5),
        ("2s", 2.0),
        ("5m", 300.0),
        ("1h", 3600.0),
        ("1.5s", 1.5),
        ("7", 7.0),
        (7, 7.0),
        (0.25, 0.25),
        (0, 0.0),
    ],
)
def test_durations_parse_to_seconds(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["soon", "-1", -1, "2 days", "1d", True, None, ""])
def test_bad_durations_are_refused(text):
    with pytest.raises(ValueError):
        parse_duration(text)


def test_step_after_accepts_every_duration_form():
    data = parse_text(
        textwrap.dedent(
            """
            name: timings
            steps:
              - after: 500ms
                status: processing
              - after: 2s
                status: processing
              - after: 5m
                status: processing
              - after: 1h
                status: processing
              - after: 3
                status: completed
            """
        ),
        "t.yaml",
    )
    (scenario,) = parse_scenarios(data, "t.yaml")
    assert [step.after for step in scenario.steps] == [0.5, 2.0, 300.0, 3600.0, 3.0]


def test_scenario_document_forms_all_load():
    one = {"name": "one", "steps": [{"status": "completed"}]}
    assert [s.name for s in parse_scenarios(one, "a.yaml")] == ["one"]
    assert [s.name for s in parse_scenarios([one], "a.yaml")] == ["one"]
    assert [s.name for s in parse_scenarios({"scenarios": [one]}, "a.yaml")] == ["one"]


def test_scenario_with_match_pricing_and_webhook_chaos_loads(tmp_path):
    path = write(
        tmp_path,
        "rich.yaml",
        """
        scenarios:
          - name: rich
            description: Everything at once.
            match:
              merchant_order_id: "^rich-"
              product_type: topup
              quantity_min: 2
            pricing:
              delta_percent: 5
            steps:
              - after: 1s
                status: processing
              - after: 1s
                status: need_client_code
                expect_code: "1234"
              - status: processing
              - after: 30s
                status: partial
                deliver: 50%
                error: ORDER_TIMEOUT
                error_message: The provider timed out.
                webhook:
                  duplicate: 2
                  delay: 500ms
        """,
    )
    (scenario,) = load_scenario_paths([str(path)])
    assert scenario.match.holds(
        merchant_order_id="rich-1", item_id=1, product_type="topup", quantity=2
    )
    assert not scenario.match.holds(
        merchant_order_id="rich-1", item_id=1, product_type="topup", quantity=1
    )
    assert scenario.pricing.apply(1000) == 1050
    assert scenario.steps[1].expect_code == "1234"
    assert scenario.steps[-1].webhook.duplicate == 2
    assert scenario.steps[-1].webhook.delay == 0.5


# -- scenarios: refusals ------------------------------------------------------------------

# Each refusal: the steps (or extra scenario keys) of scenario `bad`, the needle on the
# line that must be named, and a word the reason must contain.
SCENARIO_REFUSALS = {
    "back_to_pending": (
        """
        steps:
          - after: 1s
            status: processing
          - status: pending
          - status: completed
        """,
        "status: pending",
        "pending",
    ),
    "step_after_terminal": (
        """
        steps:
          - status: completed
          - after: 1s
            status: processing
        """,
        "status: processing",
        "terminal",
    ),
    "two_terminal_statuses": (
        """
        steps:
          - status: processing
          - status: partial
            deliver: 1
          - status: completed
        """,
        "status: completed",
        "terminal",
    ),
    "need_client_code_then_delayed_processing": (
        """
        steps:
          - status: need_client_code
          - after: 5s
            status: processing
          - status: completed
        """,
        "after: 5s",
        "code",
    ),
    "need_client_code_last": (
        """
        steps:
          - status: processing
          - status: need_client_code
        """,
        "status: need_client_code",
        "need_client_code",
    ),
    "last_step_not_terminal": (
        """
        steps:
          - status: processing
          - after: 2s
            status: processing  # the last step
        """,
        "# the last step",
        "terminal",
    ),
    "unknown_status": (
        """
        steps:
          - status: shipped
        """,
        "status: shipped",
        "shipped",
    ),
    "unknown_step_key": (
        """
        steps:
          - status: processing
            wait: 2s
          - status: completed
        """,
        "wait: 2s",
        "wait",
    ),
    "lowercase_error_code": (
        """
        steps:
          - status: failed
            error: out_of_stock
        """,
        "error: out_of_stock",
        "out_of_stock",
    ),
    "failed_without_error": (
        """
        steps:
          - status: processing
          - status: failed
        """,
        "status: failed",
        "error",
    ),
    "bad_duration": (
        """
        steps:
          - after: soon
            status: completed
        """,
        "after: soon",
        "soon",
    ),
    "invalid_regex": (
        """
        match:
          merchant_order_id: "^(unclosed"
        steps:
          - status: completed
        """,
        "merchant_order_id:",
        "regex",
    ),
    "deliver_units_on_completed": (
        """
        steps:
          - status: completed
            deliver: 1
        """,
        "deliver: 1",
        "all",
    ),
    "deliver_half_on_completed": (
        """
        steps:
          - status: completed
            deliver: 50%
        """,
        "deliver: 50%",
        "partial",
    ),
    "deliver_all_on_failed": (
        """
        steps:
          - status: failed
            error: OUT_OF_STOCK
            deliver: all
        """,
        "deliver: all",
        "0%",
    ),
    "deliver_units_on_failed": (
        """
        steps:
          - status: failed
            error: OUT_OF_STOCK
            deliver: 2
        """,
        "deliver: 2",
        "0%",
    ),
    "deliver_on_processing": (
        """
        steps:
          - status: processing
            deliver: all
          - status: completed
        """,
        "deliver: all",
        "terminal",
    ),
    "expect_code_off_need_client_code": (
        """
        steps:
          - status: processing
            expect_code: "1234"
          - status: completed
        """,
        "expect_code:",
        "expect_code",
    ),
    "unknown_scenario_key": (
        """
        retries: 3
        steps:
          - status: completed
        """,
        "retries: 3",
        "retries",
    ),
    "error_on_completed": (
        """
        steps:
          - status: completed
            error: ORDER_TIMEOUT
        """,
        "error: ORDER_TIMEOUT",
        "error",
    ),
}


GOOD_SCENARIO_HEAD = """\
scenarios:
  - name: good
    steps:
      - after: 1s
        status: processing
      - status: completed
  - name: bad
"""


def scenario_file(tmp_path: Path, body: str) -> Path:
    """A file with a good scenario first, then scenario `bad` with `body` as its keys."""
    keys = textwrap.indent(textwrap.dedent(body).lstrip("\n"), " " * 4)
    return write(tmp_path, "scenarios.yaml", GOOD_SCENARIO_HEAD + keys)


@pytest.mark.parametrize("refusal", SCENARIO_REFUSALS)
def test_scenario_refusal_names_file_line_and_reason(tmp_path, refusal):
    body, needle, word = SCENARIO_REFUSALS[refusal]
    path = scenario_file(tmp_path, body)
    # the good scenario comes first: the needle's first line after "name: bad"
    bad_start = line_no(path, "name: bad")
    lines = path.read_text().splitlines()
    expected = next(n for n in range(bad_start, len(lines) + 1) if needle in lines[n - 1])
    problems = problems_of(load_scenario_paths, [str(path)])
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{path}:{expected}: "), problems
    assert word in problems[0].split(": ", 1)[1]


def test_scenario_pricing_with_two_keys_is_refused_at_the_pricing_block(tmp_path):
    path = scenario_file(
        tmp_path,
        """
        pricing:
          delta_percent: 5
          unit_price: 100
        steps:
          - status: completed
        """,
    )
    problems = problems_of(load_scenario_paths, [str(path)])
    assert len(problems) == 1, problems
    pricing_lines = {
        line_no(path, "pricing:"),
        line_no(path, "delta_percent: 5"),
        line_no(path, "unit_price: 100"),
    }
    assert any(problems[0].startswith(f"{path}:{n}: ") for n in pricing_lines), problems
    assert "pricing" in problems[0] or "delta_percent" in problems[0]


def test_scenario_file_reports_every_bad_scenario_at_once(tmp_path):
    path = write(
        tmp_path,
        "scenarios.yaml",
        """
        scenarios:
          - name: first_bad
            steps:
              - status: shipped
          - name: fine
            steps:
              - status: completed
          - name: second_bad
            steps:
              - status: processing
        """,
    )
    problems = problems_of(load_scenario_paths, [str(path)])
    assert len(problems) == 2, problems
    assert problems[0].startswith(f"{path}:{line_no(path, 'status: shipped')}: ")
    assert problems[1].startswith(f"{path}:{line_no(path, 'status: processing')}: ")


def test_duplicate_scenario_name_in_one_file_is_refused(tmp_path):
    path = write(
        tmp_path,
        "scenarios.yaml",
        """
        - name: twice
          steps:
            - status: completed
        - name: twice
          steps:
            - status: completed
        """,
    )
    problems = problems_of(load_scenario_paths, [str(path)])
    assert problems[0].startswith(f"{path}:{line_no(path, 'name: twice', 2)}: ")
    assert "twice" in problems[0]


def test_scenario_folder_loads_every_yaml_yml_and_json_file_in_name_order(tmp_path):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    write(folder, "b.yml", "name: from_yml\nsteps:\n  - status: completed\n")
    write(
        folder, "a.yaml", "scenarios:\n  - name: from_yaml\n    steps:\n      - status: completed\n"
    )
    (folder / "c.json").write_text(
        json.dumps({"scenarios": [{"name": "from_json", "steps": [{"status": "completed"}]}]})
    )
    (folder / "notes.txt").write_text("not a scenario: [")
    names = [s.name for s in load_scenario_paths([str(folder)])]
    assert names == ["from_yaml", "from_yml", "from_json"]


def test_scenario_folder_problems_name_the_file_inside_it(tmp_path):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    write(folder, "good.yaml", "name: fine\nsteps:\n  - status: completed\n")
    bad = write(folder, "bad.yaml", "name: broken\nsteps:\n  - status: pending\n")
    problems = problems_of(load_scenario_paths, [str(folder)])
    assert problems == [problems[0]]
    assert problems[0].startswith(f"{bad}:3: ")


def test_builtin_scenarios_are_the_ten_of_the_design():
    scenarios = builtin_scenarios()
    names = [s.name for s in scenarios]
    assert set(names) == set(BUILTIN_SCENARIOS)
    assert len(names) == len(set(BUILTIN_SCENARIOS))


def test_builtin_happy_path_processes_after_1s_and_completes():
    happy = next(s for s in builtin_scenarios() if s.name == "happy_path")
    assert [step.status for step in happy.steps] == ["processing", "completed"]
    assert happy.steps[0].after == 1.0
    assert happy.match is None


def test_startup_merges_extra_scenarios_into_the_builtin_set(tmp_path):
    path = write(tmp_path, "extra.yaml", "name: my_own\nsteps:\n  - status: completed\n")
    startup = load_startup(Settings(seed=1, scenarios=(str(path),)))
    names = [s.name for s in startup.scenarios]
    assert set(names) == set(BUILTIN_SCENARIOS) | {"my_own"}
