"""Signed order-result webhooks (spec section 6): signing, verifying, sending, retrying.

`sign` and `verify` are pure functions, shared by the sender and by merchants' own
tests. `WebhookSender` turns a settled order into `Delivery` records and schedules
their attempts on the sandbox's scheduler: the first at settlement (plus any scripted
delay), retries 60 s of virtual time apart, at most 4 attempts (a scenario's
`webhook: {retry: [...]}` gives other gaps). Only HTTP 200 is a
success; any other status, a connection error or no complete answer within 10 s of
real time is a failure. One pooled client session serves every delivery.

Where a webhook may go is checked where the connection is made (`domain/destinations.py`,
docs/hosting.md), on the host as the client normalises it (IDNA: `1㉗.0.0.1` is
`127.0.0.1`): a literal address before any connection, and a host name by the
session's own resolver, which hands the connector only the addresses that passed, so
nothing resolves the name a second time. A refused attempt opens no connection and is a
failed attempt like any other.
"""

from __future__ import annotations

import asyncio
import hmac
import socket
import time
from ssl import SSLContext
from typing import TYPE_CHECKING

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

# `sign` lives with the deliveries it signs; it is still `mock_server.webhooks.sign`.
from .domain.deliveries import (
    LISTENER,
    SIGNATURE_PREFIX,
    Attempt,
    Delivery,
    Own,
    sign,
    signed_headers,
)
from .domain.destinations import DestinationRules
from .domain.orders import Order
from .domain.scenarios import WebhookChaos

if TYPE_CHECKING:
    from .domain.sandbox import Sandbox

#: A whole attempt (connect, send, read) must finish within this many real seconds.
ATTEMPT_TIMEOUT = 10.0


def verify(secret: str, body: bytes, header: str | None) -> bool:
    """Whether `header` (`sha256=<hex>` or bare hex) signs the raw `body` with `secret`.

    Constant-time. Use it on the exact bytes received, before parsing them.
    """
    if not header:
        return False
    candidate = header.strip()
    if candidate.lower().startswith(SIGNATURE_PREFIX):
        candidate = candidate[len(SIGNATURE_PREFIX) :]
    expected = sign(secret, body)[len(SIGNATURE_PREFIX) :]
    return hmac.compare_digest(candidate.lower().encode(), expected.encode())


class WebhookSender:
    def __init__(self, sandbox: Sandbox, *, ssl: SSLContext | bool = True) -> None:
        """`ssl` is how `https://` receivers are verified: True (the system's trust
        store), a context (e.g. trusting an added CA) or False (not at all)."""
        self._sandbox = sandbox
        self._ssl = ssl
        self._session: aiohttp.ClientSession | None = None

    # -- lifecycle hook -------------------------------------------------------------------

    def order_settled(self, order: Order, chaos: WebhookChaos | None) -> None:
        """Create the order's deliveries and schedule their first attempts."""
        state = self._sandbox.state
        account = state.accounts.get(order.account_id)
        if (
            order.source != "api"
            or account is None
            or not (account.webhook_url or self._sandbox.listeners.connected(account.id))
        ):
            order.set_webhook(None)
            return
        chaos = chaos or WebhookChaos()
        copies = [
            self._new_delivery(order, copy, chaos.retry) for copy in range(1 + chaos.duplicate)
        ]
        primary = copies[0]
        if chaos.drop:
            for delivery in copies:
                delivery.status = "dropped"
        else:
            first = state.now(order.account_id) + chaos.delay
            for delivery in copies:
                self._schedule(delivery, first)
        order.set_webhook(primary)
        coverage = self._sandbox.coverage
        if chaos.duplicate:
            coverage.count("webhook_outcomes", "duplicate")
        if chaos.drop:
            coverage.count("webhook_outcomes", "dropped")
        for delivery in copies:
            self._sandbox.delivery_changed(delivery)

    def resume(self, delivery: Delivery) -> None:
        """A saved delivery's planned attempt, at its virtual due time (restored state)."""
        if delivery.next_attempt_at is not None and not delivery.finished:
            self._schedule(delivery, delivery.next_attempt_at)

    async def redeliver(self, delivery: Delivery) -> Delivery:
        """Send a delivery once more, now, whatever its status. A manual attempt does not
        count toward the retry limit and starts no retries of its own; a retry already
        planned still happens unless this one succeeds."""
        await self._attempt(delivery, manual=True)
        return delivery

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- internals ------------------------------------------------------------------------

    def _new_delivery(self, order: Order, copy: int, retry: tuple[float, ...]) -> Delivery:
        state = self._sandbox.state
        delivery = Delivery(state.randomness.uuid(), order, copy=copy, own=Own.of(retry))
        state.deliveries[delivery.id] = delivery
        state.deliveries_by_order.add(delivery)
        return delivery

    def _schedule(self, delivery: Delivery, at: float) -> None:
        delivery.next_attempt_at = at
        self._sandbox.scheduler.call_at(
            at,
            self._attempt,
            delivery,
            owner=delivery.account_id,
            label=(
                "webhook",
                delivery.id,
                "attempt",
                delivery.scheduled_attempts + 1,  # the same when a saved plan resumes
                "order",
                delivery.order_id,
            ),
        )

    async def _attempt(self, delivery: Delivery, *, manual: bool = False) -> None:
        state = self._sandbox.state
        if state.deliveries.get(delivery.id) is not delivery:
            return  # forgotten by a reset while it waited
        if not manual and delivery.finished:
            return  # a manual redelivery succeeded before this planned retry
        account = state.accounts.get(delivery.account_id)
        at = state.now(delivery.account_id)
        url = account.webhook_url if account else None
        status_code: int | None = None
        error: str | None = None
        via: str | None = None
        started = time.perf_counter()
        listeners = self._sandbox.listeners
        if account is not None and listeners.connected(account.id):
            # A listener makes the attempt, instead of the URL (docs/webhooks.md).
            secret, names = account.webhook_secret, account.signature_headers
            body = self._sandbox.event_body(delivery, LISTENER)
            delivery.sent_with(LISTENER, secret, names)
            frame = {
                "delivery_id": delivery.id,
                "order_id": delivery.order_id,
                "order_status": delivery.order.status,
                "attempt": len(delivery.attempts) + 1,
                "body": body.decode("utf-8"),
                "headers": signed_headers(secret, names, body),
            }
            status_code, error = await listeners.forward(account.id, frame, ATTEMPT_TIMEOUT)
            via = LISTENER
        elif account is None or not url:
            error = "no webhook URL configured"
        else:
            secret, names = account.webhook_secret, account.signature_headers
            body = self._sandbox.event_body(delivery, url)
            delivery.sent_with(url, secret, names)
            status_code, error = await self._post(url, body, signed_headers(secret, names, body))
        duration = round((time.perf_counter() - started) * 1000, 2)
        if state.deliveries.get(delivery.id) is not delivery:
            return
        delivery.record(Attempt(at, status_code, error, duration, manual, via))
        self._count(delivery, status_code, manual)
        self._sandbox.delivery_changed(delivery)
        if delivery.copy == 0:
            order = state.orders.get(delivery.order_id)
            if order is not None:
                order.set_webhook(delivery)
                self._sandbox.order_changed(order)
        if not manual and delivery.next_attempt_at is not None:
            self._schedule(delivery, delivery.next_attempt_at)

    def _count(self, delivery: Delivery, status_code: int | None, manual: bool) -> None:
        """Coverage's `webhook_outcomes`, after an attempt was recorded."""
        coverage = self._sandbox.coverage
        if status_code is not None and 200 < status_code < 300:
            coverage.count("webhook_outcomes", "2xx that is not 200")
        if manual:
            coverage.count("webhook_outcomes", "redelivered")
        elif delivery.status == "delivered":
            scheduled = sum(1 for attempt in delivery.attempts if not attempt.manual)
            outcome = "at the first attempt" if scheduled == 1 else "after retries"
            coverage.count("webhook_outcomes", f"delivered {outcome}")
        elif delivery.status == "failed":
            coverage.count("webhook_outcomes", "retries exhausted")

    async def _post(
        self, url: str, body: bytes, headers: dict[str, str]
    ) -> tuple[int | None, str | None]:
        refused = self._sandbox.startup.webhook_rules.literal_refusal(url)
        if refused:
            return None, f"{REFUSED}: {refused}"
        try:
            async with asyncio.timeout(ATTEMPT_TIMEOUT):
                return await post_event(self._client(), url, body, headers), None
        except TimeoutError:
            return None, f"no complete answer within {ATTEMPT_TIMEOUT:g} s"
        except aiohttp.ClientConnectorCertificateError as exc:
            # Says what to do, not only what failed: a test receiver's CA is not trusted.
            return None, (
                f"{type(exc).__name__}: {exc}; trust the receiver's CA with --webhook-ca "
                "(or turn verification off with --webhook-insecure)"
            )
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            if isinstance(exc.__cause__, DestinationRefused):
                return None, f"{REFUSED}: {exc.__cause__}"
            return None, f"{type(exc).__name__}: {exc}".rstrip(": ")

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            resolver = CheckedResolver(self._sandbox.startup.webhook_rules)
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=100, ssl=self._ssl, resolver=resolver),
                skip_auto_headers=("User-Agent",),
                headers={"User-Agent": "ordering-sandbox-webhooks/1"},
            )
        return self._session


async def post_event(
    session: aiohttp.ClientSession, url: str, body: bytes, headers: dict[str, str]
) -> int:
    """POST an order-result event once and read the whole answer: its status code. A
    redirect is the receiver's answer, not a new destination: never followed (spec 6:
    only 200 is success; docs/webhooks.md). Raises what aiohttp raises. The sender and
    `mock-server listen` both send with it."""
    async with session.post(url, data=body, headers=headers, allow_redirects=False) as response:
        await response.read()
        return response.status


#: How a refused attempt's `error` starts.
REFUSED = "refused by the webhook destination rules"


class DestinationRefused(OSError):
    """Every address a receiver's host resolved to is refused."""


class CheckedResolver(AbstractResolver):
    """The system's resolver, keeping only the addresses the rules let through."""

    def __init__(self, rules: DestinationRules) -> None:
        self._rules = rules
        self._resolver = aiohttp.ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._resolver.resolve(host, port, family)
        passed = []
        refusal = None
        for result in found:
            why = self._rules.refusal(host, result["host"])
            if why is None:
                passed.append(result)
            else:
                refusal = refusal or why
        if not passed:
            raise DestinationRefused(refusal or f"{host} resolves to no address")
        return passed

    async def close(self) -> None:
        await self._resolver.close()
