"""Silent truncation, seen turn by turn: a server that cuts the prompt to a fixed context and answers 200.

Ollama's OpenAI-compatible `/v1` truncates a prompt longer than the model's `num_ctx` (2048 tokens by default
before Ollama 0.6, 4096 after; docs/faq.md "How can I specify the context window size?") without an error: its
`usage.prompt_tokens` then stops at that ceiling while the conversation keeps growing. `CeilingWatch` follows one
endpoint's reported prompt counts against the arena's own estimate of what it sent; once the count has stood at the
same highest value for a second turn while the estimate is past it, every such turn gets a note on its step (the
run's summary and terminal say it once per agent: `arena.runs.runner.add_costs`).
"""

from __future__ import annotations

import threading

MARGIN = 1.05  # the estimate must exceed the ceiling by this factor (estimates are rough)
OLLAMA_REMEDY = ("Ollama: raise the model's num_ctx or OLLAMA_CONTEXT_LENGTH; its default context is 2048 tokens "
                 "before Ollama 0.6, 4096 after")
"""The likeliest cause of a silent cut and what to do, said the same way on a step, in the summary and on the
terminal."""


class CeilingWatch:
    """One endpoint's reported prompt counts against the arena's estimates, turn by turn: the highest count (`top`),
    in how many turns it was reported, and the smallest and largest estimate of those turns. `note` says, for a
    turn as it is played, whether the server is cutting the prompt (a step note); `cut_to` says it of a whole run
    (`arena.runs.runner.add_costs`, over the recorded steps)."""

    def __init__(self) -> None:
        self.top = 0
        self.turns_at_top = 0
        self.least: int | None = None
        self.grown = 0
        self._lock = threading.Lock()  # one agent serves many episodes (and the smolagents agent's threads)

    def observe(self, served: int, estimate: int) -> None:
        """One turn: the server's prompt count and the arena's estimate of what it sent."""
        with self._lock:
            if served > self.top:
                self.top, self.turns_at_top, self.least, self.grown = served, 0, estimate, 0
            if served == self.top:
                self.turns_at_top += 1
                self.least = estimate if self.least is None else min(self.least, estimate)
                self.grown = max(self.grown, estimate)

    def cut_to(self, turns: int = 2, margin: float = MARGIN) -> bool:
        """Whether the count stood at its ceiling in at least `turns` turns while the estimate of those turns grew
        past it (by `margin`)."""
        return (self.turns_at_top >= turns and self.grown > self.top * margin
                and self.least is not None and self.grown > self.least * margin)

    def note(self, served: int | None, estimate: int) -> str | None:
        if not served or estimate <= 0:
            return None
        self.observe(served, estimate)
        if not (served == self.top and self.turns_at_top >= 2 and estimate > served * MARGIN):
            return None
        return (f"the server counted {served} prompt tokens, as in earlier turns, while the arena sent about "
                f"{estimate}: it is probably cutting the prompt to a fixed context of {served} tokens and answering "
                f"from a cut conversation ({OLLAMA_REMEDY})")
