"""Reference policies for condchain-mini worlds: `condchain-oracle` and `condchain-random`.

- `condchain-oracle` reads the item's facts from the world (`data/<domain>.jsonl`, the
  facts every image or GUI frame was rendered from), executes the task's compiled chain
  (`metadata.pseudocode`) over them with the VPIR evaluator, and picks the option whose
  text is the computed value in the question's option list (`None` when no option has
  it). It never reads the task's answer field, so a mislabelled answer, an option list
  without the right value or a chain that does not compile shows up as a miss.
- `condchain-random` never looks: it picks one of the option labels listed in the
  question, or `None`, uniformly (fixed per task id).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from arena.agents.policy_turns import answer_turn, read_jsonl, task_rng, world_dir
from arena.core.agent import Agent, AgentTurn, EpisodeView

from . import vpir

_ANSWER = re.compile(r"answer\((.*)\)\s*#\s*options ([A-Z])")
_LABEL = re.compile(r"\b([A-Z]\d+)\. ")


class ChainError(ValueError):
    """A compiled chain that cannot be executed."""


@lru_cache(maxsize=8)
def world_facts(world: Path) -> dict[str, dict[str, Any]]:
    """Facts of every item of a world, by item id."""
    return {str(r["id"]): r["facts"] for path in sorted((world / "data").glob("*.jsonl")) for r in read_jsonl(path)}


def chain_lines(pseudocode: str) -> list[tuple[int, str]]:
    """(indent level, statement) of each non-comment line of a compiled chain."""
    out = []
    for line in pseudocode.splitlines():
        text = line.strip()
        if text and not text.startswith("#"):
            out.append(((len(line) - len(line.lstrip(" "))) // 4, text))
    return out


def execute_chain(pseudocode: str, facts: dict[str, Any]) -> tuple[Any, str, list[bool]]:
    """Run a compiled chain: (answer value, option letter, truth of each condition met on the way)."""
    lines = chain_lines(pseudocode)
    pos, indent, taken = 0, 0, []
    while pos < len(lines):
        level, text = lines[pos]
        if text.startswith("if ") and text.endswith(":"):
            holds = vpir.holds(text[3:-1], facts)
            taken.append(holds)
            if holds:
                pos, indent = pos + 1, indent + 1
                continue
            pos = next((k for k in range(pos + 1, len(lines)) if lines[k] == (level, "else:")), -1)
            if pos == -1:
                raise ChainError(f"line {text[:60]!r}: no else branch at the same level")
            pos, indent = pos + 1, indent + 1
            continue
        match = _ANSWER.fullmatch(text)
        if match is None:
            raise ChainError(f"unexpected statement {text[:80]!r}")
        return vpir.evaluate(match.group(1), facts), match.group(2), taken
    raise ChainError("the chain ends without an answer")


def option_label(question: str, letter: str, value: Any) -> str:
    """The label of the option of `letter` whose text is `value` in the question, else "None"."""
    text = str(value)
    for label in dict.fromkeys(m.group(1) for m in _LABEL.finditer(question)):
        if label[0] == letter and (f"{label}. {text};" in question or f"{label}. {text}." in question):
            return label
    return "None"


class CondChainOracle(Agent):
    def __init__(self, world: str | None = None, id: str = "condchain-oracle"):
        self.world = world_dir(world, "condchain-oracle")
        self.id = id

    async def act(self, view: EpisodeView) -> AgentTurn:
        meta = view.task.metadata
        facts = world_facts(self.world).get(str(meta.get("pair")))
        if facts is None:
            return answer_turn("None", view, f"item {meta.get('pair')!r} is not in {self.world}/data")
        try:
            value, letter, taken = execute_chain(str(meta.get("pseudocode") or ""), facts)
        except (ChainError, vpir.VPIRError) as exc:
            return answer_turn("None", view, f"the chain cannot be executed: {exc}")
        label = option_label(view.task.question, letter, value)
        note = f"conditions {taken}; the chain answers {value!r} from options {letter}"
        return answer_turn(f"\\boxed{{{label}}}", view, note)

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "kind": "condchain-oracle", "world": str(self.world)}


class CondChainRandom(Agent):
    def __init__(self, id: str = "condchain-random"):
        self.id = id

    async def act(self, view: EpisodeView) -> AgentTurn:
        labels = list(dict.fromkeys(m.group(1) for m in _LABEL.finditer(view.task.question))) + ["None"]
        return answer_turn(f"\\boxed{{{task_rng(view, self.id).choice(labels)}}}", view)

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "kind": "condchain-random"}


def condchain_oracle(world: str | None = None, id: str = "condchain-oracle") -> CondChainOracle:
    return CondChainOracle(world=world, id=id)


def condchain_random(id: str = "condchain-random") -> CondChainRandom:
    return CondChainRandom(id=id)
