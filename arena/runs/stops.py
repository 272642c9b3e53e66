"""When a run stops before its grid is done: an endpoint that refuses everything, or the cost cap.

Fail fast, per endpoint (model + base URL, credentials masked): when the first
`threshold` episodes played on an endpoint all end `rejected` before any model reply
(wrong model name, bad key, unsupported parameter, exhausted quota), or the first
`threshold` verdicts of a judge endpoint are all refusals by its server, every other
episode would fail the same way; the run stops with one message that names the
endpoint and quotes the server. Several agents on one endpoint count together.
`--max-cost` stops the run once the recorded cost reaches it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from arena.endpoints.client import refused_by_server
from arena.endpoints.redact import redact_url

from .briefs import EpisodeBrief, VerdictBrief

FAILED = ("error", "rejected", "context_overflow")


def endpoint_label(described: dict[str, Any] | None) -> str | None:
    """`model at url` (credentials masked) of an agent's `describe()` or a judge's options; None without one."""
    endpoint = (described or {}).get("endpoint", described) or {}
    url, model = endpoint.get("base_url"), endpoint.get("model")
    if not url:
        return None
    return f"{model} at {redact_url(str(url).rstrip('/'))}" if model else redact_url(str(url).rstrip("/"))


@dataclass
class RunStops:
    """`endpoints` maps an agent id to its endpoint label (agents without one count on their own)."""

    threshold: int = 3
    max_cost: float | None = None
    endpoints: dict[str, str | None] = field(default_factory=dict)
    spent: float = 0.0
    replied: set[str] = field(default_factory=set)
    refused: dict[str, int] = field(default_factory=dict)
    message: str | None = None

    def observe(self, episode: EpisodeBrief) -> str | None:
        """Account one recorded episode (by its brief: the cost counted is that of its own model calls, `spent`);
        the reason to stop the run now, if any."""
        where = self.endpoints.get(episode.agent) or f"agent {episode.agent}"
        if episode.has_steps:
            self.replied.add(where)
        elif episode.finish_reason == "rejected":
            self._refused(where, episode.error or "", "requests")
        if episode.spent is not None and self.max_cost is not None:
            self.spent += episode.spent
            if self.spent >= self.max_cost and self.message is None:
                self.message = (f"stopped the run: cost reached ${self.spent:.4f}, the --max-cost of "
                                f"${self.max_cost:g}; resume it with a higher --max-cost")
        return self.message

    def observe_verdict(self, verdict: VerdictBrief | None, judge: str | None) -> str | None:
        """Account one verdict of a model judge at endpoint `judge`; the reason to stop the run now, if any."""
        if verdict is None or judge is None:
            return self.message
        if verdict.error and refused_by_server(verdict.error):
            self._refused(f"judge {judge}", verdict.error, "judge requests")
        elif verdict.answered:  # the judge's server answered
            self.replied.add(f"judge {judge}")
        return self.message

    def _refused(self, where: str, error: str, what: str) -> None:
        if where in self.replied:
            return
        self.refused[where] = self.refused.get(where, 0) + 1
        if self.refused[where] >= self.threshold and self.message is None:
            first = error.partition("\n")[0]
            self.message = (f"stopped the run: the first {self.refused[where]} {what} to {where} were all refused "
                            f"by the server, so every episode would fail the same way. The server said: {first}")
