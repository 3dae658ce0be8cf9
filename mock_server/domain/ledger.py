"""Every balance movement, so money can be shown to be conserved.

The only way balances change: `charge` (order creation), `refund` (settlement) and
`adjust` (the control API). Each call moves the account's balance and records an entry.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
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
    two ints cost 136 bytes an order; this costs 33, and its place in `by_order`."""

    __slots__ = ("kinds", "amounts", "balances", "order_ids", "times", "by_order")

    def __init__(self) -> None:
        self.kinds = bytearray()  # index into KINDS
        self.amounts = array("q")
        self.balances = array("q")
        self.order_ids: list[str | None] = []
        self.times: list[float] = []
        #: Where each order's entries are, its first (the charge) and its last (the
        #: refund, if any: an order has at most these two), so that the ledger read for one
        #: order costs its entries, not the account's (docs/hosting.md, "What one request
        #: may cost"). Made at the first such read, in C (`dict(zip(...))`: about 20 ms
        #: at 100,000 orders), since most books never need its memory; then kept.
        self.by_order: tuple[dict[str | None, int], dict[str | None, int]] | None = None

    def append(
        self, kind: str, amount: int, balance_after: int, order_id: str | None, at: float
    ) -> None:
        if order_id is not None and self.by_order is not None:
            first, last = self.by_order
            first.setdefault(order_id, len(self.times))
            last[order_id] = len(self.times)
        self.kinds.append(KINDS.index(kind))
        self.amounts.append(amount)
        self.balances.append(balance_after)
        self.order_ids.append(order_id)
        self.times.append(at)

    def entry(self, index: int) -> Entry:
        return Entry(
            KINDS[self.kinds[index]],
            self.amounts[index],
            self.balances[index],
            self.order_ids[index],
            self.times[index],
        )

    def of_order(self, order_id: str) -> tuple[int, ...]:
        if self.by_order is None:
            count = len(self.order_ids)
            last = dict(zip(self.order_ids, range(count), strict=True))
            first = dict(zip(reversed(self.order_ids), range(count - 1, -1, -1), strict=True))
            self.by_order = first, last
        first, last = self.by_order
        start, end = first.get(order_id), last.get(order_id)
        if start is None or end is None:
            return ()
        return (start,) if start == end else (start, end)


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

    def entries(self, account_id: str, order_id: str | None = None) -> list[Entry]:
        """The account's entries (only one order's, with `order_id`)."""
        return list(self.entries_as_read(account_id, order_id))

    def entries_as_read(self, account_id: str, order_id: str | None = None) -> Iterator[Entry]:
        """The entries there are now, made one at a time as they are read: a large
        account's ledger is written in pieces (docs/control-api.md), and the entries
        made meanwhile are not among them. One order's come from the index."""
        book = self._books.get(account_id)
        if book is None:
            return iter(())
        found = book.of_order(order_id) if order_id is not None else range(len(book.times))
        return map(book.entry, found)

    def length(self, account_id: str) -> int:
        book = self._books.get(account_id)
        return len(book.times) if book is not None else 0

    def rows(self, account_id: str, start: int = 0) -> list[list[Any]]:
        """Entries from `start` on as `[kind, amount, balance_after, order_id, at]`
        (saved state; a state file asks for the few new ones after each change)."""
        return list(self.rows_as_read(account_id, start))

    def rows_as_read(self, account_id: str, start: int = 0) -> Iterator[list[Any]]:
        """`rows`, made one at a time as they are read, of the entries there are now
        (the state document is written in pieces)."""
        book = self._books.get(account_id)
        if book is None:
            return iter(())
        kinds, amounts, balances = book.kinds, book.amounts, book.balances
        order_ids, times = book.order_ids, book.times
        return (
            [KINDS[kinds[i]], amounts[i], balances[i], order_ids[i], times[i]]
            for i in range(start, len(times))
        )

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
