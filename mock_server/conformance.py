"""`mock-server conformance`: has the real service drifted from this sandbox?
(docs/fidelity.md, "Has production drifted?")

The same probes go to the service at `--base-url` and to a sandbox started here, and
their answers are compared: status code, error `code` (or the token endpoint's
`{"error"}`), the set of fields and their JSON types. Values are ignored.

Every probe is a request that cannot create or charge anything: reads, token exchanges,
a lookup of an order that does not exist, and order creations the spec requires to be
refused before any charge (spec 7 rule 1: a 4xx creates and charges nothing). No probe
could succeed in creating an order: the item is unknown, the quantity is outside the
item's range, required fields are missing, the body is not JSON, or the price guard is
an amount no order of the item can cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from .sourcefile import ConfigError

SAFETY = (
    "Every probe is a request that cannot create or charge anything: reads, token "
    "exchanges, a lookup of an unknown order, and order creations that must be refused "
    "before any charge. No probe could succeed in creating an order."
)
UNKNOWN_ORDER = "00000000-0000-4000-8000-000000000000"
UNKNOWN_ITEM = 987654321
#: A price guard no order of the probed item can cost (it would be refused as a
#: mismatch before any charge, never accepted).
IMPOSSIBLE_GUARD = 99_999_999.99


@dataclass(frozen=True)
class Probe:
    name: str
    method: str
    path: str
    body: Any = None  # JSON, or bytes sent as they are
    authenticated: bool = True
    api_key: str | None = None  # token exchange: None means "the key under test"


@dataclass
class Outcome:
    probe: Probe
    service: tuple[int, Any]
    sandbox: tuple[int, Any]
    differences: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "probe": self.probe.name,
            "request": f"{self.probe.method} {self.probe.path}",
            "service_status": self.service[0],
            "sandbox_status": self.sandbox[0],
            "differences": self.differences,
        }


def probes(item: dict[str, Any] | None, with_fields: dict[str, Any] | None) -> list[Probe]:
    """The probes; `item` (a key item) and `with_fields` (a top-up or service item) come
    from the catalog the service and the sandbox share, when one was given."""
    found = [
        Probe("token exchange", "POST", "/api/v1/auth/token/client", authenticated=False),
        Probe(
            "token exchange with a wrong key",
            "POST",
            "/api/v1/auth/token/client",
            authenticated=False,
            api_key="ak_conformance_probe_not_a_key",
        ),
        Probe("balance", "GET", "/api/v1/account/balance"),
        Probe("account read", "GET", "/v1/account/me"),
        Probe("lookup of an unknown order", "GET", f"/api/v1/orders/{UNKNOWN_ORDER}"),
        Probe("lookup without a token", "GET", f"/api/v1/orders/{UNKNOWN_ORDER}", None, False),
        Probe("order of an unknown item", "POST", "/api/v1/orders", {"item_id": UNKNOWN_ITEM}),
        Probe("order with a body that is not JSON", "POST", "/api/v1/orders", b"{not json"),
    ]
    if item is not None:
        too_many = item.get("max_quantity", 10**6) + 1
        found += [
            Probe(
                "order of a quantity above the item's range",
                "POST",
                "/api/v1/orders",
                {"item_id": item["id"], "quantity": too_many},
            ),
            Probe(
                "order with a price guard that cannot match",
                "POST",
                "/api/v1/orders",
                {"item_id": item["id"], "quantity": 1, "price": IMPOSSIBLE_GUARD},
            ),
        ]
    if with_fields is not None:
        found.append(
            Probe(
                "order without its required fields",
                "POST",
                "/api/v1/orders",
                {"item_id": with_fields["id"], "quantity": with_fields.get("min_quantity", 1)},
            )
        )
    return found


def shape(value: Any) -> Any:
    """Field names and JSON types, values dropped: `{"balance": "number"}`."""
    if isinstance(value, dict):
        return {key: shape(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "null" if value is None else type(value).__name__


def compare(service: tuple[int, Any], sandbox: tuple[int, Any]) -> list[str]:
    differences = []
    if service[0] != sandbox[0]:
        differences.append(f"status: service {service[0]}, sandbox {sandbox[0]}")
    left, right = service[1], sandbox[1]
    if isinstance(left, dict) and isinstance(right, dict):
        if left.get("code") != right.get("code"):
            differences.append(f"code: service {left.get('code')!r}, sandbox {right.get('code')!r}")
        differences += _shape_differences(shape(left), shape(right), "")
    elif shape(left) != shape(right):
        differences.append(f"body: service {shape(left)}, sandbox {shape(right)}")
    return differences


def _shape_differences(left: Any, right: Any, where: str) -> list[str]:
    if isinstance(left, dict) and isinstance(right, dict):
        found = []
        for key in sorted(set(left) | set(right)):
            path = f"{where}.{key}" if where else key
            if key not in right:
                found.append(f"field {path}: only the service has it")
            elif key not in left:
                found.append(f"field {path}: only the sandbox has it")
            else:
                found += _shape_differences(left[key], right[key], path)
        return found
    if isinstance(left, list) and isinstance(right, list):
        if left and right:
            return _shape_differences(left[0], right[0], f"{where}[]")
        return []
    if left != right:
        return [f"type of {where or 'body'}: service {left}, sandbox {right}"]
    return []


class Target:
    """One side of the comparison: a base URL and the API key it knows."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str, api_key: str) -> None:
        self.session, self.base_url, self.api_key = session, base_url.rstrip("/"), api_key
        self._token: str | None = None

    async def send(self, probe: Probe) -> tuple[int, Any]:
        headers = {}
        body = probe.body
        if probe.path.endswith("/auth/token/client"):
            body = {"api_key": probe.api_key or self.api_key}
        if probe.authenticated:
            headers["Authorization"] = f"Bearer {await self.token()}"
        kwargs: dict[str, Any] = {"headers": headers}
        if isinstance(body, bytes):
            kwargs["data"] = body
            headers["Content-Type"] = "application/json"
        elif body is not None:
            kwargs["json"] = body
        async with self.session.request(probe.method, self.base_url + probe.path, **kwargs) as r:
            raw = await r.read()
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, raw.decode("utf-8", "replace")[:200]

    async def token(self) -> str:
        if self._token is None:
            url = self.base_url + "/api/v1/auth/token/client"
            async with self.session.post(url, json={"api_key": self.api_key}) as response:
                body = await response.json(content_type=None)
            self._token = body.get("access_token", "") if isinstance(body, dict) else ""
        return self._token


async def run(base_url: str, api_key: str, catalog: str | None) -> list[Outcome]:
    from .app import create_app
    from .config import Settings, load_startup
    from .serving import Serving

    settings = Settings(clock="manual", seed=1, catalog=catalog)
    startup = load_startup(settings)
    feed = startup.catalog.to_feed()
    item = next((i for i in feed if i["product_type"] == "key" and _buyable(i)), None)
    with_fields = next((i for i in feed if i["product_type"] != "key" and i.get("fields")), None)
    serving = Serving(create_app(settings, startup=startup), "127.0.0.1", 0, access_log=None)
    await serving.start()
    account = next(iter(startup.accounts))
    try:
        async with aiohttp.ClientSession() as session:
            service = Target(session, base_url, api_key)
            sandbox = Target(session, serving.url, account.api_keys[0])
            outcomes = []
            for probe in probes(item, with_fields):
                answers = (await service.send(probe), await sandbox.send(probe))
                outcomes.append(Outcome(probe, *answers, compare(*answers)))
            return outcomes
    finally:
        await serving.stop()


def _buyable(item: dict[str, Any]) -> bool:
    return item.get("in_stock", True) and item.get("stock", 1) != 0


def report(outcomes: list[Outcome]) -> str:
    lines = [SAFETY, ""]
    for outcome in outcomes:
        mark = "drift" if outcome.differences else "same "
        lines.append(
            f"{mark}  {outcome.probe.name}: {outcome.probe.method} {outcome.probe.path} "
            f"(service {outcome.service[0]}, sandbox {outcome.sandbox[0]})"
        )
        lines += [f"         {difference}" for difference in outcome.differences]
    drifted = sum(1 for outcome in outcomes if outcome.differences)
    lines += ["", f"{drifted} of {len(outcomes)} probes drifted"]
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="mock-server conformance",
        description="Send the same harmless probes to a service and to a sandbox started "
        "here, and report differences in status, error code, fields and JSON types. " + SAFETY,
    )
    parser.add_argument("--base-url", required=True, help="the service, e.g. https://...")
    parser.add_argument("--api-key", required=True, help="an API key of the service (ak_...)")
    parser.add_argument(
        "--catalog",
        default=None,
        help="the service's catalog snapshot, so that probes about quantities and fields "
        "use an item both sides know (default: the embedded sample catalog)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON document, for CI")
    args = parser.parse_args(list(argv))
    try:
        outcomes = asyncio.run(run(args.base_url, args.api_key, args.catalog))
    except ConfigError as exc:
        print("\n".join(exc.problems), file=sys.stderr)
        return 2
    except (aiohttp.ClientError, OSError) as exc:
        print(f"cannot reach {args.base_url}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        drifted = any(outcome.differences for outcome in outcomes)
        document = {
            "drifted": drifted,
            "safety": SAFETY,
            "probes": [o.to_json() for o in outcomes],
        }
        print(json.dumps(document, indent=2))
    else:
        print(report(outcomes))
    return 1 if any(outcome.differences for outcome in outcomes) else 0
