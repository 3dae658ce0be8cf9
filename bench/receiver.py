"""A local webhook receiver for the benchmarks: answers every POST at once with one
fixed status, after reading the body.

    python bench/receiver.py --status 500 [--port 0]

Prints `listening on http://127.0.0.1:PORT`; the webhook URL is that plus `/hooks`.
`GET /count` answers the number of POSTs received so far.
"""

from __future__ import annotations

import argparse
import asyncio

from aiohttp import web
from serving import serve_until_signalled


async def serve(status: int, host: str, port: int) -> None:
    received = 0

    async def hook(request: web.Request) -> web.Response:
        nonlocal received
        await request.read()
        received += 1
        return web.Response(status=status)

    async def count(request: web.Request) -> web.Response:
        return web.json_response({"received": received})

    app = web.Application()
    app.router.add_post("/hooks", hook)
    app.router.add_get("/count", count)
    await serve_until_signalled(app, host, port)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--status", type=int, default=200)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    asyncio.run(serve(args.status, args.host, args.port))


if __name__ == "__main__":
    main()
