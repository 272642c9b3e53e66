"""`arena fork`: continue a recorded episode from its first K rounds with another agent or model.

The fork is a new run (its own directory and run.json, with `forked_from` naming the
source run, episode and round) whose single cell is the source episode's task,
setting and budget. Its episodes start with the source's first K rounds, their
observations reused (`prefix_mode="reuse"`) or their tool calls executed again
(`"replay"`), and the new agent plays from round K+1: a counterfactual replay.

Where the source recorded its model calls (`calls.jsonl`), the fork's first call sends the very messages
and tools the source's agent sent for round K+1 (`fork_request`; the model and sampling parameters are the
new agent's), and its later calls extend them (`arena.endpoints.transcript.resent`): the new model sees exactly
what the old one saw, whatever the new agent's own rendering of those rounds would have been.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from arena.core.trajectory import Step
from arena.store.calls import read_calls
from arena.store.read import Run
from arena.store.store import RunStore

from .config import AgentChoice, ForkSource, RunConfig, slug
from .prefix import played_rounds


def fork_config(run: Run, episode_ref: str, at_round: int, choice: AgentChoice, *,
                repeats: int = 1, max_rounds: int | None = None, run_id: str | None = None,
                out: str | None = None, prefix_mode: Literal["reuse", "replay"] = "reuse",
                judge: str | None = None) -> RunConfig:
    """The configuration of a fork of episode `episode_ref` (id, id prefix or key) of `run` (`arena.store.open_run`;
    anything with its `store`, `run_id` and `find`) at round `at_round`."""
    base = run.store.info().config
    if base is None:
        raise ValueError(f"{run.store.run_json}: field config: missing, the run cannot be forked")
    episode = run.find(episode_ref)
    budget = max_rounds or episode.budget.max_rounds
    if at_round > budget:
        raise ValueError(f"--at-round {at_round} is beyond the fork's budget of {budget} rounds")
    who = slug(str(choice.options.get("model") or choice.options.get("id") or choice.agent))
    return base.updated(**{
        "agent": choice.agent, "agent_options": choice.options, "agents": [],
        "task_ids": [episode.task.id], "limit": None, "settings": [episode.setting], "max_rounds": [budget],
        "repeats": repeats, "prefix_sharing": None,
        "budget": episode.budget.model_copy(update={"max_rounds": budget}),
        "fork": ForkSource(run_dir=str(run.store.dir.resolve()), episode_id=episode.id, at_round=at_round,
                           prefix_mode=prefix_mode),
        "run_id": run_id or f"{run.run_id}-fork-{episode.id[:8]}-r{at_round}-{who}",
        "out": out or str(run.store.dir.resolve().parent),
        "judge": judge or base.judge.name,
    })


def fork_prefix(fork: ForkSource, store: RunStore) -> tuple[list[Step], dict[str, Any], dict[str, Any] | None]:
    """The recorded rounds a fork starts from (their images copied into the new run's blob store), the link
    to the source for run.json, and the source's recorded request for the round after them (`fork_request`)."""
    source = RunStore(fork.run_dir)
    if not source.exists():
        raise ValueError(f"{fork.run_dir}: not a run directory (no run.json)")
    episode = next((e for e in source.all_episodes() if e.id == fork.episode_id), None)
    if episode is None:
        raise ValueError(f"{source.episodes_path}: no episode with id {fork.episode_id!r}")
    rounds = played_rounds(episode)
    playable = [s for s in rounds if s.action != "answer"]
    if fork.at_round > len(playable):
        raise ValueError(f"episode {episode.id} has {len(playable)} round(s) before its answer; "
                         f"--at-round must be at most that, got {fork.at_round}")
    prefix = playable[: fork.at_round]
    for step in prefix:
        for blob_id in step.observation.images if step.observation else []:
            store.blobs.put(source.blobs.get(blob_id), blob_id.rsplit(".", 1)[-1])
    link = {"run_id": source.info().run_id, "run_dir": str(Path(fork.run_dir).resolve()),
            "episode_id": episode.id, "key": episode.key, "at_round": fork.at_round, "agent": episode.agent}
    request = fork_request(fork, episode.key)
    link["recorded_request"] = request is not None
    return prefix, link, request


def fork_request(fork: ForkSource, key: str) -> dict[str, Any] | None:
    """The request body the source episode (`key`) sent for round `fork.at_round + 1`, rebuilt from its
    calls.jsonl: the last answered agent call whose messages hold `at_round` assistant turns (one per
    played round; a call asking again for an answer holds one more). None when none was recorded."""
    calls = [c for c in read_calls(fork.run_dir, key) if c["role"] == "agent" and "error" not in c]
    turns = [c for c in calls if sum(isinstance(m, dict) and m.get("role") == "assistant"
                                     for m in c["request"].get("messages", [])) == fork.at_round]
    return turns[-1]["request"] if turns else None
