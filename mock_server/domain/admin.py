"""Control-plane operations on accounts, API keys and the catalog (docs/control-api.md).

Plain functions over `State`: the `/_mock` handlers and the pytest plugin call the
same ones. Every change is checked whole before anything is applied.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import already_exists, not_found, validation_error
from ..sourcefile import ConfigError
from .accounts import MAX_BALANCE_CENTS, Account, AccountSpec, parse_accounts, to_cents
from .catalog import Catalog, CatalogReader, Item, parse_catalog
from .destinations import DestinationRules
from .ledger import Entry, Ledger
from .money import major
from .policy import Policy
from .state import State
from .tokens import Tokens

_PATCHABLE_ACCOUNT = {
    "balance",
    "has_active_subscription",
    "webhook_url",
    "webhook_secret",
    "signature_headers",
}
_PATCHABLE_ITEM = {"price", "in_stock", "stock"}


def account_view(account: Account) -> dict[str, Any]:
    return {
        "id": account.id,
        "email": account.email,
        "api_keys": list(account.api_keys),
        "balance": major(account.balance),
        "has_active_subscription": account.has_active_subscription,
        "webhook_url": account.webhook_url,
        "webhook_secret": account.webhook_secret,
        "signature_headers": list(account.signature_headers),
    }


def find_account(state: State, account_id: str) -> Account:
    account = state.accounts.get(account_id)
    if account is None:
        raise not_found(f"Account {account_id} not found")
    return account


_KEY_PLACEHOLDER = "ak_to_be_generated"
_SECRET_PLACEHOLDER = "whsec_to_be_generated"


def _spec_from_body(body: dict[str, Any], rules: DestinationRules) -> AccountSpec:
    """Check an account body with the accounts-file rules (placeholders stand in for a
    key and secret to be generated, so a refused body draws no random numbers)."""
    record = dict(body)
    if "api_key" not in record and "api_keys" not in record:
        record["api_key"] = _KEY_PLACEHOLDER
    record.setdefault("webhook_secret", _SECRET_PLACEHOLDER)
    try:
        (spec,) = parse_accounts({"accounts": [record]}, "request body", rules)
    except ConfigError as exc:
        raise validation_error("; ".join(exc.problems)) from exc
    return spec


def create_account(state: State, body: dict[str, Any], policy: Policy) -> Account:
    spec = _spec_from_body(body, policy.rules)
    new_key = "api_key" not in body and "api_keys" not in body
    if not new_key:
        policy.check_keys(spec.api_keys)
    policy.quotas.check("accounts", len(state.accounts) + 1)
    policy.quotas.check("api_keys", len(state.account_by_key) + len(spec.api_keys))
    if any(a.email == spec.email for a in state.accounts.values()):
        raise already_exists(f"An account with email {spec.email} exists")
    for key in () if new_key else spec.api_keys:
        if key in state.account_by_key:
            raise already_exists(f"API key {key} exists")
    if spec.id is not None and spec.id in state.accounts:
        raise already_exists(f"Account {spec.id} exists")
    # Generated only now, once nothing can refuse the account (determinism).
    if new_key:
        spec = replace(spec, api_keys=(state.randomness.api_key(),))
    if "webhook_secret" not in body:
        spec = replace(spec, webhook_secret=state.randomness.webhook_secret())
    account = state.account_from(spec)
    state.add_account(account)
    return account


def patch_account(state: State, account_id: str, body: dict[str, Any], policy: Policy) -> Account:
    account = find_account(state, account_id)
    unknown = sorted(set(body) - _PATCHABLE_ACCOUNT)
    if unknown:
        raise validation_error(
            f"{unknown[0]} cannot be changed; changeable: {', '.join(sorted(_PATCHABLE_ACCOUNT))}"
        )
    # Check every value with the accounts-file rules before changing anything.
    probe = {
        "email": account.email,
        "api_key": account.api_keys[0] if account.api_keys else "ak_probe",
        "webhook_secret": account.webhook_secret,
    }
    probe.update({k: v for k, v in body.items() if k != "balance"})
    if "balance" in body:
        try:
            balance = to_cents(body["balance"])
        except ValueError as exc:
            raise validation_error(f"balance {exc}") from exc
        if not 0 <= balance <= MAX_BALANCE_CENTS:
            raise validation_error(f"balance must be 0 to {MAX_BALANCE_CENTS // 100}")
    spec = _spec_from_body(probe, policy.rules)
    if "balance" in body:
        state.ledger.adjust(account, balance, state.now(account.id))
    if "has_active_subscription" in body:
        account.has_active_subscription = spec.has_active_subscription
    if "webhook_url" in body:
        account.webhook_url = spec.webhook_url
    if "webhook_secret" in body:
        account.webhook_secret = spec.webhook_secret
    if "signature_headers" in body:
        account.signature_headers = spec.signature_headers
    return account


def replace_accounts(state: State, data: Any, policy: Policy) -> list[Account]:
    """Every account replaced by those of an accounts document (an `--accounts` file, as JSON)."""
    try:
        specs = parse_accounts(data, "request body", policy.rules)
    except ConfigError as exc:
        raise validation_error("; ".join(exc.problems)) from exc
    policy.check_keys(key for spec in specs for key in spec.api_keys)
    policy.quotas.check("accounts", len(specs))
    policy.quotas.check("api_keys", sum(len(spec.api_keys) for spec in specs))
    _forget_account_activity(state)
    state.accounts.clear()
    state.account_by_key.clear()
    for spec in specs:
        state.add_account(state.account_from(spec))
    return list(state.accounts.values())


def _forget_account_activity(state: State) -> None:
    """What belonged to the replaced accounts goes with them: orders (and their pending
    steps), webhook deliveries, tokens and ledger entries. Stock and catalog stay."""
    for order in state.orders.values():
        if order.timer is not None:
            order.timer.cancel()
    state.orders.clear()
    state.orders_by_merchant_ref.clear()
    state.deliveries.clear()
    state.deliveries_by_order.clear()
    state.tokens = Tokens()
    state.ledger = Ledger()


def ledger_view(state: State, account_id: str, order_id: str | None = None) -> dict[str, Any]:
    """The account's entries (only one order's, with `order_id`), an iterator rendered
    as it is read; `conserved` is always over every entry."""
    account = find_account(state, account_id)
    entries = state.ledger.entries_as_read(account.id, order_id)
    return {
        "account_id": account.id,
        "opening_balance": major(account.opening_balance),
        "balance": major(account.balance),
        # Rendered as they are written (one order's found by index): docs/control-api.md.
        "entries": map(Entry.to_json, entries),
        "conserved": state.ledger.conserved(account),
    }


def issue_api_key(state: State, account_id: str) -> str:
    account = find_account(state, account_id)
    key = state.randomness.api_key()
    account.api_keys.append(key)
    state.account_by_key[key] = account.id
    return key


def revoke_api_key(state: State, key: str) -> None:
    """Forget a key: exchanging it fails, and tokens issued for it stop working (and no
    longer count against the tokens quota: they are dropped)."""
    account_id = state.account_by_key.pop(key, None)
    if account_id is None:
        raise not_found(f"API key {key} not found")
    state.accounts[account_id].api_keys.remove(key)
    state.tokens.revoke(key)


def replace_catalog(state: State, data: Any, policy: Policy) -> Catalog:
    reader = catalog_reader(data, policy)
    reader.read(len(reader.records))
    return adopt_catalog(state, reader)


def catalog_reader(data: Any, policy: Policy) -> CatalogReader:
    """`PUT /_mock/catalog`'s document, to be read (`CatalogReader.read`), or a refusal:
    not a catalog, or more items than the sandbox may hold (before any is read)."""
    try:
        reader = CatalogReader(data, "request body")
    except ConfigError as exc:
        raise validation_error("; ".join(exc.problems)) from exc
    policy.quotas.check("catalog", len(reader.records))
    return reader


def adopt_catalog(state: State, reader: CatalogReader) -> Catalog:
    """The catalog `reader` read, in place of the sandbox's; every problem a 400."""
    try:
        catalog = reader.catalog()
    except ConfigError as exc:
        raise validation_error("; ".join(exc.problems)) from exc
    state.catalog = catalog
    return catalog


def patch_item(state: State, item_id: int, body: dict[str, Any]) -> Item:
    item = state.catalog.get(item_id)
    if item is None:
        raise not_found(f"Item {item_id} not found")
    unknown = sorted(set(body) - _PATCHABLE_ITEM)
    if unknown:
        raise validation_error(
            f"{unknown[0]} cannot be changed; changeable: price, in_stock, stock"
        )
    record = item.to_feed() | body
    try:
        checked = parse_catalog([record], "request body").get(item_id)
    except ConfigError as exc:
        raise validation_error("; ".join(exc.problems)) from exc
    assert checked is not None
    item.price, item.in_stock, item.stock = checked.price, checked.in_stock, checked.stock
    return item
