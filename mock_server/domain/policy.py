"""What a sandbox's operator allows it (docs/hosting.md): where its webhooks may go,
what it may hold, and which API keys it may not hold. One frozen value, fixed when the
sandbox is made; the control-plane operations of `domain/admin.py` take it whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import validation_error
from .accounts import default_accounts
from .destinations import DEFAULT_RULES, DestinationRules
from .quotas import NO_QUOTAS, Quotas
from .sandbox_ids import DEFAULT_ID

#: The default sandbox's documented API key (`ak_test_default`). The root token
#: endpoint gives it to the default sandbox, so no created sandbox may hold it
#: (docs/hosting.md, "What a tenant can see"): one that did would take it from there.
DEFAULT_KEYS = frozenset(key for spec in default_accounts() for key in spec.api_keys)


@dataclass(frozen=True)
class Policy:
    #: Where webhooks may go (`--webhook-allow`, `--webhook-deny-private`).
    rules: DestinationRules = DEFAULT_RULES
    #: What the sandbox may hold (`--sandbox-max-*`).
    quotas: Quotas = NO_QUOTAS
    #: API keys the sandbox may not hold: a created sandbox's are `DEFAULT_KEYS`.
    reserved_keys: frozenset[str] = frozenset()

    @classmethod
    def of(cls, sandbox_id: str, rules: DestinationRules, quotas: Quotas) -> Policy:
        """The policy of the sandbox `sandbox_id`: a created one may not hold the
        default sandbox's documented key."""
        return cls(rules, quotas, frozenset() if sandbox_id == DEFAULT_ID else DEFAULT_KEYS)

    def check_keys(self, keys: Iterable[str]) -> None:
        """400 `validation_error` when `keys` hold a key this sandbox may not hold."""
        refuse_reserved(keys, self.reserved_keys)


def refuse_reserved(keys: Iterable[str], reserved: frozenset[str] = DEFAULT_KEYS) -> None:
    """400 `validation_error` naming the first of `keys` that is `reserved`."""
    for key in keys:
        if key in reserved:
            raise validation_error(
                f"API key {key} is the default sandbox's documented key, which a created "
                "sandbox may not hold (the root token endpoint gives it to the default "
                "sandbox): choose another key, or leave the key out to get one generated"
            )
