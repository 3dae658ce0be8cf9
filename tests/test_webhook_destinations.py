"""Where a webhook may go (docs/hosting.md, "Webhook destinations").

The rules themselves are checked as a table of addresses. Through the server, traffic
goes only to loopback: a literal refused address is refused where the URL is set (a
400, or `file:line: reason`), so no test lets the server attempt a link-local, private
or public address; the rule at connection time is checked with names that resolve to
loopback (`localhost` and its case and trailing-dot forms) under
`--webhook-deny-private`, watched by a listener of our own that counts connections.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import BASE_SETTINGS, login

from mock_server.config import load_startup
from mock_server.domain.destinations import DestinationError, DestinationRules, unsendable
from mock_server.sourcefile import ConfigError
from mock_server.webhooks import REFUSED

DEFAULT = DestinationRules()
DENY_PRIVATE = DestinationRules(deny_private=True)

# -- the rules, as a table -------------------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    ["169.254.169.254", "169.254.0.1", "fe80::1", "::ffff:169.254.169.254", "FE80::abcd"],
)
def test_link_local_is_refused_by_default(address):
    assert "link-local" in (DEFAULT.refusal(address, address) or "")
    assert "link-local" in (DEFAULT.refusal("metadata.internal", address) or "")


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.9.9.9",
        "::1",
        "10.1.2.3",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "100.64.0.1",
        "fc00::1",
        "fd12::1",
        "0.0.0.0",
        "0.1.2.3",
        "::",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
    ],
)
def test_deny_private_refuses_loopback_private_shared_and_unspecified(address):
    assert DEFAULT.refusal(address, address) is None
    assert "--webhook-deny-private" in (DENY_PRIVATE.refusal(address, address) or "")


@pytest.mark.parametrize("address", ["93.184.216.34", "172.32.0.1", "100.128.0.1", "2001:db8::1"])
def test_public_addresses_pass_either_way(address):
    assert DEFAULT.refusal(address, address) is None
    assert DENY_PRIVATE.refusal(address, address) is None


def test_the_allow_list_names_hosts_suffixes_and_blocks_and_nothing_else_is_reached():
    rules = DestinationRules.parse(
        "hooks.example.com, *.tenant.test, 10.0.0.0/8, 169.254.169.254", deny_private=True
    )
    assert rules.refusal("hooks.example.com", "93.184.216.34") is None
    assert rules.refusal("HOOKS.Example.COM.", "93.184.216.34") is None
    assert rules.refusal("a.tenant.test", "192.168.1.1") is None  # allowed beats denied
    assert rules.refusal("x.a.tenant.test", "93.184.216.34") is None
    assert rules.refusal("w", "10.2.3.4") is None
    assert rules.refusal("w", "169.254.169.254") is None  # link-local, named
    assert "--webhook-allow" in (rules.refusal("tenant.test", "93.184.216.34") or "")
    assert "--webhook-allow" in (rules.refusal("other.example", "93.184.216.34") or "")
    assert "--webhook-allow" in (rules.refusal("hooks.example.com.evil", "1.2.3.4") or "")


@pytest.mark.parametrize("entry", ["not a host", "*.", "10.0.0.0/33", "exa_mple.com", "::1/200"])
def test_a_bad_allow_entry_is_refused(entry):
    with pytest.raises(DestinationError):
        DestinationRules.parse(entry)


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        ("http://169.254.169.254/latest/meta-data", True),
        ("http://[fe80::1]:8080/x", True),
        ("http://[::ffff:169.254.169.254]/x", True),
        ("https://hooks.example.com/x", False),  # a name: checked when resolved
        ("http://127.0.0.1:9/x", False),
    ],
)
def test_a_literal_address_is_checked_where_the_url_is_set(url, refused):
    assert (DEFAULT.literal_refusal(url) is not None) is refused


# -- where a URL is set: refused with 400 (or file:line), nothing connected -----------------

LINK_LOCAL_URL = "http://169.254.169.254/latest/meta-data"


async def _account_id(client: Any) -> str:
    return (await (await client.get("/_mock/accounts")).json())["accounts"][0]["id"]


@pytest.mark.parametrize("url", [LINK_LOCAL_URL, "http://[fe80::1]/x"])
async def test_the_control_api_refuses_a_link_local_webhook_url(client, url):
    account_id = await _account_id(client)
    before = await (await client.get(f"/_mock/accounts/{account_id}")).json()
    patched = await client.patch(f"/_mock/accounts/{account_id}", json={"webhook_url": url})
    assert patched.status == 400
    body = await patched.json()
    assert body["code"] == "validation_error" and "link-local" in body["detail"]
    assert await (await client.get(f"/_mock/accounts/{account_id}")).json() == before
    created = await client.post(
        "/_mock/accounts", json={"email": "x@example.com", "webhook_url": url}
    )
    assert created.status == 400
    replaced = await client.put(
        "/_mock/accounts",
        json={"accounts": [{"email": "y@example.com", "api_key": "ak_y", "webhook_url": url}]},
    )
    assert replaced.status == 400
    sandbox = await client.post(
        "/_mock/sandboxes",
        json={
            "accounts": {
                "accounts": [{"email": "z@example.com", "api_key": "ak_z", "webhook_url": url}]
            }
        },
    )
    assert sandbox.status == 400, await sandbox.text()
    listed = await (await client.get("/_mock/sandboxes")).json()
    assert len(listed["sandboxes"]) == 1  # the default one only


async def test_deny_private_refuses_a_loopback_literal_where_it_is_set(make_client):
    client = await make_client(webhook_deny_private=True)
    account_id = await _account_id(client)
    for url in ("http://127.0.0.1:9/x", "http://[::1]:9/x", "http://10.0.0.1/x"):
        patched = await client.patch(f"/_mock/accounts/{account_id}", json={"webhook_url": url})
        assert patched.status == 400, url
        assert "--webhook-deny-private" in (await patched.json())["detail"]


def test_an_accounts_file_with_a_refused_url_is_refused_with_its_line(tmp_path: Path):
    path = tmp_path / "accounts.yaml"
    path.write_text(
        "accounts:\n"
        "  - email: a@example.com\n"
        "    api_key: ak_a\n"
        f"    webhook_url: {LINK_LOCAL_URL}\n"
    )
    from dataclasses import replace

    with pytest.raises(ConfigError) as caught:
        load_startup(replace(BASE_SETTINGS, accounts=str(path)))
    (problem,) = caught.value.problems
    assert problem.startswith(f"{path}:4:") and "link-local" in problem


def test_a_refused_webhook_url_flag_stops_the_start():
    from dataclasses import replace

    with pytest.raises(ConfigError) as caught:
        load_startup(replace(BASE_SETTINGS, webhook_url=LINK_LOCAL_URL))
    assert "--webhook-url" in caught.value.problems[0]


# -- where the connection is made: names that resolve to loopback ---------------------------


class Listener:
    """A receiver of our own on 127.0.0.1 that counts connections and answers 200."""

    def __init__(self) -> None:
        self.connections = 0
        self.port = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
        finally:
            writer.close()


@pytest.fixture
async def listener() -> AsyncIterator[Listener]:
    found = Listener()
    server = await asyncio.start_server(found.handle, "127.0.0.1", 0)
    found.port = server.sockets[0].getsockname()[1]
    async with server:
        yield found


async def _deliver(client: Any, url: str) -> dict[str, Any]:
    """Point the default account at `url`, settle one order, return its delivery."""
    account_id = await _account_id(client)
    patched = await client.patch(f"/_mock/accounts/{account_id}", json={"webhook_url": url})
    assert patched.status == 200, await patched.text()
    merchant = await login(client)
    status, order = await merchant.create({"item_id": 1001})
    assert status == 201, order
    await merchant.advance(3)
    deliveries = await (await client.get(f"/_mock/webhooks?order_id={order['id']}")).json()
    return deliveries["deliveries"][0]


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST", "LocalHost"])
async def test_a_name_resolving_to_loopback_is_refused_at_connect_time_with_deny_private(
    make_client, listener, host
):
    client = await make_client(webhook_deny_private=True)
    delivery = await _deliver(client, f"http://{host}:{listener.port}/hooks")
    (attempt,) = delivery["attempts"]
    assert attempt["status_code"] is None
    assert attempt["error"].startswith(REFUSED) and "--webhook-deny-private" in attempt["error"]
    assert delivery["status"] == "retrying"  # on the schedule like any failed attempt
    assert listener.connections == 0


@pytest.mark.parametrize("host", ["localhost.", "LocalHost."])
async def test_a_trailing_dot_name_is_never_connected_to_with_deny_private(
    make_client, listener, host
):
    """Whether the system resolves `localhost.` at all differs between machines: where
    it does, the rule refuses it; either way, nothing is connected to."""
    client = await make_client(webhook_deny_private=True)
    delivery = await _deliver(client, f"http://{host}:{listener.port}/hooks")
    (attempt,) = delivery["attempts"]
    assert attempt["status_code"] is None and attempt["error"]
    assert listener.connections == 0


@pytest.mark.parametrize("allow", ["localhost", "127.0.0.0/8, ::1/128", "*.localhost, localhost"])
async def test_what_the_allow_list_names_is_reached_despite_deny_private(
    make_client, listener, allow
):
    client = await make_client(webhook_deny_private=True, webhook_allow=allow)
    delivery = await _deliver(client, f"http://localhost:{listener.port}/hooks")
    assert delivery["status"] == "delivered", delivery
    assert listener.connections == 1


async def test_with_an_allow_list_nothing_else_is_reached(make_client, listener):
    client = await make_client(webhook_allow="hooks.example.test")
    delivery = await _deliver(client, f"http://localhost:{listener.port}/hooks")
    (attempt,) = delivery["attempts"]
    assert attempt["error"].startswith(REFUSED) and "--webhook-allow" in attempt["error"]
    assert listener.connections == 0
    account_id = await _account_id(client)
    literal = f"http://127.0.0.1:{listener.port}/hooks"
    patched = await client.patch(f"/_mock/accounts/{account_id}", json={"webhook_url": literal})
    assert patched.status == 400


async def test_by_default_a_local_receiver_is_still_reached(client, listener):
    for url in (f"http://localhost:{listener.port}/h", f"http://127.0.0.1:{listener.port}/h"):
        delivery = await _deliver(client, url)
        assert delivery["status"] == "delivered", delivery
    assert listener.connections == 2


# -- the flags ---------------------------------------------------------------------------------


def test_the_flags_and_variables_set_the_rules(monkeypatch):
    from mock_server.cli import parse_settings

    settings = parse_settings(["--webhook-allow", "*.example.test,10.0.0.0/8"])
    assert (settings.webhook_allow, settings.webhook_deny_private) == (
        "*.example.test,10.0.0.0/8",
        False,
    )
    monkeypatch.setenv("MOCK_WEBHOOK_DENY_PRIVATE", "1")
    monkeypatch.setenv("MOCK_WEBHOOK_ALLOW", "localhost")
    settings = parse_settings([])
    assert (settings.webhook_allow, settings.webhook_deny_private) == ("localhost", True)


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        (["--webhook-allow", "not a host"], {}),
        (["--webhook-allow", "10.0.0.0/40"], {}),
        ([], {"MOCK_WEBHOOK_DENY_PRIVATE": "maybe"}),
        ([], {"MOCK_WEBHOOK_ALLOW": "*."}),
    ],
)
def test_a_bad_flag_or_variable_exits_2(monkeypatch, capsys, argv, env):
    from mock_server.cli import parse_settings

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exited:
        parse_settings(argv)
    assert exited.value.code == 2
    assert "webhook" in capsys.readouterr().err.lower()


async def test_a_saved_state_naming_a_refused_literal_is_refused_whole(make_client):
    """docs/hosting.md: `PUT /_mock/state` is a place a URL is set too."""
    source = await make_client()
    document = await (await source.get("/_mock/state")).json()
    document["accounts"][0]["webhook_url"] = LINK_LOCAL_URL
    client = await make_client()
    before = await (await client.get("/_mock/state")).json()
    refused = await client.put("/_mock/state", json=document)
    assert refused.status == 400
    assert "link-local" in (await refused.json())["detail"]
    assert await (await client.get("/_mock/state")).json() == before


async def test_a_state_file_comes_back_under_stricter_rules(make_client, tmp_path, listener):
    """A sandbox accepted by an earlier run is restored whole; the stricter rules then
    hold where each attempt connects."""
    url = f"http://127.0.0.1:{listener.port}/hooks"
    delivery = await _settled_after_a_stricter_restart(make_client, tmp_path, url)
    assert delivery["attempts"][0]["error"].startswith(REFUSED)
    assert listener.connections == 0


async def _settled_after_a_stricter_restart(make_client: Any, tmp_path: Path, url: str) -> dict:
    """A sandbox whose account's webhook goes to `url`, accepted by a server without
    --webhook-deny-private and restored from its --state file by one with it: one order
    settled there, and its delivery."""
    from mock_server.app import create_app

    path = str(tmp_path / "state.db")
    account = {"email": "s@example.com", "api_key": "ak_s", "balance": 100, "webhook_url": url}
    first = await make_client(create_app(replace(BASE_SETTINGS, state=path)))
    created = await first.post("/_mock/sandboxes", json={"accounts": {"accounts": [account]}})
    assert created.status == 201, await created.text()
    sandbox_id = (await created.json())["id"]
    await first.session.close()
    await first.serving.stop()
    strict = replace(BASE_SETTINGS, state=path, webhook_deny_private=True)
    again = await make_client(create_app(strict))
    base = f"/_mock/sandboxes/{sandbox_id}"
    token = await (
        await again.post(base + "/api/v1/auth/token/client", json={"api_key": "ak_s"})
    ).json()
    auth = {"Authorization": f"Bearer {token['access_token']}"}
    made = await again.post(base + "/api/v1/orders", json={"item_id": 1001}, headers=auth)
    assert made.status == 201, await made.text()
    assert (await again.post(base + "/_mock/clock/advance", json={"seconds": 3})).status == 200
    (delivery,) = (await (await again.get(base + "/_mock/webhooks")).json())["deliveries"]
    return delivery


# -- URLs no HTTP client sends to: refused where they are set, whatever the rules ---------
# (docs/webhooks.md, "Where a webhook may go")

NON_CANONICAL = "is a numeric address in a non-canonical form"
#: (URL, what the reason says): none of them could ever be sent.
UNSENDABLE = [
    ("http://2130706433/hooks", f"host '2130706433' {NON_CANONICAL}"),
    ("http://127.1/hooks", f"host '127.1' {NON_CANONICAL}"),
    ("http://0x7f.1/hooks", f"host '0x7f.1' {NON_CANONICAL}"),
    ("http://0X7F.0.0.1:9/hooks", f"host '0X7F.0.0.1' {NON_CANONICAL}"),
    ("http://017700000001/hooks", f"host '017700000001' {NON_CANONICAL}"),
    ("http://0177.0.0.01/hooks", f"host '0177.0.0.01' {NON_CANONICAL}"),
    ("http://127.0.0.1./hooks", f"host '127.0.0.1.' {NON_CANONICAL}"),
    ("http://1.2.3.4.5/hooks", "names no IPv4 address"),
    ("http://256.1.1.1/hooks", "names no IPv4 address"),
    ("http://exa mple.com/hooks", "host 'exa mple.com' contains whitespace"),
    ("http://exa\tmple.com/hooks", "contains whitespace"),
    ("http://ex<a>mple.com/hooks", "contains '<', which a host name cannot hold"),
    ("http://a..b/hooks", "has an empty label"),
    ("http:///hooks", "has an empty host"),
    ("http://[zz]/hooks", "does not parse as a URL"),
    ("http://example.com:99999/hooks", "does not parse as a URL"),
]
#: Each non-canonical numeric host and the dotted quad the reason tells to write instead.
CANONICAL = {
    "http://2130706433/hooks": "127.0.0.1",
    "http://127.1/hooks": "127.0.0.1",
    "http://0x7f.1/hooks": "127.0.0.1",
    "http://0X7F.0.0.1:9/hooks": "127.0.0.1",
    "http://017700000001/hooks": "127.0.0.1",
    "http://0177.0.0.01/hooks": "127.0.0.1",
    "http://127.0.0.1./hooks": "127.0.0.1",
}
#: Hosts a client sends to: still accepted where a URL is set.
SENDABLE = [
    "http://example.com/hooks",
    "https://hooks.example.com/x",
    "http://localhost:9/hooks",
    "http://my-host:8080/hooks",
    "http://my_host/hooks",
    "http://127.0.0.1:9/hooks",
    "http://[::1]:9000/hooks",
    "http://1.example.com/hooks",
    "http://123abc.example/hooks",
    "http://0x7f.example/hooks",
    "http://localhost./hooks",
    "HTTP://localhost:9/hooks",
    "Https://hooks.example.com/x",
    "http://user:pw@example.com:8443/hooks?x=1#f",
]


@pytest.mark.parametrize(("url", "says"), UNSENDABLE)
def test_a_url_no_client_sends_to_says_why_whatever_the_rules(url, says):
    reason = unsendable(url)
    assert reason is not None and says in reason, reason
    if url in CANONICAL:
        assert reason.endswith(f"write it as a dotted quad ({CANONICAL[url]})"), reason
    for rules in (DEFAULT, DENY_PRIVATE, DestinationRules.parse("127.0.0.0/8, example.com")):
        assert rules.literal_refusal(url) == reason


def test_the_reason_for_a_hex_host_is_written_out():
    assert DEFAULT.literal_refusal("http://0x7f.1/") == (
        "host '0x7f.1' is a numeric address in a non-canonical form, which HTTP clients do "
        "not send to: write it as a dotted quad (127.0.0.1)"
    )


@pytest.mark.parametrize("url", SENDABLE)
def test_ordinary_hosts_are_still_sendable(url):
    assert unsendable(url) is None
    assert DEFAULT.literal_refusal(url) is None


@pytest.mark.parametrize("url", ["HTTP://169.254.169.254/latest/meta-data", "hTtPs://[FE80::1]/"])
def test_an_upper_case_scheme_is_refused_for_what_its_host_is(url):
    lower = url.split(":", 1)[0].lower() + ":" + url.split(":", 1)[1]
    reason = DEFAULT.literal_refusal(url)
    assert reason is not None and "link-local" in reason
    assert reason == DEFAULT.literal_refusal(lower)


async def _refused_everywhere_in_the_control_api(client: Any, url: str) -> list[str]:
    """Set `url` through each control call that sets one; each must answer 400
    `validation_error` and change nothing. Returns the details."""
    details = []
    account_id = await _account_id(client)
    before = await (await client.get("/_mock/accounts")).json()
    calls = [
        ("PATCH", f"/_mock/accounts/{account_id}", {"webhook_url": url}),
        ("POST", "/_mock/accounts", {"email": "x@example.com", "webhook_url": url}),
        (
            "PUT",
            "/_mock/accounts",
            {"accounts": [{"email": "y@example.com", "api_key": "ak_y", "webhook_url": url}]},
        ),
        (
            "POST",
            "/_mock/sandboxes",
            {
                "accounts": {
                    "accounts": [{"email": "z@example.com", "api_key": "ak_z", "webhook_url": url}]
                }
            },
        ),
    ]
    for method, path, body in calls:
        answer = await client.request(method, path, json=body)
        assert answer.status == 400, (method, path, await answer.text())
        refused = await answer.json()
        assert refused["code"] == "validation_error", refused
        details.append(refused["detail"])
    assert await (await client.get("/_mock/accounts")).json() == before
    listed = await (await client.get("/_mock/sandboxes")).json()
    assert len(listed["sandboxes"]) == 1  # the default one only
    return details


@pytest.mark.parametrize(("url", "says"), UNSENDABLE)
async def test_the_control_api_and_a_sandbox_body_refuse_a_url_no_client_sends_to(
    client, url, says
):
    for detail in await _refused_everywhere_in_the_control_api(client, url):
        assert f"'webhook_url' {says}" in detail or (
            "'webhook_url' " in detail and says in detail
        ), detail
        if url in CANONICAL:
            assert f"({CANONICAL[url]})" in detail, detail


async def test_an_upper_case_scheme_reaches_the_link_local_rule_in_the_control_api(client):
    details = await _refused_everywhere_in_the_control_api(client, "HTTP://169.254.169.254/x")
    for detail in details:
        assert "link-local" in detail and "http(s) URL" not in detail, detail


@pytest.mark.parametrize("url", ["HTTP://localhost:9/hooks", "Https://hooks.example.com/x"])
async def test_an_upper_case_scheme_to_an_ordinary_host_is_accepted(client, url):
    account_id = await _account_id(client)
    patched = await client.patch(f"/_mock/accounts/{account_id}", json={"webhook_url": url})
    assert patched.status == 200, await patched.text()
    assert (await patched.json())["webhook_url"] == url
    created = await client.post(
        "/_mock/accounts", json={"email": "u@example.com", "webhook_url": url}
    )
    assert created.status == 201, await created.text()


@pytest.mark.parametrize("url", ["ftp://example.com/hooks", "example.com/hooks", " http://x/"])
async def test_what_is_no_http_url_is_still_refused_as_such(client, url):
    account_id = await _account_id(client)
    patched = await client.patch(f"/_mock/accounts/{account_id}", json={"webhook_url": url})
    assert patched.status == 400
    assert "'webhook_url' must be an http(s) URL" in (await patched.json())["detail"]


def _accounts_file(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "accounts.yaml"
    path.write_text(
        "accounts:\n"
        "  - email: a@example.com\n"
        "    api_key: ak_a\n"
        f"    webhook_url: {json.dumps(url)}\n"  # a JSON string is a YAML string
    )
    return path


@pytest.mark.parametrize(("url", "says"), UNSENDABLE)
def test_an_accounts_file_refuses_a_url_no_client_sends_to_with_its_line(tmp_path, url, says):
    path = _accounts_file(tmp_path, url)
    with pytest.raises(ConfigError) as caught:
        load_startup(replace(BASE_SETTINGS, accounts=str(path)))
    (problem,) = caught.value.problems
    assert problem.startswith(f"{path}:4: 'webhook_url' ") and says in problem, problem
    if url in CANONICAL:
        assert problem.endswith(f"({CANONICAL[url]})"), problem


def test_an_accounts_file_with_an_upper_case_scheme_meets_the_link_local_rule(tmp_path):
    path = _accounts_file(tmp_path, "HTTP://169.254.169.254/latest/meta-data")
    with pytest.raises(ConfigError) as caught:
        load_startup(replace(BASE_SETTINGS, accounts=str(path)))
    (problem,) = caught.value.problems
    assert problem.startswith(f"{path}:4:") and "link-local" in problem, problem


@pytest.mark.parametrize("url", SENDABLE)
def test_an_accounts_file_and_the_flag_take_ordinary_hosts(tmp_path, url):
    startup = load_startup(replace(BASE_SETTINGS, accounts=str(_accounts_file(tmp_path, url))))
    assert startup.accounts[0].webhook_url == url
    startup = load_startup(replace(BASE_SETTINGS, webhook_url=url))
    assert startup.accounts[0].webhook_url == url


@pytest.mark.parametrize(("url", "says"), [*UNSENDABLE, ("HTTP://169.254.169.254/x", "link-local")])
def test_the_webhook_url_flag_refuses_a_url_no_client_sends_to(url, says):
    with pytest.raises(ConfigError) as caught:
        load_startup(replace(BASE_SETTINGS, webhook_url=url))
    (problem,) = caught.value.problems
    assert problem.startswith("--webhook-url is refused: ") and says in problem, problem


@pytest.mark.parametrize("url", ["http://2130706433/hooks", "http://exa mple.com/hooks"])
async def test_a_saved_state_naming_a_url_no_client_sends_to_is_refused_whole(make_client, url):
    client = await make_client()
    document = await (await client.get("/_mock/state")).json()
    document["accounts"][0]["webhook_url"] = url
    before = await (await client.get("/_mock/state")).json()
    refused = await client.put("/_mock/state", json=document)
    assert refused.status == 400
    detail = (await refused.json())["detail"]
    assert "'webhook_url' is refused: host" in detail and unsendable(url) in detail, detail
    assert await (await client.get("/_mock/state")).json() == before


# -- hosts the HTTP client normalises: checked as what it connects to ----------------------
# (docs/hosting.md, "Webhook destinations": IDNA maps Unicode digits and full stops)

#: (URL, the address the HTTP client connects to). Each was once read as a host name,
#: skipped the resolver's check and was connected to as the address it normalises to.
NORMALISED_LOOPBACK = [
    ("http://1㉗.0.0.1:{port}/x", "127.0.0.1"),  # CIRCLED NUMBER TWENTY SEVEN
    ("http://①②⑦.0.0.1:{port}/x", "127.0.0.1"),
    ("http://１２７.０.０.１:{port}/x", "127.0.0.1"),  # full-width digits
    ("http://127。0。0。1:{port}/x", "127.0.0.1"),  # ideographic full stops
    ("http://127．0．0．1:{port}/x", "127.0.0.1"),  # full-width full stops
    ("http://127｡0｡0｡1:{port}/x", "127.0.0.1"),  # half-width ideographic full stops
]
NORMALISED_LINK_LOCAL = [
    "http://⑯9.254.⑯9.254/latest/meta-data",
    "http://１６９.２５４.１６９.２５４/latest/meta-data",
]


@pytest.mark.parametrize(("url", "address"), NORMALISED_LOOPBACK)
def test_a_host_that_normalises_to_loopback_is_refused_with_what_it_became(url, address):
    reason = DENY_PRIVATE.literal_refusal(url.format(port=9))
    assert reason is not None and "--webhook-deny-private" in reason
    assert f"is {address} once normalised" in reason
    assert DEFAULT.literal_refusal(url.format(port=9)) is None  # loopback is fine locally


@pytest.mark.parametrize("url", NORMALISED_LINK_LOCAL)
def test_a_host_that_normalises_to_the_metadata_address_is_refused_by_default(url):
    reason = DEFAULT.literal_refusal(url)
    assert reason is not None and "link-local" in reason and "169.254.169.254" in reason


@pytest.mark.parametrize(
    "url", ["http://０x7f.1/x", "http://1㉗.1/x", "http://２１３０７０６４３３/x"]
)
def test_a_normalised_numeric_host_in_a_non_canonical_form_is_unsendable(url):
    reason = unsendable(url)
    assert reason is not None and NON_CANONICAL in reason and "normalised:" in reason


def test_a_unicode_host_name_is_sendable_as_its_idna_form():
    assert unsendable("http://bücher.example/hooks") is None
    assert DENY_PRIVATE.literal_refusal("http://bücher.example/hooks") is None


@pytest.mark.parametrize(("url", "address"), NORMALISED_LOOPBACK)
async def test_the_control_api_refuses_a_normalised_loopback_host_with_deny_private(
    make_client, listener, url, address
):
    """The attack as it was tried: the URL was accepted, and the webhook delivered to
    127.0.0.1 although --webhook-deny-private refuses loopback."""
    client = await make_client(webhook_deny_private=True)
    account_id = await _account_id(client)
    before = await (await client.get(f"/_mock/accounts/{account_id}")).json()
    patched = await client.patch(
        f"/_mock/accounts/{account_id}", json={"webhook_url": url.format(port=listener.port)}
    )
    assert patched.status == 400
    body = await patched.json()
    assert body["code"] == "validation_error"
    assert f"is {address} once normalised" in body["detail"], body
    assert await (await client.get(f"/_mock/accounts/{account_id}")).json() == before
    sandbox = await client.post(
        "/_mock/sandboxes",
        json={
            "accounts": {
                "accounts": [
                    {
                        "email": "z@example.com",
                        "api_key": "ak_z",
                        "webhook_url": url.format(port=listener.port),
                    }
                ]
            }
        },
    )
    assert sandbox.status == 400, await sandbox.text()
    assert listener.connections == 0


async def test_a_normalised_host_restored_from_state_is_refused_where_it_connects(
    make_client, tmp_path, listener
):
    """A URL accepted by an earlier, laxer run (restored whole from --state) is checked
    at each attempt on the address the client would connect to: nothing is opened."""
    url = f"http://1㉗.0.0.1:{listener.port}/hooks"
    delivery = await _settled_after_a_stricter_restart(make_client, tmp_path, url)
    error = delivery["attempts"][0]["error"]
    assert error.startswith(REFUSED) and "127.0.0.1 once normalised" in error
    assert listener.connections == 0


async def test_without_deny_private_a_normalised_loopback_host_is_reached(client, listener):
    """Locally nothing is refused: the normalised host is what the client connects to."""
    delivery = await _deliver(client, f"http://1㉗.0.0.1:{listener.port}/h")
    assert delivery["status"] == "delivered", delivery
    assert listener.connections == 1


def test_an_allowed_unicode_name_matches_the_name_the_client_resolves():
    rules = DestinationRules.parse("Bücher.example,*.Straße.example", deny_private=True)
    assert rules.refusal("xn--bcher-kva.example", "127.0.0.1") is None
    assert rules.refusal("hooks.xn--strae-oqa.example", "10.0.0.1") is None
    assert rules.refusal("other.example", "127.0.0.1") is not None
