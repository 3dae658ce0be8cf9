"""The service's paths a recording's traces and its replay tell apart
(docs/recording.md, "Compare"), under both prefixes (`/api/v1` and `/v1`, spec 4): the
token exchange, order creation, one order, its client code.
"""

from __future__ import annotations

import re

TOKEN = re.compile(r"^(?:/api)?/v1/auth/token/client$")
ORDERS = re.compile(r"^(?:/api)?/v1/orders$")
ORDER = re.compile(r"^(?:/api)?/v1/orders/([^/]+)$")
CLIENT_CODE = re.compile(r"^(?:/api)?/v1/orders/([^/]+)/client-code$")
