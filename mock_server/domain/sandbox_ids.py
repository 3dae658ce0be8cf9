"""How sandboxes are named (docs/control-api.md, "Sandboxes"): one name, `sandbox_id`,
everywhere, and one id for the default sandbox."""

from __future__ import annotations

#: The default sandbox: the server's startup world, served on the root paths; it never
#: expires. Its tokens and generated API keys carry no id.
DEFAULT_ID = "default"
#: How a created sandbox's id begins; its tokens begin with the id too.
ID_PREFIX = "sbx-"
