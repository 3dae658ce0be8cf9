"""The catalog snapshot (spec 2.2): item definitions the orders are placed against.

The feed is a JSON/YAML array of items or `{"items": [...]}`. Mock-only optional keys:
`stock` (key items: units left; absent = unlimited) and `client_code: true` (a login
top-up that pauses in `need_client_code`). Unknown keys are kept and ignored, since
the real feed may grow.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..sourcefile import ConfigError, read_file, where

PRODUCT_TYPES = ("key", "topup", "service")
#: Ids, cents and stock stay exact in every JSON client (2**53 - 1).
LARGEST_INT = 2**53 - 1
FIELD_TYPES = ("text", "choice")
_KNOWN_KEYS = {
    "id",
    "name",
    "product_type",
    "price",
    "base_price",
    "subscriber_price",
    "amount_per_price",
    "min_quantity",
    "max_quantity",
    "in_stock",
    "fields",
    "stock",
    "client_code",
}


@dataclass(frozen=True, slots=True)
class Option:
    id: int
    label: str


@dataclass(frozen=True, slots=True)
class InputField:
    name: str
    type: str
    options: tuple[Option, ...] = ()

    def label_of(self, option_id: int) -> str | None:
        for option in self.options:
            if option.id == option_id:
                return option.label
        return None


@dataclass(slots=True)
class Item:
    """One catalog record. Prices are integer cents. `stock` and `in_stock` change live."""

    id: int
    name: str
    product_type: str
    price: int
    base_price: int
    subscriber_price: int
    amount_per_price: Decimal | int
    min_quantity: Decimal | int
    max_quantity: Decimal | int
    in_stock: bool
    fields: tuple[InputField, ...] = ()
    stock: int | None = None
    client_code: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def available(self) -> bool:
        """Orderable now: flagged in stock and, when stock is counted, units left."""
        return self.in_stock and (self.stock is None or self.stock > 0)

    def unit_price(self, subscribed: bool) -> int:
        return self.subscriber_price if subscribed else self.price

    def to_feed(self) -> dict[str, Any]:
        """The record in the feed's own format (what `/_mock/catalog` shows)."""
        record: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "product_type": self.product_type,
            "price": self.price,
            "base_price": self.base_price,
            "subscriber_price": self.subscriber_price,
            "amount_per_price": _number(self.amount_per_price),
            "min_quantity": _number(self.min_quantity),
            "max_quantity": _number(self.max_quantity),
            "in_stock": self.in_stock,
            "fields": [
                {"name": f.name, "type": f.type}
                | (
                    {"options": [{"id": o.id, "name": o.label} for o in f.options]}
                    if f.type == "choice"
                    else {}
                )
                for f in self.fields
            ],
        }
        if self.stock is not None:
            record["stock"] = self.stock
        if self.client_code:
            record["client_code"] = True
        return record | self.extra


def _number(value: Decimal | int) -> float | int:
    return float(value) if isinstance(value, Decimal) else value


class Catalog:
    """Items by id, in feed order."""

    def __init__(self, items: list[Item]) -> None:
        self.items: dict[int, Item] = {item.id: item for item in items}

    def get(self, item_id: int) -> Item | None:
        return self.items.get(item_id)

    def __len__(self) -> int:
        return len(self.items)

    def copy(self) -> Catalog:
        """A catalog of its own for a sandbox: each item copied (its price, stock and
        `in_stock` change live), its input fields (immutable) and unknown keys (only
        read) shared. A deep copy of a 10,000-item catalog cost 0.26 s at every reset;
        this about 20 ms."""
        return Catalog([dataclasses.replace(item) for item in self.items.values()])

    def to_feed(self) -> list[dict[str, Any]]:
        return [item.to_feed() for item in self.items.values()]


# -- loading ------------------------------------------------------------------------------


def load_catalog(path: str | Path) -> Catalog:
    return parse_catalog(read_file(path), str(path))


def parse_catalog(data: Any, source: str) -> Catalog:
    """Check a parsed feed and build a `Catalog`, or raise `ConfigError` listing every
    problem as `file[:line]: item N: reason` (N counts from 1)."""
    reader = CatalogReader(data, source)
    reader.read(len(reader.records))
    return reader.catalog()


class CatalogReader:
    """A feed read a piece at a time, so that a large one sent to a server many
    merchants share is read between their calls (docs/hosting.md, "What one request
    may cost"); `parse_catalog` reads one whole."""

    def __init__(self, data: Any, source: str) -> None:
        records = data.get("items") if isinstance(data, dict) else data
        if not isinstance(records, list):
            raise ConfigError(
                [f'{where(source, data)}: a catalog is a list of items or {{"items": [...]}}']
            )
        self.records: list[Any] = records
        self.source = source
        self._problems: list[str] = []
        self._items: list[Item] = []
        self._seen: set[int] = set()
        #: Equal input fields are one object: a catalog's items share a few kinds of
        #: field, and making each anew was most of a 10,000-item catalog's cost.
        self._shared: dict[tuple[Any, ...], InputField] = {}
        self._next = 0

    def read(self, count: int) -> bool:
        """Read up to `count` more items; whether every item has been read."""
        source, end = self.source, min(self._next + count, len(self.records))
        for index in range(self._next, end):
            record = self.records[index]
            try:
                item = _parse_item(record, self._shared)
            except _ItemProblem as problem:
                where_ = where(source, record, problem.key)
                self._problems.append(f"{where_}: item {index + 1}: {problem}")
                continue
            if item.id in self._seen:
                where_ = where(source, record, "id")
                self._problems.append(f"{where_}: item {index + 1}: duplicate id {item.id}")
            self._seen.add(item.id)
            self._items.append(item)
        self._next = end
        return end == len(self.records)

    def catalog(self) -> Catalog:
        """The catalog read, or `ConfigError` listing every problem found."""
        if self._problems:
            raise ConfigError(self._problems)
        return Catalog(self._items)


class _ItemProblem(Exception):
    def __init__(self, reason: str, key: str | None = None) -> None:
        super().__init__(reason)
        self.key = key


def _int(record: dict[str, Any], key: str, *, minimum: int = 0, default: Any = ...) -> int:
    value = record.get(key, default)
    if value is ...:
        raise _ItemProblem(f"'{key}' is required", key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _ItemProblem(f"'{key}' must be an integer, got {value!r}", key)
    if value < minimum:
        raise _ItemProblem(f"'{key}' must be >= {minimum}, got {value}", key)
    if value > LARGEST_INT:
        raise _ItemProblem(f"'{key}' must be <= {LARGEST_INT}, got {value}", key)
    return value


def _quantity(record: dict[str, Any], key: str, default: int) -> Decimal | int:
    value = record.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _ItemProblem(f"'{key}' must be a number, got {value!r}", key)
    if value <= 0:
        raise _ItemProblem(f"'{key}' must be > 0, got {value}", key)
    return value if isinstance(value, int) else Decimal(str(value))


def _parse_item(record: Any, shared: dict[tuple[Any, ...], InputField]) -> Item:
    if not isinstance(record, dict):
        raise _ItemProblem(f"an item is an object, got {type(record).__name__}")
    item_id = _int(record, "id", minimum=1)
    name = record.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _ItemProblem("'name' must be a non-empty string", "name")
    product_type = record.get("product_type")
    if product_type not in PRODUCT_TYPES:
        raise _ItemProblem(
            f"'product_type' must be one of {', '.join(PRODUCT_TYPES)}, got {product_type!r}",
            "product_type",
        )
    price = _int(record, "price")
    base_price = _int(record, "base_price", default=price)
    subscriber_price = _int(record, "subscriber_price", default=price)
    amount_per_price = _quantity(record, "amount_per_price", 1)
    min_quantity = _quantity(record, "min_quantity", 1)
    max_quantity = _quantity(record, "max_quantity", 1 if product_type == "service" else 100)
    if min_quantity > max_quantity:
        raise _ItemProblem(
            f"'min_quantity' {min_quantity} is above 'max_quantity' {max_quantity}", "min_quantity"
        )
    if product_type != "topup":
        for key, value in (("min_quantity", min_quantity), ("max_quantity", max_quantity)):
            if not isinstance(value, int):
                raise _ItemProblem(f"'{key}' must be an integer for {product_type} items", key)
    if product_type == "service" and (min_quantity, max_quantity) != (1, 1):
        raise _ItemProblem("service items have quantity 1: min and max must be 1", "max_quantity")
    in_stock = record.get("in_stock", True)
    if not isinstance(in_stock, bool):
        raise _ItemProblem(f"'in_stock' must be true or false, got {in_stock!r}", "in_stock")
    stock = None
    if record.get("stock") is not None:
        if product_type != "key":
            raise _ItemProblem("'stock' applies to key items only", "stock")
        stock = _int(record, "stock")
    client_code = record.get("client_code", False)
    if not isinstance(client_code, bool):
        raise _ItemProblem("'client_code' must be true or false", "client_code")
    if client_code and product_type != "topup":
        raise _ItemProblem("'client_code' applies to topup items only", "client_code")
    fields = _parse_fields(record.get("fields", []), shared)
    if product_type == "key" and fields:
        raise _ItemProblem("key items take no input fields", "fields")
    extra = {k: v for k, v in record.items() if k not in _KNOWN_KEYS}
    return Item(
        id=item_id,
        name=name,
        product_type=product_type,
        price=price,
        base_price=base_price,
        subscriber_price=subscriber_price,
        amount_per_price=amount_per_price,
        min_quantity=min_quantity,
        max_quantity=max_quantity,
        in_stock=in_stock,
        fields=fields,
        stock=stock,
        client_code=client_code,
        extra=dict(extra),
    )


def _parse_fields(raw: Any, shared: dict[tuple[Any, ...], InputField]) -> tuple[InputField, ...]:
    if not isinstance(raw, list):
        raise _ItemProblem("'fields' must be a list", "fields")
    fields: list[InputField] = []
    names: set[str] = set()
    for position, spec in enumerate(raw, start=1):
        label = f"field {position}"
        if not isinstance(spec, dict):
            raise _ItemProblem(f"{label} must be an object", "fields")
        name, kind = spec.get("name"), spec.get("type")
        if not isinstance(name, str) or not name:
            raise _ItemProblem(f"{label}: 'name' must be a non-empty string", "fields")
        if name in names:
            raise _ItemProblem(f"{label}: duplicate field name {name!r}", "fields")
        names.add(name)
        if kind not in FIELD_TYPES:
            raise _ItemProblem(
                f"{label} ({name}): 'type' must be text or choice, got {kind!r}", "fields"
            )
        options: list[tuple[int, str]] = []
        if kind == "choice":
            raw_options = spec.get("options")
            if not isinstance(raw_options, list) or not raw_options:
                raise _ItemProblem(f"{label} ({name}): a choice field needs 'options'", "fields")
            for option in raw_options:
                option_id = option.get("id") if isinstance(option, dict) else None
                text = option.get("name", option.get("label")) if isinstance(option, dict) else None
                if isinstance(option_id, bool) or not isinstance(option_id, int):
                    raise _ItemProblem(
                        f"{label} ({name}): each option needs an integer 'id'", "fields"
                    )
                if not isinstance(text, str):
                    raise _ItemProblem(
                        f"{label} ({name}): option {option_id} needs a 'name' or 'label'", "fields"
                    )
                options.append((option_id, text))
        key = (name, kind, *options)
        field = shared.get(key)
        if field is None:
            made = tuple(Option(option_id, text) for option_id, text in options)
            field = shared[key] = InputField(name, kind, made)
        fields.append(field)
    return tuple(fields)
