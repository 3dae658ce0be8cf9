"""What the request edge itself promises, whichever call goes through it.

Every request goes through one handler before it is a merchant call or a control call
(docs/architecture.md, "The path of a merchant call" and "The path of a control
call"). Held here, with the expectations of docs/control-api.md ("The rules that hold
for every call", "Request journal", "Live events", "Sandboxes"), docs/fidelity.md
(spec 5.6 and 7) and RFC 9110 section 10.1.1:

- `Expect`: `100-continue` gets the interim answer before the body is sent (over a raw
  socket, so nothing but the server decides when); on HTTP/1.0 it is ignored; any other
  expectation is a 417 in the envelope, answered without the body and changing nothing;
- CORS: a preflight is answered (204) on merchant paths, control paths and under a
  sandbox's base path, before anything else (the admin token included) and without
  being journaled; with `--cors-origin`, every answer, errors included, names the
  origin it allows (the event stream too);
- a sandbox's base path: its control calls act on it alone, and a percent-encoded path
  parameter means there what it means on the root path;
  `/_mock/sandboxes` acts on the server and is not served there; an unknown sandbox id
  is a 404 `not_found`, never the default sandbox;
- `--admin-token`: 401 before any 404 or 405 (paths are not revealed), the health check
  and the dashboard's files open, a sandbox's control token opening its own control
  calls and its own entry and nothing else;
- `/` and a base path's `/` lead to that sandbox's dashboard;
- the 1 MiB body limit, to the byte, on merchant and control calls;
- stopping the server ends open event streams promptly.

Nothing here waits on wall time: raw-socket reads are bounded by `asyncio.wait_for`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from typing import Any
from urllib.parse import urlparse

import pytest

from mock_server.config import MAX_BODY_BYTES
from tests.conftest import login

#: Longest a raw-socket read or a stop may take before the test fails (not a sleep).
TIMEOUT = 5.0
ORIGIN = "https://shop.example"
ORDER_BODY = b'{"item_id": 1001}'
#: What docs/control-api.md says every preflight allows.
PREFLIGHT_METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
PREFLIGHT_HEADERS = {"authorization", "content-type", "x-mock-scenario"}


# -- helpers -------------------------------------------------------------------------------


def assert_envelope(body: Any, code: str) -> None:
    """The spec's error envelope (spec 2.6, 7), with a detail that says something."""
    assert isinstance(body, dict) and set(body) == {"detail", "code"}, body
    assert body["code"] == code, body
    assert isinstance(body["detail"], str) and body["detail"], body


async def control_json(client: Any, path: str, headers: dict[str, str] | None = None) -> Any:
    response = await client.get(path, headers=headers)
    assert response.status == 200, (path, await response.text())
    return await response.json()


async def journal(client: Any, base: str = "", headers: dict[str, str] | None = None) -> list:
    return (await control_json(client, base + "/_mock/requests", headers))["requests"]


async def clock_now(client: Any, base: str = "", headers: dict[str, str] | None = None) -> str:
    return (await control_json(client, base + "/_mock/clock", headers))["now"]


async def create_sandbox(client: Any, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """A created sandbox's answer, plus `base`: its base path."""
    response = await client.post("/_mock/sandboxes", json={}, headers=headers)
    assert response.status == 201, await response.text()
    created = await response.json()
    created["base"] = urlparse(created["base_url"]).path
    assert created["base"] == f"/_mock/sandboxes/{created['id']}"
    return created


async def sandbox_count(client: Any, headers: dict[str, str] | None = None) -> int:
    return len((await control_json(client, "/_mock/sandboxes", headers))["sandboxes"])


async def open_raw(client: Any) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.wait_for(asyncio.open_connection(client.host, client.port), TIMEOUT)


def request_head(client: Any, method: str, path: str, headers: dict[str, str], version="1.1"):
    """An HTTP request's start line and headers, up to the blank line."""
    lines = [f"{method} {path} HTTP/{version}", f"Host: {client.host}:{client.port}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def order_head(
    client: Any, merchant: Any, expectation: str, *, version: str = "1.1", **extra: str
) -> bytes:
    """The head of an order creation announcing ORDER_BODY, with `Expect: expectation`."""
    headers = {
        **merchant.auth,
        **extra,
        "Content-Type": "application/json",
        "Content-Length": str(len(ORDER_BODY)),
        "Expect": expectation,
    }
    return request_head(client, "POST", "/api/v1/orders", headers, version=version)


async def read_answer(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes]:
    """One answer off a raw connection: its status line, headers (lower-cased names)
    and its body (by Content-Length)."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await asyncio.wait_for(reader.readexactly(length), TIMEOUT)
    return status_line, headers, body


async def close_raw(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(ConnectionError, OSError):
        await asyncio.wait_for(writer.wait_closed(), TIMEOUT)


# -- Expect ---------------------------------------------------------------------------------


@pytest.mark.parametrize("expectation", ["100-continue", "100-Continue"])
async def test_100_continue_is_sent_before_the_body_is(client, expectation):
    """RFC 9110 10.1.1: the interim 100 comes while the client still holds the body back
    (the expectation is case-insensitive); the body sent after it is the one the call
    reads and the journal keeps."""
    merchant = await login(client)
    reader, writer = await open_raw(client)
    try:
        writer.write(order_head(client, merchant, expectation))
        await writer.drain()
        interim = await asyncio.wait_for(reader.readexactly(25), TIMEOUT)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        writer.write(ORDER_BODY)
        await writer.drain()
        status_line, headers, body = await read_answer(reader)
    finally:
        await close_raw(writer)
    assert status_line.startswith("HTTP/1.1 201 "), status_line
    order = json.loads(body)
    assert order["item"] == 1001 and order["status"] == "pending"
    (entry, *_) = await journal(client)
    assert (entry["method"], entry["path"], entry["status"]) == ("POST", "/api/v1/orders", 201)
    assert entry["body"] == ORDER_BODY.decode()


async def test_100_continue_on_http_1_0_is_ignored(client):
    """RFC 9110 10.1.1: a server MUST ignore a 100-continue expectation in an HTTP/1.0
    request: no interim answer, just the final one."""
    merchant = await login(client)
    reader, writer = await open_raw(client)
    try:
        writer.write(order_head(client, merchant, "100-continue", version="1.0") + ORDER_BODY)
        await writer.drain()
        status_line, _, body = await read_answer(reader)
    finally:
        await close_raw(writer)
    version, status, _ = status_line.split(" ", 2)
    assert status == "201", (status_line, body)
    assert json.loads(body)["status"] == "pending"


async def test_an_unknown_expectation_is_a_417_before_the_body_and_changes_nothing(make_client):
    """Any expectation but 100-continue is refused (417 `expectation_failed` in the
    envelope) without waiting for a body the client holds back; nothing is journaled or
    charged, and a control call so refused changes nothing either."""
    client = await make_client(cors_origin=ORIGIN)
    merchant = await login(client)
    balance = await merchant.balance()
    clock = await clock_now(client)
    before = await journal(client)
    reader, writer = await open_raw(client)
    try:
        writer.write(order_head(client, merchant, "something-else", Origin=ORIGIN))
        await writer.drain()
        status_line, headers, body = await read_answer(reader)  # the body never sent
    finally:
        await close_raw(writer)
    assert status_line.startswith("HTTP/1.1 417 "), status_line
    assert headers["content-type"].startswith("application/json")
    assert_envelope(json.loads(body), "expectation_failed")
    assert headers["access-control-allow-origin"] == ORIGIN  # errors carry CORS too

    control = await client.post(
        "/_mock/clock/advance", json={"seconds": 60}, headers={"Expect": "something-else"}
    )
    assert control.status == 417
    assert_envelope(await control.json(), "expectation_failed")

    assert await journal(client) == before
    assert await clock_now(client) == clock
    assert await merchant.balance() == balance
    assert (await control_json(client, "/_mock/orders"))["orders"] == []


# -- CORS -----------------------------------------------------------------------------------


def _listed(value: str) -> set[str]:
    return {part.strip() for part in value.split(",") if part.strip()}


async def test_a_preflight_is_answered_everywhere_and_never_journaled(make_client):
    client = await make_client(cors_origin=ORIGIN)
    sandbox = await create_sandbox(client)
    base = sandbox["base"]
    before = (await journal(client), await journal(client, base))
    for path in (
        "/api/v1/orders",
        "/v1/account/balance",
        "/_mock/clock/advance",
        f"{base}/api/v1/orders",
        f"{base}/_mock/reset",
    ):
        response = await client.options(
            path,
            headers={
                "Origin": ORIGIN,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type",
            },
        )
        assert response.status == 204, path
        assert await response.read() == b""
        methods = _listed(response.headers["Access-Control-Allow-Methods"])
        assert methods == PREFLIGHT_METHODS, path
        allowed = {h.lower() for h in _listed(response.headers["Access-Control-Allow-Headers"])}
        assert allowed == PREFLIGHT_HEADERS, path
        assert response.headers["Access-Control-Allow-Origin"] == ORIGIN, path
        assert "Origin" in _listed(response.headers["Vary"]), path
    assert (await journal(client), await journal(client, base)) == before


async def test_an_options_call_that_is_no_preflight_is_a_merchant_call(client):
    """Without Access-Control-Request-Method an OPTIONS is no preflight: on a merchant
    path it is a wrong method, journaled like any (docs/fidelity.md, spec 7)."""
    response = await client.options("/api/v1/orders", headers={"Origin": ORIGIN})
    assert response.status == 405
    assert_envelope(await response.json(), "method_not_allowed")
    assert "OPTIONS" not in _listed(response.headers["Allow"])
    (entry, *_) = await journal(client)
    assert (entry["method"], entry["path"], entry["status"]) == ("OPTIONS", "/api/v1/orders", 405)


async def test_every_answer_names_the_allowed_origin_errors_included(make_client):
    client = await make_client(cors_origin=ORIGIN)
    merchant = await login(client)
    sandbox = await create_sandbox(client)
    asked = {**merchant.auth, "Origin": ORIGIN}
    answers = {
        "merchant 200": (await client.get("/api/v1/account/balance", headers=asked), 200),
        "merchant 404": (await client.get("/api/v1/nothing-here", headers=asked), 404),
        "control 200": (await client.get("/_mock/clock", headers=asked), 200),
        "control 404": (await client.get("/_mock/nothing", headers=asked), 404),
        "control 405": (await client.delete("/_mock/clock", headers=asked), 405),
        "sandbox 404": (
            await client.get("/_mock/sandboxes/sbx-nope/_mock/clock", headers=asked),
            404,
        ),
        "under a base": (await client.get(sandbox["base"] + "/_mock/clock", headers=asked), 200),
    }
    for name, (response, status) in answers.items():
        assert response.status == status, name
        assert response.headers.get("Access-Control-Allow-Origin") == ORIGIN, name
        assert "Origin" in _listed(response.headers.get("Vary", "")), name
    # An origin not listed is named nowhere, on an answer or on a preflight.
    other = await client.get("/api/v1/nothing-here", headers={"Origin": "https://evil.example"})
    assert other.status == 404
    assert "Access-Control-Allow-Origin" not in other.headers
    preflight = await client.options(
        "/api/v1/orders",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert preflight.status == 204
    assert "Access-Control-Allow-Origin" not in preflight.headers


async def test_the_event_stream_names_the_allowed_origin_too(make_client):
    """docs/control-api.md: every answer carries Access-Control-Allow-Origin, the live
    event stream (read with `fetch`, which a cross-origin page may do) included."""
    client = await make_client(cors_origin=ORIGIN)
    response = await client.get("/_mock/events", headers={"Origin": ORIGIN})
    try:
        assert response.status == 200
        assert response.headers.get("Access-Control-Allow-Origin") == ORIGIN
        assert "Origin" in _listed(response.headers.get("Vary", ""))
    finally:
        response.close()


# -- a sandbox's base path --------------------------------------------------------------------


async def test_sandboxes_are_the_servers_not_served_under_a_base_path(client):
    """`/_mock/sandboxes` acts on the server: under a base path it is a 404, creating,
    reading and deleting nothing; the sandbox's own control calls are served there and
    act on it alone."""
    sandbox = await create_sandbox(client)
    base, sandbox_id = sandbox["base"], sandbox["id"]
    count = await sandbox_count(client)
    for method, path, body in (
        ("GET", f"{base}/_mock/sandboxes", None),
        ("POST", f"{base}/_mock/sandboxes", {}),
        ("GET", f"{base}/_mock/sandboxes/{sandbox_id}", None),
        ("DELETE", f"{base}/_mock/sandboxes/{sandbox_id}", None),
    ):
        response = await client.request(method, path, json=body)
        assert response.status == 404, (method, path)
        assert_envelope(await response.json(), "not_found")
    assert await sandbox_count(client) == count
    assert (await control_json(client, f"/_mock/sandboxes/{sandbox_id}"))["id"] == sandbox_id

    root_clock = await clock_now(client)
    assert await clock_now(client, base) == root_clock  # both start at the startup time
    advanced = await client.post(f"{base}/_mock/clock/advance", json={"seconds": 60})
    assert advanced.status == 200, await advanced.text()
    assert await clock_now(client, base) == (await advanced.json())["now"] != root_clock
    assert await clock_now(client) == root_clock


@pytest.mark.parametrize("where", ["root", "base"])
@pytest.mark.parametrize(
    ("key", "encoded"), [("ak_x?y", "ak_x%3Fy"), ("ak_x#y", "ak_x%23y"), ("ak_x/y", "ak_x%2Fy")]
)
async def test_a_control_path_parameter_is_the_same_under_a_base_path(client, where, key, encoded):
    """docs/control-api.md, "Sandboxes", Base URL: under a base path the sandbox answers
    what a whole server answers. An API key is any string starting with `ak_`; its
    percent-encoded form in `DELETE /_mock/api-keys/{key}` revokes that key, and not
    another that the decoded path would end at."""
    base = "" if where == "root" else (await create_sandbox(client))["base"]
    accounts = {
        "accounts": [
            {
                "email": "one@example.com",
                "api_keys": ["ak_x", key],
                "balance": 10,
                "webhook_secret": "whsec_one",
            }
        ]
    }
    put = await client.put(base + "/_mock/accounts", json=accounts)
    assert put.status == 200, await put.text()
    response = await client.delete(f"{base}/_mock/api-keys/{encoded}")
    assert (response.status, await response.json()) == (200, {"revoked": key})
    (account,) = (await control_json(client, base + "/_mock/accounts"))["accounts"]
    assert account["api_keys"] == ["ak_x"]


async def test_an_unknown_sandbox_is_a_404_never_the_default(client):
    """docs/control-api.md, "Gone is gone": an unknown id is a 404 `not_found` whose
    detail names it, for merchant and control calls alike; nothing falls back to the
    default sandbox (a token of the default one does not reach it there)."""
    merchant = await login(client)
    balance = await merchant.balance()
    before = await journal(client)
    clock = await clock_now(client)
    for method, path, body in (
        ("GET", "/_mock/sandboxes/sbx-nope/api/v1/account/balance", None),
        ("POST", "/_mock/sandboxes/sbx-nope/api/v1/orders", {"item_id": 1001}),
        ("GET", "/_mock/sandboxes/sbx-nope/_mock/clock", None),
        ("POST", "/_mock/sandboxes/sbx-nope/_mock/clock/advance", {"seconds": 60}),
        ("GET", "/_mock/sandboxes/sbx-nope/", None),
    ):
        response = await client.request(
            method, path, json=body, headers=merchant.auth, allow_redirects=False
        )
        assert response.status == 404, (method, path)
        error = await response.json()
        assert_envelope(error, "not_found")
        assert "sbx-nope" in error["detail"], (method, path)
    assert await journal(client) == before
    assert await clock_now(client) == clock
    assert await merchant.balance() == balance


# -- the admin token ------------------------------------------------------------------------


async def test_without_the_admin_token_every_control_path_is_a_401_known_or_not(make_client):
    """docs/control-api.md, "Protection": with --admin-token every /_mock call but
    the health check needs it; a path that does not exist, or a method a path does not
    take, is a 401 like any other, so nothing about the paths is revealed."""
    client = await make_client(admin_token="t0k")
    merchant = await login(client)  # merchant calls need no admin token
    assert await merchant.balance() == 1000.0
    sandbox = await create_sandbox(client, headers={"Authorization": "Bearer t0k"})
    base = sandbox["base"]
    refused = [
        ("GET", "/_mock/clock"),
        ("GET", "/_mock/nothing"),
        ("DELETE", "/_mock/clock"),
        ("GET", "/_mock/sandboxes"),
        ("POST", "/_mock/sandboxes"),
        ("GET", f"/_mock/sandboxes/{sandbox['id']}"),
        ("GET", f"{base}/_mock/clock"),
        ("GET", f"{base}/_mock/nothing"),
        ("GET", f"{base}/_mock/sandboxes"),
        ("GET", "/_mock/sandboxes/sbx-nope/_mock/clock"),
    ]
    for headers in ({}, {"Authorization": "Bearer wrong"}, merchant.auth):
        for method, path in refused:
            response = await client.request(method, path, headers=headers)
            assert response.status == 401, (method, path, headers)
            assert_envelope(await response.json(), "not_authenticated")
    admin = {"Authorization": "Bearer t0k"}
    assert (await client.get("/_mock/nothing", headers=admin)).status == 404
    assert (await client.delete("/_mock/clock", headers=admin)).status == 405
    assert await sandbox_count(client, admin) == 2  # the refused create made nothing


async def test_what_stays_open_with_the_admin_token(make_client):
    """The health check (docs/control-api.md, "Health"), the dashboard's files
    (docs/fidelity.md) and CORS preflights, which a browser sends without credentials,
    need no admin token, on the root paths and under a base path."""
    client = await make_client(admin_token="t0k")
    sandbox = await create_sandbox(client, headers={"Authorization": "Bearer t0k"})
    for base in ("", sandbox["base"]):
        health = await client.get(base + "/_mock/health")
        assert health.status == 200
        assert await health.json() == {"status": "ok"}
        page = await client.get(base + "/_mock/ui/")
        assert page.status == 200
        assert page.headers["Content-Type"].startswith("text/html")
        preflight = await client.options(
            base + "/_mock/clock/advance",
            headers={"Origin": ORIGIN, "Access-Control-Request-Method": "POST"},
        )
        assert preflight.status == 204


async def test_a_control_token_opens_its_own_sandbox_and_nothing_else(make_client):
    """docs/control-api.md, "Sandboxes", Tokens: a sandbox's control calls, and reading
    its own entry, take its control_token; creating, listing and deleting sandboxes,
    the default sandbox and any other sandbox do not."""
    client = await make_client(admin_token="t0k")
    admin = {"Authorization": "Bearer t0k"}
    first = await create_sandbox(client, headers=admin)
    second = await create_sandbox(client, headers=admin)
    own = {"Authorization": f"Bearer {first['control_token']}"}
    base = first["base"]

    assert (await client.get(f"{base}/_mock/clock", headers=own)).status == 200
    advanced = await client.post(f"{base}/_mock/clock/advance", json={"seconds": 5}, headers=own)
    assert advanced.status == 200
    entry = await client.get(f"/_mock/sandboxes/{first['id']}", headers=own)
    assert entry.status == 200 and (await entry.json())["id"] == first["id"]
    # Opened, the sandbox's own paths answer as they would to the admin: 404 where none.
    missing = await client.get(f"{base}/_mock/nothing", headers=own)
    assert missing.status == 404
    assert_envelope(await missing.json(), "not_found")

    for method, path in (
        ("GET", "/_mock/clock"),
        ("POST", "/_mock/reset"),
        ("GET", "/_mock/sandboxes"),
        ("POST", "/_mock/sandboxes"),
        ("DELETE", f"/_mock/sandboxes/{first['id']}"),
        ("GET", f"/_mock/sandboxes/{second['id']}"),
        ("GET", f"{second['base']}/_mock/clock"),
        ("POST", f"{second['base']}/_mock/reset"),
        ("GET", "/_mock/sandboxes/default/_mock/clock"),
    ):
        response = await client.request(method, path, headers=own)
        assert response.status == 401, (method, path)
        assert_envelope(await response.json(), "not_authenticated")
    # the refused calls changed nothing: both sandboxes live, the default's clock unmoved
    assert await sandbox_count(client, admin) == 3
    assert await clock_now(client, headers=admin) == await clock_now(
        client, second["base"], headers=admin
    )


# -- the dashboard's entry --------------------------------------------------------------------


async def test_slash_leads_to_the_dashboard_of_its_sandbox(client):
    sandbox = await create_sandbox(client)
    for base in ("", sandbox["base"]):
        response = await client.get(base + "/", allow_redirects=False)
        assert response.status == 302, base
        target = response.headers["Location"]
        assert urlparse(target).path == base + "/_mock/ui/", target
        page = await client.get(target)
        assert page.status == 200
        assert page.headers["Content-Type"].startswith("text/html")
    assert await journal(client) == []


# -- the body limit ---------------------------------------------------------------------------


def _padded(body: bytes, size: int) -> bytes:
    """`body` padded with trailing blanks (still the same JSON) to `size` bytes."""
    return body + b" " * (size - len(body))


async def _chunks(data: bytes):
    step = 64 * 1024
    for start in range(0, len(data), step):
        yield data[start : start + step]


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
async def test_a_body_over_one_mebibyte_is_a_413_merchant_call(client, framing):
    """docs/fidelity.md, spec 7: over 1 MiB is 413 `payload_too_large`; exactly 1 MiB
    is not over. The refusal charges nothing and is journaled (the journal keeps every
    call the sandbox answered)."""
    merchant = await login(client)
    headers = {**merchant.auth, "Content-Type": "application/json"}
    balance = await merchant.balance()

    def send(data: bytes) -> Any:
        payload = _chunks(data) if framing == "chunked" else data
        return client.post("/api/v1/orders", data=payload, headers=headers)

    over = await send(_padded(ORDER_BODY, MAX_BODY_BYTES + 1))
    assert over.status == 413
    assert_envelope(await over.json(), "payload_too_large")
    (entry, *_) = await journal(client)
    assert (entry["method"], entry["path"], entry["status"]) == ("POST", "/api/v1/orders", 413)
    assert await merchant.balance() == balance
    assert (await control_json(client, "/_mock/orders"))["orders"] == []

    exact = await send(_padded(ORDER_BODY, MAX_BODY_BYTES))
    assert exact.status == 201, await exact.text()
    assert await merchant.balance() < balance


async def test_a_body_over_one_mebibyte_is_a_413_control_call(client):
    accounts = await control_json(client, "/_mock/accounts")
    response = await client.put(
        "/_mock/accounts",
        data=_padded(b'{"accounts": []}', MAX_BODY_BYTES + 1),
        headers={"Content-Type": "application/json"},
    )
    assert response.status == 413
    assert_envelope(await response.json(), "payload_too_large")
    assert await control_json(client, "/_mock/accounts") == accounts
    assert await journal(client) == []


# -- stopping -----------------------------------------------------------------------------------


async def test_stopping_the_server_ends_open_event_streams(client):
    """docs/control-api.md, "Live events": a stream ends when the server stops, the
    root one and a sandbox's alike, and the stop does not wait on them. Stopping again
    (the fixture's teardown does) is harmless."""
    sandbox = await create_sandbox(client)
    streams = []
    for base in ("", sandbox["base"]):
        response = await client.get(base + "/_mock/events")
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        line = await asyncio.wait_for(response.content.readline(), TIMEOUT)
        assert line == b"event: ready\n"
        streams.append(response)
    await asyncio.wait_for(client.serving.stop(), TIMEOUT)
    for response in streams:
        rest = await asyncio.wait_for(response.content.read(), TIMEOUT)
        assert re.fullmatch(rb"data: \{.*\}\n\n", rest), rest
        assert response.content.at_eof()
    await asyncio.wait_for(client.serving.stop(), TIMEOUT)
