"""The sandboxes one server holds: the default one and those made at run time
(docs/control-api.md, "Sandboxes").

A sandbox is a whole `Sandbox`; this registry only creates, finds, expires and drops
them, and routes credentials to them:

* by id, for paths under `/_mock/sandboxes/{id}` (an unknown, deleted or expired id is
  a 404 that says which, never a fall-back to the default sandbox);
* by bearer token on the root paths: a sandbox's tokens start with its id;
* by API key on the root token endpoint: the one live sandbox that holds the key.

What a tenant must not compute comes from the operating system's random source: a
created sandbox's id, control token and API keys, and its seed when its body gives none.
Its tokens and drawn webhook secrets are keyed by `secret`, the server's (docs/hosting.md,
"What a tenant can see").

Idle time is wall time (`wall`, injectable for tests): a sandbox nobody has called for
its `ttl` expires; the default sandbox never does.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..clock import iso
from ..errors import ApiError, TokenError, not_found
from .quotas import NO_QUOTAS, Quotas
from .randomness import own_seed, server_secret
from .sandbox import Sandbox
from .sandbox_ids import DEFAULT_ID, ID_PREFIX, RANDOM_DIGITS, created_id, node_of
from .sandbox_options import parse_sandbox_options, with_own_credentials
from .startup import StartupState

#: How many dropped ids are remembered, so that a late call learns why it got a 404.
_GONE_MEMORY = 10_000

MakeSandbox = Callable[[StartupState, str, Quotas], Sandbox]


@dataclass(eq=False, slots=True)
class Entry:
    sandbox_id: str
    sandbox: Sandbox
    control_token: str | None  # None for the default sandbox: only the admin token
    created_at: float  # wall time
    last_used_at: float
    ttl: float | None  # idle seconds before expiry; None never expires
    #: How it was made (the create body, with the seed it drew when the body gave none,
    #: and the keys it got instead of the server's), so a state file can make it again.
    options: dict[str, Any] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)

    @property
    def expires_at(self) -> float | None:
        return None if self.ttl is None else self.last_used_at + self.ttl

    def expired(self, now: float) -> bool:
        return self.ttl is not None and now >= self.last_used_at + self.ttl

    def base_path(self) -> str:
        return f"/_mock/sandboxes/{self.sandbox_id}"

    def view(self, server_url: str) -> dict[str, Any]:
        expires = self.expires_at
        return {
            "id": self.sandbox_id,
            "base_url": server_url + self.base_path(),
            "created_at": iso(round(self.created_at, 3)),
            # The default sandbox never expires, so its use is not tracked.
            "last_used_at": iso(round(self.last_used_at, 3)) if self.ttl is not None else None,
            "expires_at": iso(round(expires, 3)) if expires is not None else None,
            "orders": len(self.sandbox.state.orders),
        }


class Sandboxes:
    def __init__(
        self,
        default: Sandbox,
        *,
        make: MakeSandbox,
        ttl: float,
        limit: int,
        quotas: Quotas = NO_QUOTAS,
        node_id: str | None = None,
        public_url: str | None = None,
        secret: bytes | None = None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        now = wall()
        self.default = Entry(DEFAULT_ID, default, None, now, now, None)
        self._make = make
        self._ttl = ttl
        self._limit = limit
        #: What each created sandbox may hold (`domain/quotas.py`).
        self.quotas = quotas
        #: This node's id in a cluster (`--node-id`): created ids name it.
        self._node_id = node_id
        #: The address clients use (`--public-url`), when set: base URLs are built on it
        #: instead of the address a request came to.
        self.public_url = public_url
        self._wall = wall
        self._live: dict[str, Entry] = {}
        self._gone: OrderedDict[str, str] = OrderedDict()
        self._closing: set[asyncio.Task[None]] = set()
        #: Told when a sandbox is created or dropped (the state file).
        self.observers: list[Any] = []
        #: Keys every created sandbox's credentials (`randomness.Randomness`); a state
        #: file keeps it, so that restored sandboxes go on with the same sequences.
        self._secret = secret if secret is not None else server_secret()

    # -- creating and dropping ----------------------------------------------------------

    def create(self, body: dict[str, Any]) -> Entry:
        """A new sandbox from `body` (a `POST /_mock/sandboxes` body), started; all or nothing."""
        if body.get("seed") is None:
            body = {**body, "seed": own_seed()}  # never the server's
        options = parse_sandbox_options(body, self.default.sandbox.startup)
        startup = options.startup
        # What the body brings counts against the quotas; the server's own defaults,
        # which every created sandbox starts from, are the operator's choice.
        if body.get("accounts") is not None:
            self.quotas.check("accounts", len(startup.accounts))
            self.quotas.check("api_keys", sum(len(a.api_keys) for a in startup.accounts))
        if body.get("catalog") is not None:
            self.quotas.check("catalog", len(startup.catalog))
        if body.get("scenarios") is not None:
            added = len(startup.scenarios) - len(self.default.sandbox.startup.scenarios)
            self.quotas.check("scenarios", added)
        self.expire_idle()
        if len(self._live) >= self._limit:
            raise ApiError(
                429,
                "too_many_sandboxes",
                f"This server already holds {self._limit} sandboxes (--max-sandboxes): "
                "delete one you no longer need, or wait for idle ones to expire",
            )
        sandbox_id = self._new_id()
        keys = (
            []
            if options.accounts_given
            else [f"ak_{sandbox_id}_{secrets.token_hex(16)}" for _ in options.startup.accounts]
        )
        now = self._wall()
        entry = self._add(
            sandbox_id,
            options.startup,
            body,
            keys,
            f"ctl_{secrets.token_hex(16)}",
            now,
            now,
            options.ttl or self._ttl,
        )
        for observer in self.observers:
            observer.created(entry)
        return entry

    def restore(
        self,
        sandbox_id: str,
        body: dict[str, Any],
        keys: list[str],
        control_token: str,
        created_at: float,
        last_used_at: float,
        ttl: float,
    ) -> Entry:
        """A sandbox of an earlier run made again as it was created (a state file then
        brings its state back)."""
        startup = parse_sandbox_options(body, self.default.sandbox.startup, restoring=True).startup
        entry = self._add(
            sandbox_id, startup, body, keys, control_token, created_at, last_used_at, ttl
        )
        self._gone.pop(sandbox_id, None)
        return entry

    def _add(
        self,
        sandbox_id: str,
        startup: StartupState,
        body: dict[str, Any],
        keys: list[str],
        control_token: str,
        created_at: float,
        last_used_at: float,
        ttl: float,
    ) -> Entry:
        if keys:
            startup = replace(startup, accounts=with_own_credentials(startup.accounts, keys))
        startup = replace(startup, credential_key=self._secret)
        sandbox = self._make(startup, sandbox_id, self.quotas)
        entry = Entry(sandbox_id, sandbox, control_token, created_at, last_used_at, ttl, body, keys)
        self._live[sandbox_id] = entry
        sandbox.start()
        return entry

    def resume_default(self, created_at: float) -> Entry:
        """The default sandbox of an earlier run (a state file): made when that run's
        server first started."""
        self.default.created_at = created_at
        return self.default

    def delete(self, sandbox_id: str) -> None:
        if sandbox_id == DEFAULT_ID:
            raise ApiError(
                400,
                "validation_error",
                "The default sandbox cannot be deleted; POST /_mock/reset resets it",
            )
        self._drop(self.find(sandbox_id, touch=False), "was deleted")

    def expire_idle(self) -> int:
        """Drop every sandbox idle past its ttl; answers how many went."""
        now = self._wall()
        expired = [entry for entry in self._live.values() if entry.expired(now)]
        for entry in expired:
            self._drop(entry, _expiry_reason(entry))
        return len(expired)

    async def close_all(self) -> None:
        """Server shutdown: stop every sandbox, the default one included."""
        for entry in list(self._live.values()):
            self._drop(entry, "was stopped with the server")
        await self.default.sandbox.close()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)

    # -- finding ------------------------------------------------------------------------

    @property
    def routing_needed(self) -> bool:
        """False while only the default sandbox ever existed on a single server: root
        calls skip routing. A node of a cluster always routes, so that a token of another
        node's sandbox is told where that sandbox lives."""
        return bool(self._live or self._gone or self._node_id)

    def control_token_of(self, sandbox_id: str) -> str | None:
        """The control token of a live sandbox, without touching or expiring it."""
        entry = self._live.get(sandbox_id)
        return entry.control_token if entry is not None else None

    def find(self, sandbox_id: str, *, touch: bool = True) -> Entry:
        """The live sandbox `sandbox_id`, or a 404 saying why there is none."""
        if sandbox_id == DEFAULT_ID:
            return self.default
        entry = self._live.get(sandbox_id)
        if entry is not None and entry.expired(self._wall()):
            self._drop(entry, _expiry_reason(entry))
            entry = None
        if entry is None:
            node = self.node_elsewhere(sandbox_id)
            if node is not None:
                raise not_found(
                    f"Sandbox {sandbox_id} lives on node {node}, not on this one: the "
                    "router sends its base path there (docs/cluster.md)"
                )
            why = self.missing_reason(sandbox_id)
            raise not_found(f"Sandbox {sandbox_id} {why}: create one with POST /_mock/sandboxes")
        if touch:
            entry.last_used_at = self._wall()
        return entry

    def node_elsewhere(self, sandbox_id: str) -> str | None:
        """The other node of a cluster that `sandbox_id` names, or None (this node's id,
        or an id that names none)."""
        node = node_of(sandbox_id)
        return node if node is not None and node != self._node_id else None

    def missing_reason(self, sandbox_id: str) -> str:
        """Why no live sandbox here has this id: it was deleted or expired (which), or
        this server never held it."""
        return self._gone.get(sandbox_id, "does not exist on this server")

    def for_token(self, token: str) -> Entry | None:
        """The sandbox whose token this is (root paths), untouched: whether the token is
        valid there is the sandbox's to say; None when it is gone. A token without a
        sandbox prefix is the default sandbox's."""
        if not token.startswith(ID_PREFIX):
            return self.default
        sandbox_id = token.partition(".")[0]
        try:
            return self.find(sandbox_id, touch=False)
        except ApiError:
            return None

    def touch(self, entry: Entry) -> None:
        """A call of one of the sandbox's own callers: its idle time starts again. Only
        such calls keep a sandbox alive (docs/hosting.md, "What a tenant can see")."""
        entry.last_used_at = self._wall()

    def for_api_key(self, api_key: str, server_url: str) -> Entry:
        """The one sandbox holding `api_key` (the root token endpoint). A key no sandbox
        holds goes to the default one, which refuses it as usual; so does a key the
        default sandbox holds, whoever else does (a created sandbox may not hold its
        documented key, but one restored from an earlier run's `--state` file may):
        no tenant can take the root paths' own key from them."""
        if not self._live or api_key in self.default.sandbox.state.account_by_key:
            return self.default
        self.expire_idle()
        holders = [
            entry for entry in self._live.values() if api_key in entry.sandbox.state.account_by_key
        ]
        if len(holders) > 1:
            urls = ", ".join(server_url + e.base_path() for e in holders)
            raise TokenError(
                401,
                f"API key {api_key} is held by {len(holders)} sandboxes: exchange it at "
                f"the base URL of the one you mean ({urls})",
            )
        return holders[0] if holders else self.default

    def entries(self) -> list[Entry]:
        """The default sandbox, then every live one, oldest first."""
        self.expire_idle()
        return [self.default, *self._live.values()]

    # -- internals ----------------------------------------------------------------------

    def _new_id(self) -> str:
        while True:
            sandbox_id = created_id(self._node_id, secrets.token_hex(RANDOM_DIGITS // 2))
            if sandbox_id not in self._live and sandbox_id not in self._gone:
                return sandbox_id

    def _drop(self, entry: Entry, why: str) -> None:
        del self._live[entry.sandbox_id]
        for observer in self.observers:
            observer.dropped(entry)
        self._gone[entry.sandbox_id] = why
        while len(self._gone) > _GONE_MEMORY:
            self._gone.popitem(last=False)
        task = asyncio.ensure_future(entry.sandbox.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)


def _expiry_reason(entry: Entry) -> str:
    return f"expired after {entry.ttl:g} s without a request"
