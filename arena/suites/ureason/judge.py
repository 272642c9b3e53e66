"""UReason scoring (PROTOCOLS.md §5): the VLM image judge, the reasoning judge, a structural verifier, metrics.

The generated image of an episode is the last image a generation tool
(`render`, `generate_image`) returned without error. Published rule
(UReason/UReason `evaluation/qwen_vision_batch.py`, `process_single_task`): an item
without an image is left out (`missing="skip"`, the default of `ureason-vlm`: the
verdict gets an error and drops out of the accuracy); `missing="fail"` is the
arena's choice, scoring it 0.

- `ureason-vlm`: UReason's vision evaluation prompt with the item's `expect_en`;
  the verdict is read as the original's `extract_answer` does: the first
  `<answer>...</answer>` on one line (case-insensitive tags, no line breaks inside);
  if its lower-cased content holds "yes" → Yes, else if it holds "no" → No; else
  (no such block, or neither word) the whole reply lower-cased: "yes" → Yes, "no"
  → No, otherwise No.
- `ureason-reasoning`: UReason's text evaluation: does the model's reasoning
  (the text it wrote up to the generation call) imply the criterion? Direct-setting
  episodes have no reasoning to judge (verdict error, left out).
- `ureason-verify`: deterministic, for `ureason-mini` criteria: reads the
  structure the `render` tool extracted from the rendered page (tags, boxes,
  colours, texts) and checks counts, orders, colours and words.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import Any

from arena.core.blobs import BlobStore
from arena.endpoints.client import EndpointConfig, EndpointError
from arena.core.judge import Judge, text_hash
from arena.suites.ureason.loader import FAMILIES, SETTINGS
from arena.core.trajectory import Episode, Step
from arena.core.verdict import Verdict
from arena.suites.ureason.world import SHAPES, Criterion, color_name

from arena.judges.llm import ModelJudge
from arena.judges.metrics import score_of

GENERATION_TOOLS = ("render", "generate_image")
NO_IMAGE = "no generated image"

VISION_TEMPLATE = """
You are an objective image evaluator. Your goal is to verify if the image content matches the provided text description.

Target Description: "{description}"

Please think step by step:
1. Analyze the image content carefully.
2. Compare the visual elements with the "Target Description".
3. Determine if the image strictly meets the requirements.

Finally, output your judgment in the following format:
If it matches, output <answer>Yes</answer>.
If it does not match, output <answer>No</answer>.
"""

TEXT_TEMPLATE = """
You are an objective logic evaluator. 
I will provide you with a "User Prompt" and a model's "Thought Process".
Your task is to judge whether the model's thought process implies or covers the meaning of a specific "Target Criteria".

=== User Prompt ===
{user_prompt}

=== Model Thought Process ===
{model_thought}

=== Target Criteria ===
{criteria}

=== Instruction ===
Please think step by step:
1. Analyze the "Target Criteria" to understand the core requirement.
2. Read the "Thought Process" carefully.
3. Determine if the thought process explicitly or implicitly covers the "Target Criteria". 
   - Note: It doesn't need to match word-for-word, but the logic/meaning must be present.

Finally, output your judgment in the following format:
If the criteria is met/implied, output <answer>Yes</answer>.
If the criteria is missed or contradicted, output <answer>No</answer>.
"""
VISION_HASH = text_hash(VISION_TEMPLATE)
TEXT_HASH = text_hash(TEXT_TEMPLATE)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.I)


def read_yes_no(text: str) -> bool:
    """UReason's `extract_answer`: "yes"/"no" inside the first one-line <answer>, else anywhere (yes first), else No."""
    match = _ANSWER.search(text)
    if match:
        content = match.group(1).strip().lower()
        if "yes" in content:
            return True
        if "no" in content:
            return False
    lower = text.lower()
    if "yes" in lower:
        return True
    return False


def generation_step(episode: Episode) -> Step | None:
    """The last step whose generation tool returned an image without error."""
    for step in reversed(episode.steps):
        obs = step.observation
        if step.tool in GENERATION_TOOLS and obs is not None and not obs.error and obs.images:
            return step
    return None


def reasoning_text(episode: Episode) -> str:
    """What the model wrote up to (and including) its generation call: thoughts, text, refined prompt."""
    parts = []
    last = generation_step(episode)
    for step in episode.steps:
        for text in (step.reasoning, step.output):
            if text and text not in parts:
                parts.append(text)
        if step is last:
            break
    return "\n\n".join(parts).strip()


def _missing(judge: Judge, episode: Episode, skip: bool, **base: Any) -> Verdict:
    if skip:
        return judge.verdict(episode, score=0.0, correct=False, rationale=NO_IMAGE, error=NO_IMAGE, **base)
    return judge.verdict(episode, score=0.0, correct=False, rationale=f"{NO_IMAGE} (scored 0)", **base)


class UReasonVLMJudge(ModelJudge):
    id = "ureason-vlm"
    version = "2"
    prompt_hash = VISION_HASH

    def __init__(self, endpoint: EndpointConfig, missing: str = "skip", cache_path: str | None = None):
        if missing not in ("fail", "skip"):
            raise ValueError(f"missing must be 'fail' or 'skip', got {missing!r}")
        super().__init__(endpoint, cache_path)
        self.skip_missing = missing == "skip"

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "missing": "skip" if self.skip_missing else "fail"}

    async def score(self, episode: Episode, blobs: BlobStore | None = None) -> Verdict:
        base = dict(judge_model=self.config.model, prompt_hash=VISION_HASH)
        step = generation_step(episode)
        if step is None or blobs is None:
            return _missing(self, episode, self.skip_missing, **base)
        blob_id = step.observation.images[-1]
        criterion = episode.task.answers[0] if episode.task.answers else ""
        key = text_hash(self.config.model, VISION_HASH, blob_id, criterion)
        output = self.cache.get(key)
        if output is None:
            try:
                data = base64.b64encode(blobs.get(blob_id)).decode()
            except (OSError, ValueError) as exc:
                return self.verdict(episode, score=0.0, correct=False, extracted=blob_id,
                                    error=f"cannot read {blob_id}: {exc}", **base)
            ext = blob_id.rsplit(".", 1)[-1].replace("jpg", "jpeg")
            content = [{"type": "image_url", "image_url": {"url": f"data:image/{ext};base64,{data}"}},
                       {"type": "text", "text": VISION_TEMPLATE.format(description=criterion)}]
            try:
                response = await self.endpoint.chat([{"role": "user", "content": content}], temperature=0)
            except EndpointError as exc:
                return self.verdict(episode, score=0.0, correct=False, extracted=blob_id, error=str(exc), **base)
            output = response.content
            await self.cache.put(key, output)
        yes = read_yes_no(output)
        return self.verdict(episode, score=float(yes), correct=yes, extracted=blob_id,
                            rationale="image meets the criterion" if yes else "image does not meet the criterion",
                            raw=output, **base)


class UReasonReasoningJudge(ModelJudge):
    id = "ureason-reasoning"
    version = "1"
    prompt_hash = TEXT_HASH

    async def score(self, episode: Episode, blobs: BlobStore | None = None) -> Verdict:
        base = dict(judge_model=self.config.model, prompt_hash=TEXT_HASH)
        if episode.task.level == "direct":
            return self.verdict(episode, score=0.0, correct=False, error="the direct setting has no reasoning",
                                **base)
        thought = reasoning_text(episode)
        if not thought:
            return self.verdict(episode, score=0.0, correct=False, rationale="no reasoning written", **base)
        criterion = episode.task.answers[0] if episode.task.answers else ""
        key = text_hash(self.config.model, TEXT_HASH, episode.task.question, thought, criterion)
        output = self.cache.get(key)
        if output is None:
            prompt = TEXT_TEMPLATE.format(user_prompt=episode.task.question, model_thought=thought,
                                          criteria=criterion)
            try:
                response = await self.endpoint.chat([{"role": "user", "content": prompt}], temperature=0)
            except EndpointError as exc:
                return self.verdict(episode, score=0.0, correct=False, error=str(exc), **base)
            output = response.content
            await self.cache.put(key, output)
        yes = read_yes_no(output)
        return self.verdict(episode, score=float(yes), correct=yes, extracted=thought[:2000],
                            rationale="reasoning covers the criterion" if yes else "reasoning misses the criterion",
                            raw=output, **base)


def _endpoint(model: str, base_url: str, api_key_env: str | None, timeout: float, max_retries: int,
              retry_initial: float, max_tokens: int | None) -> EndpointConfig:
    return EndpointConfig(base_url=base_url, model=model, api_key_env=api_key_env, timeout=timeout,
                          max_retries=max_retries, retry_initial=retry_initial, temperature=0.0,
                          max_tokens=max_tokens)


def ureason_vlm(model: str, base_url: str, api_key_env: str | None = None, missing: str = "skip",
                cache_path: str | None = None, timeout: float = 120.0, max_retries: int = 4,
                retry_initial: float = 1.0, max_tokens: int | None = 512) -> UReasonVLMJudge:
    return UReasonVLMJudge(_endpoint(model, base_url, api_key_env, timeout, max_retries, retry_initial, max_tokens),
                           missing=missing, cache_path=cache_path)


def ureason_reasoning(model: str, base_url: str, api_key_env: str | None = None, cache_path: str | None = None,
                      timeout: float = 120.0, max_retries: int = 4, retry_initial: float = 1.0,
                      max_tokens: int | None = 512) -> UReasonReasoningJudge:
    return UReasonReasoningJudge(_endpoint(model, base_url, api_key_env, timeout, max_retries, retry_initial,
                                           max_tokens), cache_path=cache_path)


# --- the structural verifier -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Shape:
    kind: str
    color: str | None
    cx: float
    cy: float


_RGB = re.compile(r"rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)(?:\s*[,/]\s*([\d.]+%?))?\s*\)")


def _paint(value: str | None) -> str | None:
    """Palette name of a computed CSS colour; None for none/transparent."""
    if not value or value == "none":
        return None
    m = _RGB.match(value.strip())
    if not m:
        return None
    alpha = m.group(4)
    if alpha is not None and float(alpha.rstrip("%")) == 0:
        return None
    return color_name((int(float(m.group(1))), int(float(m.group(2))), int(float(m.group(3)))))


def _radius(value: str | None, side: float) -> float:
    if not value:
        return 0.0
    first = value.split()[0]
    try:
        return float(first[:-1]) / 100 * side if first.endswith("%") else float(first.rstrip("px"))
    except ValueError:
        return 0.0


def shapes_of(elements: list[dict[str, Any]], width: float, height: float) -> list[Shape]:
    """Circles, squares and triangles in a rendered page; backgrounds (>= 60 % of the canvas) are left out."""
    out = []
    for el in elements:
        w, h = float(el.get("w") or 0), float(el.get("h") or 0)
        if w < 2 or h < 2 or w * h >= 0.6 * width * height:
            continue
        tag, kind = el.get("tag"), None
        squareish = 0.8 <= w / h <= 1.25
        if el.get("svg"):
            color = _paint(el.get("fill")) or _paint(el.get("stroke"))
            if tag in ("circle",) or (tag == "ellipse" and squareish):
                kind = "circle"
            elif tag == "rect" and squareish:
                kind = "square"
            elif tag == "polygon" and el.get("points") == 3:
                kind = "triangle"
        else:
            color = _paint(el.get("background"))
            if color is not None and tag not in ("body", "html"):
                if squareish and _radius(el.get("radius"), min(w, h)) >= 0.4 * min(w, h):
                    kind = "circle"
                elif squareish:
                    kind = "square"
        if kind is not None:
            out.append(Shape(kind, color, float(el.get("x") or 0) + w / 2, float(el.get("y") or 0) + h / 2))
    return out


def words_of(elements: list[dict[str, Any]]) -> list[str]:
    return [w for el in elements for w in re.findall(r"[A-Za-z0-9]+", str(el.get("text") or "").upper())]


def verify(criterion: Criterion, elements: list[dict[str, Any]], width: float, height: float) -> tuple[bool, str]:
    """Check a criterion against a rendered structure; returns (met, what was found)."""
    shapes = shapes_of(elements, width, height)
    if criterion.kind == "count":
        found = sum(1 for s in shapes if s.kind == criterion.shape and s.color == criterion.color)
        return found == criterion.count, f"{found} {criterion.color} {criterion.shape}(s)"
    if criterion.kind == "order":
        row = [(s.color, s.kind) for s in sorted((s for s in shapes if s.kind in SHAPES), key=lambda s: s.cx)]
        return tuple(row) == criterion.sequence, "left to right: " + ", ".join(f"{c} {k}" for c, k in row)
    if criterion.kind == "color":
        same = [s for s in shapes if s.kind == criterion.shape]
        colors = ", ".join(str(s.color) for s in same) or "none"
        return len(same) == 1 and same[0].color == criterion.color, f"{criterion.shape}(s) coloured: {colors}"
    words = words_of(elements)
    return criterion.text in words, "words: " + " ".join(words[:20])


class UReasonVerifyJudge(Judge):
    id = "ureason-verify"
    version = "1"

    def __init__(self, missing: str = "fail"):
        if missing not in ("fail", "skip"):
            raise ValueError(f"missing must be 'fail' or 'skip', got {missing!r}")
        self.skip_missing = missing == "skip"

    async def score(self, episode: Episode, blobs: BlobStore | None = None) -> Verdict:
        criterion = Criterion.parse(episode.task.answers[0]) if episode.task.answers else None
        if criterion is None:
            return self.verdict(episode, score=0.0, correct=False,
                                error=f"criterion is not machine-checkable: {episode.task.answers[:1]!r}")
        step = generation_step(episode)
        if step is None:
            return _missing(self, episode, self.skip_missing)
        data = step.observation.data
        if "elements" not in data:
            return self.verdict(episode, score=0.0, correct=False, extracted=step.observation.images[-1],
                                error=f"the image came from {step.tool}, which records no page structure")
        met, found = verify(criterion, data["elements"], float(data.get("width") or 512),
                            float(data.get("height") or 512))
        return self.verdict(episode, score=float(met), correct=met, extracted=step.observation.images[-1],
                            rationale=f"{'meets' if met else 'fails'} {criterion.sentence()!r}: found {found}")


def ureason_verify(missing: str = "fail") -> UReasonVerifyJudge:
    return UReasonVerifyJudge(missing=missing)


# --- metrics ---------------------------------------------------------------------------------------------------

def _pct(values: list[float]) -> float | None:
    return round(100.0 * sum(values) / len(values), 4) if values else None


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(b - a, 4)


def ureason_metrics(rows: list[tuple[Episode, Verdict | None]]) -> dict[str, Any]:
    """Accuracy over valid verdicts per setting (direct, guided, decontext) overall and per family, the gains
    Δ1→2 and Δ2→3 in points, and how many episodes produced no image."""
    valid = [(e, v) for e, v in rows if v is not None and v.error is None]
    by_setting: dict[str, list[float]] = {}
    by_cell: dict[tuple[str, str], list[float]] = {}
    for episode, verdict in valid:
        setting, family = episode.task.level or "?", episode.task.category or "?"
        by_setting.setdefault(setting, []).append(score_of(verdict))
        by_cell.setdefault((setting, family), []).append(score_of(verdict))
    accuracy = {s: _pct(by_setting[s]) for s in SETTINGS if s in by_setting}
    families = sorted({f for _, f in by_cell}, key=lambda f: (FAMILIES.index(f) if f in FAMILIES else 99, f))
    per_family = {s: {f: _pct(by_cell[(s, f)]) for f in families if (s, f) in by_cell}
                  for s in SETTINGS if s in by_setting}
    return {
        "accuracy": accuracy,
        "per_family": per_family,
        "delta_1_2": _delta(accuracy.get("direct"), accuracy.get("guided")),
        "delta_2_3": _delta(accuracy.get("guided"), accuracy.get("decontext")),
        "delta_per_family": {f: {"delta_1_2": _delta(per_family.get("direct", {}).get(f),
                                                     per_family.get("guided", {}).get(f)),
                                 "delta_2_3": _delta(per_family.get("guided", {}).get(f),
                                                     per_family.get("decontext", {}).get(f))} for f in families},
        "valid": len(valid),
        "invalid": len(rows) - len(valid),
        "missing_images": sum(1 for e, _ in rows if generation_step(e) is None),
    }
