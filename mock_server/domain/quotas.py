"""What one sandbox may hold (docs/hosting.md, "Quotas"): orders, scenarios loaded at run
time, accounts and catalog items. On a server many merchants share, a sandbox that grew
without bound would take the memory every other sandbox lives in. A call past a quota is
refused with 429 `quota_exceeded`, before anything is made, charged or stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ApiError

#: Each quota's flag and how to free room under it.
_WHAT = {
    "orders": ("orders", "--sandbox-max-orders", "POST /_mock/reset empties the sandbox"),
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
}

#: A created sandbox's quotas when the server sets none (the default sandbox has none).
CREATED_DEFAULTS = {"orders": 100_000, "scenarios": 100, "accounts": 100, "catalog": 10_000}


@dataclass(frozen=True)
class Quotas:
    """A sandbox's quotas; None: no quota."""

    orders: int | None = None
    scenarios: int | None = None
    accounts: int | None = None
    catalog: int | None = None

    def check(self, quota: str, count: int) -> None:
        """Refuse, with 429 `quota_exceeded`, what would make the sandbox hold `count`."""
        limit = getattr(self, quota)
        if limit is not None and count > limit:
            what, flag, free = _WHAT[quota]
            raise ApiError(
                429,
                "quota_exceeded",
                f"This sandbox may hold at most {limit} {what} ({flag}); this call would "
                f"make {count}: {free}",
                cause=quota,
            )


NO_QUOTAS = Quotas()
