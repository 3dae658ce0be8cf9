"""Merchant accounts: who can call, with what money, and where webhooks go (`--accounts`,
the README's "Files").

Balances are integer cents. Without an accounts file there is one default account.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from ..sourcefile import ConfigError, read_file, where
from .destinations import DEFAULT_RULES, DestinationRules, is_http_url, unsendable
from .money import cents_from_major

#: Ten trillion in major units: far beyond any test, still exact as a float.
MAX_BALANCE_CENTS = 10**15
DEFAULT_SIGNATURE_HEADERS = ("X-Webhook-Signature", "X-Signature")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
_KNOWN_KEYS = {
    "email",
    "api_key",
    "api_keys",
    "balance",
    "has_active_subscription",
    "webhook_url",
    "webhook_secret",
    "id",
    "signature_headers",
}


@dataclass(slots=True)
class Account:
    id: str
    email: str
    api_keys: list[str]
    balance: int  # cents
    has_active_subscription: bool = False
    webhook_url: str | None = None
    webhook_secret: str = ""
    signature_headers: tuple[str, ...] = DEFAULT_SIGNATURE_HEADERS
    opening_balance: int = field(default=0)

    def to_me(self) -> dict[str, Any]:
        """The merchant's view: `GET .../account/me`."""
        return {
            "id": self.id,
            "email": self.email,
            "has_active_subscription": self.has_active_subscription,
        }


@dataclass(frozen=True, slots=True)
class AccountSpec:
    """An account as configured (the startup state reset returns to)."""

    email: str
    api_keys: tuple[str, ...]
    balance: int
    has_active_subscription: bool = False
    webhook_url: str | None = None
    #: None: not configured; the sandbox gives it one (`State.account_from`).
    webhook_secret: str | None = None
    signature_headers: tuple[str, ...] = DEFAULT_SIGNATURE_HEADERS
    id: str | None = None

    def build(self, *, fallback_id: str, fallback_secret: Callable[[], str]) -> Account:
        """The account; `fallback_secret` is called only when no secret is configured."""
        return Account(
            id=self.id or fallback_id,
            email=self.email,
            api_keys=list(self.api_keys),
            balance=self.balance,
            has_active_subscription=self.has_active_subscription,
            webhook_url=self.webhook_url,
            webhook_secret=self.webhook_secret or fallback_secret(),
            signature_headers=self.signature_headers,
            opening_balance=self.balance,
        )


def default_accounts(webhook_url: str | None = None) -> tuple[AccountSpec, ...]:
    return (
        AccountSpec(
            email="merchant@example.com",
            api_keys=("ak_test_default",),
            balance=100_000,
            webhook_url=webhook_url,
            webhook_secret="whsec_test_default",
        ),
    )


def to_cents(value: Any) -> int:
    """Major units (number with at most 2 decimals) to integer cents, exactly."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise ValueError(f"must be a number, got {value!r}")
    try:
        amount = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
    except InvalidOperation as exc:
        raise ValueError(f"must be a number, got {value!r}") from exc
    if not amount.is_finite():
        raise ValueError("must be a finite number")
    cents = cents_from_major(amount)
    if cents is None:
        raise ValueError(f"has more than 2 decimals: {value}")
    return cents


def load_accounts(
    path: str | Path, rules: DestinationRules = DEFAULT_RULES
) -> tuple[AccountSpec, ...]:
    return parse_accounts(read_file(path), str(path), rules)


def parse_accounts(
    data: Any, source: str, rules: DestinationRules | None = DEFAULT_RULES
) -> tuple[AccountSpec, ...]:
    """Check an accounts document and return its specs, or raise `ConfigError`; a
    `webhook_url` whose host is an address `rules` refuse is refused here (None: a
    document accepted before, not checked again)."""
    if not isinstance(data, dict) or not isinstance(data.get("accounts"), list):
        raise ConfigError([f"{where(source, data)}: expected a mapping with an 'accounts' list"])
    problems: list[str] = []
    specs: list[AccountSpec] = []
    emails: set[str] = set()
    keys: set[str] = set()
    for record in data["accounts"]:
        try:
            spec = _parse_account(record, rules)
        except _AccountProblem as problem:
            problems.append(f"{where(source, record, problem.key)}: {problem}")
            continue
        if spec.email in emails:
            problems.append(f"{where(source, record, 'email')}: duplicate email {spec.email}")
        for key in spec.api_keys:
            if key in keys:
                problems.append(f"{where(source, record, 'api_key')}: duplicate api_key {key}")
            keys.add(key)
        emails.add(spec.email)
        specs.append(spec)
    if not specs and not problems:
        problems.append(f"{where(source, data, 'accounts')}: at least one account is needed")
    if problems:
        raise ConfigError(problems)
    return tuple(specs)


class _AccountProblem(Exception):
    def __init__(self, reason: str, key: str | None = None) -> None:
        super().__init__(reason)
        self.key = key


def _parse_account(record: Any, rules: DestinationRules | None) -> AccountSpec:
    if not isinstance(record, dict):
        raise _AccountProblem("an account is a mapping")
    unknown = sorted(set(record) - _KNOWN_KEYS)
    if unknown:
        raise _AccountProblem(f"unknown key {unknown[0]!r}", unknown[0])
    email = record.get("email")
    if not isinstance(email, str) or not _EMAIL.match(email):
        raise _AccountProblem(f"'email' must be an email address, got {email!r}", "email")
    raw_keys = record.get("api_keys", [record["api_key"]] if "api_key" in record else None)
    if not isinstance(raw_keys, list) or not raw_keys:
        raise _AccountProblem("'api_key' is required", "api_key")
    for key in raw_keys:
        if not isinstance(key, str) or not key.startswith("ak_") or len(key) < 4:
            raise _AccountProblem(f"an API key starts with 'ak_', got {key!r}", "api_key")
    try:
        balance = to_cents(record.get("balance", 0))
    except ValueError as exc:
        raise _AccountProblem(f"'balance' {exc}", "balance") from exc
    if not 0 <= balance <= MAX_BALANCE_CENTS:
        raise _AccountProblem(f"'balance' must be 0 to {MAX_BALANCE_CENTS // 100}", "balance")
    subscribed = record.get("has_active_subscription", False)
    if not isinstance(subscribed, bool):
        raise _AccountProblem(
            "'has_active_subscription' must be true or false", "has_active_subscription"
        )
    webhook_url = record.get("webhook_url")
    if webhook_url is not None and not (isinstance(webhook_url, str) and is_http_url(webhook_url)):
        raise _AccountProblem("'webhook_url' must be an http(s) URL", "webhook_url")
    # A URL no HTTP client sends to, then one whose literal address the rules refuse
    # (docs/webhooks.md, "Where a webhook may go").
    never = unsendable(webhook_url) if rules and webhook_url else None
    if never:
        raise _AccountProblem(f"'webhook_url' {never}", "webhook_url")
    refused = rules.literal_refusal(webhook_url) if rules and webhook_url else None
    if refused:
        raise _AccountProblem(f"'webhook_url' is refused: {refused}", "webhook_url")
    secret = record.get("webhook_secret")
    if secret is not None and (
        not isinstance(secret, str) or not secret.startswith("whsec_") or len(secret) < 7
    ):
        raise _AccountProblem(
            f"'webhook_secret' starts with 'whsec_', got {secret!r}", "webhook_secret"
        )
    account_id = record.get("id")
    if account_id is not None:
        try:
            account_id = str(uuid.UUID(str(account_id)))
        except ValueError as exc:
            raise _AccountProblem(f"'id' must be a UUID, got {account_id!r}", "id") from exc
    headers = record.get("signature_headers", list(DEFAULT_SIGNATURE_HEADERS))
    if not isinstance(headers, list) or not all(
        isinstance(h, str) and _HEADER_NAME.match(h) for h in headers
    ):
        raise _AccountProblem(
            "'signature_headers' must be a list of header names", "signature_headers"
        )
    return AccountSpec(
        email=email,
        api_keys=tuple(raw_keys),
        balance=balance,
        has_active_subscription=subscribed,
        webhook_url=webhook_url,
        webhook_secret=secret,
        signature_headers=tuple(headers),
        id=account_id,
    )
