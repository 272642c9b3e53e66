"""An endpoint that cannot be reached stops the run, and errors are named on the progress line.

`Endpoint.chat` (arena.endpoints.client) already tried the endpoint a handful of times (a wrong URL, nothing
listening: ~15 s) or, when it had answered before, for up to `outage_seconds` (an outage in the middle of the run).
An episode or a verdict that still ends `endpoint unreachable (...)` means every other one would too: the run stops
with one message naming the endpoint (credentials masked) instead of burning its remaining episodes; resuming it
later plays what is left.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from arena.endpoints.client import unreachable_reason
from arena.endpoints.redact import redact_text

from .briefs import EpisodeBrief, VerdictBrief

_KIND = 80


def error_kind(error: str | None) -> str:
    """An error in a few words, for the progress line: `connection refused http://host:port/v1`, or the start of its
    first line (up to a `;`, at most 80 characters; URLs redacted)."""
    found = unreachable_reason(error)
    if found:
        return f"{found[0]} {found[1]}"
    first = redact_text((error or "").partition("\n")[0]).partition(";")[0].strip()
    return (first[:_KIND] + ("..." if len(first) > _KIND else "")) or "error"


@dataclass
class ErrorTally:
    """Errored episodes by kind (`error_kind`): `line()` is the progress line's `errors: N (kind)`."""

    kinds: Counter = field(default_factory=Counter)

    def add(self, error: str | None) -> None:
        self.kinds[error_kind(error)] += 1

    def line(self) -> str:
        total = sum(self.kinds.values())
        if not total:
            return "errors: 0"
        top = ", ".join(f"{kind}" + (f" ×{n}" if n != total else "") for kind, n in self.kinds.most_common(2))
        return f"errors: {total} ({top})"


def unreachable_stop(error: str | None, what: str) -> str | None:
    """The message that stops the run when `error` (of an episode or a judge's verdict: `what`) says its endpoint
    could not be reached, else None."""
    found = unreachable_reason(error)
    if found is None:
        return None
    why, url = found
    return (f"stopped the run: {what} endpoint {url} cannot be reached ({why}) after the retries; every other "
            f"episode would fail the same way. Start the server (or fix --base-url / --judge-base-url), then "
            f"`arena resume RUN_DIR` plays what is left")


def outage_of_episode(episode: EpisodeBrief) -> str | None:
    """`unreachable_stop` of an errored episode."""
    return unreachable_stop(episode.error, "the agent's") if episode.finish_reason == "error" else None


def outage_of_verdict(verdict: VerdictBrief | None) -> str | None:
    """`unreachable_stop` of a verdict whose judge failed."""
    return unreachable_stop(verdict.error, "the judge's") if verdict is not None else None
