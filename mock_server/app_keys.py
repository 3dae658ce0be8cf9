"""What an application holds, each under one typed key: `create_app` (app.py) sets them,
the HTTP layer and the starters read them. The one module of app keys."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from .api.cors import Cors
from .api.merchant import MerchantApi
from .api.merchant_calls import MerchantCalls
from .config import Settings
from .domain.sandbox import Sandbox
from .domain.sandboxes import Sandboxes
from .webhooks import WebhookSender

if TYPE_CHECKING:  # sqlite3 is imported only when a state file is used
    from .state_file import StateFile

SETTINGS = web.AppKey("settings", Settings)
#: Every sandbox the server holds: the default one and those created at run time.
SANDBOXES = web.AppKey("sandboxes", Sandboxes)
#: The default sandbox and its webhook sender (the CLI's banner, in-process benches).
SANDBOX = web.AppKey("sandbox", Sandbox)
WEBHOOKS = web.AppKey("webhooks", WebhookSender)
#: The merchant API's table and handlers, and what surrounds each of its calls.
MERCHANT_API = web.AppKey("merchant_api", MerchantApi)
MERCHANT_CALLS = web.AppKey("merchant_calls", MerchantCalls)
CORS = web.AppKey("cors", Cors)
#: The `--state` file, when there is one.
STATE_FILE: web.AppKey[StateFile] = web.AppKey("state_file")
