"""A node of a cluster (docs/cluster.md), in process: `--node-id` tags created sandboxes'
ids, `--public-url` is what base URLs are built on, and `cluster nginx-config` refuses
what does not describe a cluster. The router itself, a real nginx in front of real
nodes, is tests/test_cluster_nginx.py."""

from __future__ import annotations

import re

import pytest

from mock_server.cli import main, parse_settings
from mock_server.cluster import UsageError, nginx_config, parse_node


async def test_a_node_names_itself_in_created_ids_and_their_keys(make_client):
    client = await make_client(node_id="eu-2")
    created = await (await client.post("/_mock/sandboxes", json={})).json()
    assert re.fullmatch(r"sbx-eu-2-[0-9a-f]{12}", created["id"])
    assert created["api_key"].startswith(f"ak_{created['id']}_")
    base = f"/_mock/sandboxes/{created['id']}"
    token = await client.post(
        base + "/api/v1/auth/token/client", json={"api_key": created["api_key"]}
    )
    assert token.status == 200
    access = (await token.json())["access_token"]
    assert access.startswith(created["id"] + ".")
    # On the root paths, its token still finds it (credential routing).
    balance = await client.get(
        "/api/v1/account/balance", headers={"Authorization": f"Bearer {access}"}
    )
    assert balance.status == 200


async def test_without_a_node_id_ids_are_as_on_a_single_server(make_client):
    client = await make_client()
    created = await (await client.post("/_mock/sandboxes", json={})).json()
    assert re.fullmatch(r"sbx-[0-9a-f]{12}", created["id"])


async def test_base_urls_name_the_public_url(make_client):
    client = await make_client(public_url="https://sandbox.example.com")
    created = await (await client.post("/_mock/sandboxes", json={})).json()
    assert created["base_url"] == f"https://sandbox.example.com/_mock/sandboxes/{created['id']}"
    listed = await (await client.get("/_mock/sandboxes")).json()
    assert {s["base_url"] for s in listed["sandboxes"]} >= {created["base_url"]}
    read = await (await client.get(f"/_mock/sandboxes/{created['id']}")).json()
    assert read["base_url"] == created["base_url"]


async def test_without_a_public_url_base_urls_name_the_host_called(make_client):
    client = await make_client()
    created = await client.post(
        "/_mock/sandboxes", json={}, headers={"Host": "router.internal:8080"}
    )
    assert (await created.json())["base_url"].startswith("http://router.internal:8080/")


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--node-id", "EU"], "--node-id must be 1 to 40"),
        (["--node-id", "a" * 41], "--node-id must be 1 to 40"),
        (["--node-id", "a.b"], "--node-id must be 1 to 40"),
        (["--public-url", "router:8080"], "--public-url must be"),
        (["--public-url", "https://x.example/?q=1"], "--public-url must be"),
        (["--public-url", "http://:80"], "--public-url must be"),
    ],
)
def test_bad_cluster_flags_exit_2(flags, message, capsys):
    with pytest.raises(SystemExit) as exited:
        parse_settings(flags)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_cluster_flags_and_their_variables(monkeypatch):
    monkeypatch.setenv("MOCK_NODE_ID", "n-1")
    monkeypatch.setenv("MOCK_PUBLIC_URL", "http://10.0.0.5:8080")
    settings = parse_settings([])
    assert (settings.node_id, settings.public_url) == ("n-1", "http://10.0.0.5:8080")


def test_nginx_config_routes_each_node_by_its_whole_id():
    text = nginx_config(
        "127.0.0.1:8080", [parse_node("a=127.0.0.1:8081"), parse_node("a-b=[::1]:8082")]
    )
    # `a` must not take `a-b`'s sandboxes: the id's random part is matched whole.
    assert '"~^[A-Z]+ /_mock/sandboxes/sbx-a-[0-9a-f]{12}(/|$)" mock_node_a;' in text
    assert '"~^[A-Z]+ /_mock/sandboxes/sbx-a-b-[0-9a-f]{12}(/|$)" mock_node_a-b;' in text
    assert "server [::1]:8082 max_fails=0;" in text
    assert "default mock_node_a;" in text  # everything else: the first node
    assert '"POST /_mock/sandboxes" mock_any_node;' in text


def test_nginx_config_puts_what_nginx_writes_under_the_prefix():
    text = nginx_config("127.0.0.1:8080", [parse_node("a=127.0.0.1:8081")], "/srv/router/")
    assert "pid /srv/router/nginx.pid;" in text
    assert "client_body_temp_path /srv/router/client_body_temp;" in text


@pytest.mark.parametrize(
    "node",
    ["a", "A=127.0.0.1:1", "a=127.0.0.1", "a=127.0.0.1:0", "a=:80", "a=::1:80", "a=x;y:80"],
)
def test_a_node_that_is_not_id_host_port_is_refused(node):
    with pytest.raises(UsageError):
        parse_node(node)


def test_the_cluster_command_refuses_a_node_named_twice(capsys):
    with pytest.raises(SystemExit) as exited:
        main(
            ["cluster", "nginx-config", "--listen", "127.0.0.1:80"]
            + ["--node", "a=127.0.0.1:1", "--node", "a=127.0.0.1:2"]
        )
    assert exited.value.code == 2
    assert "repeated: a" in capsys.readouterr().err


def test_the_cluster_command_prints_the_configuration(capsys):
    assert (
        main(["cluster", "nginx-config", "--listen", "0.0.0.0:80", "--node", "x=10.0.0.1:80"]) == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("# The router of a mock-server cluster") and "listen 0.0.0.0:80;" in out


def test_a_prefix_that_would_break_the_configuration_is_refused():
    with pytest.raises(UsageError, match="--prefix"):
        nginx_config("127.0.0.1:8080", [parse_node("a=127.0.0.1:8081")], "/srv/my router")


def _directives(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if not line.lstrip().startswith("#")]


def test_creations_take_one_turn_for_all_of_nginxs_workers():
    """The round robin of creations is in shared memory (a zone), sized for the nodes."""
    nodes = [parse_node(f"n{i}=127.0.0.1:{9000 + i}") for i in range(3)]
    text = nginx_config("127.0.0.1:8080", nodes)
    any_node = text[text.index("upstream mock_any_node {") :].split("}", 1)[0]
    assert "zone mock_any_node 1m;" in any_node
    assert [line.strip() for line in any_node.splitlines() if "server " in line] == [
        f"server 127.0.0.1:{9000 + i};" for i in range(3)
    ]
    many = [parse_node(f"n{i}=127.0.0.1:{9000 + i}") for i in range(1000)]
    assert "zone mock_any_node 4000k;" in nginx_config("127.0.0.1:8080", many)


def test_nothing_opens_the_routers_output_and_the_access_log_is_off(capsys):
    assert main(["cluster", "nginx-config", "--listen", "127.0.0.1:80", "--node", "a=h:1"]) == 0
    directives = _directives(capsys.readouterr().out)
    assert "access_log off;" in directives
    assert "error_log stderr notice;" in directives  # the descriptor given, never reopened
    assert not [line for line in directives if "/dev/" in line]


def test_the_access_log_goes_to_the_file_asked_for(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["cluster", "nginx-config", "--listen", "127.0.0.1:80", "--node", "a=h:1"]
    assert main([*argv, "--access-log", "logs/router.log"]) == 0
    out = capsys.readouterr().out
    assert f"access_log {tmp_path}/logs/router.log;" in _directives(out)
    assert f"#       --access-log {tmp_path}/logs/router.log\n" in out  # the command, echoed
    with pytest.raises(UsageError, match="--access-log"):
        nginx_config("127.0.0.1:80", [parse_node("a=h:1")], access_log="/var/log/my router.log")


def test_the_prefix_must_be_an_existing_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["cluster", "nginx-config", "--listen", "127.0.0.1:80", "--node", "a=h:1"]
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--prefix", "router"])
    assert exited.value.code == 2
    assert "--prefix 'router': no such directory; create it first" in capsys.readouterr().err
    (tmp_path / "router").mkdir()
    assert main([*argv, "--prefix", "router"]) == 0  # made whole: nginx -c runs it anywhere
    assert f"pid {tmp_path}/router/nginx.pid;" in _directives(capsys.readouterr().out)


def test_the_help_says_what_the_paths_must_be(capsys):
    with pytest.raises(SystemExit):
        main(["cluster", "nginx-config", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "DIR must exist" in help_text
    assert "--access-log PATH" in help_text and "(default: no access log)" in help_text
