"""`python -m mock_server.health [URL]`: is the server on this machine answering?

The container's `HEALTHCHECK` (docs/docker.md). It asks `GET {URL}/_mock/health`, where
URL is the argument or else what the server wrote to `MOCK_URL_FILE` once it listened
(`--url-file`), so the check follows the port and scheme actually served however they
were set. Exit 0 when the answer is 200 `{"status": "ok"}`, else 1 with the reason on
stderr. Only the standard library: Docker runs it every few seconds.

HTTPS is asked without verifying the certificate: the check only wants to know whether
the process answers on loopback, and a given certificate may not name that address.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence

TIMEOUT = 2.0  # seconds; the image's HEALTHCHECK allows 3


def served_url(argv: Sequence[str], environ: dict[str, str]) -> str:
    """The base URL to ask: the argument, else the content of `MOCK_URL_FILE`."""
    if argv:
        return argv[0].rstrip("/")
    path = environ.get("MOCK_URL_FILE")
    if not path:
        raise LookupError("give the server's URL, or set MOCK_URL_FILE to its --url-file")
    try:
        with open(path, encoding="utf-8") as file:
            url = file.read().strip()
    except FileNotFoundError:
        raise LookupError(f"not listening yet: {path} does not exist") from None
    except OSError as exc:
        raise LookupError(f"cannot read {path}: {exc.strerror}") from None
    if not url:
        raise LookupError(f"{path} is empty")
    return url.rstrip("/")


def check(url: str) -> str | None:
    """None when `{url}/_mock/health` answers 200 `{"status": "ok"}`, else why not."""
    context = None
    if url.startswith("https:"):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(
            f"{url}/_mock/health", timeout=TIMEOUT, context=context
        ) as response:
            body = response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        return f"{url}/_mock/health answered {error.code}"
    except (OSError, ValueError) as error:
        return f"{url}/_mock/health: {error}"
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    if status != 200 or answer != {"status": "ok"}:
        return f"{url}/_mock/health answered {status} {body[:200]!r}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        url = served_url(argv, dict(os.environ))
    except LookupError as exc:
        print(f"unhealthy: {exc}", file=sys.stderr)
        return 1
    problem = check(url)
    if problem:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
