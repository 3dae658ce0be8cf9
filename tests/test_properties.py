"""Stateful property tests over the HTTP API (Hypothesis), on the manual clock.

Random sequences of creates (any item, quantity, scenario), clock advances, client
codes, balance changes and lookups; after every step the spec's invariants must hold
for every order and every balance. The model tracks money independently of the
sandbox's own ledger.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import pytest
import requests
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from mock_server.config import Settings
from mock_server.testing import SandboxHandle, ServerThread
from tests.conftest import BUILTIN_SCENARIOS

SCENARIOS = list(BUILTIN_SCENARIOS)
TERMINAL = {"completed", "partial", "failed"}
FIELDS = {
    2001: {"razer_id": "player-1", "region": 2},
    2002: {"login_email": "a@example.com", "server": 1},
    3001: {"riot_id": "ace#EUW", "region": 1},
}
# Small quantities are where the edge cases live (a partial of one unit, the last key).
QUANTITIES = {
    1001: st.one_of(st.just(1), st.integers(1, 10)),
    1002: st.one_of(st.just(1), st.integers(1, 5)),
    1003: st.one_of(st.just(1), st.integers(1, 10)),
    2001: st.decimals("5", "500", places=2).map(str),
    2002: st.integers(1, 10),
    3001: st.none(),
}


@pytest.fixture(scope="module")
def sandbox():
    server = ServerThread(Settings(clock="manual", port=0, seed=3, start_time=0.0)).start()
    yield server
    server.stop()


def _cents(value: float) -> int:
    return int((Decimal(str(value)) * 100).to_integral_value(rounding=ROUND_HALF_UP))


class OrderingMachine(RuleBasedStateMachine):
    server: ServerThread

    @initialize()
    def start(self) -> None:
        self.handle = SandboxHandle(self.server.url)
        self.handle.reset()
        self.http = requests.Session()
        token = self.http.post(
            f"{self.server.url}/api/v1/auth/token/client", json={"api_key": self.handle.api_key}
        ).json()["access_token"]
        self.http.headers["Authorization"] = f"Bearer {token}"
        self.expected_balance = 100_000  # cents: the model's own account of the money
        self.terminal_seen: dict[str, dict] = {}
        self.refunded: set[str] = set()
        self.elapsed = 0.0

    # -- rules ------------------------------------------------------------------------------

    @rule(
        item=st.sampled_from(sorted(QUANTITIES)),
        data=st.data(),
        # partials carry the most arithmetic: drawn three times as often
        scenario=st.sampled_from(SCENARIOS + ["out_of_stock_partial", "timeout_partial"] * 2),
        with_guard=st.sampled_from([False, False, False, True]),
    )
    def create(self, item: int, data: st.DataObject, scenario: str, with_guard: bool) -> None:
        body: dict = {"item_id": item}
        quantity = data.draw(QUANTITIES[item])
        if quantity is not None:
            body["quantity"] = float(quantity) if isinstance(quantity, str) else quantity
        if item in FIELDS:
            body["fields"] = FIELDS[item]
        if with_guard:
            body["price"] = 1.0  # almost always wrong: must be refused, charging nothing
        response = self.http.post(
            f"{self.server.url}/api/v1/orders", json=body, headers={"X-Mock-Scenario": scenario}
        )
        if response.status_code == 201:
            order = response.json()
            assert order["status"] == "pending"
            self.expected_balance -= _cents(order["price"])
        else:
            assert response.status_code == 400, response.text
            assert response.json()["code"] in (
                "validation_error",
                "insufficient_balance",
                "price_mismatch",
            )

    @rule(seconds=st.sampled_from([0.5, 1, 2, 3, 30, 61, 400]))
    def advance(self, seconds: float) -> None:
        self.handle.advance(seconds)
        self.elapsed += seconds
        if self.elapsed > 6000:  # tokens live 2 h of virtual time: log in again
            self.start_token()

    def start_token(self) -> None:
        token = self.http.post(
            f"{self.server.url}/api/v1/auth/token/client", json={"api_key": self.handle.api_key}
        ).json()["access_token"]
        self.http.headers["Authorization"] = f"Bearer {token}"
        self.elapsed = 0.0

    @precondition(lambda self: any(o["status"] == "need_client_code" for o in self._orders()))
    @rule()
    def submit_code(self) -> None:
        waiting = [o for o in self._orders() if o["status"] == "need_client_code"]
        response = self.http.post(
            f"{self.server.url}/api/v1/orders/{waiting[0]['id']}/client-code",
            json={"code": "123456"},
        )
        assert response.status_code == 200, response.text
        assert response.json()["status"] == "processing"

    @rule(amount=st.integers(0, 200_000))
    def set_balance(self, amount: int) -> None:
        self.handle.set_balance(amount / 100)
        self.expected_balance = amount

    @rule()
    def lookup_all(self) -> None:
        for order in self._orders():
            response = self.http.get(f"{self.server.url}/api/v1/orders/{order['id']}")
            assert response.status_code == 200
            assert response.json() == order

    # -- invariants -------------------------------------------------------------------------

    def _orders(self) -> list[dict]:
        return self.handle.orders()

    @invariant()
    def invariants_hold(self) -> None:
        if not hasattr(self, "handle"):
            return
        for order in self._orders():
            self._check_order(order)
        balance = self.http.get(f"{self.server.url}/api/v1/account/balance").json()["balance"]
        assert _cents(balance) == self.expected_balance, "money is conserved"
        ledger = self.handle.control("GET", f"/_mock/accounts/{self.handle.account_id}/ledger")
        assert ledger["conserved"] is True

    def _check_order(self, order: dict) -> None:
        detail = self.handle.order(order["id"])
        statuses = [h["status"] for h in detail["history"]]
        assert statuses[0] == "pending" and "pending" not in statuses[1:], "never back to pending"
        assert (order["completed_at"] is not None) == (order["status"] == "completed")
        assert (order["error"] == "") == (order["error_message"] == ""), "message iff error"
        quantity, delivered = (
            Decimal(str(order["quantity"])),
            Decimal(str(order["delivered_quantity"])),
        )
        assert 0 <= delivered <= quantity
        if order["item_product_type"] == "key":
            assert len(order["codes"]) == delivered
        else:
            assert order["codes"] == []
        if order["status"] in TERMINAL:
            previous = self.terminal_seen.setdefault(order["id"], order)
            assert previous == order, "terminal statuses never change"
            if order["id"] not in self.refunded:
                self.refunded.add(order["id"])
                self.expected_balance += _cents(order["refund_amount"])
            unit = Decimal(_cents(order["price"])) / quantity
            kept = _cents(order["price"]) - _cents(order["refund_amount"])
            if order["item_product_type"] != "topup":
                assert kept == int(unit * delivered), "refund = undelivered units x unit price"
            if order["status"] == "failed":
                assert delivered == 0 and order["error"]
                assert order["refund_amount"] == order["price"]
            if order["status"] == "partial":
                assert 0 < delivered < quantity
            if order["status"] == "completed":
                assert delivered == quantity and order["refund_amount"] == 0
        else:
            assert order["refund_amount"] == 0


def test_invariants_hold_for_random_sequences(sandbox):
    OrderingMachine.server = sandbox
    machine = OrderingMachine.TestCase
    machine.settings = settings(
        max_examples=30,
        stateful_step_count=30,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    machine().runTest()
