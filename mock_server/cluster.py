"""`mock-server cluster nginx-config`: the configuration of an nginx router in front of a
cluster of nodes (docs/cluster.md), printed to stdout and run as it is with
`nginx -p DIR -c FILE`.

    mock-server cluster nginx-config --listen 127.0.0.1:8080 \\
        --node a=127.0.0.1:8081 --node b=127.0.0.1:8082 [--prefix DIR]

The routing rules: a created sandbox's paths (`/_mock/sandboxes/sbx-{node}-{random}...`)
go to its node; `POST /_mock/sandboxes` to any node, in turn; everything else (the
default sandbox's root paths, the documents, the dashboard, the rest of `/_mock`) to the
first node. A node that does not answer gives a JSON 503 `node_unavailable` naming it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from .domain.sandbox_ids import ID_PREFIX, NODE_ID, RANDOM_DIGITS
from .edge.paths import BASE_PREFIX

#: How long the router waits for a node to accept a connection before the 503: a node
#: on the same network accepts in well under a millisecond, or is not there.
CONNECT_SECONDS = 2
#: How long a proxied answer may be silent: the live event stream writes a keep-alive
#: comment whenever it has been idle a while (`control/events.py`), and a long clock
#: advance answers well within it.
READ_SECONDS = 3600


#: What would end or break a word of nginx's configuration.
_NOT_IN_A_WORD = frozenset(" \t\n;{}'\"\\#$")


@dataclass(frozen=True)
class Node:
    node_id: str
    address: str  # HOST:PORT, as nginx's `server` takes it

    @property
    def upstream(self) -> str:
        return f"mock_node_{self.node_id}"


class UsageError(ValueError):
    """An argument that does not describe a cluster."""


def parse_node(text: str) -> Node:
    """`ID=HOST:PORT` -> Node."""
    node_id, equals, address = text.partition("=")
    if not equals or not NODE_ID.fullmatch(node_id):
        raise UsageError(
            f"--node {text!r}: expected ID=HOST:PORT, ID 1 to 40 lower-case letters, "
            "digits and '-' (the node's --node-id)"
        )
    return Node(node_id, parse_address(address, f"--node {text!r}"))


def parse_address(text: str, what: str) -> str:
    """HOST:PORT (an IPv6 host in brackets) -> the same, checked."""
    host, colon, port = text.rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise UsageError(f"{what}: expected HOST:PORT with a port 1..65535, got {text!r}")
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not bare or any(c in bare for c in _NOT_IN_A_WORD) or (":" in bare and bare == host):
        raise UsageError(f"{what}: {host!r} is not a host (an IPv6 address goes in brackets)")
    return text


def nginx_config(listen: str, nodes: Sequence[Node], prefix: str | None = None) -> str:
    """The whole configuration. Paths nginx writes (its pid, temporary files) are under
    `prefix` when given, else relative to the prefix nginx is started with (`-p DIR`)."""
    if not nodes:
        raise UsageError("name at least one --node")
    ids = [node.node_id for node in nodes]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise UsageError(f"--node: each node once; repeated: {', '.join(repeated)}")
    if prefix is not None and any(c in prefix for c in _NOT_IN_A_WORD):
        raise UsageError(f"--prefix {prefix!r}: a directory without spaces, quotes or ;{{}}")
    here = prefix.rstrip("/") + "/" if prefix else ""
    first = nodes[0]
    sandbox_path = f"{BASE_PREFIX}{ID_PREFIX}"
    lines = [
        "# The router of a mock-server cluster (docs/cluster.md), as printed by",
        f"#   mock-server cluster nginx-config --listen {listen} "
        + " ".join(f"--node {n.node_id}={n.address}" for n in nodes),
        "# Run it as it is: nginx -p DIR -c THIS_FILE (in the foreground).",
        "daemon off;",
        "worker_processes auto;",
        f"pid {here}nginx.pid;",
        "error_log stderr notice;",
        "",
        "events {",
        "    worker_connections 4096;",
        "}",
        "",
        "http {",
        "    access_log /dev/stdout;",
        f"    client_body_temp_path {here}client_body_temp;",
        f"    proxy_temp_path {here}proxy_temp;",
        f"    fastcgi_temp_path {here}fastcgi_temp;",
        f"    uwsgi_temp_path {here}uwsgi_temp;",
        f"    scgi_temp_path {here}scgi_temp;",
        "    # Each node answers a body over its own limit in the API's envelope.",
        "    client_max_body_size 0;",
        "",
    ]
    for node in nodes:
        lines += [
            f"    upstream {node.upstream} {{",
            f"        server {node.address} max_fails=0;",
            "        keepalive 32;",
            "    }",
        ]
    lines += [
        "    # POST /_mock/sandboxes: any node, in turn; one that does not answer is skipped."
    ]
    lines += ["    upstream mock_any_node {"]
    lines += [f"        server {node.address};" for node in nodes]
    lines += ["        keepalive 32;", "    }", ""]
    lines += [
        "    # Where a request goes: a created sandbox's paths to the node its id names;",
        "    # creating a sandbox to any node; everything else to the first node.",
        '    map "$request_method $uri" $mock_upstream {',
        f"        default {first.upstream};",
        f'        "POST {BASE_PREFIX.rstrip("/")}" mock_any_node;',
    ]
    for node in nodes:
        pattern = f"{sandbox_path}{node.node_id}-[0-9a-f]{{{RANDOM_DIGITS}}}(/|$)"
        lines.append(f'        "~^[A-Z]+ {pattern}" {node.upstream};')
    lines += ["    }", "", "    map $mock_upstream $mock_unavailable {"]
    lines.append(f'        default "{_unavailable(None)}";')
    lines += [f'        {node.upstream} "{_unavailable(node)}";' for node in nodes]
    lines += ["    }", ""]
    lines += [
        "    server {",
        f"        listen {listen};",
        "",
        "        location / {",
        "            proxy_pass http://$mock_upstream;",
        "            proxy_http_version 1.1;",
        '            proxy_set_header Connection "";',
        "            # base_urls name the router, as the client called it.",
        "            proxy_set_header Host $http_host;",
        "            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
        "            proxy_set_header X-Forwarded-Proto $scheme;",
        "            # Bodies and the live event stream pass through as they come.",
        "            proxy_buffering off;",
        "            proxy_request_buffering off;",
        f"            proxy_connect_timeout {CONNECT_SECONDS}s;",
        f"            proxy_read_timeout {READ_SECONDS}s;",
        f"            proxy_send_timeout {READ_SECONDS}s;",
        "            error_page 502 504 = @node_unavailable;",
        "        }",
        "",
        "        location @node_unavailable {",
        "            default_type application/json;",
        '            return 503 \'{"detail": "$mock_unavailable", "code": "node_unavailable"}\';',
        "        }",
        "    }",
        "}",
    ]
    return "\n".join(lines) + "\n"


def _unavailable(node: Node | None) -> str:
    """The 503's `detail` when `node` does not answer (None: no node, for a creation)."""
    if node is None:
        return "No node of this cluster answered: a sandbox can be created once one is back"
    return (
        f"The node {node.node_id} of this cluster did not answer: its sandboxes are "
        "unavailable until it is back"
    )


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="mock-server cluster",
        description="Run mock-server nodes as one service behind a router (docs/cluster.md).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    nginx = commands.add_parser(
        "nginx-config",
        help="print an nginx configuration routing to the nodes",
        description="Print an nginx configuration that routes each sandbox to its node; "
        "run it with: nginx -p DIR -c FILE.",
    )
    nginx.add_argument("--listen", required=True, metavar="HOST:PORT", help="where nginx listens")
    nginx.add_argument(
        "--node",
        action="append",
        required=True,
        metavar="ID=HOST:PORT",
        help="a node: its --node-id and address; the first also serves what no sandbox owns",
    )
    nginx.add_argument(
        "--prefix",
        metavar="DIR",
        help="write nginx's pid and temporary files under DIR (default: nginx's -p DIR)",
    )
    args = parser.parse_args(list(argv))
    try:
        listen = parse_address(args.listen, "--listen")
        nodes = [parse_node(text) for text in args.node]
        text = nginx_config(listen, nodes, args.prefix)
    except UsageError as exc:
        parser.error(str(exc))
    sys.stdout.write(text)
    return 0
