"""Request bodies read two ways (`edge.jsonio`): a short body by walking what orjson
made of it, a longer one from its bytes. Both must give the same value, or the same
refusal, for any body: the walk is checked here against the byte path and against
Python's own decoder, on bodies made to hold what each path looks at (strings holding
quotes, backslashes and the letters of an exponent; fractions, exponents, integers past
64 bits; nesting about the limit). And a body is taken under any JSON content type."""

from __future__ import annotations

import json
import random
from decimal import Decimal
from typing import Any

import pytest

from mock_server.edge import jsonio
from mock_server.errors import ApiError

_STRINGS = ["", "e", "E", "1.5", 'a"b', "back\\slash", '\\"', "true", "naïve", "\u2028", "9" * 25]
_NUMBERS = [
    "0",
    "-0",
    "7",
    "-12",
    "1.5",
    "1.50",
    "-0.0",
    "1e3",
    "2E-2",
    "1.25e+2",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "1" * 30,
    "123456789012345678",
]


def _value(rng: random.Random, depth: int) -> str:
    pick = rng.random()
    if depth > 0 and pick < 0.35:
        if rng.random() < 0.5:
            items = [_value(rng, depth - 1) for _ in range(rng.randint(0, 3))]
            return "[" + ", ".join(items) + "]"
        keys = rng.sample(_STRINGS, rng.randint(0, 3))
        return "{" + ", ".join(f"{json.dumps(k)}: {_value(rng, depth - 1)}" for k in keys) + "}"
    if pick < 0.6:
        return rng.choice(_NUMBERS)
    if pick < 0.85:
        return json.dumps(rng.choice(_STRINGS), ensure_ascii=rng.random() < 0.5)
    return rng.choice(["true", "false", "null"])


def _nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


def _bodies() -> list[bytes]:
    rng = random.Random(20261128)
    bodies = [_value(rng, 4).encode() for _ in range(1500)]
    bodies += [_nested(d, inner).encode() for d in (63, 64, 65, 200) for inner in ("1", "1.5")]
    bodies += [b'{"a": ' + _nested(64).encode() + b"}", b'{"a": ' + _nested(63).encode() + b"}"]
    # A float before a part nested too deep: the whole body is measured, not its start.
    bodies += [b"[1.5, " + _nested(64).encode() + b"]", b"[2e1, " + _nested(63).encode() + b"]"]
    # Damaged bodies: refused, and refused alike.
    for body in bodies[:300]:
        cut = rng.randrange(len(body) + 1)
        bodies.append(body[:cut])
        bodies.append(body[:cut] + rng.choice([b"\xff", b",", b"}", b'"', b"NaN"]) + body[cut:])
    return [body for body in bodies if len(body) <= jsonio.WALKED_BYTES]


def _read(path: Any, raw: bytes) -> tuple[str, Any]:
    try:
        return "value", _typed(path(raw))
    except ApiError as error:
        return "refused", (error.status, error.code, error.detail)


def _typed(value: Any) -> Any:
    """The value with each number's type and exact digits kept (Decimal("1.50") and
    Decimal("1.5") are equal, but not the same reading)."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    if isinstance(value, Decimal | float | int):
        return (type(value).__name__, str(value))
    return value


def test_a_short_body_reads_as_its_bytes_would_read_it() -> None:
    differ = []
    for raw in _bodies():
        walked = _read(jsonio._parse_small, raw)
        by_bytes = _read(lambda body: jsonio._parse_bytes(body, True), raw)
        if walked != by_bytes:
            differ.append((raw, walked, by_bytes))
    assert differ == []


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            b'{"item_id": 1001, "merchant_order_id": "e-1.5"}',
            {"item_id": 1001, "merchant_order_id": "e-1.5"},
        ),
        (b'{"price": 1.50}', {"price": Decimal("1.50")}),
        (b"[18446744073709551616]", [18446744073709551616]),
    ],
)
def test_a_short_body_keeps_what_was_sent(raw: bytes, expected: Any) -> None:
    assert _typed(jsonio.parse_json(raw)) == _typed(expected)


def test_what_a_short_body_gives_is_what_the_standard_decoder_gives() -> None:
    """The well-kept reference: every short body taken gives the value Python's own
    decoder gives it (fractions as `Decimal`); every body it refuses is refused."""
    strict = json.JSONDecoder(parse_float=Decimal, parse_constant=_refuse)
    differ = []
    for raw in _bodies():
        walked = _read(jsonio._parse_small, raw)
        try:
            reference = ("value", _typed(strict.decode(raw.decode("utf-8"))))
        except (ValueError, RecursionError):
            reference = ("refused", None)
        if walked == reference or walked[0] == reference[0] == "refused":
            continue
        if walked[0] == "refused" and "deeper than" in walked[1][2]:
            continue  # the server's own bound (docs/hosting.md); the decoder has none
        differ.append((raw, walked, reference))
    assert differ == []


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        ("application/json", 201),
        ("application/json; charset=utf-8", 201),
        ("Application/JSON", 201),
        ("application/merge-patch+json", 201),
        ("text/plain", 400),
        ("application/jsonx", 400),
    ],
)
async def test_a_body_is_taken_under_any_json_content_type(make_client, content_type, status):
    from conftest import login

    merchant = await login(await make_client())
    response = await merchant.client.post(
        "/api/v1/orders",
        data=b'{"item_id": 1001}',
        headers={**merchant.auth, "Content-Type": content_type},
    )
    assert response.status == status, await response.text()


def test_a_short_body_nested_past_the_limit_is_refused() -> None:
    jsonio.parse_json(_nested(64).encode())
    with pytest.raises(ApiError, match="deeper than 64"):
        jsonio.parse_json(_nested(65).encode())
