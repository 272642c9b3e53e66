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


class CeilingWatch:
    """The highest prompt count a server reported and in how many turns; `note(served, estimate)` says, for a turn,
    whether the server is cutting the prompt (a step note), else None."""

    def __init__(self) -> None:
        self.top = 0
        self.turns_at_top = 0
        self._lock = threading.Lock()  # one agent serves many episodes (and the smolagents agent's threads)

    def note(self, served: int | None, estimate: int) -> str | None:
        if not served or estimate <= 0:
            return None
        with self._lock:
            if served > self.top:
                self.top, self.turns_at_top = served, 0
            if served == self.top:
                self.turns_at_top += 1
            cut = served == self.top and self.turns_at_top >= 2 and estimate > served * MARGIN
        if not cut:
            return None
        return (f"the server counted {served} prompt tokens, as in earlier turns, while the arena sent about "
                f"{estimate}: it is probably cutting the prompt to a fixed context of {served} tokens and answering "
                "from a cut conversation (Ollama: raise the model's num_ctx or OLLAMA_CONTEXT_LENGTH)")
