"""A client generated from the served `/openapi.json` comes out whole and works.

openapi-python-client is run once per module on the document as served; it must print
no warning (each one means a response, body or endpoint it left out), every documented
response must be in the code it wrote, and that code must drive the sandbox: token,
order creation, lookup, and refusals parsed into their error models.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from uuid import UUID

import httpx
import pytest

from mock_server.config import Settings
from mock_server.openapi import build_openapi
from mock_server.testing import ServerThread

PACKAGE = "sandbox_client"
HTTP_METHODS = {"get", "put", "post", "delete", "patch", "options", "head", "trace"}


@pytest.fixture(scope="module")
def running() -> Iterator[ServerThread]:
    server = ServerThread(Settings(clock="manual", port=0, seed=1, start_time=0.0)).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def generation(running: ServerThread, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The generator's run on the served document: its output and the package it wrote."""
    workdir = tmp_path_factory.mktemp("generated")
    document = workdir / "openapi.json"
    document.write_bytes(httpx.get(f"{running.url}/openapi.json", timeout=10).content)
    # Its post-hooks run `ruff` by name: the venv's, even when the venv is not activated.
    search_path = [str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)]
    env = dict(os.environ, PATH=os.pathsep.join(search_path))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "openapi_python_client",
            "generate",
            "--path",
            str(document),
            "--output-path",
            str(workdir / PACKAGE),
            "--meta",
            "none",
            "--overwrite",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    return SimpleNamespace(
        returncode=result.returncode,
        output=result.stdout + result.stderr,
        package_dir=workdir / PACKAGE,
    )


@pytest.fixture(scope="module")
def client_package(generation: SimpleNamespace) -> Iterator[SimpleNamespace]:
    """The generated modules this file uses, imported from where they were written."""
    assert generation.returncode == 0, generation.output
    sys.path.insert(0, str(generation.package_dir.parent))
    try:
        yield SimpleNamespace(
            **{
                name.rsplit(".", 1)[-1]: importlib.import_module(f"{PACKAGE}.{name}")
                for name in (
                    "client",
                    "models",
                    "api.authentication.exchange_token",
                    "api.orders.create_order",
                    "api.orders.get_order",
                )
            }
        )
    finally:
        sys.path.remove(str(generation.package_dir.parent))
        for name in [name for name in sys.modules if name.split(".")[0] == PACKAGE]:
            del sys.modules[name]


def _module_name(operation_id: str) -> str:
    """The generator's module name for an operation: `createOrderV1` -> `create_order_v1`."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation_id).lower()


def _status_check(status: str) -> str:
    """How the generated `_parse_response` tests for a documented status (or `5XX`)."""
    if status.endswith("XX"):
        low = int(status[0]) * 100
        return f"{low} <= response.status_code <= {low + 99}"
    return f"response.status_code == {status}"


def test_generator_prints_no_warning(generation):
    assert generation.returncode == 0, generation.output
    # It reports "Warning(s) encountered while generating..." and a "WARNING parsing ..."
    # paragraph for each thing it left out.
    assert "Generating" in generation.output
    assert "warning" not in generation.output.lower(), generation.output


def test_every_documented_response_is_in_the_generated_client(generation):
    assert generation.returncode == 0, generation.output
    modules = {path.stem: path for path in (generation.package_dir / "api").rglob("*.py")}
    for path, item in build_openapi()["paths"].items():
        for method, operation in item.items():
            if method not in HTTP_METHODS:
                continue
            module = modules[_module_name(operation["operationId"])]
            source = module.read_text(encoding="utf-8")
            for status in operation["responses"]:
                assert _status_check(status) in source, (method.upper(), path, status)


def test_generated_client_exchanges_a_token_creates_looks_up_and_is_refused(
    client_package, running
):
    api, models = client_package, client_package.models
    public = api.client.Client(base_url=running.url, raise_on_unexpected_status=True)
    token = api.exchange_token.sync(
        client=public, body=models.TokenRequest(api_key="ak_test_default")
    )
    assert isinstance(token, models.TokenResponse) and token.token_type == "Bearer"

    merchant = api.client.AuthenticatedClient(
        base_url=running.url, token=token.access_token, raise_on_unexpected_status=True
    )
    created = api.create_order.sync(
        client=merchant, body=models.OrderRequest(item_id=1001, merchant_order_id="generated-1")
    )
    assert isinstance(created, models.Order)
    assert created.status == models.OrderStatus.PENDING and created.item == 1001

    found = api.get_order.sync(created.id, client=merchant)
    assert isinstance(found, models.Order)
    assert found.id == created.id and found.merchant_order_id == "generated-1"

    refused = api.create_order.sync_detailed(
        client=merchant, body=models.OrderRequest(item_id=999999)
    )
    assert refused.status_code == 400
    assert isinstance(refused.parsed, models.ValidationError)
    assert refused.parsed.code == "validation_error"


def test_generated_client_tells_the_refusals_of_one_status_apart(client_package, running):
    api, models = client_package, client_package.models
    token = api.exchange_token.sync(
        client=api.client.Client(base_url=running.url),
        body=models.TokenRequest(api_key="ak_test_default"),
    )
    merchant = api.client.AuthenticatedClient(base_url=running.url, token=token.access_token)

    mismatch = api.create_order.sync(
        client=merchant, body=models.OrderRequest(item_id=1001, price=1.0)
    )
    assert isinstance(mismatch, models.PriceMismatchError)
    assert mismatch.actual_price == 20.0

    missing = api.get_order.sync(UUID("00000000-0000-4000-8000-000000000000"), client=merchant)
    assert isinstance(missing, models.NotFoundError) and missing.code == "not_found"
