"""`mock-server catalog generate --items N [--seed S]`: a realistic catalog from Faker.

The output is the feed format (`{"items": [...]}`) that `--catalog` reads back, with a
mix of key items (some discounted, some with limited stock, some out of stock),
top-ups with text and choice fields, login top-ups (`client_code`) and services.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

_BRANDS = (
    "Steam",
    "PlayStation",
    "Xbox",
    "Nintendo",
    "Google Play",
    "Apple",
    "Razer Gold",
    "Battle.net",
    "EA Play",
    "Ubisoft",
    "Riot",
    "Roblox",
)
_GAMES = (
    "Genshin Impact",
    "PUBG Mobile",
    "Free Fire",
    "Mobile Legends",
    "Honkai: Star Rail",
    "Clash of Clans",
    "Valorant",
    "Fortnite",
    "Call of Duty Mobile",
)
_CURRENCIES = ("Crystals", "UC", "Diamonds", "Gems", "Points", "Coins")
_SERVERS = ("America", "Europe", "Asia", "Oceania", "TW, HK, MO")
_SERVICES = (
    "Rank Boost - One Division",
    "Account Leveling 1-30",
    "Coaching Session (1 h)",
    "Placement Matches",
    "Battle Pass Completion",
)


def generate(count: int, seed: int | None = None) -> list[dict[str, Any]]:
    from faker import Faker

    fake = Faker()
    if seed is not None:
        fake.seed_instance(seed)
    makers = (_key, _key, _key, _topup, _login_topup, _service)
    return [makers[index % len(makers)](fake, index + 1) for index in range(count)]


def _prices(fake: Any, low: int, high: int) -> dict[str, int]:
    price = fake.random_int(low, high)
    discounted = fake.boolean(30)
    return {
        "price": price,
        "base_price": int(price * 1.15) if discounted else price,
        "subscriber_price": int(price * 0.97),
    }


def _key(fake: Any, item_id: int) -> dict[str, Any]:
    value = fake.random_element((10, 20, 25, 50, 100))
    item = {
        "id": item_id,
        "name": f"{fake.random_element(_BRANDS)} Gift Card ${value} ({fake.country_code()})",
        "product_type": "key",
        **_prices(fake, value * 95, value * 102),
        "amount_per_price": 1,
        "min_quantity": 1,
        "max_quantity": fake.random_element((5, 10, 20)),
        "in_stock": fake.boolean(90),
        "fields": [],
    }
    if fake.boolean(25):
        item["stock"] = fake.random_int(0, 20)
    return item


def _player_fields(fake: Any, login: bool) -> list[dict[str, Any]]:
    servers = fake.random_elements(_SERVERS, length=3, unique=True)
    return [
        {"name": "login_email" if login else "player_id", "type": "text"},
        {
            "name": "server",
            "type": "choice",
            "options": [{"id": n, "name": s} for n, s in enumerate(servers, start=1)],
        },
    ]


def _topup(fake: Any, item_id: int) -> dict[str, Any]:
    return {
        "id": item_id,
        "name": f"{fake.random_element(_GAMES)} {fake.random_element(_CURRENCIES)} Top-up",
        "product_type": "topup",
        **_prices(fake, 80, 120),
        "amount_per_price": fake.random_element((1, 10, 60, 100)),
        "min_quantity": 1,
        "max_quantity": 1000,
        "in_stock": True,
        "fields": _player_fields(fake, login=False),
    }


def _login_topup(fake: Any, item_id: int) -> dict[str, Any]:
    item = _topup(fake, item_id)
    item["name"] = item["name"].replace("Top-up", "(account login)")
    item["fields"] = _player_fields(fake, login=True)
    item["client_code"] = True
    return item


def _service(fake: Any, item_id: int) -> dict[str, Any]:
    return {
        "id": item_id,
        "name": f"{fake.random_element(_GAMES)} {fake.random_element(_SERVICES)}",
        "product_type": "service",
        **_prices(fake, 999, 7999),
        "amount_per_price": 1,
        "min_quantity": 1,
        "max_quantity": 1,
        "in_stock": True,
        "fields": _player_fields(fake, login=False),
    }


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="mock-server catalog")
    sub = parser.add_subparsers(dest="action", required=True)
    gen = sub.add_parser("generate", help="print a realistic catalog snapshot (JSON)")
    gen.add_argument("--items", type=int, required=True, help="number of items")
    gen.add_argument("--seed", type=int, default=None, help="reproducible output")
    args = parser.parse_args(list(argv))
    if args.items < 1:
        parser.error("--items must be >= 1")
    json.dump({"items": generate(args.items, args.seed)}, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
