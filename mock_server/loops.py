"""Which event loop serves: uvloop where it is installed, asyncio's own elsewhere.

uvloop (libuv under asyncio's interface) roughly halves aiohttp's own cost per request;
it is a dependency on every platform it supports (not Windows). `--loop` / `MOCK_LOOP`
choose: `auto` (uvloop when importable), `uvloop` (refused when it is not installed) or
`asyncio`.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable

CHOICES = ("auto", "uvloop", "asyncio")
LoopFactory = Callable[[], asyncio.AbstractEventLoop]


class LoopError(ValueError):
    """A loop that cannot be had here (a bad name, or uvloop not installed)."""


def uvloop_available() -> bool:
    return importlib.util.find_spec("uvloop") is not None


def resolve(choice: str) -> str:
    """`auto` -> the loop it means here; refuses an unknown name or a missing uvloop."""
    if choice not in CHOICES:
        raise LoopError(f"--loop must be one of {', '.join(CHOICES)}, got {choice!r}")
    if choice == "auto":
        return "uvloop" if uvloop_available() else "asyncio"
    if choice == "uvloop" and not uvloop_available():
        raise LoopError("--loop uvloop: uvloop is not installed (pip install uvloop)")
    return choice


def factory(choice: str) -> LoopFactory | None:
    """A loop factory for `asyncio.Runner` (None: asyncio's default loop)."""
    if resolve(choice) == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return None


def new_event_loop(choice: str = "auto") -> asyncio.AbstractEventLoop:
    make = factory(choice)
    return make() if make is not None else asyncio.new_event_loop()


def running_loop_name() -> str:
    """`uvloop` or `asyncio`: what actually runs the current coroutine."""
    loop = asyncio.get_running_loop()
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"
