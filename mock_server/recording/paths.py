"""The service's paths a recording's traces and its replay tell apart
(docs/recording.md, "Compare"), under both prefixes (`/api/v1` and `/v1`, spec 4): the
token exchange, order creation, one order, its client code; and the kind of answer
(docs/shapes.md) each merchant answer is.
"""

from __future__ import annotations

import re
from typing import Any

TOKEN = re.compile(r"^(?:/api)?/v1/auth/token/client$")
ORDERS = re.compile(r"^(?:/api)?/v1/orders$")
ORDER = re.compile(r"^(?:/api)?/v1/orders/([^/]+)$")
CLIENT_CODE = re.compile(r"^(?:/api)?/v1/orders/([^/]+)/client-code$")
BALANCE = re.compile(r"^(?:/api)?/v1/account/balance$")
ACCOUNT = re.compile(r"^(?:/api)?/v1/account/me$")
PLANT = re.compile(r"^/v3/plant$")


def answer_kind(method: str, path: str, status: int, body: Any) -> str | None:
    """The shapes kind of a merchant answer (docs/shapes.md, "Kinds"), or None for an
    answer no kind names."""
    if not isinstance(body, dict):
        return None
    if TOKEN.match(path):
        return "token" if status == 200 else "token_error"
    if status >= 400:
        return "error" if "code" in body else None
    if PLANT.match(path):
        return "plant"
    if BALANCE.match(path):
        return "balance"
    if ACCOUNT.match(path):
        return "account"
    if ORDERS.match(path) or ORDER.match(path) or CLIENT_CODE.match(path):
        return "order"
    return None
