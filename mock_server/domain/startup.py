"""What a sandbox starts from and what it is told to play next: plain data that the
sandbox (`domain/sandbox.py`) and its saved state (`domain/state_document.py`) share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .accounts import AccountSpec
from .catalog import Catalog
from .destinations import DEFAULT_RULES, DestinationRules
from .scenarios import Scenario
from .shapes import NO_SHAPES, Shapes


@dataclass(frozen=True)
class StartupState:
    """What the sandbox was started with; `reset` returns to it."""

    catalog: Catalog
    accounts: tuple[AccountSpec, ...]
    scenarios: tuple[Scenario, ...]
    seed: int
    clock_mode: str = "manual"
    time_scale: float = 1.0
    start_time: float | None = None
    journal_size: int = 1000
    #: Production's shapes (docs/shapes.md): the server's --shapes, or a created
    #: sandbox's own `shapes`.
    shapes: Shapes = NO_SHAPES
    #: Where webhooks may go (the server's --webhook-allow, --webhook-deny-private): the
    #: same for every sandbox of a server, never read from a sandbox's own body or state.
    webhook_rules: DestinationRules = DEFAULT_RULES
    #: A created sandbox's: the server's secret that keys its credentials
    #: (`randomness.Randomness`); None in the default sandbox. Never shown.
    credential_key: bytes | None = field(default=None, repr=False)


@dataclass(slots=True)
class QueuedScenario:
    """`POST /_mock/scenarios/next`: the next `remaining` orders (of one account, or of
    any) get `scenario`; `remaining` None means every order until the queue changes."""

    scenario: Scenario
    account_id: str | None
    remaining: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario.name,
            "account_id": self.account_id,
            "remaining": self.remaining,
        }
