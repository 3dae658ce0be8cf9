"""The baselines: a bare aiohttp app answering with the sandbox's own JSON bodies.

No middleware, no access log, no state. Two forms, both measured in every bench run:

* the default, on asyncio's own loop: each POST handler reads and parses the request's
  JSON body (`json.loads`), and every answer is a fixed document encoded per request
  the way the sandbox used to encode (compact `json.dumps`);
* `--loop uvloop --pre-encoded`, aiohttp's ceiling: on uvloop, each answer's bytes
  encoded once at start-up, POST bodies read but not parsed.

Same status and content type as the sandbox either way. The bodies come from a JSON
file written by `bench.py` from real sandbox answers:

    python bench/bare_app.py BODIES.json [--port 0] [--loop asyncio|uvloop] [--pre-encoded]

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

JSON_TYPE = {"content_type": "application/json", "charset": "utf-8"}


def _dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def build_app(bodies: dict[str, Any]) -> web.Application:
    """Encodes per request and parses every POST body."""
    order, created, token = bodies["order"], bodies["created"], bodies["token"]

    async def get_order(request: web.Request) -> web.Response:
        return web.Response(text=_dumps(order), content_type="application/json")

    async def create_order(request: web.Request) -> web.Response:
        json.loads(await request.read())
        return web.Response(text=_dumps(created), status=201, content_type="application/json")

    async def exchange_token(request: web.Request) -> web.Response:
        json.loads(await request.read())
        return web.Response(text=_dumps(token), content_type="application/json")

    return _routes(get_order, create_order, exchange_token)


def build_pre_encoded_app(bodies: dict[str, Any]) -> web.Application:
    """Answers bytes encoded once; POST bodies are read, not parsed."""
    order, created, token = (_dumps(bodies[k]).encode() for k in ("order", "created", "token"))

    async def get_order(request: web.Request) -> web.Response:
        return web.Response(body=order, **JSON_TYPE)

    async def create_order(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=created, status=201, **JSON_TYPE)

    async def exchange_token(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=token, **JSON_TYPE)

    return _routes(get_order, create_order, exchange_token)


def _routes(get_order: Any, create_order: Any, exchange_token: Any) -> web.Application:
    async def health(request: web.Request) -> web.Response:
        return web.Response(text='{"status":"ok"}', content_type="application/json")

    app = web.Application()
    app.router.add_get("/api/v1/orders/{order_id}", get_order)
    app.router.add_post("/api/v1/orders", create_order)
    app.router.add_post("/api/v1/auth/token/client", exchange_token)
    app.router.add_get("/_mock/health", health)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bodies", help="JSON file with order, created and token bodies")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    parser.add_argument("--pre-encoded", action="store_true", help="encode each body once")
    args = parser.parse_args()
    with open(args.bodies, encoding="utf-8") as handle:
        bodies = json.load(handle)
    app = (build_pre_encoded_app if args.pre_encoded else build_app)(bodies)
    factory = None
    if args.loop == "uvloop":
        import uvloop

        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(serve_until_signalled(app, args.host, args.port))


if __name__ == "__main__":
    main()
