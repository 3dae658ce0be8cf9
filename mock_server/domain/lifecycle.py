"""The lifecycle engine: plays an order's scenario on the scheduler.

One mechanism for every outcome. A scenario's steps are scheduled one at a time, each
`after` seconds of virtual time past the previous one. A `need_client_code` step stops
the chain until `release()` (a submitted code) moves the order to `processing`; a
terminal step settles the order through `settlement.settle`, which applies the spec's
rules whatever the script asked for, then refunds, and hands the order to `on_settled`
(the webhook sender).
"""

from __future__ import annotations

from collections.abc import Callable

from ..scheduler import Scheduler
from .orders import Order
from .scenarios import Step, WebhookChaos
from .settlement import partial_target, settle
from .state import State
from .statuses import TERMINAL

Settled = Callable[[Order, WebhookChaos | None], None]
Changed = Callable[[Order], None]


class Lifecycle:
    def __init__(
        self, state: State, scheduler: Scheduler, on_settled: Settled, on_change: Changed
    ) -> None:
        self._state = state
        self._scheduler = scheduler
        self._on_settled = on_settled
        self._on_change = on_change

    def start(self, order: Order) -> None:
        self._schedule(order, 0)

    def release(self, order: Order) -> None:
        """A client code was accepted: back to processing, then the rest of the script."""
        order.move_to("processing", self._state.now(order.account_id))
        order.expected_code = None
        self._schedule(order, order.next_step + 1)
        self._on_change(order)

    def resume(self, order: Order, due: float) -> None:
        """A saved order's next step, due at virtual time `due` (a restored state)."""
        index = order.next_step
        step = order.scenario.steps[index]
        order.timer = self._scheduler.call_at(
            due,
            self._run,
            order,
            index,
            owner=order.account_id,
            label=("order", order.id, "step", index + 1, step.status),
        )

    def cancel_all(self) -> None:
        for order in self._state.orders.values():
            if order.timer is not None:
                order.timer.cancel()

    def _schedule(self, order: Order, index: int) -> None:
        steps = order.scenario.steps
        if index >= len(steps):
            return
        step = steps[index]
        order.next_step = index
        order.timer = self._scheduler.call_later(
            step.after,
            self._run,
            order,
            index,
            owner=order.account_id,
            label=("order", order.id, "step", index + 1, step.status),
        )

    def _run(self, order: Order, index: int) -> None:
        order.timer = None
        if order.terminal:
            return
        step = order.scenario.steps[index]
        now = self._state.now(order.account_id)
        if step.status in TERMINAL:
            self._settle(order, step, now)
            return
        order.move_to(step.status, now)
        if step.status == "need_client_code":
            # The chain waits here: the next step is the processing a code brings.
            order.expected_code = step.expect_code
            order.next_step = index + 1
        else:
            self._schedule(order, index + 1)
        self._on_change(order)

    def _settle(self, order: Order, step: Step, now: float) -> None:
        item = self._state.catalog.get(order.item_id)
        counted = item is not None and item.product_type == "key" and item.stock is not None
        target = None
        if step.status == "partial":
            target = partial_target(
                order.quantity,
                order.product_type,
                units=step.deliver.units if step.deliver else None,
                percent=step.deliver.percent if step.deliver else None,
            )
        outcome = settle(
            requested=step.status,
            quantity=order.quantity,
            product_type=order.product_type,
            unit_price=order.unit_price,
            charged=order.price,
            target=target,
            stock=item.stock if counted else None,
            error=step.error,
            error_message=step.error_message,
        )
        if counted:
            item.stock -= int(outcome.delivered)
        order.delivered_quantity = outcome.delivered
        order.refund_amount = outcome.refund
        order.error = outcome.error
        order.error_message = outcome.error_message
        if order.product_type == "key":
            order.codes = self._state.randomness.codes(int(outcome.delivered))
        if outcome.status == "completed":
            order.completed_at = now
        order.move_to(outcome.status, now)  # last: it publishes the change (version)
        account = self._state.accounts.get(order.account_id)
        if account is not None:
            self._state.ledger.refund(account, outcome.refund, order.id, now)
        self._on_settled(order, step.webhook)
        self._on_change(order)  # after the webhook object is decided
