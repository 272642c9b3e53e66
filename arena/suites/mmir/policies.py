"""Reference policies for mmir-mini worlds: `mmir-oracle` and `mmir-random`.

- `mmir-oracle` answers with the element ids the world's generator recorded as injected
  (`metadata.jsonl`, matched by the task's page image), in MMIR's `<ans>` format. MMIR has
  no tool that reveals an inconsistency, so the oracle's evidence is the world's injection
  record rather than an observation; the structural checks prove that record against the
  rendered page (`arena.suites.mmir.check`).
- `mmir-random` never looks: it answers one listed element id, or two, drawn uniformly.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from arena.agents.policy_turns import answer_turn, read_jsonl, task_rng, world_dir
from arena.core.agent import Agent, AgentTurn, EpisodeView

_OPTION_ID = re.compile(r"^\[(\d+)\]")


def ans(ids: list[int]) -> str:
    return "<ans>\"" + ",".join(f"[{i}]" for i in ids) + "\"</ans>"


@lru_cache(maxsize=8)
def injections(world: Path) -> dict[str, list[int]]:
    """The injected element ids of every artifact of a world, by page image path."""
    return {str(r["file_name"]): [int(i) for i in r["gt_ans"]] for r in read_jsonl(world / "metadata.jsonl")}


class MMIROracle(Agent):
    def __init__(self, world: str | None = None, id: str = "mmir-oracle"):
        self.world = world_dir(world, "mmir-oracle")
        self.id = id

    async def act(self, view: EpisodeView) -> AgentTurn:
        image = view.task.images[0] if view.task.images else ""
        ids = injections(self.world).get(image)
        if not ids:
            return answer_turn("", view, f"no injection is recorded for {image!r} in {self.world}/metadata.jsonl")
        text = ans(ids) + "<reason>the world records these elements as the injected inconsistency</reason>"
        return answer_turn(text, view)

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "kind": "mmir-oracle", "world": str(self.world)}


class MMIRRandom(Agent):
    def __init__(self, id: str = "mmir-random"):
        self.id = id

    async def act(self, view: EpisodeView) -> AgentTurn:
        lines = [line.strip() for o in view.task.options for line in o.splitlines()]  # one stored text under original
        ids = [int(m.group(1)) for line in lines if (m := _OPTION_ID.match(line))]
        if not ids:
            return answer_turn("", view, "no element list in the task")
        rng = task_rng(view, self.id)
        return answer_turn(ans(sorted(rng.sample(ids, min(len(ids), rng.choice((1, 2)))))), view)

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "kind": "mmir-random"}


def mmir_oracle(world: str | None = None, id: str = "mmir-oracle") -> MMIROracle:
    return MMIROracle(world=world, id=id)


def mmir_random(id: str = "mmir-random") -> MMIRRandom:
    return MMIRRandom(id=id)
