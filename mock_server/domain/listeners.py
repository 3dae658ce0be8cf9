"""Listeners: `mock-server listen` processes connected to a sandbox, through which its
accounts' webhook attempts go instead of their `webhook_url` (docs/webhooks.md, "Webhooks
to your own machine").

While at least one listener is connected for an account, each of its attempts is handed
to exactly one of them (in turn) as an `attempt` frame, and its outcome is what that
listener reports: the receiver's status code or connection error. No report within the
attempt's timeout, or the listener gone before it reported, is a failed attempt. An
attempt is decided once: a report that comes after is refused.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import OrderedDict
from typing import Any

from ..errors import ApiError, not_found

#: Decided attempts remembered, so that a late report is told so rather than "not found".
_DECIDED_KEPT = 10_000
#: A reported `error` is kept to this many characters: it is the tenant's text, and every
#: attempt keeps its own (docs/hosting.md, "Sizing").
MAX_REPORTED_ERROR = 1000
#: The outcome of an attempt whose listener went away before it reported.
GONE = "the listener disconnected before it reported"
Outcome = tuple[int | None, str | None]  # (status code, error): exactly one is None


def already_decided(detail: str) -> ApiError:
    return ApiError(409, "already_decided", detail)


class Listener:
    """One connected listener: the frames waiting for its stream, and whether it is gone."""

    def __init__(self, listener_id: str, account_id: str) -> None:
        self.listener_id = listener_id
        self.account_id = account_id
        self._frames: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue()
        self.closed = False

    def send(self, name: str, data: dict[str, Any]) -> None:
        self._frames.put_nowait((name, data))

    async def next_frame(self, wait: float) -> tuple[str, dict[str, Any]] | None:
        """The next frame to write; None after `wait` seconds without one, or once
        `close` was called (then `closed` is true)."""
        if self.closed:
            return None
        try:
            frame = await asyncio.wait_for(self._frames.get(), wait)
        except TimeoutError:
            return None
        if frame is None:
            self.closed = True
        return frame

    def close(self) -> None:
        self._frames.put_nowait(None)


class Listeners:
    """The listeners of one sandbox, by account, and the attempts waiting for a report."""

    def __init__(self) -> None:
        self._by_account: dict[str, list[Listener]] = {}
        self._turn = 0
        #: attempt id -> (the listener it went to, its outcome when reported).
        self._waiting: dict[str, tuple[Listener, asyncio.Future[Outcome]]] = {}
        self._decided: OrderedDict[str, None] = OrderedDict()

    def connected(self, account_id: str) -> bool:
        return bool(self._by_account.get(account_id))

    def connect(self, account_id: str) -> Listener:
        listener = Listener("lst_" + secrets.token_hex(8), account_id)
        self._by_account.setdefault(account_id, []).append(listener)
        return listener

    def disconnect(self, listener: Listener) -> None:
        """The listener's stream ended: the attempts it has not reported fail now."""
        listening = self._by_account.get(listener.account_id, [])
        if listener in listening:
            listening.remove(listener)
        if not listening:
            self._by_account.pop(listener.account_id, None)
        for attempt_id, (holder, outcome) in list(self._waiting.items()):
            if holder is listener and not outcome.done():
                outcome.set_result((None, GONE))
                self._decide(attempt_id)

    async def forward(self, account_id: str, frame: dict[str, Any], timeout: float) -> Outcome:
        """Hand an attempt (`frame`: what the listener needs to make it) to one listener
        of the account, and wait for its report."""
        listening = self._by_account[account_id]
        self._turn += 1
        listener = listening[self._turn % len(listening)]
        attempt_id = "att_" + secrets.token_hex(12)
        outcome: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._waiting[attempt_id] = (listener, outcome)
        listener.send("attempt", {"attempt_id": attempt_id} | frame)
        try:
            async with asyncio.timeout(timeout):
                return await outcome
        except TimeoutError:
            return None, f"no report from the listener within {timeout:g} s"
        finally:
            self._waiting.pop(attempt_id, None)
            self._decide(attempt_id)

    def report(self, attempt_id: str, status_code: int | None, error: str | None) -> None:
        """A listener's report: the waiting attempt's outcome."""
        waiting = self._waiting.get(attempt_id)
        if waiting is None or waiting[1].done():
            if waiting is not None or attempt_id in self._decided:
                raise already_decided(
                    f"The attempt {attempt_id} was already decided (reported before, past "
                    "its timeout, or its listener disconnected): this report changes nothing"
                )
            raise not_found(f"No attempt {attempt_id} is waiting for a report in this sandbox")
        if error is not None and len(error) > MAX_REPORTED_ERROR:
            error = error[: MAX_REPORTED_ERROR - 1] + "\u2026"
        waiting[1].set_result((status_code, error))

    def close(self) -> None:
        """The sandbox is going away: end every stream (their attempts fail)."""
        for listening in list(self._by_account.values()):
            for listener in list(listening):
                listener.close()
                self.disconnect(listener)

    def _decide(self, attempt_id: str) -> None:
        self._decided[attempt_id] = None
        while len(self._decided) > _DECIDED_KEPT:
            self._decided.popitem(last=False)
