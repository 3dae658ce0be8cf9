"""Bearer access tokens: exchanged for an API key, valid 2 hours of virtual time."""

from __future__ import annotations

from dataclasses import dataclass

TOKEN_LIFETIME = 2 * 3600.0


@dataclass(frozen=True, slots=True)
class Grant:
    account_id: str
    api_key: str
    expires_at: float


class Tokens:
    def __init__(self) -> None:
        self._grants: dict[str, Grant] = {}

    def issue(self, token: str, account_id: str, api_key: str, now: float) -> None:
        self._grants[token] = Grant(account_id, api_key, now + TOKEN_LIFETIME)
        if len(self._grants) > 10_000:
            self._forget_expired(now)

    def lookup(self, token: str, now: float) -> Grant | None:
        """The live grant for `token`, or None when unknown or expired."""
        grant = self._grants.get(token)
        if grant is None or now >= grant.expires_at:
            return None
        return grant

    def _forget_expired(self, now: float) -> None:
        for token in [t for t, g in self._grants.items() if now >= g.expires_at]:
            del self._grants[token]
