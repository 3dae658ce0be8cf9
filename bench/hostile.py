"""A hostile tenant on a hosted server (docs/hosting.md): every quota at its limit, every
hostile input, one request at a time, each request's cost to the server.

    python bench/hostile.py [--quick] [--orders 20000] [--timeout 30] [--no-write]

The server runs as docs/hosting.md's "A public test mode" advises (`mock-server serve`
on 127.0.0.1, a free port, `--admin-token`, `--webhook-deny-private`, `--sandbox-rate`,
every `--sandbox-max-*` flag at its default) with two changes, both printed in the
report: `--sandbox-max-orders` is `--orders` (20,000 by default, the configuration of
that section, so the run takes minutes rather than an hour), and `--webhook-allow
127.0.0.1` lets webhooks reach the bench's own receiver (bench/receiver.py), which
`--webhook-deny-private` alone would refuse. `--rate` (1,000 per second by default)
replaces that section's 50 so that filling the quotas over HTTP takes seconds; a call
the rate refuses is retried and not counted.

The admin creates two sandboxes (POST /_mock/sandboxes); from then on the attacker, A,
holds only its sandbox's control token and API key, and B, the other tenant, only reads
its balance. Each request of A is sent alone; for it the bench records

* the status (and the envelope's code) or "timed out" after `--timeout` seconds;
* the server process's CPU time, from /proc/PID/task/*/schedstat (nanoseconds; the
  clock ticks of /proc/PID/stat where schedstat is missing), read before and after, less
  what B's probes cost (measured at the start);
* the wall time of the answer;
* the other tenant's wait: B's balance reads sent every 20 ms while A's request is in
  flight, the longest one's wall time.

Quotas are filled one request after another (the fill's dearest request and its median
are reported, then the call past the quota). After each phase the server's RSS (VmRSS)
and its peak during the phase (VmHWM, reset through /proc/PID/clear_refs) are read. A
request that times out leaves the server busy: the bench waits up to `--recover`
seconds for /_mock/health and otherwise starts a fresh server and sandboxes (the table
says so). A watchdog kills the server above `--rss-cap` MiB, so that a hostile input
cannot take the machine's memory.

Writes bench/HOSTILE.md unless --no-write; `--quick` runs small quotas and payloads in
under a minute (a smoke test); `--only "orders,catalog"` runs those phases alone.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import secrets
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from processes import BENCH, PYTHON, Placement, Server, placement, receiver

#: A body's largest size (docs/control-api.md, "The rules that hold for every call").
BODY_LIMIT = 1024 * 1024
#: B's probes while A's request is in flight: one every PROBE_GAP seconds.
PROBE_GAP = 0.02
#: docs/hosting.md's bound on one request's server CPU at any quota's limit.
BOUND_MS = 50.0
YAML = "application/yaml"


# ---------------------------------------------------------------------------------------
# reading the server process


def cpu_ns(pid: int) -> int:
    """The process's CPU time in ns: every thread's schedstat, else /proc/PID/stat."""
    total, found = 0, False
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            path = f"/proc/{pid}/task/{task}/schedstat"
            with contextlib.suppress(OSError, ValueError, IndexError), open(path) as stat:
                total += int(stat.read().split()[0])
                found = True
    if found:
        return total
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return (int(fields[11]) + int(fields[12])) * 10**9 // os.sysconf("SC_CLK_TCK")


def status_mib(pid: int, name: str) -> float:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def reset_peak(pid: int) -> None:
    """Start VmHWM again from the current RSS (Linux 4.0+; ignored where refused)."""
    with contextlib.suppress(OSError), open(f"/proc/{pid}/clear_refs", "w") as refs:
        refs.write("5")


# ---------------------------------------------------------------------------------------
# HTTP


class TimedOut(Exception):
    pass


class Conn:
    """One keep-alive connection with a per-request timeout; reopened after an error."""

    def __init__(self, url: str, timeout: float) -> None:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        self.host, self.port, self.timeout = host, int(port), timeout
        self.conn: http.client.HTTPConnection | None = None

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        token: str | None = None,
        ctype: str = "",
        extra: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        headers = dict(extra or {})
        data = body
        if body is not None and not isinstance(body, bytes):
            data = json.dumps(body, separators=(",", ":")).encode()
        if data is not None:
            headers["Content-Type"] = ctype or "application/json"
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            self.conn.request(method, path, body=data, headers=headers)
            response = self.conn.getresponse()
            raw = response.read()
        except TimeoutError as exc:
            self.close()
            raise TimedOut from exc
        except (OSError, http.client.HTTPException):
            self.close()
            raise
        return response.status, {k.lower(): v for k, v in response.getheaders()}, raw

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def code_of(raw: bytes) -> str:
    """The envelope's code (or the token endpoint's error, shortened)."""
    try:
        answer = json.loads(raw)
    except ValueError:
        return ""
    if not isinstance(answer, dict):
        return ""
    if "code" in answer:
        return str(answer["code"])
    return "error" if "error" in answer else ""


def detail_of(raw: bytes) -> str:
    """A refusal's detail, shortened for the table."""
    try:
        answer = json.loads(raw)
    except ValueError:
        return raw[:100].decode("utf-8", "replace")
    if not isinstance(answer, dict):
        return ""
    detail = str(answer.get("detail", answer.get("error", "")))
    return (detail[:140] + "...") if len(detail) > 140 else detail


@dataclass
class Tenant:
    base: str
    control: str
    api_key: str
    account_id: str
    conn: Conn
    bearer: str = ""


# ---------------------------------------------------------------------------------------
# the other tenant's probes


class Probe:
    """B's balance reads while A's request is in flight, every PROBE_GAP seconds."""

    def __init__(self) -> None:
        self.tenant: Tenant | None = None
        self._active = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._waits: list[float] = []
        self._done: list[float] = []
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            self._active.wait()
            self._idle.clear()
            while self._active.is_set() and self.tenant is not None:
                began = time.perf_counter()
                tenant = self.tenant
                # A failed probe still waited: its time counts all the same.
                with contextlib.suppress(Exception):
                    path = f"{tenant.base}/api/v1/account/balance"
                    tenant.conn.request("GET", path, None, tenant.bearer)
                self._waits.append(time.perf_counter() - began)
                self._done.append(time.perf_counter())
                pause = PROBE_GAP - (time.perf_counter() - began)
                if pause > 0:
                    time.sleep(pause)
            self._idle.set()

    def start(self) -> None:
        self._waits, self._done = [], []
        self._active.set()

    def stop(self, answered: float) -> tuple[int, float | None]:
        """(probes answered by `answered`, a perf_counter time; the longest wait in ms)."""
        self._active.clear()
        self._idle.wait(3 * PROBE_GAP + 60)
        waits = self._waits
        before = sum(1 for done in self._done if done <= answered)
        return before, (max(waits) * 1000 if waits else None)


# ---------------------------------------------------------------------------------------
# the run


@dataclass
class Row:
    phase: str
    what: str
    status: str
    cpu_ms: float | None
    wall_ms: float | None
    other_ms: float | None = None
    note: str = ""


@dataclass
class Bench:
    args: argparse.Namespace
    pin: Placement
    work: Path
    hook: str
    server: Server | None = None
    a: Tenant | None = None
    b: Tenant | None = None
    probe: Probe = field(default_factory=Probe)
    probe_cpu_ms: float = 0.0
    rows: list[Row] = field(default_factory=list)
    rss: list[tuple[str, float, float]] = field(default_factory=list)
    baseline_mib: float = 0.0
    restarts: int = 0
    admin: str = field(default_factory=lambda: secrets.token_hex(16))
    phase: str = ""
    _killed: str = ""
    #: The largest RSS the watchdog saw since the phase began (MiB), across restarts.
    seen_mib: float = 0.0
    #: The phases in which the watchdog killed the server.
    kills: list[str] = field(default_factory=list)

    # -- the server ---------------------------------------------------------------------

    def argv(self) -> list[str]:
        a = self.args
        argv = self.pin.server + [PYTHON, "-m", "mock_server", "serve", "--host", "127.0.0.1"]
        argv += ["--port", "0", "--admin-token", self.admin, "--webhook-deny-private"]
        argv += ["--webhook-allow", "127.0.0.1", "--sandbox-rate", str(a.rate)]
        for name in QUOTAS:
            argv += [f"--sandbox-max-{name.replace('_', '-')}", str(getattr(a, name))]
        return argv

    @property
    def pid(self) -> int:
        assert self.server is not None
        return self.server.proc.pid

    def start(self) -> None:
        self.server = Server(self.argv(), f"hostile-{self.restarts}", self.work)
        self._killed = ""
        threading.Thread(target=self._watch, args=(self.server,), daemon=True).start()
        admin = Conn(self.server.url, self.args.timeout)
        self.a = self._create(admin, "attacker")
        self.b = self._create(admin, "other")
        admin.close()
        self.probe.tenant = self.b
        self.login(self.a)
        self.login(self.b)

    def _watch(self, server: Server) -> None:
        """Kill the server above --rss-cap: a hostile input must not take the machine."""
        while server.proc.poll() is None:
            rss = status_mib(server.proc.pid, "VmRSS")
            self.seen_mib = max(self.seen_mib, rss)
            if rss > self.args.rss_cap:
                self._killed = f"killed by the bench at {rss:.0f} MiB RSS (--rss-cap)"
                self.kills.append(self.phase)
                server.proc.kill()
                return
            time.sleep(0.02)

    def _create(self, admin: Conn, name: str) -> Tenant:
        account = {
            "email": f"{name}@example.com",
            "api_key": f"ak_{name}_{secrets.token_hex(8)}",
            "balance": 10**9,
            "webhook_url": self.hook,
        }
        body = {"clock": "manual", "accounts": {"accounts": [account]}}
        status, _, raw = admin.request("POST", "/_mock/sandboxes", body, self.admin)
        if status != 201:
            raise RuntimeError(f"creating a sandbox answered {status}: {raw[:300]!r}")
        made = json.loads(raw)
        base = "/" + made["base_url"].split("//", 1)[1].split("/", 1)[1]
        conn = Conn(self.server.url, self.args.timeout)
        return Tenant(base, made["control_token"], made["api_key"], made["account_id"], conn)

    def login(self, tenant: Tenant) -> None:
        for _ in range(50):
            status, headers, raw = tenant.conn.request(
                "POST", f"{tenant.base}/api/v1/auth/token/client", {"api_key": tenant.api_key}
            )
            if status == 200:
                tenant.bearer = json.loads(raw)["access_token"]
                return
            if "retry-after" not in headers:
                raise RuntimeError(f"token exchange answered {status}: {raw[:300]!r}")
        raise RuntimeError("token exchange kept being rate limited")

    def stop(self) -> None:
        for tenant in (self.a, self.b):
            if tenant is not None:
                tenant.conn.close()
        if self.server is not None:
            self.server.stop()

    def recover(self, why: str) -> str:
        """After a timeout or a dead server: wait for health, else start afresh."""
        assert self.server is not None
        deadline = time.monotonic() + self.args.recover
        health = Conn(self.server.url, 2)
        while self.server.proc.poll() is None and time.monotonic() < deadline:
            try:
                if health.request("GET", "/_mock/health")[0] == 200:
                    health.close()
                    return f"{why}; the server answered again after it"
            except (TimedOut, OSError, http.client.HTTPException):
                time.sleep(0.5)
        health.close()
        dead = self.server.proc.poll()
        cause = self._killed or (f"exited {dead}" if dead is not None else "still busy")
        self.stop()
        self.restarts += 1
        self.start()
        return f"{why}; server {cause}: restarted with fresh sandboxes"

    # -- one request --------------------------------------------------------------------

    def call(
        self,
        what: str,
        method: str,
        path: str,
        body: Any = None,
        *,
        merchant: bool = False,
        ctype: str = "",
        record: bool = True,
        probe: bool = True,
        root: bool = False,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], bytes, Row]:
        """A's request alone, measured; `path` is under A's base path (`root`: as is)."""
        tenant = self.a
        assert tenant is not None
        token = tenant.bearer if merchant else (None if root else tenant.control)
        target = path if root else tenant.base + path
        before = cpu_ns(self.pid)
        if probe:
            self.probe.start()
        began = time.perf_counter()
        status, answer, raw, text = 0, {}, b"", ""
        try:
            status, answer, raw = tenant.conn.request(method, target, body, token, ctype, headers)
            text = f"{status} {code_of(raw) if status >= 400 else ''}".strip()
        except TimedOut:
            text = f"timed out ({self.args.timeout:g} s)"
        except (OSError, http.client.HTTPException) as exc:
            text = f"no answer: {type(exc).__name__}"
        answered = time.perf_counter()
        spent = cpu_ns(self.pid) - before
        wall = (answered - began) * 1000
        probes, other = self.probe.stop(answered) if probe else (0, None)
        cpu = spent / 1e6 - probes * self.probe_cpu_ms
        row = Row(self.phase, what, text, max(cpu, 0.0), wall, other)
        if status >= 400:
            row.note = detail_of(raw)
        if status == 0:
            row.note = self.recover(text)
        if record:
            self.rows.append(row)
        return status, answer, raw, row

    def fill(self, what: str, limit: int, make: Callable[[int], tuple[str, str, Any, bool]]) -> int:
        """Requests `make(i)` = (method, path, body, merchant) until one is refused or
        `limit` were taken, then one more (measured with probes) if none was refused:
        one row for the fill (its dearest request, the median in the note), one for the
        refusal. A call the rate refuses (Retry-After) is sent again."""
        cpu: list[float] = []
        dearest: Row | None = None
        index, throttled = 0, 0
        refused = False
        while index <= limit and throttled <= 10 * limit + 100:
            method, path, body, merchant = make(index)
            last = index == limit
            status, headers, _, row = self.call(
                what, method, path, body, merchant=merchant, record=last, probe=last
            )
            if status == 429 and "retry-after" in headers:
                throttled += 1
                continue
            if last or not 200 <= status < 300:
                if not last:
                    self.rows.append(row)
                refused = True
                break
            cpu.append(row.cpu_ms or 0.0)
            if dearest is None or (row.cpu_ms or 0) > (dearest.cpu_ms or 0):
                dearest = row
            index += 1
        if dearest is not None:
            median, number = statistics.median(cpu), cpu.index(max(cpu)) + 1
            note = f"median {median:.2f} ms; the dearest was number {number}"
            fill_row = Row(
                self.phase,
                f"{what} x {len(cpu)}",
                f"{dearest.status} each",
                dearest.cpu_ms,
                dearest.wall_ms,
                None,
                note,
            )
            self.rows.insert(len(self.rows) - (1 if refused else 0), fill_row)
        return len(cpu)

    # -- phases -------------------------------------------------------------------------

    @contextlib.contextmanager
    def section(self, name: str) -> Iterator[None]:
        self.phase = name
        print(f"-- {name}", file=sys.stderr)
        if self.server is not None and self.server.proc.poll() is None:
            reset_peak(self.pid)
        self.seen_mib = 0.0
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - a phase that broke must not end the run
            self.rows.append(
                Row(name, "phase stopped", f"{type(exc).__name__}: {exc}"[:120], None, None)
            )
            if self.server is not None and self.server.proc.poll() is not None:
                self.recover("the server had stopped")
        finally:
            if self.server is not None and self.server.proc.poll() is None:
                rss = status_mib(self.pid, "VmRSS")
                peak = max(status_mib(self.pid, "VmHWM"), self.seen_mib)
                self.rss.append((name, rss, peak))
                last = [r for r in self.rows if r.phase == name][-3:]
                for row in last:
                    print(
                        f"   {row.what[:60]:60} {row.status:28} cpu {fmt(row.cpu_ms)} ms",
                        file=sys.stderr,
                    )
                print(f"   RSS {rss:.1f} MiB, peak {peak:.1f} MiB", file=sys.stderr)


def fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


# ---------------------------------------------------------------------------------------
# what the attacker sends


def order(moid: str, item: int = 1001, quantity: int = 1) -> dict[str, Any]:
    return {"item_id": item, "quantity": quantity, "merchant_order_id": moid}


def catalog(count: int, pad: int = 0, max_quantity: int | None = None) -> dict[str, Any]:
    """`count` key items from id 1001 (orders use 1001), each with an unknown key of
    `pad` characters (a catalog keeps unknown keys)."""
    items = []
    for index in range(count):
        item: dict[str, Any] = {
            "id": 1001 + index,
            "name": f"Item {index}",
            "product_type": "key",
            "price": 100,
        }
        if pad:
            item["note"] = "n" * pad
        items.append(item)
    if max_quantity is not None:
        items[0]["max_quantity"] = max_quantity
    return {"items": items}


def padded_catalog(count: int) -> dict[str, Any]:
    """`count` items whose unknown keys fill the body up to the size limit."""
    bare = len(json.dumps(catalog(count), separators=(",", ":")))
    pad = max(0, (BODY_LIMIT - 4096 - bare) // count - len(',"note":""'))
    return catalog(count, pad)


def alias_bomb() -> bytes:
    """A catalog whose unknown keys are 9 levels of 10 aliases: 10^9 strings expanded."""
    lines = ["items:"]
    for level in range(9):
        refs = ", ".join(["lol"] * 10 if level == 0 else [f"*l{level - 1}"] * 10)
        lines += [
            f"  - id: {1001 + level}",
            f"    name: bomb {level}",
            "    product_type: key",
            "    price: 100",
            f"    note: &l{level} [{refs}]",
        ]
    return ("\n".join(lines) + "\n").encode()


def yaml_flow_list() -> bytes:
    """A 1 MiB YAML flow list as a catalog's items."""
    count = (BODY_LIMIT - 64) // 3
    return b"items: [" + b"1, " * (count - 1) + b"1]\n"


def yaml_nested() -> bytes:
    depth = (BODY_LIMIT - 64) // 2
    return b"scenarios: " + b"[" * depth + b"]" * depth + b"\n"


def steps_scenario(name: str, steps: int) -> dict[str, Any]:
    script = [{"after": 1, "status": "processing"} for _ in range(steps - 1)]
    return {
        "name": name,
        "description": "many steps",
        "steps": script + [{"after": 1, "status": "completed", "webhook": {"duplicate": 10}}],
    }


def pattern(size: int) -> str:
    """A `match` pattern of about `size` characters: many alternatives."""
    words = max(1, (size - 6) // 8)
    return "^(?:" + "|".join(f"w{index:06d}" for index in range(words)) + ")$"


def big_scenario(
    name: str, steps: int, description: int, match: int, limit: int = BODY_LIMIT
) -> dict[str, Any]:
    """One scenario with each part at the size given, all scaled down alike until it
    takes at most `limit` bytes as JSON."""
    for _ in range(60):
        doc = steps_scenario(name, max(1, steps))
        doc["description"] = "d" * max(1, description)
        doc["match"] = {"merchant_order_id": pattern(max(8, match))}
        if len(json.dumps(doc, separators=(",", ":"))) <= limit:
            return doc
        steps, description, match = steps * 9 // 10, description * 9 // 10, match * 9 // 10
    return doc


def fits(body: Any) -> bool:
    return len(json.dumps(body, separators=(",", ":"))) <= BODY_LIMIT


def largest(start: int, send: Callable[[int, bool], int], narrow: bool = True) -> int:
    """The largest size up to `start` that the server accepts (2xx), or 0: the sizes it
    allows, found by asking it. `send(size, record)` sends one and answers its status;
    only the first try and the size found are recorded (sent again where `narrow` went on
    past it, so that its row and the state it leaves are that size's)."""
    size, refused = start, 0
    for _ in range(12):
        status = send(size, refused == 0)
        if 200 <= status < 300:
            break
        if status == 0 or size <= 1:
            return 0
        refused, size = size, max(1, size // 4)
    else:
        return 0
    if not (narrow and refused):
        return size
    accepted = size
    for _ in range(8):
        middle = (accepted + refused) // 2
        if middle <= accepted:
            break
        status = send(middle, False)
        if status == 0:
            return 0
        accepted, refused = (middle, refused) if 200 <= status < 300 else (accepted, middle)
    if not 200 <= send(accepted, True) < 300:
        return 0
    return accepted


# ---------------------------------------------------------------------------------------
# the phases, in the order they run


def phase_calibrate(bench: Bench) -> None:
    """B's probe alone: what one balance read costs the server, paced as the probes are
    while A's requests run (one every PROBE_GAP seconds: a read after a pause costs more
    than one of a back-to-back run), so that it can be taken off A's rows."""
    before = cpu_ns(bench.pid)
    bench.probe.start()
    time.sleep(bench.args.calibration * PROBE_GAP)
    ended = time.perf_counter()
    spent = cpu_ns(bench.pid) - before
    probes, longest = bench.probe.stop(ended)
    bench.probe_cpu_ms = spent / 1e6 / max(1, probes)
    bench.rows.append(
        Row(
            bench.phase,
            "B's balance read alone (the probe)",
            "200",
            bench.probe_cpu_ms,
            None,
            longest,
            f"{probes} reads, one every {PROBE_GAP * 1000:g} ms",
        )
    )


def phase_tokens(bench: Bench) -> None:
    key = bench.a.api_key
    bench.fill(
        "POST /api/v1/auth/token/client (token quota)",
        bench.args.tokens,
        lambda i: ("POST", "/api/v1/auth/token/client", {"api_key": key}, False),
    )
    bench.call("GET /_mock/state holding the tokens", "GET", "/_mock/state")
    bench.call("POST /_mock/reset (drops them)", "POST", "/_mock/reset", {})
    bench.login(bench.a)


def phase_orders(bench: Bench) -> None:
    bench.fill(
        "POST /api/v1/orders (order quota)",
        bench.args.orders,
        lambda i: ("POST", "/api/v1/orders", order(f"o-{i}"), True),
    )
    bench.call(
        "POST /_mock/clock/advance 600 s: every order settles, webhooks delivered",
        "POST",
        "/_mock/clock/advance",
        {"seconds": 600},
    )
    account = bench.a.account_id
    for what, path in (
        ("GET /_mock/orders", "/_mock/orders"),
        ("GET /_mock/orders?merchant_order_id=o-7", "/_mock/orders?merchant_order_id=o-7"),
        ("GET /_mock/webhooks", "/_mock/webhooks"),
        ("GET /_mock/state", "/_mock/state"),
        ("GET /_mock/requests?limit=1000", "/_mock/requests?limit=1000"),
        ("GET /_mock/accounts/{id}/ledger", f"/_mock/accounts/{account}/ledger"),
        ("GET /_mock/coverage", "/_mock/coverage"),
        ("GET /_mock/jobs", "/_mock/jobs"),
    ):
        bench.call(f"{what} at the order quota", "GET", path)
    for request in ("GET /_mock/orders", "GET /_mock/webhooks"):
        hold_unread(bench, request, bench.args.slow_readers)
    bench.call("POST /_mock/reset (releases the orders)", "POST", "/_mock/reset", {})
    bench.login(bench.a)


def phase_catalog(bench: Bench) -> None:
    count = bench.args.catalog
    bench.call(f"PUT /_mock/catalog, {count:,} items", "PUT", "/_mock/catalog", catalog(count))
    bench.call(
        f"PUT /_mock/catalog, {count + 1:,} items", "PUT", "/_mock/catalog", catalog(count + 1)
    )
    padded = padded_catalog(count)
    size = len(json.dumps(padded, separators=(",", ":"))) / 1024
    bench.call(
        f"PUT /_mock/catalog, {count:,} items with unknown keys ({size:.0f} KiB)",
        "PUT",
        "/_mock/catalog",
        padded,
    )
    bench.call("GET /_mock/catalog of it", "GET", "/_mock/catalog")
    bench.call("GET /_mock/state of it", "GET", "/_mock/state")
    hold_unread(bench, "GET /_mock/catalog", bench.args.slow_readers)
    bench.call(
        "PUT /_mock/catalog, YAML alias bomb (10^9 strings expanded)",
        "PUT",
        "/_mock/catalog",
        alias_bomb(),
        ctype=YAML,
    )
    bench.call("GET /_mock/catalog after it", "GET", "/_mock/catalog")
    bench.call(
        "PUT /_mock/catalog, 1 MiB YAML flow list",
        "PUT",
        "/_mock/catalog",
        yaml_flow_list(),
        ctype=YAML,
    )


def hold_unread(bench: Bench, request: str, count: int) -> None:
    """`count` clients send `request` under A's base path at once and never read the
    answer: the CPU per request until the server is quiet, B's longest wait meanwhile,
    the RSS while they are held and once they are gone."""
    method, path = request.split(" ", 1)
    a = bench.a
    assert bench.server is not None
    raw = (
        f"{method} {a.base}{path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {a.control}\r\n\r\n"
    ).encode()
    rss_before = status_mib(bench.pid, "VmRSS")
    held = []
    try:
        before = cpu_ns(bench.pid)
        bench.probe.start()
        began = time.perf_counter()
        for _ in range(count):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect((bench.server.host, bench.server.port))
            sock.sendall(raw)
            held.append(sock)
        settle(bench)  # the server writes what it can, then holds the rest
        ended = time.perf_counter()
        spent = cpu_ns(bench.pid) - before
        probes, other = bench.probe.stop(ended)
        cpu = (spent / 1e6 - probes * bench.probe_cpu_ms) / max(1, count)
        bench.rows.append(
            Row(
                bench.phase,
                f"{request} by {count} clients at once that never read",
                status_lines(held),
                cpu,
                (ended - began) * 1000,
                other,
                "CPU per request; wall: until the server was quiet",
            )
        )
    finally:
        close_all(bench, held, f"those {count} clients", rss_before)


def phase_key_order(bench: Bench) -> None:
    def put(size: int, record: bool) -> int:
        return bench.call(
            f"PUT /_mock/catalog, a key item with max_quantity {size:,}",
            "PUT",
            "/_mock/catalog",
            catalog(1, max_quantity=size),
            record=record,
        )[0]

    allowed = largest(bench.args.key_quantity, put)

    def buy(size: int, record: bool) -> int:
        return bench.call(
            f"POST /api/v1/orders, a key order of {size:,} units",
            "POST",
            "/api/v1/orders",
            order("keys", quantity=size),
            merchant=True,
        )[0]

    # Every try that is taken is an order: no narrowing, each try recorded.
    if allowed and largest(allowed, buy, narrow=False):
        bench.call(
            "POST /_mock/clock/advance 10 s: the key order completes",
            "POST",
            "/_mock/clock/advance",
            {"seconds": 10},
        )
        bench.call("GET /_mock/orders of it", "GET", "/_mock/orders")
    bench.call("POST /_mock/reset (releases it)", "POST", "/_mock/reset", {})
    bench.login(bench.a)


def phase_accounts(bench: Bench) -> None:
    a = bench.a
    count = bench.args.accounts
    main = {
        "id": a.account_id,
        "email": "attacker@example.com",
        "api_key": a.api_key,
        "balance": 10**9,
        "webhook_url": bench.hook,
    }

    suffix = secrets.token_hex(4)

    def accounts(total: int) -> dict[str, Any]:
        others = [
            {
                "email": f"acct{index}@example.com",
                "api_key": f"ak_hostile_{index}_{suffix}",
                "balance": 1,
                "webhook_url": bench.hook,
            }
            for index in range(total - 1)
        ]
        return {"accounts": [main, *others]}

    bench.call(f"PUT /_mock/accounts, {count} accounts", "PUT", "/_mock/accounts", accounts(count))
    bench.call(
        f"PUT /_mock/accounts, {count + 1} accounts", "PUT", "/_mock/accounts", accounts(count + 1)
    )
    bench.call("GET /_mock/accounts", "GET", "/_mock/accounts")
    bench.login(a)
    account = a.account_id
    bench.fill(
        "POST /_mock/accounts/{id}/api-keys",
        bench.args.api_keys,
        lambda i: ("POST", f"/_mock/accounts/{account}/api-keys", None, False),
    )
    bench.call("GET /_mock/accounts/{id} with those keys", "GET", f"/_mock/accounts/{account}")
    bench.call(
        "POST /auth/token/client (root) with the first key, among them",
        "POST",
        "/api/v1/auth/token/client",
        {"api_key": a.api_key},
        root=True,
    )
    bench.fill(
        "PATCH /_mock/accounts/{id} balance (ledger adjustments)",
        bench.args.adjustments,
        lambda i: ("PATCH", f"/_mock/accounts/{account}", {"balance": 10**9 - i}, False),
    )
    bench.call("GET /_mock/accounts/{id}/ledger", "GET", f"/_mock/accounts/{account}/ledger")
    bench.call("GET /_mock/state holding them", "GET", "/_mock/state")
    bench.call(
        "PUT /_mock/accounts, 1 account (releases keys and ledger)",
        "PUT",
        "/_mock/accounts",
        {"accounts": [main]},
    )
    bench.login(a)


def phase_redeliveries(bench: Bench) -> None:
    _, _, raw, _ = bench.call(
        "POST /api/v1/orders, one", "POST", "/api/v1/orders", order("redeliver"), merchant=True
    )
    order_id = json.loads(raw)["id"]
    bench.call("POST /_mock/clock/advance 10 s", "POST", "/_mock/clock/advance", {"seconds": 10})
    _, _, raw, _ = bench.call(
        "GET /_mock/webhooks?order_id=", "GET", f"/_mock/webhooks?order_id={order_id}"
    )
    delivery = json.loads(raw)["deliveries"][0]["id"]
    bench.fill(
        "POST /_mock/webhooks/{id}/redeliver",
        bench.args.redeliveries,
        lambda i: ("POST", f"/_mock/webhooks/{delivery}/redeliver", None, False),
    )
    bench.call(
        "GET /_mock/webhooks?order_id= after them", "GET", f"/_mock/webhooks?order_id={order_id}"
    )
    bench.call("GET /_mock/orders/{id} after them", "GET", f"/_mock/orders/{order_id}")
    bench.call("POST /_mock/reset (releases them)", "POST", "/_mock/reset", {})
    bench.login(bench.a)


def phase_scenarios(bench: Bench) -> None:
    bench.call(
        "POST /_mock/scenarios, match '^(a+)+$'",
        "POST",
        "/_mock/scenarios",
        {
            "name": "backtrack",
            "description": "backtracking pattern",
            "match": {"merchant_order_id": "^(a+)+$"},
            "steps": [{"after": 1, "status": "completed"}],
        },
    )
    for moid in ("a" * 32 + "!", "a" * 254 + "!"):
        bench.call(
            f"POST /api/v1/orders, merchant_order_id 'a'*{len(moid) - 1}+'!'",
            "POST",
            "/api/v1/orders",
            order(moid),
            merchant=True,
        )

    def steps(count: int, record: bool) -> int:
        doc = steps_scenario("many_steps", count)
        while not fits(doc):
            count = count * 9 // 10
            doc = steps_scenario("many_steps", count)
        return bench.call(
            f"POST /_mock/scenarios, one scenario of {count:,} steps",
            "POST",
            "/_mock/scenarios",
            doc,
            record=record,
        )[0]

    allowed = largest(bench.args.steps, steps)
    if allowed:
        bench.call(
            "POST /api/v1/orders with X-Mock-Scenario: many_steps",
            "POST",
            "/api/v1/orders",
            order("steps"),
            merchant=True,
            headers={"X-Mock-Scenario": "many_steps"},
        )
        bench.call(
            f"POST /_mock/clock/advance {allowed + 10:,} s: every step plays",
            "POST",
            "/_mock/clock/advance",
            {"seconds": allowed + 10},
        )
        bench.call("GET /_mock/orders of it", "GET", "/_mock/orders")

    def part(what: str, make: Callable[[int], dict[str, Any]]) -> Callable[[int, bool], int]:
        def send(size: int, record: bool) -> int:
            return bench.call(
                f"POST /_mock/scenarios, {what.format(size=size)}",
                "POST",
                "/_mock/scenarios",
                make(size),
                record=record,
            )[0]

        return send

    description = largest(
        BODY_LIMIT - 512,
        part("a description of {size:,} characters", lambda n: big_scenario("long_text", 1, n, 8)),
    )
    match = largest(
        BODY_LIMIT - 512,
        part(
            "a match pattern of {size:,} characters", lambda n: big_scenario("long_match", 1, 1, n)
        ),
    )
    # All three parts at once, as large as one scenario may be.
    whole = largest(
        BODY_LIMIT,
        part(
            "one scenario of {size:,} bytes, every part at its largest",
            lambda n: big_scenario("big", allowed, description, match, n),
        ),
    )
    bench.fill(
        f"POST /_mock/scenarios, a scenario of {whole:,} bytes each (scenario quota)",
        bench.args.scenarios,
        lambda i: (
            "POST",
            "/_mock/scenarios",
            big_scenario(f"big_{i}", allowed, description, match, whole),
            False,
        ),
    )
    bench.call(
        "POST /api/v1/orders past every loaded match",
        "POST",
        "/api/v1/orders",
        order("w999999x"),
        merchant=True,
    )
    bench.call(
        "POST /_mock/scenarios/explain",
        "POST",
        "/_mock/scenarios/explain",
        {"body": order("w999999x")},
    )
    bench.call("GET /_mock/scenarios", "GET", "/_mock/scenarios")
    bench.call("GET /_mock/state holding them", "GET", "/_mock/state")
    bench.call(
        "POST /_mock/scenarios, YAML nested 1 MiB deep",
        "POST",
        "/_mock/scenarios",
        yaml_nested(),
        ctype=YAML,
    )
    bench.call("POST /_mock/reset (releases them)", "POST", "/_mock/reset", {})
    bench.login(bench.a)


def phase_bodies(bench: Bench) -> None:
    """Bodies parsed before the caller is known, and numbers no parser should build."""
    nested = b"[" * (BODY_LIMIT // 2) + b"]" * (BODY_LIMIT // 2)
    token = "/api/v1/auth/token/client"
    bench.call(
        "POST /auth/token/client (root), 1 MiB nested JSON", "POST", token, nested, root=True
    )
    pad = [0] * ((BODY_LIMIT - 200) // 2)
    bench.call(
        "POST /auth/token/client (root), 1 MiB wide JSON",
        "POST",
        token,
        {"api_key": "ak_nobody", "pad": pad},
        root=True,
    )
    bench.call(
        "POST /auth/token/client (root), 1 MiB + 1 byte",
        "POST",
        token,
        b" " * (BODY_LIMIT + 1),
        root=True,
    )
    bench.call(
        "POST /_mock/sandboxes with A's control token, 1 MiB nested JSON",
        "POST",
        "/_mock/sandboxes",
        nested,
        root=True,
    )
    digits = b'{"item_id": 1' + b"0" * (BODY_LIMIT - 64) + b"}"
    bench.call(
        "POST /api/v1/orders, item_id of 1 MiB of digits",
        "POST",
        "/api/v1/orders",
        digits,
        merchant=True,
    )
    bench.call(
        "POST /api/v1/orders, 1 MiB nested JSON", "POST", "/api/v1/orders", nested, merchant=True
    )


def phase_faults(bench: Bench) -> None:
    """Faults whose patterns (the longest allowed) match nothing, at the quota."""
    bench.fill(
        "POST /_mock/faults, a 2048-character pattern each (fault quota)",
        bench.args.faults,
        lambda i: (
            "POST",
            "/_mock/faults",
            {"path": f"/{i:06d}" + "*a" * 1020 + "!", "status": 500},
            False,
        ),
    )
    for when in ("past them all", "again (their patterns compiled once)"):
        bench.call(
            f"GET /api/v1/account/balance {when}", "GET", "/api/v1/account/balance", merchant=True
        )
    bench.call(
        "POST /api/v1/orders past them all", "POST", "/api/v1/orders", order("f"), merchant=True
    )
    bench.call("GET /_mock/faults", "GET", "/_mock/faults")
    bench.call("DELETE /_mock/faults", "DELETE", "/_mock/faults")


def phase_queue(bench: Bench) -> None:
    """Queue entries for another account, so that A's orders pass every one."""
    status, _, raw, _ = bench.call(
        "POST /_mock/accounts, a second account",
        "POST",
        "/_mock/accounts",
        {"email": "queue@example.com"},
    )
    other = json.loads(raw)["id"]
    bench.fill(
        "POST /_mock/scenarios/next for the other account (queue quota)",
        bench.args.queue,
        lambda i: (
            "POST",
            "/_mock/scenarios/next",
            {"scenario": "happy_path", "account_id": other, "count": None},
            False,
        ),
    )
    bench.call(
        "POST /api/v1/orders past every entry", "POST", "/api/v1/orders", order("q"), merchant=True
    )
    bench.call(
        'POST /_mock/scenarios/next "replace": true',
        "POST",
        "/_mock/scenarios/next",
        {"scenario": "happy_path", "account_id": other, "replace": True},
    )
    bench.call("POST /_mock/reset", "POST", "/_mock/reset", {})
    bench.login(bench.a)


def open_streams(bench: Bench, path: str, count: int) -> list[socket.socket]:
    """`count` streams of `path` under A's base path, each read only as far as its status
    line, then never again; one row: the statuses and the CPU per stream opened."""
    a = bench.a
    assert bench.server is not None
    raw = (
        f"GET {a.base}{path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {a.control}\r\n\r\n"
    ).encode()
    before = cpu_ns(bench.pid)
    streams, statuses = [], {}
    for _ in range(count):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(5)
        sock.connect((bench.server.host, bench.server.port))
        sock.sendall(raw)
        try:
            head = sock.recv(12).decode("ascii", "replace")
        except TimeoutError:
            head = "HTTP/1.1 ??? "
        code = head[9:12]
        statuses[code] = statuses.get(code, 0) + 1
        streams.append(sock)
    cpu = (cpu_ns(bench.pid) - before) / 1e6 / max(1, count)
    seen = ", ".join(f"{code} x{n}" for code, n in sorted(statuses.items()))
    bench.rows.append(
        Row(
            bench.phase,
            f"GET {path}, {count} streams held, never read",
            seen,
            cpu,
            None,
            None,
            "CPU per stream opened",
        )
    )
    return streams


def status_lines(streams: list[socket.socket]) -> str:
    """The status codes the held requests were answered with (the first 12 bytes of
    each answer, all that is read of it; "none" where nothing came within 0.2 s)."""
    seen: dict[str, int] = {}
    for sock in streams:
        sock.settimeout(0.2)
        try:
            code = sock.recv(12).decode("ascii", "replace")[9:12] or "none"
        except OSError:
            code = "none"
        seen[code] = seen.get(code, 0) + 1
    return ", ".join(f"{code} x{n}" for code, n in sorted(seen.items()))


def close_all(bench: Bench, streams: list[socket.socket], what: str, rss_before: float) -> None:
    held = status_mib(bench.pid, "VmRSS")
    for sock in streams:
        sock.close()
    settle(bench)
    after = status_mib(bench.pid, "VmRSS")
    bench.rows.append(
        Row(
            bench.phase,
            f"... {what} closed",
            "closed",
            None,
            None,
            None,
            f"RSS {rss_before:.1f} before, {held:.1f} held, {after:.1f} MiB after",
        )
    )


def phase_events(bench: Bench) -> None:
    """Event streams held open and never read while A's orders make events."""
    # Past the quota: the streams beyond it are refused, and that is the result.
    count = 2 * bench.args.streams + 10
    rss_before = status_mib(bench.pid, "VmRSS")
    streams = open_streams(bench, "/_mock/events", count)
    try:
        bench.fill(
            "POST /api/v1/orders with the streams open",
            bench.args.event_orders,
            lambda i: ("POST", "/api/v1/orders", order(f"e-{i}"), True),
        )
        bench.call(
            "POST /_mock/clock/advance 600 s with the streams open",
            "POST",
            "/_mock/clock/advance",
            {"seconds": 600},
        )
    finally:
        close_all(bench, streams, f"those {count} event streams", rss_before)
    rss_before = status_mib(bench.pid, "VmRSS")
    streams = open_streams(bench, f"/_mock/listen?account={bench.a.account_id}", count)
    try:
        bench.call(
            "POST /api/v1/orders with the listeners open",
            "POST",
            "/api/v1/orders",
            order("listened"),
            merchant=True,
        )
        bench.call(
            "POST /_mock/clock/advance 10 s: its webhook waits on a listener that never reads",
            "POST",
            "/_mock/clock/advance",
            {"seconds": 10},
        )
    finally:
        close_all(bench, streams, f"those {count} listen streams", rss_before)
    bench.call("POST /_mock/reset", "POST", "/_mock/reset", {})
    bench.login(bench.a)


def settle(bench: Bench, quiet_ms: float = 5.0) -> None:
    """Wait (up to --timeout) until the server has used under `quiet_ms` of CPU in 0.2 s
    (B's probes, when they run, take about 3): what it was still doing for requests
    already answered or dropped is done."""
    deadline = time.monotonic() + bench.args.timeout
    last = cpu_ns(bench.pid)
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = cpu_ns(bench.pid)
        if (now - last) / 1e6 < quiet_ms:
            return
        last = now


def phase_state(bench: Bench) -> None:
    """A state document of the sandbox itself, its random counts made huge."""
    _, _, raw, _ = bench.call("GET /_mock/state", "GET", "/_mock/state")
    doc = json.loads(raw)
    huge = bench.args.random
    doc["random"] = {"ids": huge, "tokens": huge, "codes": huge, "weights": huge}
    bench.call(f"PUT /_mock/state, random counts {huge:,} each", "PUT", "/_mock/state", doc)


def phase_release(bench: Bench) -> None:
    bench.call("POST /_mock/reset", "POST", "/_mock/reset", {})
    a = bench.a
    admin = Conn(bench.server.url, bench.args.timeout)
    before = cpu_ns(bench.pid)
    began = time.perf_counter()
    sandbox = a.base.rsplit("/", 1)[1]
    status, _, raw = admin.request("DELETE", f"/_mock/sandboxes/{sandbox}", None, bench.admin)
    bench.rows.append(
        Row(
            bench.phase,
            "DELETE /_mock/sandboxes/{A} (admin)",
            f"{status} {code_of(raw)}".strip(),
            (cpu_ns(bench.pid) - before) / 1e6,
            (time.perf_counter() - began) * 1000,
        )
    )
    admin.close()


PHASES: list[tuple[str, Callable[[Bench], None]]] = [
    ("calibration", phase_calibrate),
    ("tokens", phase_tokens),
    ("orders", phase_orders),
    ("catalog", phase_catalog),
    ("key order", phase_key_order),
    ("accounts, API keys, ledger", phase_accounts),
    ("redeliveries", phase_redeliveries),
    ("scenarios", phase_scenarios),
    ("bodies", phase_bodies),
    ("faults", phase_faults),
    ("queue", phase_queue),
    ("event streams", phase_events),
    ("state document", phase_state),
    ("release", phase_release),
]


# ---------------------------------------------------------------------------------------
# the report


def commit() -> str:
    head = BENCH.parent / ".git" / "HEAD"
    with contextlib.suppress(OSError):
        ref = head.read_text().strip()
        if ref.startswith("ref: "):
            return (BENCH.parent / ".git" / ref[5:]).read_text().strip()[:12]
        return ref[:12]
    return "unknown"


def render(bench: Bench, seconds: float) -> str:
    args = bench.args
    command = " ".join(bench.argv()[len(bench.pin.server) :]).replace(bench.admin, "<token>")
    measured = [row for row in bench.rows if row.cpu_ms is not None and row.phase != "calibration"]
    dearest = max(measured, key=lambda row: row.cpu_ms or 0.0)
    over = [row for row in measured if (row.cpu_ms or 0.0) > BOUND_MS]
    timed_out = [row for row in bench.rows if row.status.startswith(("timed out", "no answer"))]
    errors = [row for row in bench.rows if row.status.startswith("5")]
    sandbox_peak = max(peak for _, _, peak in bench.rss) - bench.baseline_mib
    peak_phase = max(bench.rss, key=lambda entry: entry[2])[0]
    lines = [
        "# A hostile tenant",
        "",
        "Written by `python bench/hostile.py"
        + (" --quick" if args.quick else "")
        + "` (see its docstring).",
        "",
        f"- **date**: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; commit {commit()}; "
        f"{seconds / 60:.1f} minutes",
        f"- **placement**: {bench.pin.note}",
        f"- **server**: `{command}`",
        "- **quotas** (`--sandbox-max-*`): "
        + ", ".join(f"{name.replace('_', ' ')} {getattr(args, name):,}" for name in QUOTAS)
        + " (orders: docs/hosting.md's public test mode; a created sandbox's default is "
        "100,000)",
        f"- **sizes**: scenarios, steps, descriptions, patterns, catalog `max_quantity` as "
        f"large as the server takes (found by asking it, from {args.steps:,} steps and "
        f"{args.key_quantity:,} units down); {2 * args.streams + 10} streams opened; "
        f"{args.slow_readers} clients never reading; {args.event_orders:,} orders with "
        f"streams open; state counts {args.random:,}; per-request timeout "
        f"{args.timeout:g} s, a busy server waited for {args.recover:g} s",
        f"- **restarts** of the server after a request that did not end: {bench.restarts}",
        "",
        "Server CPU: the server process's CPU time from before the request was sent to after "
        "its answer was read, less B's probes (what one costs, paced as they are, is the "
        "first row; a probe that meets A's request costs less, so a short row is right to "
        "within about 0.5 ms and may read 0). Other's "
        "wait: the longest of B's balance reads sent every 20 ms while A's request was in "
        f"flight. A row marked x N is a quota filled one request at a time: its dearest "
        f"request. **Bold**: over {BOUND_MS:g} ms of server CPU.",
        "",
        "| phase | request | status | server CPU ms | wall ms | other's wait ms | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in bench.rows:
        cpu = fmt(row.cpu_ms, 2)
        if row.cpu_ms is not None and row.cpu_ms > BOUND_MS and row.phase != "calibration":
            cpu = f"**{cpu}**"
        lines.append(
            f"| {row.phase} | {row.what} | {row.status} | {cpu} | "
            f"{fmt(row.wall_ms)} | {fmt(row.other_ms)} | {row.note} |"
        )
    lines += [
        "",
        "RSS of the server after each phase, and its peak during it (VmHWM, reset at the "
        f"phase's start); {bench.baseline_mib:.1f} MiB once both sandboxes were made:",
        "",
        "| phase | RSS MiB | peak MiB |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {rss:.1f} | {peak:.1f} |" for name, rss, peak in bench.rss]
    lines += [
        "",
        f"- **dearest request**: {dearest.what} ({dearest.status}): "
        f"{dearest.cpu_ms:,.1f} ms of server CPU, {fmt(dearest.wall_ms)} ms wall, the other "
        f"tenant waited {fmt(dearest.other_ms)} ms",
        f"- **largest RSS of one sandbox**: {sandbox_peak:,.1f} MiB above the server with "
        f"both sandboxes empty (peak {bench.baseline_mib + sandbox_peak:,.1f} MiB, phase "
        f"'{peak_phase}')"
        + (
            f"; the server was killed at --rss-cap {args.rss_cap:g} MiB in: "
            + ", ".join(bench.kills)
            + " (without the cap it would have grown further)"
            if bench.kills
            else ""
        ),
        f"- **over {BOUND_MS:g} ms of server CPU**: {len(over)} requests"
        + "".join(f"\n  - {row.what}: {row.cpu_ms:,.1f} ms ({row.status})" for row in over),
        f"- **timed out or unanswered**: {len(timed_out)}"
        + "".join(f"\n  - {row.what}: {row.note or row.status}" for row in timed_out),
        f"- **5xx answers**: {len(errors)}"
        + "".join(f"\n  - {row.what}: {row.status}" for row in errors),
        "",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# main

#: The server's quotas, (full, --quick): the full ones at their defaults for a created
#: sandbox (docs/hosting.md, "Quotas") but orders, at docs/hosting.md's public test mode's
#: 20,000 (100,000 would make the run an hour). Each is passed as --sandbox-max-NAME.
QUOTAS = {
    "orders": (20_000, 300),
    "tokens": (10_000, 100),
    "catalog": (10_000, 500),
    "accounts": (100, 10),
    "scenarios": (100, 30),
    "faults": (1000, 50),
    "queue": (1000, 50),
    "api_keys": (1000, 100),
    "adjustments": (100_000, 100),
    "redeliveries": (1000, 20),
    "streams": (20, 5),
}
#: Every size, (full, --quick): the quotas and the other inputs' sizes.
SIZES = QUOTAS | {
    "event_orders": (1000, 20),
    "slow_readers": (50, 5),
    "steps": (30_000, 1000),
    "key_quantity": (10_000_000, 1000),
    "random": (10**9, 10**5),
    "calibration": (250, 50),
}


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke test")
    for name, (full, quick) in SIZES.items():
        parser.add_argument(
            f"--{name.replace('_', '-')}",
            type=int,
            default=None,
            help=f"default {full:,} ({quick:,} with --quick)",
        )
    parser.add_argument("--rate", type=float, default=1000, help="--sandbox-rate (default 1000)")
    parser.add_argument(
        "--timeout", type=float, default=None, help="seconds per request (30; 10 with --quick)"
    )
    parser.add_argument(
        "--recover",
        type=float,
        default=None,
        help="seconds to wait for a busy server before restarting it (60; 15 with --quick)",
    )
    parser.add_argument(
        "--rss-cap", type=float, default=3072, help="MiB; the server is killed above"
    )
    parser.add_argument("--only", default="", help="comma-separated phases (default: all)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    for name, (full, quick) in SIZES.items() | {"timeout": (30, 10), "recover": (60, 15)}.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    return args


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    pin = placement()
    began = time.perf_counter()
    wanted = {name.strip() for name in args.only.split(",") if name.strip()}
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        work = Path(tmp)
        with receiver(pin, 200, work) as hook:
            bench = Bench(args, pin, work, hook)
            try:
                bench.start()
                bench.baseline_mib = status_mib(bench.pid, "VmRSS")
                for name, phase in PHASES:
                    if wanted and name not in wanted and name != "calibration":
                        continue
                    with bench.section(name):
                        phase(bench)
            finally:
                bench.stop()
    table = render(bench, time.perf_counter() - began)
    print(table)
    if not args.no_write:
        (BENCH / "HOSTILE.md").write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
