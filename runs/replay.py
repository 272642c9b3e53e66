"""`arena replay`: show a recorded episode step by step in the terminal, and check it still replays.

`check_episode` re-executes the episode's recorded tool calls against its world (the
run's data and tool options, read from run.json), in order and with the images each
call returned, and reports every observation that differs from the recorded one: the
determinism check of a world (or of a cassette).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rich.console import Console, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.text import Text

from arena.agent import Agent, AgentError, AgentTurn, EpisodeView
from arena.blobs import BlobStore
from arena.dataset import load_datasets
from arena.episode import EpisodeSpec, run_episode
from arena.tool import TOOLS
from arena.trajectory import Episode, Observation, Step
from arena.verdict import Verdict

from .prefix import played_rounds
from .plugins import load_plugins
from .rundata import RunData


def step_panel(step: Step) -> Panel:
    title = "final answer turn (tools off)" if step.final_turn else f"round {step.round} · {step.action}"
    if step.tool:
        title += f" · {step.tool}"
    parts: list[Any] = []
    if step.reasoning:
        parts.append(Text(f"reasoning: {step.reasoning}", style="dim"))
    if step.output:
        parts.append(Text(step.output))
    if step.arguments is not None:
        parts.append(Syntax(json.dumps(step.arguments, ensure_ascii=False, indent=1), "json", word_wrap=True))
    if step.observation is not None:
        obs = step.observation
        parts.append(Text(obs.text, style="red" if obs.error else "green"))
        if obs.images:
            parts.append(Text("images: " + ", ".join(f"[{i}] {b[:19]}" for i, b in zip(obs.image_indices, obs.images)),
                              style="cyan"))
        box = obs.data.get("pixel_box")
        if box is not None:
            parts.append(Text(f"crop of image {obs.data.get('img_idx')}: pixels {box}", style="cyan"))
    if step.answer is not None:
        parts.append(Text(f"answer: {step.answer}", style="bold"))
    if step.error and (step.observation is None or not step.observation.error):
        parts.append(Text(f"error: {step.error}", style="red"))
    return Panel(Group(*parts) if parts else Text(""), title=Text(title), title_align="left")


def header_panel(episode: Episode, verdicts: list[Verdict]) -> Panel:
    lines = [f"episode {episode.id}  key {episode.key}",
             f"agent {episode.agent} · setting {episode.setting} · max rounds {episode.budget.max_rounds} · "
             f"repeat {episode.repeat}",
             f"question: {episode.task.question}",
             f"accepted answers: {' | '.join(episode.task.answers)}",
             f"answer: {episode.answer!r} · finish: {episode.finish_reason} · rounds {episode.totals.rounds} · "
             f"tool calls {episode.totals.tool_calls} · invalid {episode.totals.invalid_calls}"]
    for v in verdicts:
        lines.append(f"judge {v.judge}: {'correct' if v.correct else 'incorrect'} (score {v.score:g}) {v.rationale}")
    if episode.error:
        lines.append(f"error: {episode.error}")
    if episode.meta:
        lines.append(f"meta: {json.dumps(episode.meta, default=str)}")
    return Panel(Text("\n".join(lines)), title="episode", title_align="left")


def show_episode(console: Console, episode: Episode, verdicts: list[Verdict],
                 wait: Callable[[], bool] | None = None) -> None:
    """Print the episode; with `wait`, call it between steps (returning False stops)."""
    console.print(header_panel(episode, verdicts))
    for step in episode.steps:
        console.print(step_panel(step))
        if wait is not None and not wait():
            return


@dataclass
class Difference:
    round: int
    tool: str | None
    field: str
    recorded: str
    replayed: str


class _NoAgent(Agent):
    id = "replay"

    async def act(self, view: EpisodeView) -> AgentTurn:
        raise AgentError("a replay check plays recorded rounds only")


def _short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit] + "..."


def _comparable(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "traceback"}


def compare(recorded: Observation | None, replayed: Observation | None) -> list[tuple[str, str, str]]:
    if recorded is None or replayed is None:
        return [] if recorded is replayed else [("observation", _short(recorded), _short(replayed))]
    out = []
    if recorded.text != replayed.text:
        out.append(("text", _short(recorded.text), _short(replayed.text)))
    if recorded.images != replayed.images:
        out.append(("images", _short(recorded.images), _short(replayed.images)))
    if recorded.error != replayed.error:
        out.append(("error", str(recorded.error), str(replayed.error)))
    before, after = _comparable(recorded.data), _comparable(replayed.data)
    if before != after:
        out.append(("data", _short(before), _short(after)))
    return out


async def check_episode(run: RunData, episode: Episode) -> list[Difference]:
    """Re-execute the episode's recorded tool calls against its world; the observations that differ."""
    config = run.config()
    if config is None:
        raise ValueError(f"{run.store.run_json}: field config: cannot be read back as a run configuration")
    rounds = [s for s in played_rounds(episode) if s.action != "answer"]
    if not rounds:
        return []
    load_plugins()
    datasets = load_datasets(config.data, config.root, config.fmt)
    if config.corpus:
        for dataset in datasets:
            dataset.corpus = Path(config.corpus).resolve()
    found = [(d, t) for d in datasets for t in d.tasks if t.id == episode.task.id]
    if not found:
        raise ValueError(f"{config.data}: task {episode.task.id!r} of episode {episode.id} is no longer in the data")
    dataset, task = found[0]
    unknown = [n for n in episode.tools if n not in TOOLS]
    if unknown:
        raise ValueError(f"episode {episode.id} used tool(s) not installed here: {', '.join(unknown)}")
    tools = [TOOLS[n](config.tool_options) for n in episode.tools]
    budget = episode.budget.model_copy(update={"max_rounds": len(rounds), "final_answer_turn": False,
                                               "max_seconds": None, "max_tokens": None})
    spec = EpisodeSpec(run_id="replay-check", task=task, dataset=dataset, agent=_NoAgent(), tools=tools,
                       setting=episode.setting, budget=budget, prefix=rounds, prefix_mode="replay")
    try:
        with tempfile.TemporaryDirectory(prefix="arena-replay-") as tmp:
            replayed = await run_episode(spec, BlobStore(Path(tmp)))
    finally:
        for tool in tools:
            await tool.aclose()
    differences = []
    if replayed.finish_reason == "error":
        differences.append(Difference(0, None, "episode", "played", _short(replayed.error or "")))
    for old, new in zip(rounds, replayed.steps):
        for field, before, after in compare(old.observation, new.observation):
            differences.append(Difference(old.round, old.tool, field, before, after))
    return differences
