"""TLS at both ends: the HTTPS the server listens with, and the trust its webhook
sender places in `https://` receivers (docs/webhooks.md, "HTTPS receivers"; the README's
configuration table for the flags).

Plain values in, `ssl` objects out: the CLI maps flags to these calls, `create_app`
maps the webhook settings. `trustme` (and through it `cryptography`) is imported only
when a self-signed certificate is asked for, so a plain-HTTP start pays nothing.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import ssl
import tempfile
from pathlib import Path

#: `--tls self-signed`, the one generated mode.
SELF_SIGNED = "self-signed"
#: Where `--tls self-signed` writes its CA certificate unless `--tls-ca-out` says.
DEFAULT_CA_OUT = "mock-server-ca.pem"
#: Names every self-signed certificate covers: clients on the same machine.
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


class TlsError(Exception):
    """A certificate, key or CA file that cannot be used; the message names it and
    says why."""


class _EncryptedKey(Exception):
    """Raised from the password callback: never let OpenSSL prompt on a terminal."""


def _refuse_password() -> bytes:
    raise _EncryptedKey


def flag_problem(
    *,
    mode: str | None,
    cert: str | None,
    key: str | None,
    ca_out: str | None,
    webhook_ca: str | None,
    webhook_insecure: bool,
) -> str | None:
    """What is wrong with these TLS flags, in words for the command line (None: they
    fit together and their files serve). The self-signed certificate itself is only
    made when serving."""
    if mode is not None and mode != SELF_SIGNED:
        return (
            f"--tls: {mode!r} is not a mode; the only one is '{SELF_SIGNED}' "
            "(for your own certificate, use --tls-cert PATH --tls-key PATH)"
        )
    if mode and (cert or key):
        return "--tls self-signed and --tls-cert/--tls-key both given: choose one way to HTTPS"
    if bool(cert) != bool(key):
        given, missing = ("--tls-cert", "--tls-key") if cert else ("--tls-key", "--tls-cert")
        return f"{given} needs {missing} too: HTTPS needs a certificate and its key"
    if ca_out and not mode:
        return "--tls-ca-out only applies with --tls self-signed"
    if webhook_ca and webhook_insecure:
        return "--webhook-ca and --webhook-insecure both given: trust a CA or verify nothing"
    try:
        if cert and key:
            flag = "--tls-cert/--tls-key"
            server_context(cert, key)
        if mode:
            flag = "--tls-ca-out"
            check_ca_out(ca_out or DEFAULT_CA_OUT)
        if webhook_ca:
            flag = "--webhook-ca"
            webhook_ssl(webhook_ca)
    except TlsError as exc:
        return f"{flag}: {exc}"
    return None


def read_pem(path: str, what: str, marker: str) -> str:
    """The text of a PEM file, or TlsError saying it cannot be read or holds no `marker`."""
    try:
        text = Path(path).read_text("utf-8", errors="replace")
    except OSError as exc:
        raise TlsError(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    if marker not in text:
        raise TlsError(f"{path}: no PEM {what} in it (expected a '{marker}' block)")
    return text


def server_context(cert: str, key: str) -> ssl.SSLContext:
    """A server context serving the certificate chain in `cert` with the key in `key`."""
    read_pem(cert, "certificate", "-----BEGIN CERTIFICATE-----")
    read_pem(key, "private key", "PRIVATE KEY-----")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert, key, password=_refuse_password)
    except _EncryptedKey:
        raise TlsError(f"{key}: the private key is encrypted; give an unencrypted key") from None
    except ssl.SSLError as exc:
        if exc.reason == "KEY_VALUES_MISMATCH":
            raise TlsError(f"{key} is not the private key of the certificate in {cert}") from exc
        reason = exc.reason or exc.strerror or str(exc)
        raise TlsError(
            f"{cert}, {key}: do not load as a certificate and its key ({reason})"
        ) from exc
    return context


def host_names(host: str) -> list[str]:
    """What a certificate for a server bound to `host` must name: the host itself, the
    loopback names, and for a wildcard bind the machine's name and addresses."""
    names = [host] if host and not _is_wildcard(host) else []
    if not names:
        hostname = socket.gethostname()
        names.extend([hostname, socket.getfqdn(hostname)])
        names.extend(_addresses_of(hostname))
    names.extend(LOOPBACK_NAMES)
    return list(dict.fromkeys(name for name in names if name))


def self_signed(host: str, ca_out: str) -> ssl.SSLContext:
    """Create a local CA and a certificate it signs for `host_names(host)`; write the
    CA certificate to `ca_out` (atomically: a client may be waiting for the file) and
    return a server context serving the certificate."""
    import trustme  # lazily: only this mode needs it (and cryptography)

    ca = trustme.CA(organization_name="ordering-sandbox", organization_unit_name="mock-server")
    names = host_names(host)
    leaf = ca.issue_cert(*names, common_name=names[0])
    _write_atomically(ca_out, ca.cert_pem.bytes())
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    leaf.configure_cert(context)
    return context


def check_ca_out(path: str) -> None:
    """TlsError unless `path` can be written (its folder exists and is writable)."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise TlsError(f"{path}: is a folder; give a file path for the CA certificate")
    if not os.path.isdir(folder):
        raise TlsError(f"{path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise TlsError(f"{path}: folder {folder} is not writable")


def webhook_ssl(ca: str | None = None, *, insecure: bool = False) -> ssl.SSLContext | bool:
    """What the webhook sender's connector uses for `https://` receivers: False (no
    verification), a context trusting the system store plus `ca`, or True (aiohttp's
    default verification with the system store)."""
    if insecure:
        return False
    if ca is None:
        return True
    read_pem(ca, "CA certificate", "-----BEGIN CERTIFICATE-----")
    context = ssl.create_default_context()
    try:
        context.load_verify_locations(cafile=ca)
    except ssl.SSLError as exc:
        reason = exc.reason or exc.strerror or str(exc)
        raise TlsError(f"{ca}: does not load as a CA certificate ({reason})") from exc
    return context


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def _addresses_of(hostname: str) -> list[str]:
    """The addresses the machine's name resolves to (in a container: its own address).
    Best effort: a name that does not resolve adds nothing."""
    try:
        infos = socket.getaddrinfo(hostname, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return []
    return [str(info[4][0]).split("%")[0] for info in infos]


def _write_atomically(path: str, data: bytes) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(prefix=".mock-server-ca-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o644)  # a CA certificate is public: let clients read it
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
