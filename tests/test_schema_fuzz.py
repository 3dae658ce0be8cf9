"""Schema fuzzing: Schemathesis generates requests from the served OpenAPI document,
valid and invalid, for every operation; no answer may be a 5xx, and every answer must
match its documented status codes, content type, headers and schema."""

from __future__ import annotations

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from mock_server import webhooks
from mock_server.config import Settings
from mock_server.testing import ServerThread

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
#: Injecting faults is how a test asks for 5xx answers: fuzzing it would be circular.
#: The streams never end by themselves; tests/test_events.py and tests/test_listeners.py
#: read them.
SKIPPED = {"mockAddFault", "mockStreamEvents", "mockListen"}
EXAMPLES = 20


@pytest.fixture(scope="module")
def running():
    server = ServerThread(Settings(clock="manual", port=0, seed=1, start_time=0.0)).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def operations(running):
    """The document as served (not as built), so the route serving it is tested too."""
    document = requests.get(f"{running.url}/openapi.json", timeout=10).json()
    schema = schemathesis.openapi.from_dict(document)
    return {op.ok().definition.raw["operationId"]: op.ok() for op in schema.get_all_operations()}


def _operation_ids() -> list[str]:
    from mock_server.openapi import build_openapi

    document = build_openapi()
    return sorted(
        operation["operationId"]
        for path in document["paths"].values()
        for operation in path.values()
        if isinstance(operation, dict) and operation.get("operationId") not in SKIPPED
    )


@pytest.fixture
def auth(running) -> dict[str, str]:
    requests.post(f"{running.url}/_mock/reset", json={}, timeout=10)
    token = requests.post(
        f"{running.url}/api/v1/auth/token/client", json={"api_key": "ak_test_default"}, timeout=10
    ).json()["access_token"]
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
@pytest.mark.parametrize("operation_id", _operation_ids())
def test_operation_answers_as_documented(
    running, operations, auth, operation_id, mode, monkeypatch
):
    # Fuzzed accounts get webhook URLs that lead nowhere: fail those attempts fast.
    monkeypatch.setattr(webhooks, "ATTEMPT_TIMEOUT", 0.2)
    operation = operations[operation_id]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def fuzz(case: schemathesis.Case) -> None:
        if case.headers:
            # A random scenario name only ever earns the same 400; without it, the
            # document's example order (item 1001) gets a 201 and its schema checked.
            case.headers.pop("X-Mock-Scenario", None)
        # A valid token always: generated ones only ever earn the 401 (tested elsewhere).
        case.call_and_validate(base_url=running.url, headers=auth, checks=CHECKS)

    try:
        fuzz()
    except Unsatisfiable:
        # Negative mode on an operation whose every input is valid (no body, free-form
        # path strings): there is no invalid request to send, so nothing to check.
        assert mode is GenerationMode.NEGATIVE
