"""The baseline: a bare aiohttp app answering with the sandbox's own JSON bodies.

No middleware, no access log, no state: each handler reads the request body (POST)
and answers with a fixed document, encoded per request the way the sandbox encodes
(compact separators), with the same status and content type. The bodies come from a
JSON file written by `bench.py` from real sandbox answers:

    python bench/bare_app.py BODIES.json [--port 0]

`BODIES.json` holds `{"order": {...}, "created": {...}, "token": {...}}`. Prints
`listening on http://127.0.0.1:PORT` once it accepts connections, like mock-server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from aiohttp import web
from serving import serve_until_signalled


def _dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def build_app(bodies: dict[str, Any]) -> web.Application:
    order, created, token = bodies["order"], bodies["created"], bodies["token"]

    async def get_order(request: web.Request) -> web.Response:
        return web.Response(text=_dumps(order), content_type="application/json")

    async def create_order(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(text=_dumps(created), status=201, content_type="application/json")

    async def exchange_token(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(text=_dumps(token), content_type="application/json")

    async def health(request: web.Request) -> web.Response:
        return web.Response(text='{"status":"ok"}', content_type="application/json")

    app = web.Application()
    app.router.add_get("/api/v1/orders/{order_id}", get_order)
    app.router.add_post("/api/v1/orders", create_order)
    app.router.add_post("/api/v1/auth/token/client", exchange_token)
    app.router.add_get("/_mock/health", health)
    return app


async def serve(bodies: dict[str, Any], host: str, port: int) -> None:
    await serve_until_signalled(build_app(bodies), host, port)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bodies", help="JSON file with order, created and token bodies")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with open(args.bodies, encoding="utf-8") as handle:
        bodies = json.load(handle)
    asyncio.run(serve(bodies, args.host, args.port))


if __name__ == "__main__":
    main()
