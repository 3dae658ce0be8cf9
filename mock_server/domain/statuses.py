"""An order's statuses (spec 3.1): what orders, scenarios and the documents share."""

from __future__ import annotations

STATUSES = ("pending", "processing", "need_client_code", "completed", "partial", "failed")
#: Where an order ends: it never changes again (spec 3.2, rule 2).
TERMINAL = frozenset({"completed", "partial", "failed"})
