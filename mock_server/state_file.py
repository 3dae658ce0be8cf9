"""`--state PATH`: every sandbox's whole state kept in an SQLite file (docs/state.md).

What a response acknowledged is in the file before the response leaves: after every call
that may change state, what surrounds the call (`merchant.calls`, `control.calls`)
awaits `save()`, which resolves once a flush has written it. Calls that finish together
share one transaction (a group commit: under load, one commit serves many answers).
Changes made in the background (fulfillment steps and webhook attempts under a real
clock) are flushed as soon as the event loop is free. The file is in WAL mode with
`synchronous=NORMAL`: a committed transaction survives the process being killed
(`kill -9`); a power loss may lose the last transactions (see docs/state.md).

Per sandbox the file holds the state document of `domain.state_document`, split so that a
change costs its own size: one row per order, per delivery, per ledger entry and per
token; one row per catalog item, account and fault, and one for each other part kept
apart (`state_document.split_rest`: the scenarios, the queue, the plants, the shapes),
each rewritten only when it changed; and one small row for the rest (clock, random
counts, coverage). A save thus costs what changed, not the whole catalog (the file's
format 1 kept all of the rest in one row, rewritten on every change, and is read as it
is). A sandbox whose state was replaced wholesale (reset, `PUT /_mock/state`, new
accounts) is written out whole.

A row's rowid is the order it was first written in, which is the order its order,
delivery, token or sandbox was created in; the restore reads rows in rowid order, so
every list comes back in creation order (docs/state.md). A changed row is therefore
updated in place (`ON CONFLICT ... DO UPDATE`), never replaced: `INSERT OR REPLACE`
deletes the row and inserts it again with a new rowid, which moved it behind everything
created after it.
"""

from __future__ import annotations

import asyncio
import fcntl
import itertools
import os
import sqlite3
from pathlib import Path
from typing import Any

import orjson

from .domain import state_document
from .domain.deliveries import Delivery
from .domain.orders import Order
from .domain.randomness import server_secret
from .domain.sandbox import Sandbox
from .domain.sandbox_ids import DEFAULT_ID
from .domain.sandboxes import Entry, Sandboxes
from .errors import StateFileError

#: The file's own format (its tables); the state document has `state_document.FORMAT`.
FILE_FORMAT = 2
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sandboxes (id TEXT PRIMARY KEY, entry TEXT NOT NULL,
                                      rest TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS orders (sandbox TEXT, id TEXT, doc TEXT NOT NULL,
                                   PRIMARY KEY (sandbox, id));
CREATE TABLE IF NOT EXISTS deliveries (sandbox TEXT, id TEXT, doc TEXT NOT NULL,
                                       PRIMARY KEY (sandbox, id));
CREATE TABLE IF NOT EXISTS ledger (sandbox TEXT, account TEXT, seq INTEGER, kind TEXT,
                                   amount INTEGER, balance_after INTEGER, order_id TEXT,
                                   at REAL, PRIMARY KEY (sandbox, account, seq));
CREATE TABLE IF NOT EXISTS tokens (sandbox TEXT, token TEXT, row TEXT NOT NULL,
                                   PRIMARY KEY (sandbox, token));
CREATE TABLE IF NOT EXISTS parts (sandbox TEXT, part TEXT, key TEXT, doc TEXT NOT NULL,
                                  PRIMARY KEY (sandbox, part, key));
"""
_ROWS = ("orders", "deliveries", "ledger", "tokens", "parts")
#: Write a row, or change the one already there in place (keeping its rowid).
_UPSERT_ORDER = (
    "INSERT INTO orders VALUES (?, ?, ?) ON CONFLICT (sandbox, id) DO UPDATE SET doc = excluded.doc"
)
_UPSERT_DELIVERY = (
    "INSERT INTO deliveries VALUES (?, ?, ?) "
    "ON CONFLICT (sandbox, id) DO UPDATE SET doc = excluded.doc"
)
_UPSERT_TOKEN = (
    "INSERT INTO tokens VALUES (?, ?, ?) "
    "ON CONFLICT (sandbox, token) DO UPDATE SET row = excluded.row"
)
_UPSERT_PART = (
    "INSERT INTO parts VALUES (?, ?, ?, ?) "
    "ON CONFLICT (sandbox, part, key) DO UPDATE SET doc = excluded.doc"
)
_UPSERT_SANDBOX = (
    "INSERT INTO sandboxes VALUES (?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET entry = excluded.entry, rest = excluded.rest"
)


class _Pending:
    """What changed in one sandbox since the last flush."""

    def __init__(self) -> None:
        self.orders: dict[str, Order] = {}
        self.deliveries: dict[str, Delivery] = {}
        self.tokens: list[str] = []
        #: A control call was made: any part of the rest may have changed. Otherwise
        #: (merchant calls, background work) only what `split_rest` looks at with
        #: `items` and `accounts`.
        self.control = False


class _Saved:
    """How far one sandbox's rows in the file go."""

    def __init__(self) -> None:
        self.generation = -1  # not the sandbox's yet: write it whole first
        self.ledger: dict[str, int] = {}  # account id -> entries written
        #: Each part kept apart, as the file holds it: its rows' keys in their order,
        #: each with its fingerprint and the hash of its JSON. A part not here yet is
        #: written whole (after a start, its rows may be in the rest of format 1).
        self.parts: dict[str, dict[str, tuple[Any, int]]] = {}
        #: The faults' part of the small rest as last written (a merchant call does not
        #: change it).
        self.faults: Any = None

    @classmethod
    def of(cls, sandbox: Sandbox) -> _Saved:
        """A sandbox just written whole (or read whole from the file)."""
        saved = cls()
        saved.generation = sandbox.generation
        saved.ledger = {a: sandbox.state.ledger.length(a) for a in sandbox.state.accounts}
        return saved


class StateFile:
    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = _lock(path)
        try:
            self._db = sqlite3.connect(path, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._check_format()
        except sqlite3.DatabaseError as exc:
            raise StateFileError(
                f"{path}: not a usable state file ({exc}): move it away (or delete it) "
                "to start fresh"
            ) from exc
        self._sandboxes: Sandboxes | None = None
        self._pending: dict[str, _Pending] = {}
        self._saved: dict[str, _Saved] = {}
        self._flush_soon: asyncio.Handle | None = None
        self._waiting: list[asyncio.Future[None]] = []

    # -- start-up -----------------------------------------------------------------------

    def _check_format(self) -> None:
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master")}
        if tables and "meta" not in tables:
            raise sqlite3.DatabaseError("it holds no sandbox state")
        self._db.executescript(_SCHEMA)
        row = self._db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        if row is None:
            self._db.execute("INSERT INTO meta VALUES ('format', ?)", (str(FILE_FORMAT),))
        elif not str(row[0]).isdigit():
            raise sqlite3.DatabaseError(f"its format is {row[0]!r}, not a number")
        elif int(row[0]) > FILE_FORMAT:
            raise StateFileError(
                f"{self.path}: written by a newer sandbox (file format {row[0]}; this one "
                f"reads up to {FILE_FORMAT}): upgrade, or start with another --state file"
            )

    def server_secret(self) -> bytes:
        """The secret that keys created sandboxes' credentials (`domain.randomness`): made
        at this file's first start and kept in it, so that a restart goes on drawing the
        same sequences; it is never shown."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'secret'").fetchone()
        if row is not None:
            try:
                return bytes.fromhex(row[0])
            except ValueError as exc:
                raise StateFileError(
                    f"{self.path}: its server secret is not hex: move the file away (or "
                    "delete it) to start fresh"
                ) from exc
        secret = server_secret()
        self._db.execute("INSERT INTO meta VALUES ('secret', ?)", (secret.hex(),))
        return secret

    def attach(self, sandboxes: Sandboxes) -> None:
        """Bring every saved sandbox back into `sandboxes`, then keep the file current.
        (The CLI keeps the cyclic garbage collector off while this runs: restoring
        builds millions of objects and frees none.)"""
        self._sandboxes = sandboxes
        try:
            rows = self._db.execute("SELECT id, entry, rest FROM sandboxes ORDER BY rowid")
            rows = rows.fetchall()
        except sqlite3.DatabaseError as exc:
            raise StateFileError(
                f"{self.path}: not a usable state file ({exc}): move it away (or delete "
                "it) to start fresh"
            ) from exc
        saved_rows = {
            table: self._by_sandbox(table) for table in ("orders", "deliveries", "tokens")
        }
        parts = self._parts()
        for sandbox_id, entry_json, rest_json in rows:
            try:
                own = {table: found.get(sandbox_id, []) for table, found in saved_rows.items()}
                rest = state_document.join_rest(orjson.loads(rest_json), parts.get(sandbox_id, {}))
                document = self._document(sandbox_id, rest, own)
                entry = orjson.loads(entry_json)
                if sandbox_id == DEFAULT_ID:
                    sandbox = sandboxes.resume_default(entry["created_at"]).sandbox
                else:
                    sandbox = sandboxes.restore(
                        sandbox_id,
                        entry["options"],
                        entry["keys"],
                        entry["control_token"],
                        entry["created_at"],
                        entry["last_used_at"],
                        entry["ttl"],
                    ).sandbox
                sandbox.resume_saved(document)
                self._saved[sandbox_id] = _Saved.of(sandbox)  # the file holds it already
            except Exception as exc:  # noqa: BLE001 - any refusal: the file is unusable
                detail = getattr(exc, "detail", None) or str(exc)
                raise StateFileError(
                    f"{self.path}: sandbox {sandbox_id} cannot be restored ({detail}): move "
                    "the file away (or delete it) to start fresh"
                ) from exc
        for entry in sandboxes.entries():
            self._watch(entry.sandbox)
        sandboxes.observers.append(self)
        # Read whatever its format; written from now on in this one's (each sandbox's
        # parts are written whole at its first save).
        self._db.execute("UPDATE meta SET value = ? WHERE key = 'format'", (str(FILE_FORMAT),))
        self.flush()

    def _by_sandbox(self, table: str) -> dict[str, list[str]]:
        """Every row's JSON of `table`, by sandbox, in the order created. One scan in
        rowid order: filtering by sandbox first made SQLite sort every row of the table
        before returning one, which slowed a restart (restart times: bench/STATE.md)."""
        column = "row" if table == "tokens" else "doc"
        found: dict[str, list[str]] = {}
        query = f"SELECT sandbox, {column} FROM {table} ORDER BY rowid"  # noqa: S608
        for sandbox_id, text in self._db.execute(query):
            found.setdefault(sandbox_id, []).append(text)
        return found

    def _parts(self) -> dict[str, dict[str, list[Any]]]:
        """Every part's rows, by sandbox and part, in the order written."""
        found: dict[str, dict[str, list[Any]]] = {}
        query = "SELECT sandbox, part, doc FROM parts ORDER BY rowid"
        for sandbox_id, part, text in self._db.execute(query):
            found.setdefault(sandbox_id, {}).setdefault(part, []).append(orjson.loads(text))
        return found

    def _document(
        self, sandbox_id: str, rest: dict[str, Any], rows: dict[str, list[str]]
    ) -> dict[str, Any]:
        ledger: dict[str, list[Any]] = {account["id"]: [] for account in rest["accounts"]}
        # Columns, not JSON: two entries an order, read back without parsing.
        for account, *row in self._db.execute(
            "SELECT account, kind, amount, balance_after, order_id, at FROM ledger "
            "WHERE sandbox = ? ORDER BY account, seq",
            (sandbox_id,),
        ):
            ledger.setdefault(account, []).append(row)
        now = rest["clock"]["now"]
        tokens = [token for token in map(orjson.loads, rows["tokens"]) if token[3] > now]
        return rest | {
            "orders": [orjson.loads(text) for text in rows["orders"]],
            "deliveries": [orjson.loads(text) for text in rows["deliveries"]],
            "ledger": ledger,
            "tokens": tokens,
        }

    # -- what changed (Sandbox.recorder, Sandboxes observer) ----------------------------

    def _watch(self, sandbox: Sandbox) -> None:
        sandbox.recorder = self

    def _pending_of(self, sandbox: Sandbox) -> _Pending:
        key = sandbox.sandbox_id
        pending = self._pending.get(key)
        if pending is None:
            pending = self._pending[key] = _Pending()
        self._soon()
        return pending

    def order(self, sandbox: Sandbox, order: Order) -> None:
        self._pending_of(sandbox).orders[order.id] = order

    def delivery(self, sandbox: Sandbox, delivery: Delivery) -> None:
        self._pending_of(sandbox).deliveries[delivery.id] = delivery

    def token(self, sandbox: Sandbox, token: str) -> None:
        self._pending_of(sandbox).tokens.append(token)

    def touched(self, sandbox: Sandbox) -> None:
        """Anything may have changed (a control call): look at every part of the rest."""
        self._pending_of(sandbox).control = True

    def created(self, entry: Entry) -> None:
        self._watch(entry.sandbox)
        self._pending_of(entry.sandbox)

    def dropped(self, entry: Entry) -> None:
        entry.sandbox.recorder = None
        self._pending.pop(entry.sandbox_id, None)
        self._saved.pop(entry.sandbox_id, None)
        with self._transaction():
            for table in ("sandboxes", *_ROWS):
                self._delete(entry.sandbox_id, table)

    async def save(self, sandbox: Sandbox, *, merchant: bool = False) -> None:
        """After a call that may have changed `sandbox`: its changes are in the file when
        this returns, before the call's answer leaves. A `merchant` call changes no more
        of the rest than its orders' items and accounts, the queue, the faults' uses and
        the plants: only those are looked at."""
        if merchant:
            self._pending_of(sandbox)
        else:
            self.touched(sandbox)
        await self.committed()

    def committed(self) -> asyncio.Future[None]:
        """Resolves once everything recorded so far is in the file."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        self._soon()
        return waiter

    def _soon(self) -> None:
        """Background changes reach the file as soon as the event loop is free."""
        if self._flush_soon is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._flush_soon = loop.call_soon(self.flush)

    # -- writing ------------------------------------------------------------------------

    def flush(self) -> None:
        """Write every pending change, in one transaction; then release the answers
        waiting for it."""
        self._flush_soon = None
        waiting, self._waiting = self._waiting, []
        try:
            if self._pending and self._sandboxes is not None:
                entries = {entry.sandbox_id: entry for entry in self._sandboxes.entries()}
                pending, self._pending = self._pending, {}
                with self._transaction():
                    for sandbox_id, changes in pending.items():
                        entry = entries.get(sandbox_id)
                        if entry is not None:
                            self._write(entry, changes)
        except Exception as exc:
            for waiter in waiting:
                if not waiter.done():
                    waiter.set_exception(exc)
            raise
        for waiter in waiting:
            if not waiter.done():
                waiter.set_result(None)

    def _write(self, entry: Entry, changes: _Pending) -> None:
        sandbox, sandbox_id = entry.sandbox, entry.sandbox_id
        saved = self._saved.setdefault(sandbox_id, _Saved())
        if saved.generation != sandbox.generation:
            self._saved[sandbox_id] = saved = _Saved.of(sandbox)
            self._write_whole(entry, saved)
            return
        self._write_entry(entry, saved, changes)
        for order in changes.orders.values():
            self._db.execute(
                _UPSERT_ORDER, (sandbox_id, order.id, _json(state_document.order_state(order)))
            )
        for delivery in changes.deliveries.values():
            self._db.execute(
                _UPSERT_DELIVERY,
                (sandbox_id, delivery.id, _json(state_document.delivery_state(delivery))),
            )
        tokens = sandbox.state.tokens
        for token in changes.tokens:
            grant = tokens.lookup(token, sandbox.clock.now())
            if grant is not None:
                row = [token, grant.account_id, grant.api_key, grant.expires_at]
                self._db.execute(_UPSERT_TOKEN, (sandbox_id, token, _json(row)))
        ledger = sandbox.state.ledger
        for account_id in sandbox.state.accounts:
            start = saved.ledger.get(account_id, 0)
            rows = ledger.rows(account_id, start)
            self._db.executemany(
                "INSERT OR REPLACE INTO ledger VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(sandbox_id, account_id, start + i, *r) for i, r in enumerate(rows)],
            )
            saved.ledger[account_id] = start + len(rows)

    def _write_whole(self, entry: Entry, saved: _Saved) -> None:
        """Every row of the sandbox anew (`saved` knows no part yet)."""
        document = entry.sandbox.dump_state()
        sandbox_id = entry.sandbox_id
        for table in _ROWS:
            self._delete(sandbox_id, table)
        self._write_entry(entry, saved)
        self._db.executemany(
            "INSERT INTO orders VALUES (?, ?, ?)",
            [(sandbox_id, o["id"], _json(o)) for o in document["orders"]],
        )
        self._db.executemany(
            "INSERT INTO deliveries VALUES (?, ?, ?)",
            [(sandbox_id, d["id"], _json(d)) for d in document["deliveries"]],
        )
        self._db.executemany(
            "INSERT INTO ledger VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (sandbox_id, account_id, seq, *row)
                for account_id, rows in document["ledger"].items()
                for seq, row in enumerate(rows)
            ],
        )
        self._db.executemany(
            "INSERT INTO tokens VALUES (?, ?, ?)",
            [(sandbox_id, t[0], _json(t)) for t in document["tokens"]],
        )

    def _write_entry(self, entry: Entry, saved: _Saved, changes: _Pending | None = None) -> None:
        """The sandbox's entry and small rest, and the rows of its parts that changed:
        after merchant calls and background work, only those they can change."""
        sandbox = entry.sandbox
        if (
            changes is not None
            and not changes.control
            and saved.faults is not None
            and all(part in saved.parts for part in state_document.APART)
        ):
            orders = changes.orders.values()
            rest, parts = state_document.split_rest(
                sandbox,
                items={order.item_id for order in orders},
                accounts={order.account_id for order in orders},
            )
            rest["faults"] = saved.faults
            chosen = ("catalog", "accounts")
        else:
            rest, parts = state_document.split_rest(sandbox)
            saved.faults = rest["faults"]
            chosen = ()
        for part, rows in parts.items():
            self._write_part(entry.sandbox_id, part, rows, saved, only=part in chosen)
        info = {
            "options": entry.options,
            "keys": entry.keys,
            "control_token": entry.control_token,
            "created_at": entry.created_at,
            "last_used_at": entry.last_used_at,
            "ttl": entry.ttl,
        }
        self._db.execute(_UPSERT_SANDBOX, (entry.sandbox_id, _json(info), _json(rest)))

    def _write_part(
        self,
        sandbox_id: str,
        part: str,
        rows: list[state_document.Row],
        saved: _Saved,
        *,
        only: bool = False,
    ) -> None:
        """The rows of `part` that changed since it was last written: a row is made
        (and encoded) only when its fingerprint changed, and written only when its JSON
        did. Rows gone are deleted, new ones appended; rows in another order are all
        written anew, so that the rowid order stays the part's order. `only`: `rows`
        are some of the part's rows, the others as they were."""
        before = saved.parts.get(part)
        if only and before is not None:
            self._write_rows(sandbox_id, part, rows, before)
            return
        kept: dict[str, tuple[Any, int]] = {}
        changed: dict[str, str] = {}
        for key, fingerprint, make in rows:
            old = before.get(key) if before is not None else None
            if old is not None and fingerprint is not None and old[0] == fingerprint:
                kept[key] = old
                continue
            text = _json(make())
            kept[key] = (fingerprint, hash(text))
            if old is None or old[1] != kept[key][1]:
                changed[key] = text
        saved.parts[part] = kept
        if before is not None and _in_order(before, kept):
            gone = [(sandbox_id, part, key) for key in before if key not in kept]
            self._db.executemany(
                "DELETE FROM parts WHERE sandbox = ? AND part = ? AND key = ?", gone
            )
            self._db.executemany(
                _UPSERT_PART, [(sandbox_id, part, key, text) for key, text in changed.items()]
            )
            return
        self._db.execute("DELETE FROM parts WHERE sandbox = ? AND part = ?", (sandbox_id, part))
        self._db.executemany(
            "INSERT INTO parts VALUES (?, ?, ?, ?)",
            [
                (sandbox_id, part, key, changed[key] if key in changed else _json(make()))
                for key, _, make in rows
            ],
        )

    def _write_rows(
        self,
        sandbox_id: str,
        part: str,
        rows: list[state_document.Row],
        before: dict[str, tuple[Any, int]],
    ) -> None:
        """Some rows of a part already written, each where it is."""
        for key, fingerprint, make in rows:
            old = before.get(key)
            if old is None:
                continue  # not the part's any more: a control call replaced it since
            if fingerprint is not None and old[0] == fingerprint:
                continue
            text = _json(make())
            before[key] = (fingerprint, hash(text))
            if old[1] != before[key][1]:
                self._db.execute(_UPSERT_PART, (sandbox_id, part, key, text))

    def _delete(self, sandbox_id: str, table: str) -> None:
        column = "id" if table == "sandboxes" else "sandbox"
        self._db.execute(f"DELETE FROM {table} WHERE {column} = ?", (sandbox_id,))  # noqa: S608

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    def close(self) -> None:
        """Last writes, every sandbox's included: what reads changed (their coverage
        counts, a fault's use) is written now, since a read does not wait for the file.
        The sandboxes then stop without their rows being dropped."""
        if self._sandboxes is not None:
            for entry in self._sandboxes.entries():
                self.touched(entry.sandbox)
        self.flush()
        if self._sandboxes is not None and self in self._sandboxes.observers:
            self._sandboxes.observers.remove(self)
        self._db.close()
        os.close(self._lock)


def _in_order(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether `after` is `before` with some keys gone and others added at the end."""
    still = [key for key in before if key in after]
    return list(itertools.islice(after, len(still))) == still


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()  # a tenth of json.dumps's time, on every change


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        self._db.execute("COMMIT" if kind is None else "ROLLBACK")


def _lock(path: str) -> int:
    """One server per state file: an exclusive lock on `PATH.lock`, held while running."""
    lock_path = f"{path}.lock"
    Path(lock_path).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        raise StateFileError(
            f"{path}: another server is using this state file (lock {lock_path}): stop it, "
            "or give this one another --state file"
        ) from exc
    return fd
