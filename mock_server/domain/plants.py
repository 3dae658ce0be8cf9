"""The plant demo operation (spec 4.6): `PUT /v3/plant` over ten seeded plants.

No one is authenticated on it (spec 5.7 shows none), so what it keeps is bounded: ten
plants, each with a name and category of at most `MAX_TEXT` characters and at most
`MAX_TAGS` tags of at most `MAX_TEXT` characters (docs/fidelity.md, 4.6); a body past
them is refused whole with 400 `validation_error`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ApiError, validation_error

PLANT_STATUSES = ("available", "pending", "sold")
#: Most tags a plant keeps, and most characters of a name, category or tag.
MAX_TAGS = 100
MAX_TEXT = 200
_SEED = (
    ("Monstera", "tropical"),
    ("Fiddle-leaf fig", "tropical"),
    ("Snake plant", "succulent"),
    ("Pothos", "vine"),
    ("Peace lily", "flowering"),
    ("Aloe vera", "succulent"),
    ("Boston fern", "fern"),
    ("Rubber plant", "tropical"),
    ("ZZ plant", "succulent"),
    ("Spider plant", "foliage"),
)


@dataclass(slots=True)
class Plant:
    id: int
    name: str
    category: str
    status: str = "available"
    tags: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "status": self.status, "tags": list(self.tags)}


class Plants:
    def __init__(self) -> None:
        self._plants = {
            number: Plant(number, name, category, tags=[category])
            for number, (name, category) in enumerate(_SEED, start=1)
        }

    def dump(self) -> list[dict[str, Any]]:
        return [
            {"id": p.id, "name": p.name, "category": p.category, "status": p.status, "tags": p.tags}
            for p in self._plants.values()
        ]

    @classmethod
    def load(cls, records: list[dict[str, Any]]) -> Plants:
        plants = cls()
        plants._plants = {r["id"]: Plant(**r) for r in records}
        return plants

    def update(self, body: dict[str, Any]) -> Plant:
        """Check the whole body first, then change the plant: a 400 changes nothing."""
        plant_id = body.get("id")
        if isinstance(plant_id, bool) or not isinstance(plant_id, int):
            raise validation_error("Invalid ID supplied: 'id' must be an integer")
        changes: dict[str, Any] = {}
        for key in ("name", "category"):
            if body.get(key) is not None:
                if not isinstance(body[key], str):
                    raise validation_error(f"{key} must be a string")
                if len(body[key]) > MAX_TEXT:
                    raise validation_error(f"{key} must be at most {MAX_TEXT} characters")
                changes[key] = body[key]
        if body.get("tags") is not None:
            tags = body["tags"]
            if isinstance(tags, list) and len(tags) > MAX_TAGS:
                raise validation_error(f"tags must be at most {MAX_TAGS}, not {len(tags)}")
            if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
                raise validation_error("tags must be an array of strings")
            if any(len(tag) > MAX_TEXT for tag in tags):
                raise validation_error(f"each tag must be at most {MAX_TEXT} characters")
            changes["tags"] = list(tags)
        if "status" in body:  # null is outside the enum too (docs/fidelity.md, 4.6)
            if body["status"] not in PLANT_STATUSES:
                raise validation_error(f"status must be one of {', '.join(PLANT_STATUSES)}")
            changes["status"] = body["status"]
        plant = self._plants.get(plant_id)
        if plant is None:
            raise ApiError(404, "not_found", f"Plant {plant_id} not found")
        for key, value in changes.items():
            setattr(plant, key, value)
        return plant
