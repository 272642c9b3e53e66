"""The gold tool path of a task and how to follow it from observations alone.

A path is a list of tool calls. Arguments may hold `{var}` placeholders for
values learned from earlier observations; each step says how to learn its
variable from its own observation: the index of the image it returned
(`new_image`), the title of the top reverse-image hit (`top_title`), or a regex
group `value` (`pattern`, itself with `{var}` placeholders filled with escaped
values). A fused task ends with an operation over numeric variables.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from arena.core.trajectory import Observation

from .fusion import apply, format_number

_SLOT = re.compile(r"\{(\w+)\}")
_TOP_TITLE = re.compile(r"^\[1\]\s*(.+?)\s*$", re.M)


class GoldPathError(ValueError):
    """A step whose observation does not yield the value it should (the message says which and why)."""


class Extract(BaseModel):
    var: str
    source: Literal["new_image", "top_title", "pattern"]
    pattern: str | None = None
    numeric: bool = False


class GoldStep(BaseModel):
    tool: str
    arguments: dict[str, Any]
    extract: Extract
    chain: int = 1
    hop: int = 0


class Fusion(BaseModel):
    op: str
    inputs: list[str]


class GoldPath(BaseModel):
    """Tool calls in order, then either the variable that is the answer or a fusion of several."""

    steps: list[GoldStep]
    answer: str | None = None
    fusion: Fusion | None = None
    rounds: int = Field(0, description="rounds needed: one per tool call plus the answer")


def fill(value: Any, bindings: dict[str, Any]) -> Any:
    """Replace `{var}` placeholders; a string that is exactly one placeholder becomes the bound value itself."""
    if isinstance(value, dict):
        return {k: fill(v, bindings) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, bindings) for v in value]
    if isinstance(value, str):
        whole = _SLOT.fullmatch(value)
        if whole:
            return _bound(whole.group(1), bindings)
        return _SLOT.sub(lambda m: str(_bound(m.group(1), bindings)), value)
    return value


def _bound(name: str, bindings: dict[str, Any]) -> Any:
    if name not in bindings:
        raise GoldPathError(f"variable {name!r} is used before any observation gave it a value")
    return bindings[name]


def fill_pattern(pattern: str, bindings: dict[str, Any]) -> str:
    return _SLOT.sub(lambda m: re.escape(str(_bound(m.group(1), bindings))), pattern)


def extract(step: GoldStep, observation: Observation | None, bindings: dict[str, Any]) -> Any:
    """The value `step.extract` names, read from the step's observation."""
    rule = step.extract
    if observation is None or observation.error:
        detail = observation.text if observation is not None else "no observation"
        raise GoldPathError(f"{step.tool} gave no usable observation: {detail[:300]}")
    if rule.source == "new_image":
        if not observation.image_indices:
            raise GoldPathError(f"{step.tool} returned no image")
        return observation.image_indices[0]
    if rule.source == "top_title":
        match = _TOP_TITLE.search(observation.text)
        if not match:
            raise GoldPathError(f"{step.tool}: no top result in {observation.text[:200]!r}")
        return match.group(1)
    pattern = fill_pattern(rule.pattern or "", bindings)
    match = re.search(pattern, observation.text)
    if not match:
        raise GoldPathError(f"{step.tool}: pattern {pattern!r} not found in {observation.text[:400]!r}")
    value = match.group("value").strip()
    return int(value) if rule.numeric else value


def final_answer(path: GoldPath, bindings: dict[str, Any]) -> str:
    """The answer from learned values: the answer variable, or the fusion of the inputs."""
    if path.fusion is not None:
        values = [float(_bound(v, bindings)) for v in path.fusion.inputs]
        return format_number(apply(path.fusion.op, values))
    value = _bound(path.answer or "", bindings)
    return format_number(value) if isinstance(value, (int, float)) else str(value)
