"""`/_mock/scenarios`, `/_mock/shapes`, `/_mock/faults`, `/_mock/requests`: what a test
scripts and sees."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..domain.scenarios import Scenario
from ..edge.context import sandbox_of
from ..edge.jsonio import json_response, read_document, read_object
from ..errors import validation_error

routes = web.RouteTableDef()


def scenario_view(scenario: Scenario) -> dict[str, Any]:
    pricing = scenario.pricing
    return {
        "name": scenario.name,
        "description": scenario.description,
        "source": scenario.source,
        "steps": [
            {"after": step.after, "status": step.status, "error": step.error}
            for step in scenario.steps
        ],
        "match": scenario.match is not None,
        "weight": scenario.weight,
        "pricing": None
        if pricing is None
        else {"delta_percent": pricing.delta_percent, "unit_price": pricing.unit_price},
    }


@routes.get("/_mock/scenarios")
async def list_scenarios(request: web.BaseRequest) -> web.Response:
    sandbox = sandbox_of(request)
    return json_response(
        {
            "scenarios": [scenario_view(s) for s in sandbox.scenarios.values()],
            "queue": [entry.to_json() for entry in sandbox.queue],
        }
    )


@routes.post("/_mock/scenarios")
async def load_scenarios(request: web.BaseRequest) -> web.Response:
    loaded = sandbox_of(request).load_scenarios(await read_document(request))
    return json_response({"loaded": [s.name for s in loaded]}, status=201)


@routes.get("/_mock/shapes")
async def read_shapes(request: web.BaseRequest) -> web.Response:
    return json_response({"shapes": dict(sandbox_of(request).shapes.document)})


@routes.put("/_mock/shapes")
async def replace_shapes(request: web.BaseRequest) -> web.Response:
    """Production's shapes for this sandbox's answers and events (docs/shapes.md): the
    body is `{"shapes": {KIND: RULES}}`, JSON or YAML; an empty mapping removes them."""
    body = await read_document(request)
    if not isinstance(body, dict) or set(body) != {"shapes"}:
        raise validation_error('The body is {"shapes": {KIND: RULES}} (docs/shapes.md)')
    shapes = sandbox_of(request).set_shapes(body["shapes"] or {})
    return json_response({"shapes": dict(shapes.document)})


@routes.post("/_mock/scenarios/next")
async def queue_next(request: web.BaseRequest) -> web.Response:
    body = await read_object(request)
    entry = sandbox_of(request).queue_scenario(
        body.get("scenario"),
        account_id=body.get("account_id"),
        count=body.get("count", 1),
        replace=body.get("replace", False),
    )
    return json_response(entry.to_json(), status=201)


@routes.post("/_mock/scenarios/explain")
async def explain_scenario(request: web.BaseRequest) -> web.Response:
    return json_response(sandbox_of(request).explain(await read_object(request)))


@routes.get("/_mock/faults")
async def list_faults(request: web.BaseRequest) -> web.Response:
    faults = sandbox_of(request).faults.list()
    return json_response({"faults": [fault.to_json() for fault in faults]})


@routes.post("/_mock/faults")
async def add_fault(request: web.BaseRequest) -> web.Response:
    sandbox = sandbox_of(request)
    fault = sandbox.faults.add(await read_object(request), sandbox.quotas)
    return json_response(fault.to_json(), status=201)


@routes.delete("/_mock/faults")
async def clear_faults(request: web.BaseRequest) -> web.Response:
    sandbox_of(request).faults.clear()
    return json_response({"faults": []})


@routes.get("/_mock/requests")
async def list_requests(request: web.BaseRequest) -> web.Response:
    raw = request.query.get("limit")
    limit = None
    if raw is not None:
        if not raw.isascii() or not raw.isdigit():
            raise validation_error("limit must be a non-negative integer")
        limit = int(raw)
    calls = sandbox_of(request).journal.latest(limit)
    return json_response({"requests": [call.to_json() for call in calls]})
