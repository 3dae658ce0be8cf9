"""Bearer access tokens: exchanged for an API key, valid 2 hours of virtual time."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

TOKEN_LIFETIME = 2 * 3600.0
_DROPPED_MEMORY = 1000


@dataclass(frozen=True, slots=True)
class Grant:
    account_id: str
    api_key: str
    expires_at: float


class Tokens:
    """Live grants by token. Grants are issued in time order with one lifetime, so they
    also expire in that order: a queue lets each issue drop the expired ones from its
    front in O(1) amortised, whatever the number of live tokens."""

    def __init__(self) -> None:
        self._grants: dict[str, Grant] = {}
        self._by_expiry: deque[tuple[float, str]] = deque()
        #: The last tokens dropped as expired, so a late caller is told "expired"
        #: rather than "invalid" (coverage counts the two apart). Bounded.
        self._dropped: deque[str] = deque(maxlen=_DROPPED_MEMORY)

    def issue(self, token: str, account_id: str, api_key: str, now: float) -> None:
        grant = Grant(account_id, api_key, now + TOKEN_LIFETIME)
        self._grants[token] = grant
        self._by_expiry.append((grant.expires_at, token))
        while self._by_expiry and self._by_expiry[0][0] <= now:
            _, expired = self._by_expiry.popleft()
            self._grants.pop(expired, None)
            self._dropped.append(expired)

    def lookup(self, token: str, now: float) -> Grant | None:
        """The live grant for `token`, or None when unknown or expired."""
        grant = self._grants.get(token)
        if grant is None or now >= grant.expires_at:
            return None
        return grant

    def live(self, now: float) -> list[tuple[str, Grant]]:
        """Unexpired grants in the order they were issued (saved state)."""
        return [(t, g) for t, g in self._grants.items() if now < g.expires_at]

    def restore(self, token: str, grant: Grant) -> None:
        self._grants[token] = grant
        self._by_expiry.append((grant.expires_at, token))

    def expired(self, token: str, now: float) -> bool:
        """Whether `token` was once valid and has expired (not merely unknown)."""
        grant = self._grants.get(token)
        if grant is not None:
            return now >= grant.expires_at
        return token in self._dropped
