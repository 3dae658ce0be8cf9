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
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

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
                domain = _host(entry[2:])
                if not _is_host_name(domain):
                    raise DestinationError(f"--webhook-allow: {entry!r} names no domain")
                suffixes.append("." + domain)
            elif "/" in entry or _address(entry) is not None:
                try:
                    networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                except ValueError as exc:
                    raise DestinationError(f"--webhook-allow: {entry!r}: {exc}") from exc
            elif _is_host_name(_host(entry)):
                names.add(_host(entry))
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
        """Why a webhook URL whose host is a literal address is refused, or None (a host
        name is checked when it is resolved, at each attempt)."""
        try:
            host = urlsplit(url).hostname or ""
        except ValueError:
            return None
        if _address(host) is None:
            return None
        return self.refusal(host, host)

    def _allows(self, name: str, ip: Address) -> bool:
        if name in self.names or any(name.endswith(suffix) for suffix in self.suffixes):
            return True
        return any(ip.version == network.version and ip in network for network in self.networks)


#: What a server refuses when nothing is configured: link-local addresses.
DEFAULT_RULES = DestinationRules()


def _host(text: str) -> str:
    return text.strip().strip("[]").rstrip(".").lower()


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
