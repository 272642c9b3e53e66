"""Silent truncation, seen turn by turn: a server that cuts the prompt to a fixed context and answers 200.

Ollama's OpenAI-compatible `/v1` truncates a prompt longer than the model's `num_ctx` (2048 tokens by default
before Ollama 0.6, 4096 after; docs/faq.md "How can I specify the context window size?") without an error: its
`usage.prompt_tokens` then stops at that ceiling while the conversation keeps growing. `CeilingWatch` follows one
endpoint's reported prompt counts against the arena's own estimate of what it sent; once the count has stood at the
same highest value for a second turn while the estimate is past it, every such turn gets a note on its step (the
run's summary and terminal say it once per agent: `arena.runs.runner.add_costs`).

The first cut turn is seen at once from the endpoint's own earlier ratio of counted to estimated tokens (the highest
ratio of its turns not cut, of at least `MIN_ESTIMATE` estimated tokens): a turn whose count falls well below what
that ratio predicts (under `WELL_BELOW` of it) and lands on a ceiling a server uses (a power of two from 2048,
`CEILINGS`, or a count the endpoint reported before) is cut. A server that counts as the arena estimates (or at
any steady ratio) never falls below its own ratio, so it is never noted.
"""

from __future__ import annotations

import threading

MARGIN = 1.05  # the estimate must exceed the ceiling by this factor (estimates are rough)
WELL_BELOW = 0.9  # a cut turn's count is under this share of what the endpoint's earlier ratio predicts
MIN_ESTIMATE = 512  # turns estimated smaller do not set the ratio (a chat template's fixed tokens dominate them)
CEILINGS = frozenset(2 ** k for k in range(11, 21))  # 2048 ... 1048576: context sizes servers are set to
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
        self.ratio: float | None = None  # counted / estimated tokens, the highest of the turns not cut
        self.reported: set[int] = set()
        self.cut_turns = 0  # turns found cut by the ratio rule (`ratio_cut`)
        self.cut_example: tuple[int, int, float] | None = None  # (count, estimate, ratio) of the first of them
        self._lock = threading.Lock()  # one agent serves many episodes (and the smolagents agent's threads)

    def ratio_cut(self, served: int, estimate: int) -> bool:
        """Whether a turn is cut by the ratio rule (module docstring): its count well below the endpoint's earlier
        ratio times the estimate, on a server's ceiling or a count reported before."""
        if self.ratio is None or served >= WELL_BELOW * self.ratio * estimate:
            return False
        return served in CEILINGS or served in self.reported

    def observe(self, served: int, estimate: int) -> bool:
        """One turn: the server's prompt count and the arena's estimate of what it sent; returns whether the ratio
        rule finds it cut."""
        with self._lock:
            cut = self.ratio_cut(served, estimate)
            if cut:
                self.cut_turns += 1
                self.cut_example = self.cut_example or (served, estimate, self.ratio or 0.0)
            elif estimate >= MIN_ESTIMATE:
                self.ratio = max(self.ratio or 0.0, served / estimate)
            self.reported.add(served)
            if served > self.top:
                self.top, self.turns_at_top, self.least, self.grown = served, 0, estimate, 0
            if served == self.top:
                self.turns_at_top += 1
                self.least = estimate if self.least is None else min(self.least, estimate)
                self.grown = max(self.grown, estimate)
            return cut

    def cut_to(self, turns: int = 2, margin: float = MARGIN) -> bool:
        """Whether the count stood at its ceiling in at least `turns` turns while the estimate of those turns grew
        past it (by `margin`)."""
        return (self.turns_at_top >= turns and self.grown > self.top * margin
                and self.least is not None and self.grown > self.least * margin)

    def note(self, served: int | None, estimate: int) -> str | None:
        """The step note of a turn the server cut (either rule), or None."""
        if not served or estimate <= 0:
            return None
        ratio = self.ratio
        if self.observe(served, estimate):
            return (f"the server counted {served} prompt tokens where its earlier turns ({ratio:.2f} counted per "
                    f"estimated token) predict about {round((ratio or 0) * estimate)} for the {estimate} the arena "
                    f"sent: it is probably cutting the prompt to a fixed context of {served} tokens and answering "
                    f"from a cut conversation ({OLLAMA_REMEDY})")
        if not (served == self.top and self.turns_at_top >= 2 and estimate > served * MARGIN):
            return None
        return (f"the server counted {served} prompt tokens, as in earlier turns, while the arena sent about "
                f"{estimate}: it is probably cutting the prompt to a fixed context of {served} tokens and answering "
                f"from a cut conversation ({OLLAMA_REMEDY})")
