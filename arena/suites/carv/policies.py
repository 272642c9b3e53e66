"""Reference policies for carv-mini worlds: `carv-oracle` and `carv-copy`.

- `carv-oracle` reads the scene state of each context image from the world's item record
  (`carv_items.jsonl`: the stems every image was rendered from), extracts the
  transformation of the pair(s), composes them with the item's operation, applies the
  result to the query state and captions it in the paper's JSON format. It never reads
  the task's answer or label, so a label that does not follow from its images is a miss.
- `carv-copy` never looks at the pair: it captions the query image unchanged (the answer
  of an empty transformation).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from arena.agents.policy_turns import answer_turn, read_jsonl, world_dir
from arena.core.agent import Agent, AgentTurn, EpisodeView

from .loader import State, answer_caption, apply, compose, parse_stem, transformation


@lru_cache(maxsize=8)
def world_items(world: Path) -> dict[str, dict[str, Any]]:
    return {str(r["id"]): r for r in read_jsonl(world / "carv_items.jsonl")}


def derive(states: list[State], operation: str) -> State | None:
    """The state the context implies: the pair's transformation (composed for two pairs) on the query."""
    target = transformation(states[0], states[1])
    if len(states) == 5:
        target = compose(operation, target, transformation(states[2], states[3]))
    return apply(target, states[-1]) if target else None


def caption_answer(caption: str) -> str:
    return json.dumps({"caption": caption})


class CarvOracle(Agent):
    def __init__(self, world: str | None = None, id: str = "carv-oracle"):
        self.world = world_dir(world, "carv-oracle")
        self.id = id

    async def act(self, view: EpisodeView) -> AgentTurn:
        item = world_items(self.world).get(view.task.id)
        if item is None:
            return answer_turn("", view, f"item {view.task.id!r} is not in {self.world}/carv_items.jsonl")
        try:
            result = derive([parse_stem(s) for s in item["context_image"]], str(item.get("operation")))
        except (ValueError, KeyError) as exc:
            return answer_turn("", view, f"the context does not give a result: {exc}")
        return answer_turn(caption_answer(answer_caption(result)), view)

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "kind": "carv-oracle", "world": str(self.world)}


class CarvCopy(Agent):
    def __init__(self, id: str = "carv-copy"):
        self.id = id

    async def act(self, view: EpisodeView) -> AgentTurn:
        stems = view.task.metadata.get("context_stems") or []
        if not stems:
            return answer_turn("", view, "no context stems in the task")
        return answer_turn(caption_answer(parse_stem(stems[-1]).caption), view)

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "kind": "carv-copy"}


def carv_oracle(world: str | None = None, id: str = "carv-oracle") -> CarvOracle:
    return CarvOracle(world=world, id=id)


def carv_copy(id: str = "carv-copy") -> CarvCopy:
    return CarvCopy(id=id)
