"""Where a webhook may be sent (docs/hosting.md, "Webhook destinations").

A receiver's host is checked on every address it resolves to, where the connection is
made (`webhooks.py`), and a URL whose host is a literal address is checked where it is
set (accounts file, control API, a sandbox's body). The rules:

- link-local addresses (169.254.0.0/16, fe80::/10: cloud metadata services live there)
  are refused unless `--webhook-allow` names them;
- with `--webhook-allow`, only the host names, `*.suffix` patterns and CIDR blocks it
  lists are reached;
- with `--webhook-deny-private`, loopback, private (10/8, 172.16/12, 192.168/16,
  fc00::/7), shared (100.64/10) and unspecified (0/8, ::) addresses are refused too,
  unless allowed.

An IPv4 address written as IPv6 (`::ffff:169.254.169.254`) is checked as the IPv4
address it is.

Every check runs on the host the HTTP client connects to (`connect_host`): the URL's
host after the client's own normalisation, IDNA (UTS 46) mapping included, which turns
Unicode digits and full stops into ASCII (`1㉗.0.0.1` is `127.0.0.1`, `⑯9.254.⑯9.254` is
`169.254.169.254`). So a literal address is recognised in whatever form it is written,
and a reason names the form it normalises to.

Whatever the rules, a URL the HTTP client could never send to is refused where it is set
too (`unsendable`; docs/webhooks.md, "Where a webhook may go"): a
numeric host in a non-canonical form (`2130706433`, `127.1`, `0x7f.1`, `017700000001`),
a host with whitespace or a character no host name holds, an empty host, a URL that does
not parse.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from yarl import URL

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

LINK_LOCAL = tuple(ipaddress.ip_network(n) for n in ("169.254.0.0/16", "fe80::/10"))
PRIVATE = tuple(
    ipaddress.ip_network(n)
    for n in (
        "127.0.0.0/8",
        "::1/128",
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "fc00::/7",
        "100.64.0.0/10",
        "0.0.0.0/8",
        "::/128",
    )
)


class DestinationError(ValueError):
    """A `--webhook-allow` entry that is neither a host name, `*.suffix` nor a CIDR."""


@dataclass(frozen=True)
class DestinationRules:
    """The rules of one server; the default refuses link-local addresses only."""

    #: Host names (lower case, no trailing dot) and `*.suffix` patterns of --webhook-allow.
    names: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()
    networks: tuple[Network, ...] = ()
    deny_private: bool = False

    @classmethod
    def parse(cls, allow: str | None, *, deny_private: bool = False) -> DestinationRules:
        """`--webhook-allow` (comma-separated) and `--webhook-deny-private`."""
        names: set[str] = set()
        suffixes: list[str] = []
        networks: list[Network] = []
        for raw in (allow or "").split(","):
            entry = raw.strip()
            if not entry:
                continue
            if entry.startswith("*."):
                domain = _connect_name(entry[2:])
                if not _is_host_name(domain):
                    raise DestinationError(f"--webhook-allow: {entry!r} names no domain")
                suffixes.append("." + domain)
            elif "/" in entry or _address(entry) is not None:
                try:
                    networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                except ValueError as exc:
                    raise DestinationError(f"--webhook-allow: {entry!r}: {exc}") from exc
            elif _is_host_name(_connect_name(entry)):
                names.add(_connect_name(entry))
            else:
                raise DestinationError(
                    f"--webhook-allow: {entry!r} is not a host name, '*.suffix' or CIDR block"
                )
        return cls(frozenset(names), tuple(suffixes), tuple(networks), deny_private)

    @property
    def listed(self) -> bool:
        """Whether --webhook-allow lists anything (then only what it lists is reached)."""
        return bool(self.names or self.suffixes or self.networks)

    def refusal(self, host: str, address: str) -> str | None:
        """Why a connection to `address` (for the URL's `host`) is refused, or None."""
        ip = _address(address)
        if ip is None:
            return f"{address!r} is not an IP address"
        name = _host(host)
        if self._allows(name, ip):
            return None
        if self.listed:
            return f"{_shown(name, ip)} is not allowed by --webhook-allow"
        if any(ip in network for network in LINK_LOCAL):
            return (
                f"{_shown(name, ip)} is link-local (169.254.0.0/16, fe80::/10: cloud "
                "metadata services live there); allow it with --webhook-allow"
            )
        if self.deny_private and any(ip in network for network in PRIVATE):
            return (
                f"{_shown(name, ip)} is a loopback, private, shared or unspecified address, "
                "refused by --webhook-deny-private; allow it with --webhook-allow"
            )
        return None

    def literal_refusal(self, url: str) -> str | None:
        """Why a webhook URL is refused where it is set, or None: one that could never be
        sent (`unsendable`), or one whose host is a literal address these rules refuse
        (a host name is checked when it is resolved, at each attempt)."""
        never = unsendable(url)
        if never:
            return never
        host = connect_host(url)
        if _address(host) is None:
            return None
        refused = self.refusal(host, host)
        written = _written(url)
        if refused and _address(written) != _address(host):
            return f"host {written!r} is {host} once normalised as the HTTP client does: {refused}"
        return refused

    def _allows(self, name: str, ip: Address) -> bool:
        if name in self.names or any(name.endswith(suffix) for suffix in self.suffixes):
            return True
        return any(ip.version == network.version and ip in network for network in self.networks)


#: What a server refuses when nothing is configured: link-local addresses.
DEFAULT_RULES = DestinationRules()


# -- URLs no HTTP client sends to (docs/webhooks.md, "Where a webhook may go") -------

#: A label of a numeric host: decimal, octal (leading zero) or hex (`0x..`).
_NUMERIC_LABEL = re.compile(r"(?:0x[0-9a-f]+|[0-9]+)", re.IGNORECASE)
_SCHEME_AUTHORITY = re.compile(r"\s*[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)")
_NAME_PUNCTUATION = frozenset("-_.")


def connect_host(url: str) -> str:
    """The host the HTTP client connects to for `url`: the URL's host as aiohttp's URLs
    (yarl) normalise it (IDNA UTS 46 for a name, so Unicode digits and full stops become
    ASCII; an IPv6 address compressed). Raises ValueError for a URL it cannot hold."""
    try:
        return URL(url).raw_host or ""
    except (ValueError, UnicodeError) as exc:
        raise ValueError(str(exc) or type(exc).__name__) from exc


def is_http_url(url: str) -> bool:
    """Whether `url` starts with `http://` or `https://`, in any case (schemes are
    case-insensitive: `HTTP://` is an http URL)."""
    return url[:8].lower().startswith(("http://", "https://"))


def unsendable(url: str) -> str | None:
    """Why the HTTP client could never send to `url`, whatever the server's rules, or
    None. The reason names the host and what to write instead; a caller puts what was
    set in front of it (`'webhook_url' host '0x7f.1' is ...`)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is no number 0-65535
    except ValueError as exc:
        return f"does not parse as a URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return f"has scheme {parts.scheme!r}: an http(s) URL is needed"
    written = _written(url)
    if any(char.isspace() or not char.isprintable() for char in written):
        return (
            f"host {written!r} contains whitespace or a control character, which a host "
            "name cannot hold"
        )
    if not parts.hostname:
        return "has an empty host"
    try:
        host = connect_host(url).lower()
    except ValueError as exc:
        return f"host {written!r} cannot be encoded as the HTTP client encodes names ({exc})"
    if not host:
        return "has an empty host"
    # The reasons below name what was written and, where it differs, what it became.
    shown = repr(written)
    if _host(written) != _host(host):
        shown += f" (normalised: {host!r})"
    if written.startswith("["):
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return f"host {shown} is not an IPv6 address"
        return None
    if _looks_numeric(host):
        if _is_dotted_quad(host):
            return None
        canonical = _ipv4_from_numeric(host)
        if canonical is None:
            return (
                f"host {shown} is a numeric address in a form HTTP clients do not send to, "
                "and names no IPv4 address: write a dotted quad of 4 numbers 0 to 255 "
                "(such as 127.0.0.1)"
            )
        return (
            f"host {shown} is a numeric address in a non-canonical form, which HTTP "
            f"clients do not send to: write it as a dotted quad ({canonical})"
        )
    odd = next(
        (c for c in host if not (c.isalnum() or c in _NAME_PUNCTUATION)),
        None,
    )
    if odd is not None:
        return (
            f"host {shown} contains {odd!r}, which a host name cannot hold (letters, "
            "digits, '-', '_' and '.' only)"
        )
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")
    if any(not label or len(label) > 63 for label in labels):
        return (
            f"host {shown} has an empty label or one longer than 63 characters, which a "
            "host name cannot have"
        )
    return None


def _written(url: str) -> str:
    """The host of `url` as written (urlsplit drops tabs and line breaks and lower-cases
    it; a reason should show what the user wrote)."""
    written = _SCHEME_AUTHORITY.match(url)
    return _written_host(written.group(1)) if written else urlsplit(url).hostname or ""


def _written_host(authority: str) -> str:
    """The host part of a URL's authority as written (no user info, no port)."""
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        return hostport[: hostport.find("]") + 1] if "]" in hostport else hostport
    return hostport.rpartition(":")[0] if ":" in hostport else hostport


def _looks_numeric(host: str) -> bool:
    """Whether `host` is meant as an IPv4 address: every label a number (decimal, octal
    or hex), or digits and dots only (what aiohttp takes for an address)."""
    if host.replace(".", "").isdigit():
        return True
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")
    return all(_NUMERIC_LABEL.fullmatch(label) for label in labels)


def _is_dotted_quad(host: str) -> bool:
    """4 ASCII decimal numbers 0 to 255 without leading zeros: the only numeric form
    HTTP clients send to."""
    parts = host.split(".")
    return len(parts) == 4 and all(
        part.isascii()
        and part.isdigit()
        and len(part) <= 3
        and (part == "0" or not part.startswith("0"))
        and int(part) <= 255
        for part in parts
    )


def _ipv4_from_numeric(host: str) -> str | None:
    """The dotted quad a numeric host stands for, read as `inet_aton` reads it (1 to 4
    parts, the last filling the bytes left; `0x` hex, leading-zero octal), or None."""
    parts = host[:-1].split(".") if host.endswith(".") else host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers: list[int] = []
    for part in parts:
        if not part.isascii() or not _NUMERIC_LABEL.fullmatch(part):
            return None
        try:
            if part[:2].lower() == "0x":
                numbers.append(int(part[2:], 16))
            elif len(part) > 1 and part.startswith("0"):
                numbers.append(int(part[1:], 8))
            else:
                numbers.append(int(part))
        except ValueError:
            return None
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 1 << (8 * (4 - len(leading))):
        return None
    value = last
    for index, number in enumerate(leading):
        value |= number << (8 * (3 - index))
    return str(ipaddress.IPv4Address(value))


def _host(text: str) -> str:
    return text.strip().strip("[]").rstrip(".").lower()


def _connect_name(text: str) -> str:
    """A host name of --webhook-allow in the form the HTTP client connects to (IDNA), so
    that it matches what the resolver is asked for; as written when it is no name."""
    host = _host(text)
    try:
        return URL.build(scheme="http", host=host).raw_host or host
    except (ValueError, UnicodeError):
        return host


def _address(text: str) -> Address | None:
    """The address `text` is (an IPv4-mapped IPv6 address as its IPv4), or None."""
    try:
        ip = ipaddress.ip_address(_host(text))
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _is_host_name(name: str) -> bool:
    labels = name.split(".")
    return bool(name) and all(
        0 < len(label) <= 63 and label.replace("-", "").isalnum() for label in labels
    )


def _shown(name: str, ip: Address) -> str:
    return str(ip) if name == str(ip) or _address(name) is not None else f"{name} ({ip})"
