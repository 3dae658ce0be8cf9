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
    front in O(1) amortised, whatever the number of live tokens, and after that drop
    every grant kept is unexpired, so counting them (the quota on unexpired tokens,
    docs/hosting.md "Quotas") is `len` of the grants."""

    def __init__(self) -> None:
        self._grants: dict[str, Grant] = {}
        self._by_expiry: deque[tuple[float, str]] = deque()
        #: The last tokens dropped as expired, so a late caller is told "expired"
        #: rather than "invalid" (coverage counts the two apart). Bounded.
        self._dropped: deque[str] = deque(maxlen=_DROPPED_MEMORY)
        #: A restored grant came out of expiry order: the queue is sorted once, on the
        #: next drop (a saved state written by the sandbox never sets it).
        self._unordered = False

    def issue(self, token: str, account_id: str, api_key: str, now: float) -> None:
        self._drop_expired(now)
        grant = Grant(account_id, api_key, now + TOKEN_LIFETIME)
        self._grants[token] = grant
        self._by_expiry.append((grant.expires_at, token))

    def live_count(self, now: float) -> int:
        """How many grants are unexpired at `now`, in O(1) amortised."""
        self._drop_expired(now)
        return len(self._grants)

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
        queue = self._by_expiry
        if queue and grant.expires_at < queue[-1][0]:
            self._unordered = True
        queue.append((grant.expires_at, token))

    def revoke(self, api_key: str) -> None:
        """Drop the grants of a revoked key: its tokens stop working, and no longer count
        (control-api.md, "Revoke a key"). One pass over the grants, on the control call
        that revokes; the token endpoint never pays for it."""
        gone = {token for token, grant in self._grants.items() if grant.api_key == api_key}
        if gone:
            for token in gone:
                del self._grants[token]
            self._by_expiry = deque(entry for entry in self._by_expiry if entry[1] not in gone)

    def expired(self, token: str, now: float) -> bool:
        """Whether `token` was once valid and has expired (not merely unknown)."""
        grant = self._grants.get(token)
        if grant is not None:
            return now >= grant.expires_at
        return token in self._dropped

    def _drop_expired(self, now: float) -> None:
        if self._unordered:
            self._by_expiry = deque(sorted(self._by_expiry))
            self._unordered = False
        queue, grants = self._by_expiry, self._grants
        while queue and queue[0][0] <= now:
            _, token = queue.popleft()
            grant = grants.get(token)
            # A token restored twice has one grant and two entries: the grant goes
            # with the entry of its own expiry.
            if grant is not None and grant.expires_at <= now:
                del grants[token]
                self._dropped.append(token)
