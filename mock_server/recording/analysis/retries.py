"""Production's webhook retry schedule as a recording shows it (docs/recording.md,
"Calibrate"): where an attempt was answered other than 200 and the event came again,
the gap between the two is a sample of that retry's delay (the first retry's, the
second's, ...). `calibrate` writes the median of each as the scenarios'
`webhook: {retry: [...]}` (docs/scenarios.md).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from .traces import Observation, Trace

#: The most retries a schedule holds (spec 6: up to 3 retries).
MAX_RETRIES = 3


@dataclass(frozen=True)
class RetrySchedule:
    #: The samples of each retry's delay, first retry first (the retries the recording
    #: showed only).
    samples: tuple[tuple[float, ...], ...]

    @property
    def gaps(self) -> list[float]:
        """Each observed retry's median delay; a retry the recording never reached takes
        the last observed one, up to `MAX_RETRIES` (production retried as far as it was
        asked to)."""
        observed = [statistics.median(s) for s in self.samples]
        return observed + [observed[-1]] * (MAX_RETRIES - len(observed))

    def describe(self) -> list[str]:
        lines = []
        for number, samples in enumerate(self.samples, start=1):
            low, high = min(samples), max(samples)
            lines.append(
                f"retry {number}: {statistics.median(samples):.3g} s after the attempt before, "
                f"median of {len(samples)} (range {low:.3g}-{high:.3g} s)"
                + (" (warning: one sample decides it)" if len(samples) == 1 else "")
            )
        for number in range(len(self.samples) + 1, MAX_RETRIES + 1):
            lines.append(f"retry {number}: never reached in the recording; as the last one")
        return lines


def observed_retries(traces: Iterable[Trace]) -> RetrySchedule | None:
    """The schedule the recording's retried events show, or None where no event was
    sent again after an answer other than 200."""
    samples: list[list[float]] = []
    for trace in traces:
        webhooks: list[Observation] = []
        for webhook in trace.webhooks:
            if webhook.answered is None:
                continue
            if webhooks and webhook.at <= webhooks[-1].at:
                continue  # a duplicate copy sent with it: not a retry
            webhooks.append(webhook)
        pairs = zip(webhooks, webhooks[1:], strict=False)
        for retried, (before, after) in enumerate(pairs):
            if before.answered == 200 or retried == MAX_RETRIES:
                break  # delivered: what follows is a duplicate, not a retry
            if len(samples) <= retried:
                samples.append([])
            samples[retried].append(after.at - before.at)
    if not samples:
        return None
    return RetrySchedule(tuple(tuple(s) for s in samples))
