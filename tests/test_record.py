"""`mock-server record` as a merchant runs it (docs/recording.md, "Record"): the recorder
as a process of its own, on loopback, in front of a stand-in for production: a real
sandbox server process (manual clock, seeded), or, where an answer of another shape is
needed, a small HTTP server of this file's own that answers with exact bytes.

No test sleeps on wall time: the sandbox's clock is advanced by hand, and a process's
ready line or a request's arrival is waited for against a deadline.
"""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from mock_server.recording.recorder import record
from mock_server.recording.recorder.fileformat import FORMAT, VERSION, read_lines
from mock_server.recording.recorder.proxy import Recorder
from mock_server.recording.recorder.redaction import RULES, Redactor, rules_without, scan
from mock_server.testing import WebhookReceiver
from tests.processes import (  # noqa: F401 - server_url, sandbox: fixtures
    DEADLINE,
    Process,
    environment,
    sandbox,
    server_url,
)

AT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
PLACEHOLDER = re.compile(r"^<([a-z_]+):([0-9a-f]{12})>$")
RULE_NAMES = list(RULES)


# -- processes ---------------------------------------------------------------------------------


def record_argv(*args: str) -> list[str]:
    """`mock-server record ARGS`."""
    return [sys.executable, "-m", "mock_server", "record", *args]


class RecorderProcess(Process):
    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        super().__init__("record", *args, env=env)
        first = self.wait_for("recording on ")
        self.url, _, self.upstream = first.removeprefix("recording on ").partition(" -> ")
        self.webhook_url = self.wait_for("webhook receiver ").removeprefix("webhook receiver ")
        self.path = self.wait_for("file ").removeprefix("file ")


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[Callable[..., RecorderProcess]]:
    """Start `mock-server record --port 0 --out <tmp>/<name> ARGS`; killed at teardown."""
    started: list[RecorderProcess] = []

    def start(
        *args: str, name: str = "session.jsonl", env: dict[str, str] | None = None
    ) -> RecorderProcess:
        process = RecorderProcess("--port", "0", "--out", str(tmp_path / name), *args, env=env)
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver()
    yield receiver
    receiver.close()


def forwarding(sandbox, recorder, receiver: WebhookReceiver) -> RecorderProcess:
    """A recorder in front of `sandbox`, its account's webhooks pointed at the recorder,
    which checks their signatures and forwards them to `receiver` (which checks too)."""
    receiver.secret = sandbox.webhook_secret
    rec = recorder(
        "--upstream",
        sandbox.url,
        "--webhook-forward-to",
        receiver.url,
        "--webhook-secret",
        sandbox.webhook_secret,
    )
    sandbox.set_webhook_url(rec.webhook_url)
    return rec


# -- HTTP, exactly -------------------------------------------------------------------------------


@dataclass
class Answer:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


def call(
    base: str,
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str | None = None,
    headers: list[tuple[str, str]] | None = None,
    raw: bytes | None = None,
) -> Answer:
    """One request with exactly these headers (http.client adds only `Host` and, for a
    body, `Content-Length`); the answer as it came, nothing decoded."""
    parts = urllib.parse.urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=DEADLINE)
    try:
        connection.putrequest(method, parts.path.rstrip("/") + path, skip_accept_encoding=True)
        sent = list(headers or [])
        if token:
            sent.append(("Authorization", f"Bearer {token}"))
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        if data is not None:
            if not any(name.lower() == "content-type" for name, _ in sent):
                sent.append(("Content-Type", "application/json"))
            sent.append(("Content-Length", str(len(data))))
        for name, value in sent:
            connection.putheader(name, value)
        connection.endheaders(data)
        response = connection.getresponse()
        return Answer(response.status, response.reason, response.getheaders(), response.read())
    finally:
        connection.close()


def token_of(base: str, api_key: str) -> str:
    answer = call(base, "POST", "/api/v1/auth/token/client", {"api_key": api_key})
    assert answer.status == 200, answer
    return answer.json["access_token"]


def events_of(path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the events, in seq order, of a finished file (its end line last)."""
    lines = [json.loads(line) for line in read_lines(path)]
    assert lines[-1]["kind"] == "end" and lines[-1]["scanned"] is True, lines[-1]
    return lines[0], sorted(lines[1:-1], key=lambda event: event["seq"])


def exchanges(events: list[dict[str, Any]], method: str, suffix: str) -> list[dict[str, Any]]:
    return [
        e
        for e in events
        if e["kind"] == "exchange"
        and e["request"]["method"] == method
        and e["request"]["path"].endswith(suffix)
    ]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# -- a stand-in that answers with exact bytes --------------------------------------------------


def _raw(status: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    head = [f"HTTP/1.1 {status}"] + [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


PLAIN_BODY = json.dumps({"greeting": "hi", "contact": "ops@example.org"}).encode()
GZIP_JSON = {"codes": ["GZ-CODE-0001", "GZ-CODE-0002"], "email": "gz@example.org"}
GZIP_BODY = gzip.compress(json.dumps(GZIP_JSON).encode(), mtime=0)
BINARY_BODY = bytes(range(256))
TEXT_BODY = b"plain words, not JSON"
COOKIE_SECRET = "set-cookie-secret-4711"
#: Path -> the whole answer, byte for byte: no Date, no Server; a reason of its own.
CANNED = {
    "/plain": _raw(
        "200 Fine",
        [
            ("Content-Type", "application/json"),
            ("X-Custom", "a"),
            ("x-custom", "b"),
            ("Set-Cookie", f"session={COOKIE_SECRET}; Path=/; HttpOnly"),
            ("Set-Cookie", "theme=dark"),
            ("Content-Length", str(len(PLAIN_BODY))),
        ],
        PLAIN_BODY,
    ),
    "/gzip": _raw(
        "200 OK",
        [
            ("Content-Type", "application/json"),
            ("Content-Encoding", "gzip"),
            ("Vary", "Accept-Encoding"),
            ("Content-Length", str(len(GZIP_BODY))),
        ],
        GZIP_BODY,
    ),
    "/binary": _raw(
        "200 OK",
        [("Content-Type", "application/octet-stream"), ("Content-Length", "256")],
        BINARY_BODY,
    ),
    "/text": _raw(
        "200 OK",
        [("Content-Type", "text/plain"), ("Content-Length", str(len(TEXT_BODY)))],
        TEXT_BODY,
    ),
    "/empty": _raw("204 No Content", [("X-Empty", "yes")], b""),
    # An encoding the recorder cannot decode here: passed through, its body not recorded.
    "/zstd": _raw(
        "200 OK",
        [("Content-Type", "application/json"), ("Content-Encoding", "zstd")]
        + [("Content-Length", "8")],
        b"\x28\xb5\x2f\xfd\x00\x00\x00\x00",
    ),
    "/hold": _raw("200 OK", [("Content-Length", "4")], b"done"),
}


@dataclass
class Received:
    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes


class ByteUpstream:
    """Answers each path of `CANNED` with its exact bytes; keeps every request it got.
    `/hold` answers only once `release` is set."""

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.release = threading.Event()
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                upstream.received.append(
                    Received(self.command, self.path, list(self.headers.items()), body)
                )
                path = self.path.partition("?")[0]
                if path == "/hold":
                    upstream.release.wait(DEADLINE)
                self.wfile.write(CANNED.get(path, CANNED["/plain"]))
                self.wfile.flush()

            do_GET = do_POST = do_PUT = do_DELETE = _any  # noqa: N815 - the stdlib's naming

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()

    def wait_for_requests(self, count: int) -> None:
        deadline = time.monotonic() + DEADLINE
        while len(self.received) < count:
            assert time.monotonic() < deadline, f"{len(self.received)} of {count} came"
            time.sleep(0.01)

    def close(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def byte_upstream() -> Iterator[ByteUpstream]:
    upstream = ByteUpstream()
    yield upstream
    upstream.close()


def _without_host(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(name, value) for name, value in headers if name.lower() != "host"]


# -- pass-through ------------------------------------------------------------------------------


def test_requests_and_answers_pass_through_byte_for_byte(byte_upstream, recorder):
    rec = recorder("--upstream", byte_upstream.url)
    request_headers = [
        ("Accept-Encoding", "gzip"),
        ("X-Dup", "1"),
        ("x-dup", "2"),
        ("Authorization", "Bearer pass-through-token-1"),
        ("Cookie", "sid=cookie-sent-by-the-client"),
        ("Content-Type", "application/json; charset=utf-8"),
    ]
    body = b'{"item_id": 1001,  "note": "spaces kept"}'
    target = "/plain?b=2&a=1&a=%20x"
    direct = call(byte_upstream.url, "POST", target, headers=request_headers, raw=body)
    proxied = call(rec.url, "POST", target, headers=request_headers, raw=body)

    sent_direct, sent_proxied = byte_upstream.received
    assert sent_proxied.method == "POST" and sent_proxied.target == target
    assert sent_proxied.body == body == sent_direct.body
    # Order, case and repeats kept: two names that differ only in case included.
    assert _without_host(sent_proxied.headers) == _without_host(sent_direct.headers)
    assert dict(sent_proxied.headers)["Host"] == urllib.parse.urlsplit(byte_upstream.url).netloc

    assert (proxied.status, proxied.reason) == (direct.status, direct.reason) == (200, "Fine")
    assert proxied.headers == direct.headers, "same names, case, order and repeats"
    assert not {"date", "server"} & {name.lower() for name, _ in proxied.headers}
    assert proxied.body == direct.body == PLAIN_BODY

    # A compressed answer passes compressed, untouched; a 204 stays bodiless.
    for path in ("/gzip", "/empty", "/binary", "/text"):
        direct = call(byte_upstream.url, "GET", path, headers=[("Accept-Encoding", "gzip")])
        proxied = call(rec.url, "GET", path, headers=[("Accept-Encoding", "gzip")])
        assert (proxied.status, proxied.headers, proxied.body) == (
            direct.status,
            direct.headers,
            direct.body,
        ), path
    assert proxied.body == TEXT_BODY


def test_the_file_holds_each_body_form_and_the_answers_as_sent(byte_upstream, recorder):
    rec = recorder("--upstream", byte_upstream.url)
    sent = [("Accept-Encoding", "gzip"), ("X-Dup", "1"), ("X-Dup", "2")]
    answers = {
        "plain": call(rec.url, "POST", "/plain?x=1&y", {"n": 1}, headers=sent),
        "gzip": call(rec.url, "GET", "/gzip", headers=sent),
        "binary": call(rec.url, "PUT", "/binary", raw=b"\xff\xfe\x00", headers=sent),
        "text": call(rec.url, "POST", "/text", raw=b"a=b&c=d", headers=[("X-A", "1")]),
        "empty": call(rec.url, "DELETE", "/empty"),
        "zstd": call(rec.url, "GET", "/zstd", headers=[("Expect", "100-continue")]),
    }
    assert rec.signal(signal.SIGTERM) == 0
    header, events = events_of(rec.path)
    assert header["format"] == FORMAT and header["version"] == VERSION
    assert header["upstream"] == byte_upstream.url and AT.match(header["started_at"])
    assert header["redaction"] == RULE_NAMES
    assert [e["seq"] for e in events] == [1, 2, 3, 4, 5, 6]
    for event in events:
        assert set(event) == {"seq", "at", "kind", "request", "response", "ms"}
        assert event["kind"] == "exchange" and AT.match(event["at"])
        assert isinstance(event["ms"], float) and event["ms"] >= 0
    plain, gzipped, binary, text, empty, zstd = events

    assert plain["request"]["path"] == "/plain" and plain["request"]["query"] == "x=1&y"
    assert ["X-Dup", "1"] in plain["request"]["headers"]
    assert ["X-Dup", "2"] in plain["request"]["headers"]
    assert plain["request"]["body"] == {"n": 1}
    assert plain["response"]["status"] == 200
    response_headers = [tuple(pair) for pair in plain["response"]["headers"]]
    assert response_headers[:3] == [
        ("Content-Type", "application/json"),
        ("X-Custom", "a"),
        ("x-custom", "b"),
    ]
    got = answers["plain"].headers
    assert [n for n, _ in response_headers] == [n for n, _ in got], "as the client got them"
    assert [p for p in response_headers if p[0] != "Set-Cookie"] == [
        p for p in got if p[0] != "Set-Cookie"
    ]
    assert plain["response"]["body"]["greeting"] == "hi"

    # Recorded decoded, redacted; the header says how it was sent.
    assert ["Content-Encoding", "gzip"] in gzipped["response"]["headers"]
    assert set(gzipped["response"]["body"]) == {"codes", "email"}
    assert len(gzipped["response"]["body"]["codes"]) == 2
    assert answers["gzip"].body == GZIP_BODY

    assert binary["request"]["body_base64"] == base64.b64encode(b"\xff\xfe\x00").decode()
    assert binary["response"]["body_base64"] == base64.b64encode(BINARY_BODY).decode()
    assert text["request"]["body_text"] == "a=b&c=d"
    assert text["response"]["body_text"] == TEXT_BODY.decode()
    assert empty["request"]["method"] == "DELETE" and empty["request"]["query"] == ""
    assert empty["response"]["status"] == 204
    for message in (empty["request"], empty["response"], gzipped["request"]):
        assert not {"body", "body_text", "body_base64"} & set(message)

    # Bytes that cannot be read cannot be redacted: left out, and said so.
    assert answers["zstd"].status == 200 and answers["zstd"].body.startswith(b"\x28\xb5")
    assert zstd["response"]["body_omitted"] == "content-encoding zstd"
    assert not {"body", "body_text", "body_base64"} & set(zstd["response"])
    assert "Expect" not in dict(byte_upstream.received[-1].headers), "answered here"


# -- secrets -----------------------------------------------------------------------------------


def test_no_secret_reaches_the_file_while_the_client_gets_every_one(sandbox, recorder, receiver):
    rec = forwarding(sandbox, recorder, receiver)
    first, second = token_of(rec.url, sandbox.api_key), token_of(rec.url, sandbox.api_key)
    assert first != second
    cookie = "sid=a-cookie-of-the-client-0815"
    me = call(rec.url, "GET", "/v1/account/me", token=first, headers=[("Cookie", cookie)])
    email = me.json["email"]
    assert "@" in email

    created = call(
        rec.url,
        "POST",
        "/api/v1/orders",
        {"item_id": 1001, "quantity": 2, "merchant_order_id": "rec-1"},
        token=first,
    )
    assert created.status == 201 and created.json["created_by"]["email"] == email
    sandbox.advance(5)
    looked_up = call(rec.url, "GET", f"/api/v1/orders/{created.json['id']}", token=second)
    codes = looked_up.json["codes"]
    assert looked_up.json["status"] == "completed" and len(codes) == 2

    login = "player.one@example.net"
    topup = call(
        rec.url,
        "POST",
        "/api/v1/orders",
        {"item_id": 2002, "quantity": 1, "fields": {"login_email": login, "server": 2}},
        token=first,
        headers=[("X-Mock-Scenario", "need_client_code")],
    )
    assert topup.status == 201, topup
    sandbox.advance(2)
    client_code = "834211"
    submitted = call(
        rec.url,
        "POST",
        f"/v1/orders/{topup.json['id']}/client-code",
        {"code": client_code},
        token=first,
    )
    assert submitted.status == 200, submitted
    sandbox.advance(2)
    assert len(receiver.events) == 2

    assert rec.signal(signal.SIGTERM) == 0
    assert rec.out[-1] == f"exchanges 7, orders 2, webhooks 2, file {rec.path}"
    text = Path(rec.path).read_text()
    signatures = {
        value
        for event in receiver.events
        for name, value in event.headers.items()
        if name.lower() in ("x-webhook-signature", "x-signature")
    }
    assert signatures and all(event.verified for event in receiver.events)
    secrets_seen = {
        "api key": sandbox.api_key,
        "first token": first,
        "second token": second,
        "e-mail": email,
        "login e-mail": login,
        "client code": client_code,
        "cookie": "a-cookie-of-the-client-0815",
        **{f"code {i}": code for i, code in enumerate(codes)},
        **{f"signature {i}": s.removeprefix("sha256=") for i, s in enumerate(signatures)},
    }
    for what, value in secrets_seen.items():
        assert value not in text, f"the {what} is in the file"

    header, events = events_of(rec.path)
    assert header["redaction"] == RULE_NAMES
    (token_one, token_two) = exchanges(events, "POST", "/auth/token/client")
    placeholder_one = token_one["response"]["body"]["access_token"]
    placeholder_two = token_two["response"]["body"]["access_token"]
    assert PLACEHOLDER.match(placeholder_one)[1] == "token"
    assert placeholder_one != placeholder_two, "two tokens, two placeholders"
    api_key = token_one["request"]["body"]["api_key"]
    assert PLACEHOLDER.match(api_key)[1] == "api_key"
    assert token_two["request"]["body"]["api_key"] == api_key, "one key, one placeholder"

    (me_event,) = exchanges(events, "GET", "/account/me")
    request_headers = dict(map(tuple, me_event["request"]["headers"]))
    assert request_headers["Authorization"] == f"Bearer {placeholder_one}"
    assert PLACEHOLDER.match(request_headers["Cookie"])[1] == "cookie"
    email_placeholder = me_event["response"]["body"]["email"]
    assert PLACEHOLDER.match(email_placeholder)[1] == "email"

    create_one, create_two = exchanges(events, "POST", "/api/v1/orders")
    assert create_one["response"]["body"]["created_by"]["email"] == email_placeholder
    assert create_one["request"]["body"]["merchant_order_id"] == "rec-1", "no secret: kept"
    fields = create_two["request"]["body"]["fields"]
    assert PLACEHOLDER.match(fields["login_email"])[1] == "email" and fields["server"] == 2
    (lookup,) = exchanges(events, "GET", created.json["id"])
    assert dict(map(tuple, lookup["request"]["headers"]))["Authorization"] == (
        f"Bearer {placeholder_two}"
    )
    recorded_codes = lookup["response"]["body"]["codes"]
    assert len(recorded_codes) == 2 and len(set(recorded_codes)) == 2, "the count is kept"
    assert all(PLACEHOLDER.match(code)[1] == "code" for code in recorded_codes)
    (code_event,) = exchanges(events, "POST", "/client-code")
    assert PLACEHOLDER.match(code_event["request"]["body"]["code"])[1] == "client_code"

    webhooks = [e for e in events if e["kind"] == "webhook"]
    assert [w["answered"] for w in webhooks] == [200, 200]
    assert [w["signature_valid"] for w in webhooks] == [True, True]
    key_event = next(w for w in webhooks if w["body"]["order_id"] == created.json["id"])
    assert key_event["body"]["codes"] == recorded_codes, "the same code, the same placeholder"
    for name, value in key_event["headers"]:
        if name.lower() in ("x-webhook-signature", "x-signature"):
            assert PLACEHOLDER.match(value)[1] == "signature"


def test_a_hosted_sandbox_s_control_secrets_are_redacted(server_url, recorder):
    """Recorded against a hosted sandbox instead of production, the control API's answers
    carry a control token, API keys and webhook secrets: none reaches the file."""
    rec = recorder("--upstream", server_url)
    created = call(rec.url, "POST", "/_mock/sandboxes", {"clock": "manual"})
    assert created.status == 201, created
    control_token = created.json["control_token"]
    base = urllib.parse.urlsplit(created.json["base_url"]).path
    accounts = call(rec.url, "GET", f"{base}/_mock/accounts", token=control_token)
    assert accounts.status == 200, accounts
    (account,) = accounts.json["accounts"]
    webhook_secret, (api_key,) = account["webhook_secret"], account["api_keys"]
    assert webhook_secret.startswith("whsec_") and api_key
    assert call(rec.url, "DELETE", f"/_mock/sandboxes/{created.json['id']}").status == 204

    assert rec.signal(signal.SIGTERM) == 0
    text = Path(rec.path).read_text()
    for what, value in [("control token", control_token), ("webhook secret", webhook_secret)]:
        assert value not in text, f"the {what} is in the file"
    assert api_key not in text
    _, events = events_of(rec.path)
    (create,) = exchanges(events, "POST", "/_mock/sandboxes")
    assert PLACEHOLDER.match(create["response"]["body"]["control_token"])[1] == "control_token"
    (read,) = exchanges(events, "GET", "/_mock/accounts")
    (recorded,) = read["response"]["body"]["accounts"]
    assert PLACEHOLDER.match(recorded["webhook_secret"])[1] == "webhook_secret"
    assert [PLACEHOLDER.match(key)[1] for key in recorded["api_keys"]] == ["api_key"]
    authorization = dict(map(tuple, read["request"]["headers"]))["Authorization"]
    assert PLACEHOLDER.match(authorization.removeprefix("Bearer "))[1] == "token"


def test_a_set_cookie_answer_is_redacted(byte_upstream, recorder):
    rec = recorder("--upstream", byte_upstream.url)
    answer = call(rec.url, "GET", "/plain")
    assert (
        "Set-Cookie",
        f"session={COOKIE_SECRET}; Path=/; HttpOnly",
    ) in answer.headers, "the client gets the cookie"
    assert rec.signal(signal.SIGTERM) == 0
    text = Path(rec.path).read_text()
    assert COOKIE_SECRET not in text and "ops@example.org" not in text
    _, (event,) = events_of(rec.path)
    cookies = [v for n, v in event["response"]["headers"] if n.lower() == "set-cookie"]
    assert len(cookies) == 2 and all(PLACEHOLDER.match(c)[1] == "cookie" for c in cookies)


def test_placeholders_are_keyed_per_recording():
    def event(token: str) -> dict[str, Any]:
        return {
            "kind": "exchange",
            "request": {
                "method": "GET",
                "path": "/api/v1/account/balance",
                "query": "",
                "headers": [["Authorization", f"Bearer {token}"]],
            },
            "response": {"status": 200, "headers": []},
        }

    one, other = Redactor(), Redactor()
    a, b = (one.redact(event("tok-a"))["request"]["headers"][0][1] for _ in range(2))
    c = one.redact(event("tok-c"))["request"]["headers"][0][1]
    assert a == b != c
    assert other.redact(event("tok-a"))["request"]["headers"][0][1] != a
    assert one.secrets == {"tok-a": "token", "tok-c": "token"}


def test_the_scan_finds_values_but_not_chance_digits():
    found = {"834211": "client_code", "abcdefgh-token": "token", "12": "client_code"}
    assert scan('{"id":"a834211f-...","ms":12.5}', found) is None
    assert scan('{"x":1}\n{"note":"code 834211 was sent"}\n', found).line == 2
    assert scan('{"detail":"abcdefgh-tokenX"}', found).kind == "token"
    escaped = {'quote"inside': "cookie"}
    assert scan(json.dumps({"v": 'quote"inside'}), escaped).kind == "cookie"


async def test_the_scan_removes_a_file_that_leaks(sandbox, tmp_path, capsys):
    """A rule defeated on purpose (the recorder built without `emails`): the scan
    still knows every address it saw, finds one, removes the file, and the command's
    conclusion is a failure that names the kind and the line, never the value."""
    out = tmp_path / "leaky.jsonl"
    recording = Recorder(sandbox.url, str(out), port=0, rules=rules_without("emails"))
    await recording.start()
    try:
        async with aiohttp.ClientSession() as client:
            async with client.post(
                recording.url + "/api/v1/auth/token/client", json={"api_key": sandbox.api_key}
            ) as answer:
                token = (await answer.json())["access_token"]
            headers = {"Authorization": f"Bearer {token}"}
            async with client.get(recording.url + "/v1/account/me", headers=headers) as answer:
                email = (await answer.json())["email"]
    finally:
        await recording.stop()
    partial = Path(recording.partial)
    assert email in partial.read_text(), "the rule really was defeated"
    assert "emails" not in json.loads(partial.read_text().splitlines()[0])["redaction"]

    assert record.conclude(recording) == 1
    assert not out.exists() and not partial.exists()
    said = capsys.readouterr()
    # The event and the field, never a line of the file just removed, nor the value.
    assert "(kind: email) stands in event seq 2 at /response/body/email" in said.err
    assert "removed" in said.err and "line" not in said.err
    assert email not in said.err + said.out


# -- webhooks ----------------------------------------------------------------------------------


def test_webhooks_are_forwarded_and_each_retry_recorded(sandbox, recorder, receiver):
    rec = forwarding(sandbox, recorder, receiver)
    token = token_of(rec.url, sandbox.api_key)
    order = call(
        rec.url,
        "POST",
        "/api/v1/orders",
        {"item_id": 1001, "merchant_order_id": "w-1"},
        token=token,
    ).json
    receiver.respond_with(500)
    sandbox.advance(5)  # settles; the first attempt fails
    sandbox.advance(60)  # the first retry fails too
    receiver.respond_with(200)
    sandbox.advance(60)  # the second retry succeeds

    (delivery,) = sandbox.webhooks(order["id"])
    assert [a["status_code"] for a in delivery["attempts"]] == [500, 500, 200]
    assert delivery["status"] == "delivered"
    assert len(receiver.events) == 3 and all(event.verified for event in receiver.events)
    assert call(rec.url, "GET", "/_record/webhook").status == 405
    assert rec.signal(signal.SIGTERM) == 0
    assert rec.out[-1] == f"exchanges 2, orders 1, webhooks 3, file {rec.path}"

    _, events = events_of(rec.path)
    webhooks = [event for event in events if event["kind"] == "webhook"]
    assert [w["answered"] for w in webhooks] == [500, 500, 200]
    assert [w["signature_valid"] for w in webhooks] == [True, True, True]
    assert {w["body"]["order_id"] for w in webhooks} == {order["id"]}
    assert {w["body"]["merchant_order_id"] for w in webhooks} == {"w-1"}
    assert [w["seq"] for w in webhooks] == [3, 4, 5]
    arrivals = [w["at"] for w in webhooks]
    assert arrivals == sorted(arrivals) and all(AT.match(at) for at in arrivals)


@pytest.mark.parametrize(
    ("secret", "expected"),
    [(None, None), ("whsec_not_the_one", False), ("env", True)],
    ids=["none", "wrong", "from MOCK_RECORD_WEBHOOK_SECRET"],
)
def test_without_a_receiver_deliveries_are_answered_200(sandbox, recorder, secret, expected):
    args = ["--upstream", sandbox.url]
    env = None
    if secret == "env":  # kept out of the process list
        env = {record.SECRET_ENV: sandbox.webhook_secret}
    elif secret:
        args += ["--webhook-secret", secret]
    rec = recorder(*args, env=env)
    sandbox.set_webhook_url(rec.webhook_url)
    token = token_of(rec.url, sandbox.api_key)
    order = call(rec.url, "POST", "/api/v1/orders", {"item_id": 1001}, token=token).json
    sandbox.advance(5)
    (delivery,) = sandbox.webhooks(order["id"])
    assert [a["status_code"] for a in delivery["attempts"]] == [200]
    assert rec.signal(signal.SIGINT) == 0
    _, events = events_of(rec.path)
    (webhook,) = [event for event in events if event["kind"] == "webhook"]
    assert set(webhook) == {"seq", "at", "kind", "headers", "body", "answered", "signature_valid"}
    assert webhook["answered"] == 200 and webhook["signature_valid"] is expected


def test_a_receiver_that_cannot_be_reached_is_answered_502(sandbox, recorder):
    rec = recorder(
        "--upstream", sandbox.url, "--webhook-forward-to", f"http://127.0.0.1:{free_port()}/h"
    )
    sandbox.set_webhook_url(rec.webhook_url)
    token = token_of(rec.url, sandbox.api_key)
    order = call(rec.url, "POST", "/api/v1/orders", {"item_id": 1001}, token=token).json
    sandbox.advance(5)
    (delivery,) = sandbox.webhooks(order["id"])
    assert [a["status_code"] for a in delivery["attempts"]] == [502]
    assert rec.signal(signal.SIGTERM) == 0
    _, events = events_of(rec.path)
    assert [e["answered"] for e in events if e["kind"] == "webhook"] == [502]


# -- failures, signals, the file on disk -------------------------------------------------------


def test_an_upstream_that_is_down_gives_502_recorded(recorder):
    rec = recorder("--upstream", f"http://127.0.0.1:{free_port()}")
    answer = call(rec.url, "POST", "/api/v1/orders", {"item_id": 1001}, token="t-123456789")
    assert answer.status == 502
    assert answer.json["code"] == "upstream_unavailable" and answer.json["detail"]
    assert rec.signal(signal.SIGTERM) == 0
    _, (event,) = events_of(rec.path)
    assert event["response"]["status"] == 502
    assert event["response"]["body"] == answer.json
    recorded = [tuple(pair) for pair in event["response"]["headers"]]
    assert recorded == [(n, v) for n, v in answer.headers if n.lower() != "connection"]


async def test_an_upstream_that_does_not_answer_in_time_gives_502(byte_upstream, tmp_path):
    out = tmp_path / "slow.jsonl"
    recording = Recorder(byte_upstream.url, str(out), port=0, upstream_timeout=0.2)
    await recording.start()
    try:
        async with aiohttp.ClientSession() as client, client.get(recording.url + "/hold") as answer:
            assert answer.status == 502
            body = await answer.json()
    finally:
        await recording.stop()
    assert body["code"] == "upstream_unavailable" and "0.2 s" in body["detail"]
    assert recording.finish() is None
    _, (event,) = events_of(out)
    assert event["response"]["body"] == body


@pytest.mark.parametrize("name", ["killed.jsonl", "killed.jsonl.gz"])
def test_a_killed_recorder_leaves_every_finished_exchange(sandbox, recorder, name):
    rec = recorder("--upstream", sandbox.url, name=name)
    token = token_of(rec.url, sandbox.api_key)
    for number in range(5):
        body = {"item_id": 1001, "merchant_order_id": f"k-{number}"}
        assert call(rec.url, "POST", "/api/v1/orders", body, token=token).status == 201
    rec.popen.send_signal(signal.SIGKILL)
    rec.finish()
    assert not Path(rec.path).exists()  # unfinished: it never took the name asked for
    data = Path(rec.path + ".partial").read_bytes()
    if name.endswith(".gz"):
        with pytest.raises(EOFError):
            gzip.decompress(data)  # cut short: no end of stream...
        data = zlib.decompressobj(wbits=31).decompress(data)  # ...yet readable
    lines = data.decode().splitlines()
    assert len(lines) == 7 and lines == read_lines(rec.path + ".partial")
    assert json.loads(lines[0])["format"] == FORMAT
    events = [json.loads(line) for line in lines[1:]]
    assert [e["seq"] for e in events] == list(range(1, 7))
    assert [e["request"]["body"]["merchant_order_id"] for e in events[1:]] == [
        f"k-{number}" for number in range(5)
    ]


@pytest.mark.parametrize("name", ["stopped.jsonl", "stopped.jsonl.gz"])
def test_sigterm_lets_exchanges_in_flight_finish(byte_upstream, recorder, name):
    rec = recorder("--upstream", byte_upstream.url, name=name)
    answers: list[Answer] = []
    client = threading.Thread(target=lambda: answers.append(call(rec.url, "GET", "/hold")))
    client.start()
    byte_upstream.wait_for_requests(1)
    rec.popen.send_signal(signal.SIGTERM)
    byte_upstream.release.set()
    assert rec.finish() == 0
    client.join(DEADLINE)
    assert answers[0].status == 200 and answers[0].body == b"done"
    assert rec.out == [
        f"recording on {rec.url} -> {byte_upstream.url}",
        f"webhook receiver {rec.url}/_record/webhook",
        f"file {rec.path}",
        f"exchanges 1, orders 0, webhooks 0, file {rec.path}",
    ]
    data = Path(rec.path).read_bytes()
    if name.endswith(".gz"):
        data = gzip.decompress(data)  # a whole gzip stream: closed properly
    header, event, end = (json.loads(line) for line in data.decode().splitlines())
    assert header["format"] == FORMAT and event["response"]["body_text"] == "done"
    assert end == {
        "kind": "end",
        "exchanges": 1,
        "orders": 0,
        "webhooks": 0,
        "scanned": True,
        "warnings": [],
    }


def test_the_plant_demo_and_any_path_pass(sandbox, recorder):
    rec = recorder("--upstream", sandbox.url)
    plant = call(rec.url, "PUT", "/v3/plant", {"id": 1, "name": "fern", "status": "sold"})
    assert plant.status == 200 and plant.json["name"] == "fern"
    assert call(rec.url, "GET", "/no/such/path?q=1").status == 404
    assert rec.signal(signal.SIGTERM) == 0
    _, events = events_of(rec.path)
    assert [(e["request"]["path"], e["response"]["status"]) for e in events] == [
        ("/v3/plant", 200),
        ("/no/such/path", 404),
    ]
    assert events[1]["request"]["query"] == "q=1"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--upstream", "ftp://example.com", "--out", "{tmp}/a.jsonl"], "not an http"),
        (["--upstream", "example.com", "--out", "{tmp}/a.jsonl"], "not an http"),
        (["--upstream", "http://h/?q=1", "--out", "{tmp}/a.jsonl"], "no query"),
        (["--upstream", "http://127.0.0.1:1", "--out", "{tmp}/no/such/dir/a.jsonl"], "--out"),
        (["--upstream", "http://127.0.0.1:1", "--out", "{tmp}"], "--out"),
        (["--upstream", "http://127.0.0.1:1"], "--out"),
        (["--upstream", "http://127.0.0.1:1", "--out", "{tmp}/a", "--port", "70000"], "port"),
    ],
    ids=["ftp", "no-scheme", "query", "missing-dir", "a-directory", "no-out", "bad-port"],
)
def test_bad_arguments_exit_2(tmp_path, args, said):
    argv = record_argv(*(arg.replace("{tmp}", str(tmp_path)) for arg in args))
    done = subprocess.run(argv, capture_output=True, text=True, env=environment(), timeout=DEADLINE)
    assert done.returncode == 2, done
    assert said in done.stderr and done.stdout == ""


def test_a_busy_port_exits_1_and_leaves_no_file(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        out = tmp_path / "never.jsonl"
        argv = record_argv("--upstream", "http://127.0.0.1:1", "--out", str(out), "--port", port)
        done = subprocess.run(
            argv, capture_output=True, text=True, env=environment(), timeout=DEADLINE
        )
    assert done.returncode == 1 and "cannot listen" in done.stderr
    assert not out.exists()
