"""What a sandbox's operator allows it (docs/hosting.md): where its webhooks may go and
what it may hold. One frozen value, fixed when the sandbox is made; the control-plane
operations of `domain/admin.py` take it whole.
"""

from __future__ import annotations

from dataclasses import dataclass

from .destinations import DEFAULT_RULES, DestinationRules
from .quotas import NO_QUOTAS, Quotas


@dataclass(frozen=True)
class Policy:
    #: Where webhooks may go (`--webhook-allow`, `--webhook-deny-private`).
    rules: DestinationRules = DEFAULT_RULES
    #: What the sandbox may hold (`--sandbox-max-*`).
    quotas: Quotas = NO_QUOTAS
