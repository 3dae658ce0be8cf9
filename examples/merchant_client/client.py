"""A merchant's client for the ordering service, built on `requests`.

Nothing here knows about the sandbox: pointed at production's `base_url` it behaves the
same. What it does, each for a rule of the API spec:

* token caching, and one re-exchange of the API key when a call answers 401
  `not_authenticated` (tokens live 2 h and the spec gives no expiry field; spec 5);
* `place_order` with a `merchant_order_id` (idempotency, spec 4.3 and 7) and the price
  guard; 5xx and unanswered attempts retried with exponential backoff under the same
  `merchant_order_id`, and a refused retry turned back into the order the first attempt
  created (see `place_order`);
* `wait_for_outcome`: polling that stops on a terminal status and on
  `need_client_code` (spec 3.1), the fallback when a webhook does not come;
* `submit_client_code` (spec 4.5).

The client is meant for one thread; give each thread its own.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

import requests

from .errors import (
    ApiError,
    AuthenticationFailed,
    OrderOutcomeUnknown,
    OutcomeTimeout,
    PriceMismatch,
    ServiceUnavailable,
)

TERMINAL_STATUSES = frozenset({"completed", "partial", "failed"})
#: Polling stops here too: the order never leaves `need_client_code` on its own.
STOP_POLLING_STATUSES = TERMINAL_STATUSES | {"need_client_code"}
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
#: Failures that may hide a request the service did carry out.
_NO_ANSWER = (requests.ConnectionError, requests.Timeout)


class OrderingClient:
    """Calls the ordering service at `base_url` as the account that owns `api_key`.

    `session` is any `requests.Session` (default headers, adapters, proxies); `sleep` is
    what waits between retries (`time.sleep` by default; tests pass a recorder so that
    nothing waits on wall time). The backoff before retry n is `backoff * 2**(n-1)`
    seconds: 0.5, 1, 2 with the defaults (4 attempts).
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        session: requests.Session | None = None,
        *,
        max_attempts: int = 4,
        backoff: float = 0.5,
        sleep: Callable[[float], object] = time.sleep,
        timeout: float = 10.0,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._session = session if session is not None else requests.Session()
        self._max_attempts = max_attempts
        self._backoff = backoff
        self._sleep = sleep
        self._timeout = timeout
        self._token: str | None = None
        #: merchant_order_id -> order id, for orders this client saw created. Kept in
        #: memory only: a real integration stores it with its own order record.
        self._order_ids: dict[str, str] = {}

    # -- the merchant API --------------------------------------------------------------

    def balance(self) -> dict[str, Any]:
        """The account's balance, as the service answers it."""
        return self._read("/api/v1/account/balance")

    def get_order(self, order_id: str) -> dict[str, Any]:
        """The order (404 `not_found` raises `ApiError`); 5xx are retried."""
        return self._read(f"/api/v1/orders/{order_id}")

    def known_order_id(self, merchant_order_id: str) -> str | None:
        """The id of the order this client placed under `merchant_order_id`, if any."""
        return self._order_ids.get(merchant_order_id)

    def place_order(
        self,
        item_id: int,
        quantity: float | None = None,
        fields: Mapping[str, Any] | None = None,
        *,
        merchant_order_id: str,
        expected_price: Decimal | str | float | None = None,
    ) -> dict[str, Any]:
        """Create an order (status `pending`, already charged) and return it.

        `merchant_order_id` is the merchant's own reference, unique per account: it is
        what makes a retry safe. `expected_price` is the price guard, the total already
        multiplied by quantity: a different live price raises `PriceMismatch` (with
        `actual_price`) and nothing is charged.

        A 5xx or an unanswered attempt may have created the order, so it is retried
        with the same `merchant_order_id`:

        * 201 on a retry: the earlier attempt created nothing (the reference is unique).
        * 400 `validation_error` on a retry: the reference is already used, by the
          earlier attempt. The error detail names the order in the sandbox; the client
          looks that order up and returns it only if it carries this
          `merchant_order_id`. Production's wording is not part of the contract, so
          when the detail names no order the client raises `OrderOutcomeUnknown`.
        * every attempt failing, or any other refusal of a retry: `OrderOutcomeUnknown`.

        Placing the same `merchant_order_id` again on this client returns the order it
        already created, without a request to create another.
        """
        known = self._order_ids.get(merchant_order_id)
        if known is not None:
            return self.get_order(known)
        body: dict[str, Any] = {"item_id": item_id, "merchant_order_id": merchant_order_id}
        if quantity is not None:
            body["quantity"] = quantity
        if fields is not None:
            body["fields"] = dict(fields)
        if expected_price is not None:
            body["price"] = _money(expected_price)

        self._access_token()  # a key problem fails here, before anything is sent
        failures: list[str] = []
        for attempt in range(1, self._max_attempts + 1):
            try:
                response = self._authorized("POST", "/api/v1/orders", body)
            except (*_NO_ANSWER, ServiceUnavailable) as exc:
                failures.append(f"no answer ({type(exc).__name__})")
            else:
                if response.status_code == 201:
                    return self._remember(response.json())
                if response.status_code < 500:
                    error = _api_error(response)
                    if failures:  # the earlier attempt may be the one that used the id
                        return self._recover(merchant_order_id, error, failures)
                    raise error
                failures.append(f"HTTP {response.status_code}")
            if attempt < self._max_attempts:
                self._sleep(self._delay(attempt))
        raise OrderOutcomeUnknown(
            merchant_order_id, f"{len(failures)} attempts failed: {', '.join(failures)}"
        )

    def wait_for_outcome(
        self,
        order_id: str,
        *,
        poll: Callable[[float], object] | None = None,
        interval: float = 5.0,
        timeout: float = 900.0,
    ) -> dict[str, Any]:
        """Poll the order until it is terminal or waits in `need_client_code`.

        Between two lookups `poll(interval)` runs (the client's `sleep` by default; a
        test passes the sandbox's `advance`). Raises `OutcomeTimeout` once `timeout`
        seconds of polling have gone by without a stopping status.
        """
        wait = poll if poll is not None else self._sleep
        waited = 0.0
        while True:
            order = self.get_order(order_id)
            if order["status"] in STOP_POLLING_STATUSES:
                return order
            if waited >= timeout:
                raise OutcomeTimeout(order_id, order["status"], waited)
            wait(interval)
            waited += interval

    def submit_client_code(self, order_id: str, code: str) -> dict[str, Any]:
        """Release an order waiting in `need_client_code`; answers the order (`processing`).

        Not retried on a 5xx: the code may have been taken. Read the order to know
        (`processing` or later: it was; `need_client_code`: send it again).
        """
        response = self._authorized("POST", f"/v1/orders/{order_id}/client-code", {"code": code})
        if response.status_code == 200:
            return response.json()
        if response.status_code >= 500:
            raise ServiceUnavailable(f"client code for {order_id}: HTTP {response.status_code}")
        raise _api_error(response)

    # -- retries, recovery ---------------------------------------------------------------

    def _delay(self, attempt: int) -> float:
        return self._backoff * 2 ** (attempt - 1)

    def _retrying(self, what: str, send: Callable[[], requests.Response]) -> requests.Response:
        """`send()` until it answers below 500, backing off in between (safe calls only)."""
        last = ""
        for attempt in range(1, self._max_attempts + 1):
            try:
                response = send()
            except _NO_ANSWER as exc:
                last = f"no answer ({type(exc).__name__})"
            else:
                if response.status_code < 500:
                    return response
                last = f"HTTP {response.status_code}"
            if attempt < self._max_attempts:
                self._sleep(self._delay(attempt))
        raise ServiceUnavailable(f"{what}: {self._max_attempts} attempts, the last {last}")

    def _recover(
        self, merchant_order_id: str, error: ApiError, failures: list[str]
    ) -> dict[str, Any]:
        """A retry was refused: find the order the earlier attempt created, or say so."""
        reason = f"after {', '.join(failures)}, a retry got {error}"
        match = _UUID.search(error.detail) if error.code == "validation_error" else None
        if match is not None:
            try:
                order = self.get_order(match[0])
            except ApiError:
                order = None
            if order is not None and order.get("merchant_order_id") == merchant_order_id:
                return self._remember(order)
        raise OrderOutcomeUnknown(merchant_order_id, reason) from error

    def _remember(self, order: dict[str, Any]) -> dict[str, Any]:
        if order.get("merchant_order_id"):
            self._order_ids[order["merchant_order_id"]] = order["id"]
        return order

    # -- transport -------------------------------------------------------------------------

    def _read(self, path: str) -> dict[str, Any]:
        response = self._retrying(f"GET {path}", lambda: self._authorized("GET", path))
        if response.status_code == 200:
            return response.json()
        raise _api_error(response)

    def _authorized(self, method: str, path: str, body: Any = None) -> requests.Response:
        """One call with the cached token; on 401 `not_authenticated`, one fresh token."""
        response = self._send(method, path, body, self._access_token())
        if response.status_code == 401 and _code(response) == "not_authenticated":
            self._token = None  # expired (2 h) or revoked: exchange the key again
            response = self._send(method, path, body, self._access_token())
        return response

    def _send(self, method: str, path: str, body: Any, token: str) -> requests.Response:
        return self._session.request(
            method,
            self.base_url + path,
            json=body,
            headers={"Authorization": f"Bearer {token}"},
            timeout=self._timeout,
        )

    def _access_token(self) -> str:
        if self._token is None:
            self._token = self._exchange_key()
        return self._token

    def _exchange_key(self) -> str:
        url = self.base_url + "/api/v1/auth/token/client"
        response = self._retrying(
            "token exchange",
            lambda: self._session.post(url, json={"api_key": self._api_key}, timeout=self._timeout),
        )
        if response.status_code == 200:
            return response.json()["access_token"]
        body = _json(response)
        if response.status_code == 401:
            raise AuthenticationFailed(body.get("error") or body.get("detail") or "invalid key")
        raise ApiError(response.status_code, str(body.get("code", "")), str(body), body)


def _json(response: requests.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _code(response: requests.Response) -> str:
    return str(_json(response).get("code", ""))


def _api_error(response: requests.Response) -> ApiError:
    body = _json(response)
    code = str(body.get("code", ""))
    detail = str(body.get("detail", response.text))
    kind = PriceMismatch if code == "price_mismatch" else ApiError
    return kind(response.status_code, code, detail, body)


def _money(value: Decimal | str | float) -> float:
    """A price guard in major units, refusing what has more than 2 decimals."""
    amount = Decimal(str(value))
    if amount != amount.quantize(Decimal("0.01")):
        raise ValueError(f"a price has at most 2 decimals, not {value!r}")
    return float(amount)
