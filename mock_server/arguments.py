"""Argument types the side commands share (`mock-server listen`, `mock-server record`):
each checks one value and says what is wrong with it, as argparse shows it."""

from __future__ import annotations

import argparse
import urllib.parse


def http_url(value: str) -> str:
    """An http:// or https:// base URL: a host, a port that is a number, no query."""
    parsed = urllib.parse.urlsplit(value)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise argparse.ArgumentTypeError(f"{value!r} is not an http:// or https:// URL")
    if parsed.query or parsed.fragment:
        raise argparse.ArgumentTypeError(f"{value!r}: a base URL takes no query or fragment")
    try:
        parsed.port  # noqa: B018 - raises on a port that is not a number
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{value!r}: {exc}") from None
    return value


def port(value: str) -> int:
    """A TCP port to listen on: 0 (any free one) to 65535."""
    try:
        number = int(value)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number (0 to 65535)")
    return number
