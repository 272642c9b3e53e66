"""Reference policies for ureason-mini worlds: `ureason-oracle` and `ureason-random`.

UReason items are image-generation tasks: the only gold is the machine-checkable
criterion the image must meet (the world's `expect_en`, which is also the task's answer
field; the world holds no other hidden state). So:
- `ureason-oracle` reads the criterion from the world's public item files
  (`data/<family>.jsonl` or `data/direct_<family>.jsonl`), paints the world's gold SVG for
  it with the `render` tool, then answers "done"; the `ureason-verify` judge checks the
  rendered page structure against the criterion, so the oracle proves that every gold
  image renders and meets its criterion;
- `ureason-random` never reads the scenario: it renders a row of 1–7 shapes of one
  random kind and colour.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from arena.agents.policy_turns import answer_turn, call_turn, read_jsonl, task_rng, world_dir
from arena.core.agent import Agent, AgentTurn, EpisodeView

from .world import SHAPE_COLORS, SHAPES, Criterion, _row_svg, gold_svg

RENDER = "render"


@lru_cache(maxsize=8)
def world_criteria(world: Path) -> dict[tuple[str, str], str]:
    """(family, item id) -> criterion sentence, from the world's reasoning-prompt item files."""
    out = {}
    for path in sorted((world / "data").glob("*.jsonl")):
        for record in read_jsonl(path):
            out[(str(record["category"]), str(record["id"]))] = str(record["expect_en"])
    return out


def svg_document(body: list[str]) -> str:
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512">'
            '<rect width="512" height="512" fill="white"/>' + "".join(body) + "</svg>")


class _Painter(Agent):
    def markup(self, view: EpisodeView) -> tuple[str | None, str | None]:
        """(svg, why not) for this task."""
        raise NotImplementedError

    async def act(self, view: EpisodeView) -> AgentTurn:
        if view.steps or view.final_turn:
            done = any(s.tool == RENDER and s.observation and not s.observation.error for s in view.steps)
            return answer_turn("done" if done else "no image", view)
        if RENDER not in {t.name for t in view.tools}:
            return answer_turn("no image", view, "this setting has no render tool")
        svg, why = self.markup(view)
        if svg is None:
            return answer_turn("no image", view, why)
        return call_turn(RENDER, {"svg": svg}, view)


class UReasonOracle(_Painter):
    def __init__(self, world: str | None = None, id: str = "ureason-oracle"):
        self.world = world_dir(world, "ureason-oracle")
        self.id = id

    def markup(self, view: EpisodeView) -> tuple[str | None, str | None]:
        meta = view.task.metadata
        sentence = world_criteria(self.world).get((str(meta.get("family")), str(meta.get("ureason_id"))))
        criterion = Criterion.parse(sentence) if sentence else None
        if criterion is None:
            return None, f"no machine-checkable criterion for item {meta.get('ureason_id')} in {self.world}/data"
        return gold_svg(criterion), None

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "kind": "ureason-oracle", "world": str(self.world)}


class UReasonRandom(_Painter):
    def __init__(self, id: str = "ureason-random"):
        self.id = id

    def markup(self, view: EpisodeView) -> tuple[str | None, str | None]:
        rng = task_rng(view, self.id)
        item = (rng.choice(SHAPE_COLORS), rng.choice(SHAPES))
        return svg_document(_row_svg([item] * rng.randint(1, 7))), None

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "kind": "ureason-random"}


def ureason_oracle(world: str | None = None, id: str = "ureason-oracle") -> UReasonOracle:
    return UReasonOracle(world=world, id=id)


def ureason_random(id: str = "ureason-random") -> UReasonRandom:
    return UReasonRandom(id=id)
