"""`mock-server record`: a recording proxy between a merchant's client and the
provider's environment (docs/recording.md, "Record").

    mock-server record --upstream URL --out FILE [--host H] [--port P]
                       [--webhook-forward-to URL] [--webhook-secret S]

The client's base URL becomes `http://H:P` (default 127.0.0.1:8090; `--port 0` picks a
free port); every request goes on to `--upstream` and its answer comes back unchanged
(`proxy.Recorder`). The account's webhook URL becomes `http://H:P/_record/webhook`:
deliveries are recorded and, with `--webhook-forward-to`, passed on to the merchant's
receiver, whose status is production's answer. `--webhook-secret` (the account's
`whsec_...`, or the variable `MOCK_RECORD_WEBHOOK_SECRET`, which keeps it out of the
process list) checks each delivery's signature and records the result.

On start it prints three lines:

    recording on http://H:P -> UPSTREAM
    webhook receiver http://H:P/_record/webhook
    file FILE

SIGINT or SIGTERM: the exchanges in flight finish, the file is closed and scanned for
every secret value seen (`redaction.scan`), then it prints `exchanges N, orders N,
webhooks N, file FILE` and exits 0. A secret found in the file removes the file and
exits 1, naming the kind of secret and the line (never the value); there is no option
to keep secrets. An event that cannot be recorded (a full disk) stops the recorder, exit 1. Bad
arguments (an upstream that is not an http(s) URL, an `--out` that cannot be written)
exit 2; an address that cannot be listened on exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Sequence

from .. import loops
from ..arguments import http_url, port
from .proxy import Recorder

#: Where `--webhook-secret` may come from instead: the environment, which other users of
#: the machine cannot read the way they can read a process's arguments.
SECRET_ENV = "MOCK_RECORD_WEBHOOK_SECRET"


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mock-server record",
        description="Record a client's traffic with the provider, redacted, as a file\n"
        "to compare the sandbox with and calibrate it by (docs/recording.md).",
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument(
        "--upstream",
        required=True,
        type=http_url,
        metavar="URL",
        help="the provider's base URL: every request goes there",
    )
    parser.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="the recording (JSON Lines; gzipped when it ends in .gz)",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", metavar="H", help="the address to listen on [127.0.0.1]"
    )
    parser.add_argument(
        "--port",
        type=port,
        default=8090,
        metavar="P",
        help="the port to listen on [8090; 0: any free port]",
    )
    parser.add_argument(
        "--webhook-forward-to",
        type=http_url,
        metavar="URL",
        help="the merchant's webhook receiver: each delivery is POSTed on\n"
        "and answered with its status (without it: 200)",
    )
    parser.add_argument(
        "--webhook-secret",
        metavar="S",
        default=os.environ.get(SECRET_ENV) or None,
        help="the account's webhook signing secret (whsec_...):\n"
        "each delivery's signature is checked and the result recorded\n"
        f"[{SECRET_ENV}: out of the process list]",
    )
    return parser


def _say(line: str) -> None:
    print(line, flush=True)


def _complain(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def conclude(recorder: Recorder) -> int:
    """After `recorder.stop()`: the scan, then the summary (0), or why not (1)."""
    leak = recorder.finish()
    if leak is not None:
        _complain(
            f"record: line {leak.line} of {recorder.out} holds a secret seen in the traffic "
            f"(kind: {leak.kind}) that redaction missed: the file was removed"
        )
        return 1
    if recorder.problem is not None:
        _complain(f"record: {recorder.out} is incomplete: {recorder.problem}")
        return 1
    _say(
        f"exchanges {recorder.exchanges}, orders {recorder.orders}, "
        f"webhooks {recorder.webhooks}, file {recorder.out}"
    )
    return 0


async def _until_stopped(recorder: Recorder) -> int:
    try:
        await recorder.start()
    except OSError as exc:
        _complain(f"cannot listen on {recorder.host}:{recorder.port}: {exc.strerror or exc}")
        return 1
    _say(f"recording on {recorder.url} -> {recorder.shown_upstream}")
    _say(f"webhook receiver {recorder.webhook_url}")
    _say(f"file {recorder.out}")
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # Windows: KeyboardInterrupt
            loop.add_signal_handler(sig, stop.set)
    stopping = loop.create_task(stop.wait())
    failing = loop.create_task(recorder.failed.wait())
    await asyncio.wait({stopping, failing}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    failing.cancel()
    await recorder.stop()
    return conclude(recorder)


def main(argv: Sequence[str]) -> int:
    arguments = parser()
    args = arguments.parse_args(list(argv))
    recorder = Recorder(
        args.upstream,
        args.out,
        host=args.host,
        port=args.port,
        webhook_forward_to=args.webhook_forward_to,
        webhook_secret=args.webhook_secret,
    )
    try:
        recorder.open()
    except OSError as exc:
        arguments.error(f"--out {args.out}: {exc.strerror or exc}")
    try:
        with asyncio.Runner(loop_factory=loops.factory("auto")) as runner:
            return runner.run(_until_stopped(recorder))
    except KeyboardInterrupt:  # before the handlers were installed, or on Windows
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
