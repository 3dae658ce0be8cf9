"""Chromium fails whatever it is loading with `net::ERR_NETWORK_CHANGED` when the host's
network interfaces change, loopback requests included, and docker adds or removes one
(a container's veth pair) each time it starts or removes a container, a build's steps
included. Under xdist the image's tests run beside the dashboard's, and once in a few
runs a dashboard page lost a script that way. So the two take turns through one lock
file: a dashboard test holds it for its whole run (tests/test_dashboard.py), and so does
each docker command that starts, builds, stops or removes containers
(tests/container_engine.py)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

#: One per user of the machine: concurrent test sessions take turns too.
LOCK = Path(tempfile.gettempdir()) / f"ordering-sandbox-interfaces-{os.getuid()}.lock"


@contextlib.contextmanager
def interfaces_steady() -> Iterator[None]:
    """While held, no container of these tests starts or goes (an `flock`: released
    when its holder's file closes, a crashed holder's included)."""
    with open(LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
