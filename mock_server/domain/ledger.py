"""Every balance movement, so money can be shown to be conserved.

The only way balances change: `charge` (order creation), `refund` (settlement) and
`adjust` (the control API). Each call moves the account's balance and records an entry.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

from ..clock import iso
from .accounts import Account
from .money import major

KINDS = ("charge", "refund", "adjustment")


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


class _Book:
    """One account's entries as columns: cents as machine integers (balances are at
    most 10^15 cents), order ids and times shared with the orders. An `Entry` with its
    two ints cost 136 bytes an order; this costs 33."""

    __slots__ = ("kinds", "amounts", "balances", "order_ids", "times")

    def __init__(self) -> None:
        self.kinds = bytearray()  # index into KINDS
        self.amounts = array("q")
        self.balances = array("q")
        self.order_ids: list[str | None] = []
        self.times: list[float] = []

    def append(
        self, kind: str, amount: int, balance_after: int, order_id: str | None, at: float
    ) -> None:
        self.kinds.append(KINDS.index(kind))
        self.amounts.append(amount)
        self.balances.append(balance_after)
        self.order_ids.append(order_id)
        self.times.append(at)

    def entries(self) -> list[Entry]:
        rows = zip(self.kinds, self.amounts, self.balances, self.order_ids, self.times, strict=True)
        return [Entry(KINDS[kind], amount, after, ref, at) for kind, amount, after, ref, at in rows]


class Ledger:
    def __init__(self) -> None:
        self._books: dict[str, _Book] = {}
        #: Adjustments made, every account's together: what the `adjustments` quota
        #: counts (docs/hosting.md, "Quotas"); charges and refunds follow orders.
        self.adjustments = 0

    def charge(self, account: Account, cents: int, order_id: str, at: float) -> None:
        self._move(account, "charge", -cents, order_id, at)

    def refund(self, account: Account, cents: int, order_id: str, at: float) -> None:
        if cents:
            self._move(account, "refund", cents, order_id, at)

    def adjust(self, account: Account, new_balance: int, at: float) -> None:
        self._move(account, "adjustment", new_balance - account.balance, None, at)
        self.adjustments += 1

    def entries(self, account_id: str) -> list[Entry]:
        book = self._books.get(account_id)
        return book.entries() if book is not None else []

    def length(self, account_id: str) -> int:
        book = self._books.get(account_id)
        return len(book.times) if book is not None else 0

    def rows(self, account_id: str, start: int = 0) -> list[list[Any]]:
        """Entries from `start` on as `[kind, amount, balance_after, order_id, at]`
        (saved state; a state file asks for the few new ones after each change)."""
        book = self._books.get(account_id)
        if book is None:
            return []
        return [
            [
                KINDS[book.kinds[i]],
                book.amounts[i],
                book.balances[i],
                book.order_ids[i],
                book.times[i],
            ]
            for i in range(start, len(book.times))
        ]

    def restore(self, account_id: str, rows: list[list[Any]]) -> None:
        """Append saved entries as they were (balances are restored with the account)."""
        book = self._books.get(account_id)
        if book is None:
            book = self._books[account_id] = _Book()
        for kind, amount, balance_after, order_id, at in rows:
            book.append(kind, amount, balance_after, order_id, at)
            self.adjustments += kind == "adjustment"

    def conserved(self, account: Account) -> bool:
        """opening balance + adjustments - charges + refunds == balance."""
        book = self._books.get(account.id)
        moved = sum(book.amounts) if book is not None else 0
        return account.opening_balance + moved == account.balance

    def _move(
        self, account: Account, kind: str, amount: int, order_id: str | None, at: float
    ) -> None:
        account.balance += amount
        book = self._books.get(account.id)
        if book is None:
            book = self._books[account.id] = _Book()
        book.append(kind, amount, account.balance, order_id, at)
