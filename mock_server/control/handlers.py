"""The control API under `/_mock` (docs/control-api.md): thin wrappers over `Sandbox`.

Reading never mutates. Each handler is one call to a `Sandbox` method that the pytest
plugin can call directly too.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from aiohttp import web

from ..clock import ClockError, parse_iso
from ..domain.deliveries import Delivery
from ..domain.orders import Order
from ..domain.randomness import MAX_SEED
from ..edge.context import params_of, sandbox_of
from ..edge.json_stream import paced
from ..edge.jsonio import json_response, read_object
from ..errors import validation_error

routes = web.RouteTableDef()


@routes.get("/_mock/health")
async def health(request: web.BaseRequest) -> web.Response:
    return json_response({"status": "ok"})


@routes.post("/_mock/reset")
async def reset(request: web.BaseRequest) -> web.Response:
    body = await read_object(request, required=False)
    seed = body.get("seed")
    if seed is not None and (
        isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED
    ):
        raise validation_error(f"seed must be an integer from 0 to {MAX_SEED}")
    start_time = body.get("start_time")
    if start_time is not None:
        if not isinstance(start_time, str):
            raise validation_error("start_time must be an ISO 8601 string")
        try:
            start_time = parse_iso(start_time)
        except ClockError as exc:
            raise validation_error(str(exc)) from exc
    sandbox = sandbox_of(request)
    sandbox.reset(seed=seed, start_time=start_time)
    return json_response({"status": "reset", **sandbox.clock_info(), "seed": sandbox.seed})


@routes.get("/_mock/clock")
async def read_clock(request: web.BaseRequest) -> web.Response:
    return json_response(sandbox_of(request).clock_info())


@routes.post("/_mock/clock/advance")
async def advance_clock(request: web.BaseRequest) -> web.Response:
    body = await read_object(request)
    seconds = body.get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int | Decimal):
        raise validation_error("seconds is required: a number >= 0")
    seconds = float(seconds)
    if not math.isfinite(seconds) or seconds < 0:
        raise validation_error("seconds must be a finite number >= 0: the clock only moves forward")
    sandbox = sandbox_of(request)
    try:
        await sandbox.advance(seconds)
    except ClockError as exc:
        raise validation_error(str(exc)) from exc
    return json_response({"now": sandbox.clock_info()["now"]})


@routes.get("/_mock/jobs")
async def read_jobs(request: web.BaseRequest) -> web.Response:
    scheduler = sandbox_of(request).scheduler
    limit = _count(request.query.get("upcoming"), "upcoming", default=20)
    return json_response(
        {
            "pending": scheduler.pending(),
            "upcoming": scheduler.upcoming(limit),
            "failures": list(scheduler.failures),
        }
    )


@routes.get("/_mock/orders")
async def list_orders(request: web.BaseRequest) -> web.Response:
    query = request.query
    orders = sandbox_of(request).list_orders(
        account_id=query.get("account_id"),
        status=query.get("status"),
        merchant_order_id=query.get("merchant_order_id"),
    )
    sort = query.get("sort", "oldest")
    if sort not in ("oldest", "newest"):
        raise validation_error("sort must be 'oldest' (creation order) or 'newest'")
    if sort == "newest":
        orders.reverse()
    offset = _count(query.get("offset"), "offset", default=0)
    limit = _count(query.get("limit"), "limit", default=None)
    page = orders[offset:] if limit is None else orders[offset : offset + limit]
    # Each order rendered as its piece is written (docs/control-api.md, "Orders").
    listed = {"orders": (order.to_json() for order in page), "total": len(orders)}
    return paced.answer(listed, sandbox_of(request))


def _count(raw: str | None, name: str, *, default: int | None) -> int | None:
    """A non-negative integer query parameter."""
    if raw is None:
        return default
    if not raw.isascii() or not raw.isdigit() or len(raw) > 9:
        raise validation_error(f"{name} must be a non-negative integer")
    return int(raw)


@routes.get("/_mock/orders/{order_id}")
async def read_order(request: web.BaseRequest) -> web.Response:
    sandbox = sandbox_of(request)
    order = sandbox.find_order(params_of(request)["order_id"])
    return json_response(order_detail(order, sandbox.deliveries(order.id)))


def order_detail(order: Order, deliveries: list[Delivery]) -> dict[str, Any]:
    return {
        "order": order.to_json(),
        "account_id": order.account_id,
        "scenario": order.scenario.name,
        "scenario_reason": order.scenario_reason.to_json() if order.scenario_reason else None,
        "history": order.history_json(),
        "deliveries": [delivery.to_json() for delivery in deliveries],
    }


@routes.get("/_mock/webhooks")
async def list_webhooks(request: web.BaseRequest) -> web.Response:
    sandbox = sandbox_of(request)
    deliveries = sandbox.deliveries(request.query.get("order_id"))
    # Each delivery rendered (its body signed) as its piece is written: at the order
    # quota, rendered whole, the list held the event loop for 0.4 s (docs/hosting.md,
    # "What one request may cost").
    return paced.answer({"deliveries": (d.to_json() for d in deliveries)}, sandbox)


@routes.post("/_mock/webhooks/{delivery_id}/redeliver")
async def redeliver_webhook(request: web.BaseRequest) -> web.Response:
    delivery = await sandbox_of(request).redeliver(params_of(request)["delivery_id"])
    return json_response(delivery.to_json())
