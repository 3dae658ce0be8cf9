"""How sandboxes are named (docs/control-api.md, "Sandboxes"): one name, `sandbox_id`,
everywhere, and one id for the default sandbox. In a cluster a created sandbox's id
names its node, which is how a router finds it (docs/cluster.md)."""

from __future__ import annotations

import re

#: The default sandbox: the server's startup world, served on the root paths; it never
#: expires. Its tokens and generated API keys carry no id.
DEFAULT_ID = "default"
#: How a created sandbox's id begins; its tokens begin with the id too.
ID_PREFIX = "sbx-"
#: Hex digits after the prefix (and the node's id): what makes a created sandbox's id
#: its own.
RANDOM_DIGITS = 12
#: `--node-id`: lower-case letters, digits and `-`, at most 40.
NODE_ID = re.compile(r"[a-z0-9-]{1,40}")


def created_id(node_id: str | None, random_hex: str) -> str:
    """`sbx-{random}`, or `sbx-{node}-{random}` on a node of a cluster."""
    return f"{ID_PREFIX}{node_id}-{random_hex}" if node_id else ID_PREFIX + random_hex


def node_of(sandbox_id: str) -> str | None:
    """The node a created sandbox's id names, or None (no node, or not a created id)."""
    rest = sandbox_id.removeprefix(ID_PREFIX)
    if rest == sandbox_id or "-" not in rest:
        return None
    node, _, random_hex = rest.rpartition("-")
    return node if len(random_hex) == RANDOM_DIGITS and NODE_ID.fullmatch(node) else None
