"""The sessions the replay plays (docs/recording.md, "Compare"): one per recording,
each replayed in a sandbox of its own. A `Session` holds what the replay needs of its
recording: its orders' traces (`traces.traces`), its first and last event's times, its
exchanges by `seq`, the API keys it exchanged for tokens, and the accounts whose orders
showed a webhook.
"""

from __future__ import annotations

from dataclasses import dataclass

from .paths import TOKEN
from .reading import Exchange, Recording
from .traces import Trace, traces
from .values import as_dict


@dataclass(repr=False)
class Session:
    """One recording, replayed in a sandbox of its own."""

    index: int
    recording: Recording
    traces: list[Trace]
    start: float
    end: float
    exchanges: dict[int, Exchange]
    #: API keys that were exchanged for a token, in order of first appearance.
    keys: list[str]
    #: Accounts (API key, or None for tokens whose exchange was not recorded) whose
    #: orders showed a webhook (a delivery, or an order's `webhook` object).
    webhooked: set[str | None]

    @property
    def webhooks_recorded(self) -> bool:
        """Only a recording that caught deliveries says what production sent (a HAR
        from a browser holds exchanges only): webhook patterns are judged only then."""
        return bool(self.recording.webhooks)

    def account_of(self, trace: Trace) -> str | None:
        return trace.api_key if trace.api_key in self.keys else None


def sessions_of(recordings: list[Recording]) -> list[Session]:
    found = []
    for index, recording in enumerate(recordings):
        events = recording.events()
        times = [event.at for event in events]
        keys: list[str] = []
        for exchange in recording.exchanges:
            if TOKEN.match(exchange.path) and exchange.method == "POST":
                key = as_dict(exchange.request.body).get("api_key")
                answer = as_dict(exchange.response.body)
                granted = exchange.status == 200 and isinstance(answer.get("access_token"), str)
                if granted and isinstance(key, str) and key not in keys:
                    keys.append(key)
        session_traces = traces(recording)
        session = Session(
            index=index,
            recording=recording,
            traces=session_traces,
            start=min(times) if times else 0.0,
            end=max(times) if times else 0.0,
            exchanges={exchange.seq: exchange for exchange in recording.exchanges},
            keys=keys,
            webhooked=set(),
        )
        for trace in session_traces:
            if trace.webhooks or any(o.order.get("webhook") for o in trace.observations):
                session.webhooked.add(session.account_of(trace))
        found.append(session)
    return found
