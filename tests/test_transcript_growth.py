"""The OpenAI agent renders each step once per episode (`OpenAIAgent._extended`): every turn's transcript equals the
one a fresh agent builds from the same view, in both tool modes, under limits, in the final turn, and when a view's
steps are not the ones rendered before."""

from __future__ import annotations

import asyncio

import pytest
from PIL import Image

from arena.agents.context_policy import Limits
from arena.agents.openai_agent import OpenAIAgent
from arena.core.agent import EpisodeView
from arena.core.budget import Budget
from arena.core.context_image import ContextImage
from arena.core.task import Task
from arena.core.tool import TOOLS, ToolOptions
from arena.core.trajectory import Observation, Step
from arena.endpoints.client import EndpointConfig


def agent(mode: str) -> OpenAIAgent:
    return OpenAIAgent(EndpointConfig(base_url="http://127.0.0.1:9/v1", model="m"), tool_mode=mode)  # never called


def episode(rounds: int) -> tuple[list[ContextImage], list[Step]]:
    """A task image, then per round a crop returning an image (odd rounds) or a search (even rounds)."""
    images = [ContextImage("task", source="task", image=Image.new("RGB", (640, 480), "white"))]
    steps = []
    for r in range(1, rounds + 1):
        if r % 2:
            images.append(ContextImage(f"crop{r}", source="image_zoom_in_tool",
                                       image=Image.new("RGB", (100 + r, 80), (r, 0, 0))))
            observation = Observation(text=f"Zoomed in, round {r}.", images=[f"crop{r}"],
                                      image_indices=[len(images) - 1])
            steps.append(Step(round=r, output=f"look {r}", action="tool_call", tool="image_zoom_in_tool",
                              arguments={"bbox_2d": [0, 0, 10, r]}, call_id=f"c{r}", observation=observation))
        else:
            steps.append(Step(round=r, output="", action="tool_call", tool="text_search_tool",
                              arguments={"query": f"q{r}"}, call_id=f"c{r}",
                              observation=Observation(text=f"result {r} " * 40)))
    return images, steps


def view(images: list[ContextImage], steps: list[Step], final: bool = False) -> EpisodeView:
    tools = [] if final else [TOOLS[name](ToolOptions()) for name in ("image_zoom_in_tool", "text_search_tool")]
    return EpisodeView(task=Task(id="t", question="Which year?", images=["a.png"]), images=list(images),
                       n_task_images=1, tools=tools, steps=list(steps), budget=Budget(max_rounds=8),
                       round=len(steps) + 1, final_turn=final)


def transcript(a: OpenAIAgent, v: EpisodeView, limits: Limits | None = None):
    messages, summary = asyncio.run(a.transcript(v, limits or Limits()))
    return messages, summary.model_dump()


@pytest.mark.parametrize("mode", ["native", "xml"])
def test_every_turn_equals_a_fresh_build(mode):
    images, steps = episode(6)
    kept = agent(mode)
    task_view = view(images, [])
    tools = task_view.tools
    previous = None
    for n in range(len(steps) + 1):
        v = view(images[: 1 + (n + 1) // 2], steps[:n])
        v.task, v.tools = task_view.task, tools  # one episode: the same task and tools every turn
        got = transcript(kept, v)
        assert got == transcript(agent(mode), v)
        if previous is not None:  # the earlier steps' messages are the ones rendered before, not rebuilt
            assert all(a is b for a, b in zip(previous[0][1:], got[0][1:]))
        previous = got
    final = view(images, steps, final=True)
    final.task = task_view.task
    assert transcript(kept, final) == transcript(agent(mode), final)


def test_limits_and_other_steps_are_built_in_full():
    images, steps = episode(5)
    kept = agent("native")
    whole = view(images, steps)
    transcript(kept, whole)
    limited = Limits(max_images=2, max_context_tokens=600)
    assert transcript(kept, whole, limited) == transcript(agent("native"), whole, limited)
    assert transcript(kept, whole, limited)[1]["elided_images"]
    other = [s.model_copy(update={"output": "another"}) if s.round == 2 else s for s in steps]
    changed = view(images, other)
    changed.task = whole.task
    assert transcript(kept, changed) == transcript(agent("native"), changed)
    assert any(m.get("content") == "another" for m in transcript(kept, changed)[0])
