"""Serving the dashboard (docs/dashboard.md): its page at `/_mock/ui/`, `GET /` leading there,
open with `--admin-token` (the page carries no data), and the same under a sandbox's
base path."""

from __future__ import annotations


async def test_root_redirects_to_the_dashboard(client):
    response = await client.get("/", allow_redirects=False)
    assert response.status == 302
    assert response.headers["Location"] == "/_mock/ui/"
    response = await client.get("/_mock/ui", allow_redirects=False)
    assert response.headers["Location"] == "/_mock/ui/"
    assert (await client.get("/_mock/requests")).status == 200
    assert (await (await client.get("/_mock/requests")).json())["requests"] == []  # no journal


async def test_the_page_is_served_with_a_strict_content_policy(client):
    response = await client.get("/_mock/ui/")
    assert response.status == 200
    assert response.content_type == "text/html"
    assert "default-src 'none'" in response.headers["Content-Security-Policy"]
    assert (await client.get("/_mock/ui/no-such-file.js")).status == 404


async def test_the_page_is_open_but_its_data_is_not_with_an_admin_token(make_client):

    client = await make_client(admin_token="t0k")
    assert (await client.get("/_mock/ui/")).status == 200
    assert (await client.get("/", allow_redirects=False)).status == 302
    assert (await client.get("/_mock/orders")).status == 401


async def test_a_sandbox_has_its_own_dashboard_and_docs_under_its_base_path(client):
    created = await (await client.post("/_mock/sandboxes", json={})).json()
    base = f"/_mock/sandboxes/{created['id']}"
    response = await client.get(f"{base}/", allow_redirects=False)
    assert response.headers["Location"] == f"{base}/_mock/ui/"
    assert (await client.get(f"{base}/_mock/ui/")).status == 200
    assert (await client.get(f"{base}/docs")).status == 200
    assert (await client.get(f"{base}/openapi.json")).status == 200
