"""HTTPS at both ends: the server listening with TLS, and webhooks sent to `https://`
receivers, verified unless told otherwise (docs/webhooks.md, "HTTPS receivers").

Real processes, as in test_cli.py (whose helpers these reuse): every server binds
127.0.0.1 with `--port 0`, runs the manual clock, and is read against a deadline.
Certificates come from `trustme` CAs made in the test; deliveries are triggered with
`POST /_mock/clock/advance`, never by waiting.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import trustme
from aiohttp import web
from cryptography.hazmat.primitives import serialization

from mock_server import cli, tls
from mock_server.app import create_app
from mock_server.config import Settings
from mock_server.serving import Serving
from mock_server.tls import host_names
from tests.test_cli import (  # noqa: F401 - `launch` is the fixture, shared
    MANUAL,
    ServerProcess,
    banner_value,
    clean_env,
    launch,
    run_cli,
)

ORDER = {"item_id": 1001, "quantity": 1, "merchant_order_id": "tls-1"}
#: Longer than the happy path's settlement: the first delivery attempt falls due in it.
SETTLE_SECONDS = 10


@dataclass
class Certificate:
    """A CA written to `ca`, and a server certificate it signed in `cert` + `key`."""

    ca: Path
    cert: Path
    key: Path
    authority: trustme.CA
    leaf: trustme.LeafCert


def make_certificate(folder: Path, *names: str) -> Certificate:
    folder.mkdir(parents=True, exist_ok=True)
    authority = trustme.CA()
    leaf = authority.issue_cert(*names)
    paths = Certificate(folder / "ca.pem", folder / "cert.pem", folder / "key.pem", authority, leaf)
    authority.cert_pem.write_to_path(str(paths.ca))
    leaf.cert_chain_pems[0].write_to_path(str(paths.cert))
    leaf.private_key_pem.write_to_path(str(paths.key))
    return paths


@pytest.fixture
def certificate(tmp_path: Path) -> Certificate:
    return make_certificate(tmp_path / "own", "localhost", "127.0.0.1")


def trusting(ca: Path | str) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca))


def call(
    url: str, context: ssl.SSLContext, body: dict[str, Any] | None = None, token: str = ""
) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode() if body is not None else None,
        headers=headers,
        method="POST" if body is not None else "GET",
    )
    with urllib.request.urlopen(request, timeout=5, context=context) as response:  # noqa: S310
        return response.status, json.loads(response.read())


def assert_serves_the_merchant_api(base_url: str, context: ssl.SSLContext) -> None:
    """Health, a token exchange and an order creation, all over this connection."""
    assert call(f"{base_url}/_mock/health", context) == (200, {"status": "ok"})
    status, body = call(
        f"{base_url}/api/v1/auth/token/client", context, {"api_key": "ak_test_default"}
    )
    assert status == 200, body
    status, order = call(f"{base_url}/api/v1/orders", context, ORDER, body["access_token"])
    assert status == 201, order
    assert order["merchant_order_id"] == "tls-1"


def assert_refused_without_the_ca(base_url: str) -> None:
    with pytest.raises(urllib.error.URLError) as refused:
        call(f"{base_url}/_mock/health", ssl.create_default_context())
    assert isinstance(refused.value.reason, ssl.SSLCertVerificationError), refused.value


# -- serving HTTPS with a self-signed certificate ------------------------------------------


def test_self_signed_serves_https_and_writes_the_ca_the_banner_names(launch, tmp_path):
    ca_out = tmp_path / "ca.pem"
    server = launch("--tls", "self-signed", "--tls-ca-out", str(ca_out), *MANUAL)
    port = server.wait_ready()
    assert server.stdout_seen[0] == f"listening on https://127.0.0.1:{port}"
    assert banner_value(server, "ca ") == str(ca_out)
    assert ca_out.read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert_serves_the_merchant_api(server.url, trusting(ca_out))
    curl = next(line for line in server.banner if "curl" in line)
    assert f"--cacert {ca_out} " in curl and f"https://127.0.0.1:{port}/" in curl


def test_self_signed_certificate_names_localhost_too(launch, tmp_path):
    ca_out = tmp_path / "ca.pem"
    server = launch("--tls", "self-signed", "--tls-ca-out", str(ca_out), *MANUAL)
    port = server.wait_ready()
    status, _ = call(f"https://localhost:{port}/_mock/health", trusting(ca_out))
    assert status == 200


def test_self_signed_is_refused_by_a_client_without_its_ca(launch, tmp_path):
    server = launch("--tls", "self-signed", "--tls-ca-out", str(tmp_path / "ca.pem"), *MANUAL)
    server.wait_ready()
    assert_refused_without_the_ca(server.url)


def test_self_signed_ca_defaults_to_a_file_in_the_working_directory(launch, tmp_path):
    server = launch("--tls", "self-signed", *MANUAL)  # launched in tmp_path
    server.wait_ready()
    default = tmp_path / "mock-server-ca.pem"
    assert banner_value(server, "ca ") == str(default)
    assert call(f"{server.url}/_mock/health", trusting(default))[0] == 200


def test_env_vars_turn_on_self_signed_tls(launch, tmp_path):
    ca_out = tmp_path / "env-ca.pem"
    env = clean_env(MOCK_TLS="self-signed", MOCK_TLS_CA_OUT=str(ca_out))
    server = launch(*MANUAL, env=env)
    server.wait_ready()
    assert server.scheme == "https"
    assert call(f"{server.url}/_mock/health", trusting(ca_out))[0] == 200


def test_plain_start_prints_no_ca_line(launch):
    server = launch(*MANUAL)
    server.wait_ready()
    assert server.scheme == "http"
    assert not any(line.strip().startswith("ca ") for line in server.banner)


def test_wildcard_bind_certificate_names_the_machine_and_loopback():
    names = host_names("0.0.0.0")
    assert socket.gethostname() in names
    assert {"localhost", "127.0.0.1", "::1"} <= set(names)
    assert "0.0.0.0" not in names


async def _handshake(port: int, name: str, context: ssl.SSLContext) -> None:
    """A TLS handshake with the server on 127.0.0.1:`port`, verifying its certificate for
    `name` as a client calling `https://name:port` does."""
    _, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=context, server_hostname=name, ssl_handshake_timeout=5
    )
    writer.close()
    await writer.wait_closed()


@pytest.mark.parametrize(("wildcard", "loopback"), [("0.0.0.0", "127.0.0.1"), ("::", "::1")])
async def test_a_wildcard_binds_banner_names_a_url_its_certificate_covers(
    tmp_path, wildcard, loopback
):
    """`--host 0.0.0.0 --tls self-signed`: the banner's curl and dashboard link call
    loopback, which the certificate made for a wildcard bind names, never the wildcard
    address, which no certificate names. Tests bind nothing wider than 127.0.0.1: the
    server here serves the very certificate a wildcard bind makes, on 127.0.0.1, and the
    banner is the one `serve` prints for the wildcard host and that port."""
    ca = tmp_path / "ca.pem"
    settings = Settings(
        host=wildcard, port=0, clock="manual", seed=1, tls="self-signed", tls_ca_out=str(ca)
    )
    certificate = tls.self_signed(settings.host, str(ca))
    async with Serving(create_app(settings), "127.0.0.1", 0, ssl_context=certificate) as served:
        port = int(served.url.rpartition(":")[2])
        printed = cli.banner(served.app, cli.banner_url(settings, wildcard, port))
        (curl,) = [line for line in printed.splitlines() if "curl" in line]
        assert f"--cacert {ca} " in curl
        (url,) = re.findall(r"https://\S+", curl)
        host = f"[{loopback}]" if ":" in loopback else loopback
        assert url == f"https://{host}:{port}/api/v1/auth/token/client"
        (dashboard,) = re.findall(r"dashboard +(\S+)", printed)
        assert dashboard == f"https://{host}:{port}/_mock/ui/"
        # The certificate verifies, against the printed CA, for the host the banner
        # names, and would not for the wildcard address the banner used to name.
        await _handshake(port, loopback, trusting(ca))
        with pytest.raises(ssl.SSLCertVerificationError):
            await _handshake(port, wildcard, trusting(ca))
        if loopback == "127.0.0.1":  # the printed curl itself (::1 is not bound here)
            async with aiohttp.ClientSession() as session:
                answer = await session.post(
                    url, json={"api_key": "ak_test_default"}, ssl=trusting(ca)
                )
                assert answer.status == 200, await answer.text()
                assert (await answer.json())["access_token"]
                page = await session.get(dashboard, ssl=trusting(ca))
                assert page.status == 200


def test_the_images_healthcheck_speaks_https_when_tls_is_on(launch, tmp_path):
    """The container's check (docs/docker.md) reads the URL the server wrote, scheme
    included: no setting of its own has to say that HTTPS is on."""
    url_file = tmp_path / "served.url"
    env = clean_env(
        MOCK_TLS="self-signed",
        MOCK_TLS_CA_OUT=str(tmp_path / "ca.pem"),
        MOCK_URL_FILE=str(url_file),
    )
    server = launch(*MANUAL, env=env)
    port = server.wait_ready()
    assert url_file.read_text() == f"https://127.0.0.1:{port}\n"
    check = [sys.executable, "-m", "mock_server.health"]
    assert subprocess.run(check, env=env, timeout=10, check=False).returncode == 0
    plain = subprocess.run(
        [*check, f"http://127.0.0.1:{port}"], env=env, capture_output=True, timeout=10
    )
    assert plain.returncode == 1  # plain HTTP to a TLS port
    assert plain.stderr.startswith(b"unhealthy: ")


# -- serving HTTPS with a given certificate ------------------------------------------------


def test_given_certificate_and_key_serve_https(launch, certificate):
    server = launch("--tls-cert", str(certificate.cert), "--tls-key", str(certificate.key), *MANUAL)
    port = server.wait_ready()
    assert server.stdout_seen[0] == f"listening on https://127.0.0.1:{port}"
    assert not any(line.strip().startswith("ca ") for line in server.banner)
    assert_serves_the_merchant_api(server.url, trusting(certificate.ca))
    assert_refused_without_the_ca(server.url)


def test_env_vars_name_the_certificate_and_key(launch, certificate):
    env = clean_env(MOCK_TLS_CERT=str(certificate.cert), MOCK_TLS_KEY=str(certificate.key))
    server = launch(*MANUAL, env=env)
    server.wait_ready()
    assert server.scheme == "https"
    assert call(f"{server.url}/_mock/health", trusting(certificate.ca))[0] == 200


def test_sigterm_stops_an_https_server_cleanly(launch, tmp_path):
    server = launch("--tls", "self-signed", "--tls-ca-out", str(tmp_path / "ca.pem"), *MANUAL)
    server.wait_ready()
    call(f"{server.url}/_mock/health", trusting(tmp_path / "ca.pem"))
    code, _ = server.stop(within=1.0)
    assert code == 0
    assert "Traceback" not in server.stderr()


# -- flags that do not fit ----------------------------------------------------------------


def _encrypted_key(certificate: Certificate, path: Path) -> Path:
    key = serialization.load_pem_private_key(certificate.key.read_bytes(), None)
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )
    return path


def _bad_flag_cases(certificate: Certificate, tmp_path: Path) -> dict[str, tuple[list, str]]:
    cert, key, ca = str(certificate.cert), str(certificate.key), str(certificate.ca)
    other_key = make_certificate(tmp_path / "other", "localhost").key
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    missing = str(tmp_path / "missing.pem")
    return {
        "cert without key": (["--tls-cert", cert], "--tls-cert needs --tls-key"),
        "key without cert": (["--tls-key", key], "--tls-key needs --tls-cert"),
        "unknown mode": (["--tls", "letsencrypt"], "the only one is 'self-signed'"),
        "both ways": (
            ["--tls", "self-signed", "--tls-cert", cert, "--tls-key", key],
            "choose one way",
        ),
        "missing cert": (["--tls-cert", missing, "--tls-key", key], f"{missing}: cannot read"),
        "swapped files": (["--tls-cert", key, "--tls-key", cert], "no PEM certificate"),
        "junk key": (["--tls-cert", cert, "--tls-key", str(junk)], "no PEM private key"),
        "key of another certificate": (
            ["--tls-cert", cert, "--tls-key", str(other_key)],
            "is not the private key of the certificate",
        ),
        "encrypted key": (
            ["--tls-cert", cert, "--tls-key", str(_encrypted_key(certificate, tmp_path / "e"))],
            "encrypted",
        ),
        "ca-out without self-signed": (["--tls-ca-out", ca], "only applies with --tls"),
        "ca-out in a missing folder": (
            ["--tls", "self-signed", "--tls-ca-out", str(tmp_path / "no" / "ca.pem")],
            "does not exist",
        ),
        "junk webhook ca": (["--webhook-ca", str(junk)], "--webhook-ca: "),
        "missing webhook ca": (["--webhook-ca", missing], "cannot read"),
        "ca and insecure": (["--webhook-ca", ca, "--webhook-insecure"], "both given"),
    }


BAD_FLAG_CASES = [
    "cert without key",
    "key without cert",
    "unknown mode",
    "both ways",
    "missing cert",
    "swapped files",
    "junk key",
    "key of another certificate",
    "encrypted key",
    "ca-out without self-signed",
    "ca-out in a missing folder",
    "junk webhook ca",
    "missing webhook ca",
    "ca and insecure",
]


@pytest.mark.parametrize("case", BAD_FLAG_CASES)
def test_bad_tls_flags_exit_2_with_a_clear_message(case, certificate, tmp_path):
    flags, message = _bad_flag_cases(certificate, tmp_path)[case]
    result = run_cli(*flags, *MANUAL)
    assert result.returncode == 2, result.stderr
    assert "usage:" in result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert "listening" not in result.stdout


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("MOCK_TLS", "on", "--tls: 'on' is not a mode"),
        ("MOCK_WEBHOOK_INSECURE", "maybe", "MOCK_WEBHOOK_INSECURE: 'maybe'"),
    ],
)
def test_bad_tls_env_values_exit_2(name, value, message):
    result = run_cli(*MANUAL, env=clean_env(**{name: value}))
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


# -- webhooks to https:// receivers --------------------------------------------------------


@dataclass
class HttpsReceiver:
    url: str
    ca: Path
    bodies: list[bytes] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        self.bodies.append(await request.read())
        return web.Response(text="ok")


@pytest.fixture
async def https_receiver(tmp_path: Path) -> AsyncIterator[HttpsReceiver]:
    """An aiohttp endpoint on https://localhost with a certificate from its own CA."""
    certificate = make_certificate(tmp_path / "receiver", "localhost", "127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    certificate.leaf.configure_cert(context)
    receiver = HttpsReceiver(url="", ca=certificate.ca)
    app = web.Application()
    app.router.add_post("/hooks", receiver.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
    receiver.url = f"https://localhost:{runner.addresses[0][1]}/hooks"
    yield receiver
    await runner.cleanup()


async def _settle_an_order(
    server: ServerProcess, context: ssl.SSLContext | None = None
) -> list[dict[str, Any]]:
    """Place an order, advance the manual clock past its settlement and its first
    delivery attempt; the order's deliveries as `/_mock/webhooks` shows them."""
    connector = aiohttp.TCPConnector(ssl=context if context is not None else True)
    async with aiohttp.ClientSession(server.url, connector=connector) as http:
        login = await http.post("/api/v1/auth/token/client", json={"api_key": "ak_test_default"})
        token = (await login.json())["access_token"]
        created = await http.post(
            "/api/v1/orders", json=ORDER, headers={"Authorization": f"Bearer {token}"}
        )
        order = await created.json()
        assert created.status == 201, order
        advanced = await http.post("/_mock/clock/advance", json={"seconds": SETTLE_SECONDS})
        assert advanced.status == 200, await advanced.text()
        listed = await http.get("/_mock/webhooks", params={"order_id": order["id"]})
        return (await listed.json())["deliveries"]


async def test_https_receiver_trusted_through_webhook_ca_gets_the_delivery(launch, https_receiver):
    server = launch(
        "--webhook-url", https_receiver.url, "--webhook-ca", str(https_receiver.ca), *MANUAL
    )
    server.wait_ready()
    (delivery,) = await _settle_an_order(server)
    assert delivery["status"] == "delivered", delivery
    assert delivery["attempts"][0]["status_code"] == 200
    assert len(https_receiver.bodies) == 1
    assert json.loads(https_receiver.bodies[0])["merchant_order_id"] == "tls-1"


async def test_https_receiver_with_an_untrusted_certificate_records_a_certificate_error(
    launch, https_receiver
):
    server = launch("--webhook-url", https_receiver.url, *MANUAL)
    server.wait_ready()
    (delivery,) = await _settle_an_order(server)
    attempt = delivery["attempts"][0]
    assert attempt["status_code"] is None
    assert "certificate" in attempt["error"].lower(), attempt
    assert "CERTIFICATE_VERIFY_FAILED" in attempt["error"], attempt
    assert "--webhook-ca" in attempt["error"], attempt  # and what to do about it
    assert delivery["status"] == "retrying"
    assert https_receiver.bodies == []


async def test_webhook_insecure_delivers_without_verifying_and_the_banner_warns(
    launch, https_receiver
):
    server = launch("--webhook-url", https_receiver.url, "--webhook-insecure", *MANUAL)
    server.wait_ready()
    warning = next(line for line in server.banner if "--webhook-insecure" in line)
    assert "NOT verified" in warning
    (delivery,) = await _settle_an_order(server)
    assert delivery["status"] == "delivered", delivery
    assert len(https_receiver.bodies) == 1


async def test_webhook_insecure_env_var_turns_verification_off(launch, https_receiver):
    env = clean_env(MOCK_WEBHOOK_INSECURE="1")
    server = launch("--webhook-url", https_receiver.url, *MANUAL, env=env)
    server.wait_ready()
    assert any("--webhook-insecure" in line for line in server.banner)
    (delivery,) = await _settle_an_order(server)
    assert delivery["status"] == "delivered", delivery


async def test_https_server_sends_webhooks_to_an_https_receiver(launch, https_receiver, tmp_path):
    ca_out = tmp_path / "ca.pem"
    server = launch(
        "--tls", "self-signed", "--tls-ca-out", str(ca_out),
        "--webhook-url", https_receiver.url, "--webhook-ca", str(https_receiver.ca),
        *MANUAL,
    )  # fmt: skip
    server.wait_ready()
    assert server.scheme == "https"
    (delivery,) = await _settle_an_order(server, trusting(ca_out))
    assert delivery["status"] == "delivered", delivery
    assert len(https_receiver.bodies) == 1
