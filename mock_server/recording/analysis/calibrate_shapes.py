"""`calibrate --shapes-out PATH` (docs/recording.md, "Calibrate the shapes"): the
recording replayed as `compare` replays it, against a sandbox running the scenarios
just calibrated, and each recorded answer and event aligned with the sandbox's
(`session_replay.answer_pairs`); `shape_inference` turns the pairs into a shapes file.
The sandbox is reached only over HTTP, as every replay reaches it.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Sequence
from pathlib import Path

import aiohttp

from ...sourcefile import ConfigError
from .judge import DEFAULT_TOLERANCE
from .reading import Recording
from .replay import run
from .shape_inference import infer, render
from .world import ReplayError


class CalibrateError(Exception):
    """Why the shapes could not be calibrated."""


def calibrate_shapes(
    paths: Sequence[str], recordings: list[Recording], scenarios: str
) -> tuple[str, int]:
    """The shapes file for `recordings` and how many rules it holds; `scenarios` is the
    calibrated scenario file's text."""
    with tempfile.TemporaryDirectory(prefix="calibrate-") as folder:
        path = Path(folder) / "calibrated.yaml"
        path.write_text(scenarios, encoding="utf-8")
        try:
            outcome = asyncio.run(run(recordings, [str(path)], None, DEFAULT_TOLERANCE))
        except ConfigError as exc:
            raise CalibrateError(
                "the calibrated scenarios do not load:\n" + "\n".join(exc.problems)
            ) from exc
        except (ReplayError, aiohttp.ClientError, OSError) as exc:
            raise CalibrateError(f"cannot replay: {type(exc).__name__}: {exc}") from exc
    found = infer(outcome.pairs)
    header = [
        f"Shapes calibrated from a recording by `mock-server calibrate` ({', '.join(paths)}):",
        f"{len(outcome.pairs)} answers and events compared with a sandbox's. Each rule's",
        "comment says how many show it. Load with --shapes (docs/shapes.md).",
    ]
    return render(found, header), sum(len(kind.rules) for kind in found.values())
