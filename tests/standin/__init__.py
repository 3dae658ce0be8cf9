"""A production stand-in written from the spec alone (`production`), and a merchant's
session with it written as a recording (`session`): the "production" of the recording
tests, shaped unlike the sandbox."""

from .production import CATALOG, SPEC_EVENT_FIELDS, Production, StandIn
from .session import ProductionSession, merchant_day, record_production, refuse_first

__all__ = [
    "CATALOG",
    "SPEC_EVENT_FIELDS",
    "Production",
    "ProductionSession",
    "StandIn",
    "merchant_day",
    "record_production",
    "refuse_first",
]
