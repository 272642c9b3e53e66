"""`arena replay`: show a recorded episode step by step in the terminal, and check it still replays.

Where the run recorded its model calls (`calls.jsonl`), each step shows the call(s) made for it as the
server got them (`calls_by_step`): what the request added to the conversation, its size, and the finish
reason and usage of the raw response (or the error of a failed call).

`check_episode` re-executes the episode's recorded tool calls against its world (the
run's data and tool options, read from run.json), in order and with the images each
call returned, and reports every observation that differs from the recorded one: the
determinism check of a world (or of a cassette).
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rich.console import Console, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.text import Text

from arena.core.agent import Agent, AgentError, AgentTurn, EpisodeView
from arena.core.blobs import BlobStore
from arena.core.dataset import load_datasets
from arena.core.episode import EpisodeSpec, run_episode
from arena.core.tool import TOOLS, RunResources
from arena.core.trajectory import Episode, Observation, Step, played_rounds
from arena.core.verdict import Verdict
from arena.judges.protocols import apply_original_dataset_rules

from .rundata import RunData


def _short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "..."


def image_ref(url: str) -> str:
    """An image part's URL as one short reference (a data URL by its media type and length)."""
    if url.startswith("data:"):
        head, _, data = url.partition(",")
        return f"[image {head}, {len(data)} base64 chars]"
    return f"[image {url}]"


def message_line(message: Any, limit: int = 400) -> str:
    """One request message as a line: its role, its text with images as references, its other fields."""
    if not isinstance(message, dict):
        return _short(message, limit)
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(image_ref((p.get("image_url") or {}).get("url", "")) if p.get("type") == "image_url"
                           else _short(p.get("text", p), limit) for p in content if isinstance(p, dict))
    extra = {k: v for k, v in message.items() if k not in ("role", "content")}
    return f"[{message.get('role')}] {_short(content or '', limit)}" + (f" {_short(extra, limit)}" if extra else "")


def calls_by_step(episode: Episode, calls: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """The recorded agent calls of each step (by index in `episode.steps`): a call whose messages hold k
    assistant turns was made for the step after k played ones (the final-answer turn included); a later
    call that asks again for an answer holds one more and goes with the last step. Calls of rounds an
    episode took over from another (prefix sharing, forks) were recorded with that one and are not here."""
    out: dict[int, list[dict[str, Any]]] = defaultdict(list)
    last = len(episode.steps) - 1
    for call in calls:
        if call["role"] != "agent" or last < 0:
            continue
        turns = sum(isinstance(m, dict) and m.get("role") == "assistant" for m in call["request"].get("messages", []))
        out[min(turns, last)].append(call)
    return out


def call_lines(call: dict[str, Any], previous: int) -> list[Text]:
    """A recorded call in a step panel: the messages after the first `previous` (those the last call sent)."""
    messages = call["request"].get("messages", [])
    images = sum(isinstance(m, dict) and isinstance(m.get("content"), list) and
                 sum(isinstance(p, dict) and p.get("type") == "image_url" for p in m["content"]) or 0
                 for m in messages)
    lines = [Text(f"model input (call {call['round']}): {len(messages)} messages, {images} images; "
                  f"new since the previous call:", style="magenta")]
    lines += [Text("  " + message_line(m, 200), style="magenta") for m in messages[previous:]]
    response = call["response"]
    if "error" in call:
        lines.append(Text(f"model call failed: {call['error']}", style="red"))
    elif isinstance(response, dict):
        choice = (response.get("choices") or [{}])[0]
        lines.append(Text(f"response: finish {choice.get('finish_reason')} · usage "
                          f"{json.dumps(response.get('usage'), sort_keys=True)}", style="magenta"))
    return lines


def step_panel(step: Step, calls: list[dict[str, Any]] | None = None, previous: int = 0) -> Panel:
    """A step; with `calls`, the recorded model calls made for it (`previous`: messages the call before sent)."""
    title = "final answer turn (tools off)" if step.final_turn else f"round {step.round} · {step.action}"
    if step.tool:
        title += f" · {step.tool}"
    parts: list[Any] = []
    for call in calls or []:
        parts += call_lines(call, previous)
        previous = len(call["request"].get("messages", []))
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
                 wait: Callable[[], bool] | None = None, calls: list[dict[str, Any]] | None = None) -> None:
    """Print the episode, with the recorded model `calls` of each step when given; with `wait`, call it
    between steps (returning False stops)."""
    console.print(header_panel(episode, verdicts))
    by_step, previous = calls_by_step(episode, calls or []), 0
    for i, step in enumerate(episode.steps):
        console.print(step_panel(step, by_step.get(i), previous))
        if by_step.get(i):
            previous = len(by_step[i][-1]["request"].get("messages", []))
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
    """Re-execute the episode's recorded tool calls against its world; the observations that differ. The tools and
    loaders are those registered: the caller loads the plug-ins first (`arena.runs.plugins.load_plugins`)."""
    config = run.data_source()
    if config is None:
        raise ValueError(f"{run.store.run_json}: field config: missing, the episode cannot be replayed")
    rounds = [s for s in played_rounds(episode) if s.action != "answer"]
    if not rounds:
        return []
    protocol = run.info.protocol
    datasets = load_datasets(config.data.path, config.data.root, config.data.fmt,
                             original_only=protocol == "original")
    if protocol == "original":
        apply_original_dataset_rules(datasets)  # the tasks as the run played them (tool-result layout, ids)
    if config.data.corpus:
        for dataset in datasets:
            dataset.corpus = Path(config.data.corpus).resolve()
    found = [(d, t) for d in datasets for t in d.tasks if t.id == episode.task.id]
    if not found:
        raise ValueError(f"{config.data.path}: task {episode.task.id!r} of episode {episode.id} is no longer in the data")
    dataset, task = found[0]
    unknown = [n for n in episode.tools if n not in TOOLS]
    if unknown:
        raise ValueError(f"episode {episode.id} used tool(s) not installed here: {', '.join(unknown)}")
    tools = [TOOLS[n](config.tools) for n in episode.tools]
    resources = RunResources(config.tools)
    budget = episode.budget.model_copy(update={"max_rounds": len(rounds), "final_answer_turn": False,
                                               "max_seconds": None, "max_tokens": None})
    spec = EpisodeSpec(run_id="replay-check", task=task, dataset=dataset, agent=_NoAgent(), tools=tools,
                       setting=episode.setting, budget=budget, prefix=rounds, prefix_mode="replay")
    try:
        for tool in tools:
            await tool.open(resources)
        with tempfile.TemporaryDirectory(prefix="arena-replay-") as tmp:
            replayed = await run_episode(spec, BlobStore(Path(tmp)))
    finally:
        for tool in tools:
            await tool.aclose()
        await resources.aclose()
    differences = []
    if replayed.finish_reason == "error":
        differences.append(Difference(0, None, "episode", "played", _short(replayed.error or "")))
    for old, new in zip(rounds, replayed.steps):
        for field, before, after in compare(old.observation, new.observation):
            differences.append(Difference(old.round, old.tool, field, before, after))
    return differences
