"""Prefix sharing for budget sweeps: play the largest budget once, derive the smaller ones.

For a cell (task, setting, repeat, agent) swept over budgets N1 < ... < Nmax, the
episode at Nmax is played in full. For each smaller N, with R the rounds the Nmax
episode played (its answer round, or Nmax when it ran out):

- R <= N: the N episode would have gone exactly the same way; its record is a copy
  (no model call);
- R > N: the first N rounds are taken as they were (`EpisodeSpec.prefix`, observations
  reused) and the final tool-less answer turn is made at that point, a real model call
  with the budget N in its prompt; with `final_answer_turn` off there is no call.

The model is then called at most Nmax + 1 + (number of smaller budgets) times per
cell instead of the sum over budgets of N + 1.

**When this equals separate runs.** The agent's turn at round r <= N must not depend
on N: the agent is not told its budget (`show_budget` off, the default; the built-in
agents show N only in the final-answer prompt, which the derived turn uses with its
own N) and does not read `view.budget` itself. Then:

- with a deterministic agent (greedy decoding, temperature 0, a scripted policy, a
  server with a fixed seed), every derived episode is identical to a separately run one;
- with sampling (temperature > 0), each derived episode is a sample from the same
  distribution as a separate run (same-sample semantics: the budgets share one sampled
  trajectory), so per-budget means are unbiased, but the budgets' results are
  correlated rather than independent, which narrows differences between budgets; use
  separate runs (`--no-prefix-sharing`) when independent samples per budget matter.

**When not.** An agent told its budget (`--show-budget`) or one that plans by it;
wall-time limits (`Budget.max_seconds`), which depend on timing; tools whose results
change with time when the run is live (the prefix reuses what Nmax saw, a separate run
would fetch again).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

from arena.core.trajectory import Episode, Step, played_rounds  # noqa: F401 (re-exported)


@dataclass
class Derivation:
    """How an episode with a smaller budget follows from a played one."""

    kind: Literal["copy", "continue", "error"]
    prefix: list[Step]


def derive(source: Episode, max_rounds: int) -> Derivation:
    if source.finish_reason in ("error", "rejected", "context_overflow"):
        return Derivation("error", [])
    if max_rounds >= source.budget.max_rounds:
        raise ValueError(f"a budget of {max_rounds} rounds cannot be derived from {source.key} "
                         f"(budget {source.budget.max_rounds}); only smaller ones can")
    rounds = played_rounds(source)
    if len(rounds) <= max_rounds:
        return Derivation("copy", [])
    return Derivation("continue", rounds[:max_rounds])


def link(source: Episode, prefix_rounds: int) -> dict[str, object]:
    """Episode meta naming the episode a derived one comes from."""
    return {"prefix_of": source.id, "prefix_key": source.key, "prefix_rounds": prefix_rounds}


def copied_episode(source: Episode, *, key: str, max_rounds: int, seed: int) -> Episode:
    """The record of a smaller budget under which the source would have run the same way."""
    rounds = len(played_rounds(source))
    return source.model_copy(deep=True, update={
        "id": uuid.uuid4().hex, "key": key, "seed": seed,
        "budget": source.budget.model_copy(update={"max_rounds": max_rounds}),
        "meta": {**link(source, rounds), "model_calls": 0},
    })


def failed_episode(source: Episode, *, key: str, max_rounds: int, seed: int) -> Episode:
    """A smaller budget whose source failed: an error record, so resume retries both."""
    reason = (source.error or "").partition("\n")[0]
    return Episode(
        id=uuid.uuid4().hex, run_id=source.run_id, key=key, task=source.task, agent=source.agent,
        setting=source.setting, tools=source.tools, budget=source.budget.model_copy(update={"max_rounds": max_rounds}),
        seed=seed, repeat=source.repeat, finish_reason=source.finish_reason, started_at=source.started_at,
        error=f"derived from {source.key}, which failed: {reason}",
        meta={**link(source, 0), "model_calls": 0},
    )


def model_calls(episode: Episode) -> int:
    """Model calls an episode actually made (a derived one: only its own turns)."""
    calls = episode.meta.get("model_calls")
    return int(calls) if isinstance(calls, int) else len(episode.steps)


def model_call_counts(episodes: list[Episode]) -> dict[str, int]:
    """Calls made, calls separate runs of every episode would have made, and the difference."""
    made = sum(model_calls(e) for e in episodes)
    separate = sum(len(e.steps) for e in episodes)
    return {"made": made, "separate_runs": separate, "saved": separate - made}
