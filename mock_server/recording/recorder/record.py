"""`mock-server record`: a recording proxy between a merchant's client and the
provider's environment (docs/recording.md, "Record").

    mock-server record --upstream URL --out FILE [--host H] [--port P]
                       [--webhook-forward-to URL] [--webhook-secret S]
                       [--upstream-ca PATH]

The client's base URL becomes `http://H:P` (default 127.0.0.1:8090; `--port 0` picks a
free port); every request goes on to `--upstream` and its answer comes back unchanged
(`proxy.Recorder`). The account's webhook URL becomes `http://H:P/_record/webhook`:
deliveries are recorded and, with `--webhook-forward-to`, passed on to the merchant's
receiver, whose status is production's answer. `--webhook-secret` (the account's
`whsec_...`, or the variable `MOCK_RECORD_WEBHOOK_SECRET`, which keeps it out of the
process list) checks each delivery's signature and records the result.

`--upstream-ca PATH` trusts a private CA (PEM) for an `https://` upstream.

On start it prints three lines, then probes the upstream once (`Recorder.probe`: a
`warning:` line on stderr when it does not answer; the recorder runs all the same):

    recording on http://H:P -> UPSTREAM
    webhook receiver http://H:P/_record/webhook
    file FILE

The file is written as `FILE.partial`. SIGINT or SIGTERM: the exchanges in flight
finish, the file is closed and scanned for every secret value seen (`redaction.scan`),
its end line is written and it is renamed FILE; then it prints `exchanges N, orders N,
webhooks N, file FILE`, a `warning:` line on stderr for each likely mistake
(`Recorder.warnings`), and exits 0. A secret found in the file removes it and exits 1,
naming the kind of secret, the event and the field (never the value; never a line of
the file removed); there is no option to keep secrets. An event that cannot be recorded
(a full disk) stops the recorder, exit 1, the file left `FILE.partial`. Bad arguments
(an upstream that is not an http(s) URL, an `--out` in a folder that does not exist or
that cannot be written, an `--upstream-ca` that is no readable PEM file) exit 2; an
address that cannot be listened on exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shlex
import signal
import ssl
import sys
from collections.abc import Sequence

from ... import loops
from ...arguments import http_url, port
from .proxy import SECRET_ENV_NAME, Recorder

#: Where `--webhook-secret` may come from instead: the environment, which other users of
#: the machine cannot read the way they can read a process's arguments.
SECRET_ENV = SECRET_ENV_NAME


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
    parser.add_argument(
        "--upstream-ca",
        metavar="PATH",
        help="a CA certificate (PEM) to trust for an https:// upstream\n"
        "(a private CA; the system's CAs are trusted besides)",
    )
    return parser


def _say(line: str) -> None:
    print(line, flush=True)


def _complain(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def conclude(recorder: Recorder) -> int:
    """After `recorder.stop()`: the scan, then the summary and its warnings (0), or why
    not (1)."""
    leak = recorder.finish()
    if leak is not None:
        _complain(
            f"record: a secret seen in the traffic (kind: {leak.kind}) stands in "
            f"{leak.where()} of the recording, where redaction missed it: nothing was "
            f"written ({recorder.partial} was removed; {recorder.out} is as it was)"
        )
        return 1
    if recorder.problem is not None:
        _complain(f"record: {recorder.partial} is incomplete: {recorder.problem}")
        return 1
    _say(
        f"exchanges {recorder.exchanges}, orders {recorder.orders}, "
        f"webhooks {recorder.webhooks}, file {recorder.out}"
    )
    for warning in recorder.warnings():
        _complain(f"warning: {warning}")
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
    probing = loop.create_task(_probe(recorder))
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # Windows: KeyboardInterrupt
            loop.add_signal_handler(sig, stop.set)
    stopping = loop.create_task(stop.wait())
    failing = loop.create_task(recorder.failed.wait())
    await asyncio.wait({stopping, failing}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    failing.cancel()
    probing.cancel()
    await recorder.stop()
    return conclude(recorder)


async def _probe(recorder: Recorder) -> None:
    """The start-up probe, while the recorder already serves: a warning, never a stop."""
    try:
        warning = await recorder.probe()
    except Exception as exc:  # noqa: BLE001 - a probe that breaks is no reason to stop
        warning = f"the upstream could not be probed: {type(exc).__name__}: {exc}"
    if warning is not None:
        _complain(f"warning: {warning}")


def _upstream_ssl(
    arguments: argparse.ArgumentParser, upstream: str, ca: str | None
) -> ssl.SSLContext | None:
    """The TLS context that trusts `--upstream-ca` besides the system's CAs."""
    if ca is None:
        return None
    if not upstream.startswith("https://"):
        _complain(f"warning: --upstream-ca applies to an https:// upstream; {upstream} is not")
        return None
    context = ssl.create_default_context()
    try:
        context.load_verify_locations(cafile=ca)
    except ssl.SSLError as exc:  # an OSError too: first
        arguments.error(f"--upstream-ca {ca}: not a PEM CA certificate ({exc.reason or exc})")
    except OSError as exc:
        arguments.error(f"--upstream-ca {ca}: {exc.strerror or exc}")
    return context


def _check_out(arguments: argparse.ArgumentParser, out: str) -> None:
    """`--out` in a folder that exists: else exit 2, saying how to make it."""
    folder = os.path.dirname(out)
    if os.path.isdir(out):
        arguments.error(f"--out {out} is a folder: name a file in it")
    if folder and not os.path.isdir(folder):
        arguments.error(
            f"--out {out}: the folder {folder} does not exist: create it with "
            f"mkdir -p {shlex.quote(folder)}"
        )


def main(argv: Sequence[str]) -> int:
    arguments = parser()
    args = arguments.parse_args(list(argv))
    _check_out(arguments, args.out)
    recorder = Recorder(
        args.upstream,
        args.out,
        host=args.host,
        port=args.port,
        webhook_forward_to=args.webhook_forward_to,
        webhook_secret=args.webhook_secret,
        upstream_ssl=_upstream_ssl(arguments, args.upstream, args.upstream_ca),
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
