"""Reading a saved state document: typed access whose every refusal names where the
problem is (`state.orders[3].status: expected one of ...`)."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from ..errors import validation_error


def fixed_list(value: Any, size: int, where: str) -> list[Any]:
    if not isinstance(value, list) or len(value) != size:
        raise validation_error(f"{where}: expected a list of {size} values")
    return value


class Reader:
    """Typed access to one object of the document; problems name where they are."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise validation_error(f"{where}: expected an object")
        self.data, self.where = data, where

    def _get(self, key: str) -> Any:
        if key not in self.data:
            raise validation_error(f"{self.where}: {key!r} is missing")
        return self.data[key]

    def _bad(self, key: str, wanted: str) -> Exception:
        return validation_error(f"{self.where}.{key}: expected {wanted}, got {self.data[key]!r}")

    def keys(self) -> list[str]:
        return list(self.data)

    def child(self, key: str) -> Reader:
        return Reader(self._get(key), f"{self.where}.{key}")

    def list(self, key: str) -> list[Any]:
        value = self._get(key)
        if not isinstance(value, list):
            raise self._bad(key, "a list")
        return value

    def items(self, key: str) -> list[Reader]:
        return [Reader(v, f"{self.where}.{key}[{i}]") for i, v in enumerate(self.list(key))]

    def string(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str):
            raise self._bad(key, "a string")
        return value

    def optional_string(self, key: str) -> str | None:
        return None if self.data.get(key) is None else self.string(key)

    def boolean(self, key: str) -> bool:
        value = self._get(key)
        if not isinstance(value, bool):
            raise self._bad(key, "true or false")
        return value

    def integer(self, key: str, low: int, high: int) -> int:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self._bad(key, f"an integer {low}..{high}")
        return value

    def number(self, key: str, minimum: float | None = None, exclusive: bool = False) -> float:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._bad(key, "a number")
        if minimum is not None and (value <= minimum if exclusive else value < minimum):
            raise self._bad(key, f"a number {'>' if exclusive else '>='} {minimum}")
        return float(value)

    def optional_number(self, key: str) -> float | None:
        return None if self.data.get(key) is None else self.number(key)

    def choice(self, key: str, allowed: tuple[str, ...]) -> str:
        """One of `allowed`: the program's own string, shared, not the document's copy."""
        value = self._get(key)
        if value not in allowed:
            raise self._bad(key, f"one of {', '.join(allowed)}")
        return allowed[allowed.index(value)]

    def quantity(self, key: str) -> int | Decimal:
        value = self._get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            try:
                return Decimal(value)
            except InvalidOperation:
                pass
        raise self._bad(key, "an integer or a decimal string")
