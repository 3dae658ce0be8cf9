"""The service's paths a recording's traces and its replay tell apart
(docs/recording.md, "Compare"), under both prefixes (`/api/v1` and `/v1`, spec 4): the
token exchange, order creation, one order, its client code; and the kind of answer
(docs/shapes.md) each merchant answer is.
"""

from __future__ import annotations

import re
from typing import Any

from ...domain import shapes

TOKEN = re.compile(r"^(?:/api)?/v1/auth/token/client$")
ORDERS = re.compile(r"^(?:/api)?/v1/orders$")
ORDER = re.compile(r"^(?:/api)?/v1/orders/([^/]+)$")
CLIENT_CODE = re.compile(r"^(?:/api)?/v1/orders/([^/]+)/client-code$")
BALANCE = re.compile(r"^(?:/api)?/v1/account/balance$")


def answer_kind(method: str, path: str, status: int, body: Any) -> str | None:
    """The shapes kind of a recorded merchant answer (docs/shapes.md, "Kinds"), as the
    sandbox names its own."""
    return shapes.answer_kind(path, status, body)
