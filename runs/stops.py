"""When a run stops before its grid is done: an endpoint that refuses everything, or the cost cap.

Fail fast: when the first `threshold` episodes of an agent all end `rejected` before
any model reply (wrong model name, bad key, unsupported parameter, exhausted quota),
every other episode would fail the same way; the run stops with one message that
quotes the server. `--max-cost` stops the run once the recorded cost reaches it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from arena.trajectory import Episode

FAILED = ("error", "rejected", "context_overflow")


@dataclass
class RunStops:
    threshold: int = 3
    max_cost: float | None = None
    spent: float = 0.0
    replied: set[str] = field(default_factory=set)
    refused: dict[str, int] = field(default_factory=dict)
    message: str | None = None

    def observe(self, episode: Episode, cost: float | None = None) -> str | None:
        """Account one recorded episode; the reason to stop the run now, if any."""
        if episode.steps:
            self.replied.add(episode.agent)
        elif episode.finish_reason == "rejected" and episode.agent not in self.replied:
            self.refused[episode.agent] = self.refused.get(episode.agent, 0) + 1
            if self.refused[episode.agent] >= self.threshold and self.message is None:
                first = (episode.error or "").partition("\n")[0]
                self.message = (f"stopped the run: the first {self.refused[episode.agent]} requests of agent "
                                f"{episode.agent} were all refused by the server, so every episode would fail the "
                                f"same way. The server said: {first}")
        if cost is not None and self.max_cost is not None:
            self.spent += cost
            if self.spent >= self.max_cost and self.message is None:
                self.message = (f"stopped the run: cost reached ${self.spent:.4f}, the --max-cost of "
                                f"${self.max_cost:g}; resume it with a higher --max-cost")
        return self.message
