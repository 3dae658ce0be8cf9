"""Everything that a reset throws away and rebuilds, in one place."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..clock import Clock
from .accounts import Account, AccountSpec
from .catalog import Catalog
from .deliveries import ByOrder
from .ledger import Ledger
from .plants import Plants
from .randomness import Randomness
from .sandbox_ids import DEFAULT_ID
from .tokens import Tokens

if TYPE_CHECKING:
    from .deliveries import Delivery
    from .orders import Order


@dataclass(eq=False)
class State:
    clock: Clock
    randomness: Randomness
    catalog: Catalog
    accounts: dict[str, Account] = field(default_factory=dict)
    account_by_key: dict[str, str] = field(default_factory=dict)
    orders: dict[str, Order] = field(default_factory=dict)
    #: account id -> merchant_order_id -> order id (per account: refs are unique per
    #: account, and a tuple key per order cost 56 bytes more).
    orders_by_merchant_ref: dict[str, dict[str, str]] = field(default_factory=dict)
    ledger: Ledger = field(default_factory=Ledger)
    tokens: Tokens = field(default_factory=Tokens)
    plants: Plants = field(default_factory=Plants)
    deliveries: dict[str, Delivery] = field(default_factory=dict)
    deliveries_by_order: ByOrder = field(default_factory=ByOrder)
    #: Manual attempts (`POST /_mock/webhooks/{id}/redeliver`) the deliveries hold: what
    #: the `redeliveries` quota counts (docs/hosting.md, "Quotas").
    manual_attempts: int = 0
    #: Units of the key orders held, each a code delivered or to be: what the `codes`
    #: quota counts (docs/hosting.md, "Quotas").
    key_units: int = 0

    @classmethod
    def build(
        cls,
        *,
        clock: Clock,
        seed: int,
        catalog: Catalog,
        accounts: tuple[AccountSpec, ...],
        sandbox_id: str = DEFAULT_ID,
        credential_key: bytes | None = None,
    ) -> State:
        """A fresh state: the catalog copied (its stock and prices change live)."""
        randomness = Randomness(seed, sandbox_id, credential_key)
        state = cls(clock=clock, randomness=randomness, catalog=catalog.copy())
        for spec in accounts:
            state.add_account(state.account_from(spec))
        return state

    def now(self, account_id: str | None = None) -> float:
        """Virtual time as seen by an account (one clock today; per-account later)."""
        return self.clock.now()

    def order_id_for_ref(self, account_id: str, merchant_order_id: str) -> str | None:
        return self.orders_by_merchant_ref.get(account_id, {}).get(merchant_order_id)

    def account_from(self, spec: AccountSpec) -> Account:
        """An account as `spec` configures it; what it leaves out (its id, its webhook
        secret) drawn from this state's random sequence."""
        return spec.build(
            fallback_id=self.randomness.uuid(),
            fallback_secret=self.randomness.fallback_webhook_secret,
        )

    def add_account(self, account: Account) -> None:
        self.accounts[account.id] = account
        for key in account.api_keys:
            self.account_by_key[key] = account.id
