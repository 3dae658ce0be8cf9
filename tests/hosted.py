"""Tenants of a server hosted as docs/hosting.md says, for the hostile tests
(tests/test_hostile_*.py): the operator's admin token, and each tenant's created
sandbox as its tenant holds it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from mock_server.domain.sandbox import Sandbox

ADMIN_TOKEN = "adm1n"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
#: docs/hosting.md, "A public test mode" (the default quotas of a created sandbox).
HOSTED = {"admin_token": ADMIN_TOKEN, "webhook_deny_private": True, "sandbox_rate": 1000.0}


@dataclass
class Tenant:
    """One created sandbox, as its tenant holds it: its base path and credentials."""

    client: Any
    base: str
    control: dict[str, str]
    api_key: str
    auth: dict[str, str]
    sandbox: Sandbox  # the same sandbox in-process, for calls timed without HTTP

    async def call(self, method: str, path: str, **options: Any) -> tuple[int, Any]:
        """A merchant call (`/api/...`) with its token, any other with its control token."""
        own = self.auth if path.startswith("/api/") else self.control
        headers = {**own, **options.pop("headers", {})}
        response = await self.client.request(method, self.base + path, headers=headers, **options)
        return response.status, await response.json()


async def tenant(client: Any) -> Tenant:
    """A sandbox created by the operator's portal, and its merchant's access token."""
    response = await client.post("/_mock/sandboxes", json={}, headers=ADMIN)
    created = await response.json()
    assert response.status == 201, created
    base = urlparse(created["base_url"]).path
    token = await client.post(
        base + "/api/v1/auth/token/client", json={"api_key": created["api_key"]}
    )
    assert token.status == 200, await token.text()
    auth = {"Authorization": f"Bearer {(await token.json())['access_token']}"}
    sandbox = client.app.sandboxes.find(created["id"]).sandbox
    control = {"Authorization": f"Bearer {created['control_token']}"}
    return Tenant(client, base, control, created["api_key"], auth, sandbox)
