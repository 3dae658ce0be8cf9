"""What one sandbox may hold (docs/hosting.md, "Quotas"): orders, the key units they
deliver (codes), scenarios loaded at run time, accounts, catalog items, injected
faults, scenario queue entries, unexpired access tokens, API keys, ledger adjustments,
manual webhook redeliveries and open streams (`/_mock/events`, `/_mock/listen`). On a
server many merchants share, a sandbox that grew without bound would take the memory
every other sandbox lives in. A call past a quota is refused with 429 `quota_exceeded`
(the token endpoint's own `{"error"}` shape there, spec 4.1), before anything is made,
charged or stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ApiError
from .tokens import TOKEN_LIFETIME

#: Each quota's flag and how to free room under it.
_WHAT = {
    "orders": ("orders", "--sandbox-max-orders", "POST /_mock/reset empties the sandbox"),
    "codes": (
        "key units in its orders (each one a code delivered)",
        "--sandbox-max-codes",
        "POST /_mock/reset empties the sandbox (PUT /_mock/accounts drops the orders too)",
    ),
    "scenarios": (
        "scenarios loaded at run time",
        "--sandbox-max-scenarios",
        "POST /_mock/reset drops the scenarios loaded at run time",
    ),
    "accounts": (
        "accounts",
        "--sandbox-max-accounts",
        "replace the accounts with fewer (PUT /_mock/accounts) or POST /_mock/reset",
    ),
    "catalog": (
        "catalog items",
        "--sandbox-max-catalog",
        "replace the catalog with fewer items (PUT /_mock/catalog)",
    ),
    "faults": (
        "injected faults pending",
        "--sandbox-max-faults",
        "DELETE /_mock/faults clears them (a fault with `times` goes once used up)",
    ),
    "queue": (
        "scenario queue entries",
        "--sandbox-max-queue",
        'queue with "replace": true (POST /_mock/scenarios/next) or POST /_mock/reset '
        "(an entry with a count goes once its orders are placed)",
    ),
    "tokens": (
        "unexpired access tokens",
        "--sandbox-max-tokens",
        f"a token expires {TOKEN_LIFETIME / 3600:g} hours of virtual time after it is issued "
        "(POST /_mock/clock/advance moves the clock); revoking its API key "
        "(DELETE /_mock/api-keys/{key}) or POST /_mock/reset drops tokens at once",
    ),
    "api_keys": (
        "API keys",
        "--sandbox-max-api-keys",
        "revoke keys you no longer use (DELETE /_mock/api-keys/{key}), replace the accounts "
        "(PUT /_mock/accounts) or POST /_mock/reset",
    ),
    "adjustments": (
        "ledger adjustments (balance changes through the control API)",
        "--sandbox-max-adjustments",
        "PUT /_mock/accounts (a fresh ledger) or POST /_mock/reset",
    ),
    "redeliveries": (
        "manual webhook attempts (POST /_mock/webhooks/{id}/redeliver)",
        "--sandbox-max-redeliveries",
        "PUT /_mock/accounts (the deliveries go with the accounts) or POST /_mock/reset",
    ),
    "streams": (
        "open streams (GET /_mock/events and GET /_mock/listen together)",
        "--sandbox-max-streams",
        "close a stream you no longer read: its place is free as soon as it ends",
    ),
}

#: A created sandbox's quotas when the server sets none (the default sandbox has none).
CREATED_DEFAULTS = {
    "orders": 100_000,
    "codes": 1_000_000,
    "scenarios": 100,
    "accounts": 100,
    "catalog": 10_000,
    "faults": 1000,
    "queue": 1000,
    "tokens": 10_000,
    "api_keys": 1000,
    "adjustments": 100_000,
    "redeliveries": 1000,
    "streams": 20,
}


@dataclass(frozen=True)
class Quotas:
    """A sandbox's quotas; None: no quota."""

    orders: int | None = None
    codes: int | None = None
    scenarios: int | None = None
    accounts: int | None = None
    catalog: int | None = None
    faults: int | None = None
    queue: int | None = None
    tokens: int | None = None
    api_keys: int | None = None
    adjustments: int | None = None
    redeliveries: int | None = None
    streams: int | None = None

    def check(self, quota: str, count: int) -> None:
        """Refuse, with 429 `quota_exceeded`, what would make the sandbox hold `count`."""
        refused = self.refusal(quota, count)
        if refused is not None:
            raise refused

    def refusal(self, quota: str, count: int) -> ApiError | None:
        """The 429 `quota_exceeded` that holding `count` would get, or None: for a caller
        that answers in its own shape (the token endpoint, spec 4.1)."""
        limit = getattr(self, quota)
        if limit is None or count <= limit:
            return None
        what, flag, free = _WHAT[quota]
        return ApiError(
            429,
            "quota_exceeded",
            f"This sandbox may hold at most {limit} {what} ({flag}); this call would "
            f"make {count}: {free}",
            cause=quota,
        )


NO_QUOTAS = Quotas()
