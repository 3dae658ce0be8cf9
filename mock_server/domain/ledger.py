"""Every balance movement, so money can be shown to be conserved.

The only way balances change: `charge` (order creation), `refund` (settlement) and
`adjust` (the control API). Each call moves the account's balance and records an entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..clock import iso
from .accounts import Account
from .money import major


@dataclass(frozen=True, slots=True)
class Entry:
    kind: str  # charge | refund | adjustment
    amount: int  # signed cents, as applied to the balance
    balance_after: int
    order_id: str | None
    at: float

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "amount": major(self.amount),
            "balance_after": major(self.balance_after),
            "order_id": self.order_id,
            "at": iso(self.at),
        }


class Ledger:
    def __init__(self) -> None:
        self._entries: dict[str, list[Entry]] = {}

    def charge(self, account: Account, cents: int, order_id: str, at: float) -> None:
        self._move(account, "charge", -cents, order_id, at)

    def refund(self, account: Account, cents: int, order_id: str, at: float) -> None:
        if cents:
            self._move(account, "refund", cents, order_id, at)

    def adjust(self, account: Account, new_balance: int, at: float) -> None:
        self._move(account, "adjustment", new_balance - account.balance, None, at)

    def entries(self, account_id: str) -> list[Entry]:
        return list(self._entries.get(account_id, ()))

    def conserved(self, account: Account) -> bool:
        """opening balance + adjustments - charges + refunds == balance."""
        moved = sum(entry.amount for entry in self._entries.get(account.id, ()))
        return account.opening_balance + moved == account.balance

    def _move(
        self, account: Account, kind: str, amount: int, order_id: str | None, at: float
    ) -> None:
        account.balance += amount
        entry = Entry(kind, amount, account.balance, order_id, at)
        self._entries.setdefault(account.id, []).append(entry)
