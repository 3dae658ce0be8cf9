"""`mock-server cluster nginx-config`: the configuration of an nginx router in front of a
cluster of nodes (docs/cluster.md), printed to stdout and run as it is with
`nginx -p DIR -c FILE`.

    mock-server cluster nginx-config --listen 127.0.0.1:8080 \\
        --node a=127.0.0.1:8081 --node b=127.0.0.1:8082 [--prefix DIR] [--access-log PATH]

The routing rules: a created sandbox's paths (`/_mock/sandboxes/sbx-{node}-{random}...`)
go to its node; `POST /_mock/sandboxes` to any node, in turn; everything else (the
default sandbox's root paths, the documents, the dashboard, the rest of `/_mock`) to the
first node. A node that does not answer gives a JSON 503 `node_unavailable` naming it.

Creation's round robin lives in shared memory (the upstream's `zone`), one for all of
nginx's worker processes, so sandboxes spread evenly however many workers run. The
configuration opens no path it is not given: nginx runs it as any user (docs/cluster.md,
"nginx, as shipped"; the spec's section 17).
"""

from __future__ import annotations

import argparse
import os
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


#: The shared memory of creation's round robin, per node named and at least: nginx 1.22
#: keeps a server's address in under 1 KiB of it (1 MiB held 1,296 addresses); a name
#: that resolves to several addresses takes one each.
ZONE_KIB_PER_NODE = 4
ZONE_KIB_AT_LEAST = 1024

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


def nginx_config(
    listen: str,
    nodes: Sequence[Node],
    prefix: str | None = None,
    access_log: str | None = None,
) -> str:
    """The whole configuration. Paths nginx writes (its pid, temporary files) are under
    `prefix` when given, else relative to the prefix nginx is started with (`-p DIR`).
    Requests are logged to the file `access_log` when given, else not at all."""
    if not nodes:
        raise UsageError("name at least one --node")
    ids = [node.node_id for node in nodes]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise UsageError(f"--node: each node once; repeated: {', '.join(repeated)}")
    for flag, path in (("--prefix", prefix), ("--access-log", access_log)):
        if path is not None and (not path or any(c in path for c in _NOT_IN_A_WORD)):
            raise UsageError(f"{flag} {path!r}: a path without spaces, quotes or ;{{}}")
    here = prefix.rstrip("/") + "/" if prefix else ""
    first = nodes[0]
    sandbox_path = f"{BASE_PREFIX}{ID_PREFIX}"
    # The command that prints this, one option a line: a comment is one word to nginx,
    # and a word over 4 KiB (some 130 nodes on one line) is refused.
    command = [f"--listen {listen}"] + [f"--node {n.node_id}={n.address}" for n in nodes]
    command += [f"--prefix {prefix}"] if prefix else []
    command += [f"--access-log {access_log}"] if access_log else []
    lines = [
        "# The router of a mock-server cluster (docs/cluster.md), as printed by",
        "#   mock-server cluster nginx-config \\",
        *[f"#       {option} \\" for option in command[:-1]],
        f"#       {command[-1]}",
        "# Run it as it is, as any user, in the foreground: nginx -e stderr -p DIR -c THIS_FILE",
        "# (-e stderr: no log file of nginx's own is opened before this one is read).",
        "# Nothing here opens /dev/stdout, which a user who did not open the router's",
        "# output may not open again.",
        "daemon off;",
        "worker_processes auto;",
        f"pid {here}nginx.pid;",
        "# The standard error nginx was given, written to as it is, never opened by name.",
        "error_log stderr notice;",
        "",
        "events {",
        "    worker_connections 4096;",
        "}",
        "",
        "http {",
        f"    access_log {access_log or 'off'};",
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
        "    # POST /_mock/sandboxes: any node, in turn; one that does not answer is skipped.",
        "    # The turn and the skipping live in the zone, shared by all worker processes:",
        "    # without it each worker would keep its own turn, each starting at the first",
        "    # node, and the nodes would get uneven shares.",
        "    upstream mock_any_node {",
        f"        zone mock_any_node {_zone_size(len(nodes))};",
    ]
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


def _zone_size(nodes: int) -> str:
    kib = max(ZONE_KIB_AT_LEAST, ZONE_KIB_PER_NODE * nodes)
    return f"{kib // 1024}m" if kib % 1024 == 0 else f"{kib}k"


def _directory(text: str) -> str:
    """--prefix: an existing directory, made absolute (nginx reads a relative path from
    its own prefix, not from where this runs)."""
    if not os.path.isdir(text):
        raise UsageError(
            f"--prefix {text!r}: no such directory; create it first (mkdir -p), writable "
            "by the user nginx runs as: nginx creates its temporary directories in it, "
            "not the directory itself"
        )
    return os.path.abspath(text)


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
        help="write nginx's pid and temporary files under DIR, so that `nginx -c FILE` "
        "runs from anywhere. DIR must exist, writable by nginx's user: nginx creates "
        "its temporary directories in it, not DIR itself (default: nginx's -p DIR)",
    )
    nginx.add_argument(
        "--access-log",
        metavar="PATH",
        help="log each request to the file PATH (nginx's combined format); its directory "
        "must exist, writable by nginx's user (default: no access log)",
    )
    args = parser.parse_args(list(argv))
    try:
        listen = parse_address(args.listen, "--listen")
        nodes = [parse_node(text) for text in args.node]
        prefix = None if args.prefix is None else _directory(args.prefix)
        access_log = os.path.abspath(args.access_log) if args.access_log else args.access_log
        text = nginx_config(listen, nodes, prefix, access_log)
    except UsageError as exc:
        parser.error(str(exc))
    sys.stdout.write(text)
    return 0
