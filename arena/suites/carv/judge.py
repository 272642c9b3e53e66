"""CARV scoring (PROTOCOLS.md §4): a deterministic caption parser, the paper's LLM caption judge, Table 2 metrics.

`parse_caption` maps a caption to the five property values (or "no resulting
image"); a property it cannot pin down to exactly one value is None, which
never matches. `carv-parse` is correct when every property of the answer equals
the reference's. `carv-llm` asks a model, which replies in JSON
`{"correctness": true|false, "reason": ...}`; an unreadable reply is an invalid
verdict (error set), left out of accuracy as in the paper ("accuracy over valid
verdicts"). Its text is the prompt template `carv.judge.user` (placeholders
`{reference}`, `{response}`; `arena.core.prompt_book`): the arena's wording below,
which spells out every property and the no-result case, or the text of the run's
prompts file (`arena run --prompts FILE`), e.g. the evaluation prompt of the
paper's Appendix A.1, which the project does not copy. With `reference_image=True`
(the default, `--protocol original`) the request is laid out as the paper's
evaluator (§4, Appendix A.1): one user message, the text then the ground-truth image
(`Task.reference_images`, the file's bytes as a data URL; an item whose answer is
"No resulting image." has none, and the text alone is sent), at temperature 0; every
item with a caption is sent to the evaluator, also one whose caption equals the
reference (`identical="ask"`). Under `--protocol arena`: `reference_image=False`
sends the text alone, and `identical="skip"` scores a caption equal to the reference
(case and surrounding spaces aside) correct without a call. Runs recorded before
this option named it `prompt="paper"|"arena"` (`carv_reference_image`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import mimetypes
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.core.blobs import BlobStore
from arena.endpoints.client import EndpointConfig, EndpointError
from arena.core.judge import Judge, text_hash
from arena.core.prompt_book import PromptBook, register_template
from arena.suites.carv.loader import NO_RESULT, PROPERTIES
from arena.core.trajectory import Episode
from arena.core.verdict import Verdict

from arena.judges.llm import ModelJudge
from arena.judges.metrics import score_of
from arena.judges.stats import cohen_kappa

# --- the caption parser ----------------------------------------------------------------------------------------

_SUBJECT_TERMS: dict[str, tuple[tuple[str, bool], ...]] = {
    "bottle": (("bottle", False), ("bottles", True)),
    "mug": (("coffee mug", False), ("coffee mugs", True), ("mug", False), ("mugs", True), ("cup", False),
            ("cups", True)),
    "bowl": (("bowl", False), ("bowls", True)),
    "book": (("book", False), ("books", True)),
    "knife": (("knife", False), ("knives", True)),
    "scissors": (("scissors", False), ("scissor", False)),
    "spatula": (("spatula", False), ("spatulas", True), ("spatulae", True)),
    "toilet-paper": (("toilet paper rolls", True), ("toilet paper roll", False), ("toilet papers", True),
                     ("toilet paper", False), ("toilet rolls", True), ("toilet roll", False)),
    "phone": (("mobile phones", True), ("mobile phone", False), ("cell phones", True), ("cell phone", False),
              ("smartphones", True), ("smartphone", False), ("cellphones", True), ("cellphone", False),
              ("phones", True), ("phone", False)),
}
_ONE = {"one", "a", "an", "single", "1", "lone", "solitary"}
_TWO = {"two", "2", "both", "couple", "twin"}
_PLURAL_MEASURES = {"pairs", "rolls", "sets"}
_STOP = {"on", "under", "underneath", "beneath", "below", "left", "right", "table", "chair", "tables", "chairs",
         "and", "with", "next", "near", "beside"}
_COLOR_TERMS = {"wood": "wood", "wooden": "wood", "timber": "wood", "oak": "wood", "brown": "wood",
                "red": "red", "crimson": "red", "scarlet": "red", "blue": "blue", "navy": "blue"}
_OBJECT_TERMS = {"table": "table", "tables": "table", "chair": "chair", "chairs": "chair"}
_SIDE = re.compile(r"\b(?:(?:to|on|at)\s+(?:the\s+)?(left|right)\b|(left|right)\s+(?:of|side|hand)\b"
                   r"|(left|right)most\b)")
_UNDER = re.compile(r"\b(under|underneath|beneath|below)\b")
_ON = re.compile(r"\b(on|atop|upon|onto)\b")
_NO_RESULT = re.compile(r"\bno\s+(?:resulting\s+|result\s+|valid\s+)?image\b|\bno\s+result", re.I)
_CAPTION_FIELD = re.compile(r'"caption"\s*:\s*"((?:[^"\\]|\\.)*)"', re.S)


@dataclass
class CaptionParse:
    """Property values read from a caption (None: absent or ambiguous), or `no_result` for "No resulting image."."""

    values: dict[str, str | None] = field(default_factory=dict)
    no_result: bool = False

    @property
    def complete(self) -> bool:
        return self.no_result or all(self.values.get(p) is not None for p in PROPERTIES)

    def matches(self, reference: "CaptionParse") -> bool:
        if self.no_result or reference.no_result:
            return self.no_result and reference.no_result
        return all(self.values.get(p) is not None and self.values.get(p) == reference.values.get(p)
                   for p in PROPERTIES)

    def describe(self) -> str:
        if self.no_result:
            return NO_RESULT
        return ", ".join(f"{p}={self.values.get(p) or '?'}" for p in PROPERTIES)


def answer_caption_text(answer: str | None) -> str:
    """The caption inside an answer: the `"caption"` field of a JSON answer (the paper's format), else the text."""
    if not answer:
        return ""
    text = answer.replace("\u201c", '"').replace("\u201d", '"')
    found = _CAPTION_FIELD.search(text)
    if found:
        try:
            return json.loads(f'"{found.group(1)}"')
        except json.JSONDecodeError:
            return found.group(1)
    return text.strip()


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower().replace("-", " "))


def _subject_mentions(tokens: list[str]) -> list[tuple[int, str, bool]]:
    """(token index, subject, plural form) of every subject mention, longest terms first, no overlaps."""
    terms = sorted(((term.split(), subject, plural) for subject, forms in _SUBJECT_TERMS.items()
                    for term, plural in forms), key=lambda t: -len(t[0]))
    taken: set[int] = set()
    found = []
    for words, subject, plural in terms:
        n = len(words)
        for i in range(len(tokens) - n + 1):
            if tokens[i:i + n] == words and not taken & set(range(i, i + n)):
                taken |= set(range(i, i + n))
                found.append((i, subject, plural))
    return sorted(found)


def _number_before(tokens: list[str], start: int, subject: str, plural: bool) -> str | None:
    """The count of a subject mention from the words just before it ("two", "a pair of", plural forms)."""
    window = tokens[max(0, start - 5):start]
    for j in range(len(window) - 1, -1, -1):
        if window[j] in _STOP:
            window = window[j + 1:]
            break
    if "pair" in window and subject != "scissors":
        return "two"
    for word in reversed(window):
        if word in _TWO:
            return "two"
        if word in _ONE:
            return "one"
    if plural or any(w in _PLURAL_MEASURES for w in window):
        return "two"
    return None


def _color(tokens: list[str], object_at: list[int]) -> str | None:
    bound = set()
    for at in object_at:
        for word in tokens[max(0, at - 3):at]:
            if word in _COLOR_TERMS:
                bound.add(_COLOR_TERMS[word])
        if not bound:
            after = tokens[at + 1:at + 5]
            if after[:1] and after[0] in ("made", "of", "is", "painted", "in", "that", "which"):
                bound |= {_COLOR_TERMS[w] for w in after if w in _COLOR_TERMS}
    if not bound:
        bound = {_COLOR_TERMS[w] for w in tokens if w in _COLOR_TERMS}
    return bound.pop() if len(bound) == 1 else None


def _position(text: str) -> str | None:
    sides = {a or b or c for a, b, c in _SIDE.findall(text)}
    if sides:
        return sides.pop() if len(sides) == 1 else None
    rest = _SIDE.sub(" ", text)
    if _UNDER.search(rest):
        return "under"
    if _ON.search(rest):
        return "on"
    return None


def parse_caption(caption: str) -> CaptionParse:
    """Read the scene a caption describes; ambiguous or missing properties are None."""
    text = caption.lower().replace("-", " ")
    if _NO_RESULT.search(text):
        return CaptionParse(values={p: None for p in PROPERTIES}, no_result=True)
    tokens = _tokens(text)
    mentions = _subject_mentions(tokens)
    subjects = {subject for _, subject, _ in mentions}
    numbers = set()
    for start, subject, plural in mentions:
        number = _number_before(tokens, start, subject, plural)
        if number:
            numbers.add(number)
    object_at = [i for i, t in enumerate(tokens) if t in _OBJECT_TERMS]
    objects = {_OBJECT_TERMS[tokens[i]] for i in object_at}
    values = {
        "subject_number": numbers.pop() if len(numbers) == 1 else None,
        "subject": subjects.pop() if len(subjects) == 1 else None,
        "spatial_relation": _position(text),
        "object_color": _color(tokens, object_at),
        "object": objects.pop() if len(objects) == 1 else None,
    }
    return CaptionParse(values=values)


def parser_agrees(answer: str | None, reference: str) -> bool:
    """Whether the parser finds the answer's caption equal, property by property, to the reference caption."""
    return parse_caption(answer_caption_text(answer)).matches(parse_caption(reference))


# --- judges ----------------------------------------------------------------------------------------------------


class CarvParseJudge(Judge):
    """Deterministic: parse answer and reference captions, correct when all five properties agree."""

    id = "carv-parse"
    version = "1"

    async def score(self, episode: Episode, blobs: BlobStore | None = None) -> Verdict:
        caption = answer_caption_text(episode.answer)
        if not caption:
            return self.verdict(episode, score=0.0, correct=False, extracted=None, rationale="no answer")
        reference = parse_caption(episode.task.answers[0]) if episode.task.answers else None
        if reference is None or not reference.complete:
            return self.verdict(episode, score=0.0, correct=False, extracted=caption,
                                error=f"reference caption not parseable: {episode.task.answers[:1]!r}")
        parsed = parse_caption(caption)
        correct = parsed.matches(reference)
        differs = [p for p in PROPERTIES if parsed.values.get(p) != reference.values.get(p)]
        rationale = ("all properties match" if correct else
                     "no-result mismatch" if parsed.no_result != reference.no_result else
                     "differs in " + ", ".join(f"{p} ({parsed.values.get(p) or 'unclear'} vs "
                                               f"{reference.values.get(p)})" for p in differs))
        return self.verdict(episode, score=float(correct), correct=correct, extracted=caption,
                            rationale=rationale, raw=parsed.describe())


def carv_parse() -> CarvParseJudge:
    return CarvParseJudge()


PROMPT = """You are an evaluator for the image captioning task. Given the reference caption of the ground truth image, please analyze the correctness of the model's final answer. The model may use different words, but it must not contradict the reference in any property: the number of items, the kind of item, the position of the items relative to the furniture (on, under, left, right), the colour of the furniture (wooden, red, blue) and the kind of furniture (table, chair). If "under" is mentioned in the reference caption, it indicates that one object is positioned directly below another object in the image. Please pay special attention to this spatial relationship when evaluating the model's response. If the reference caption is "No resulting image.", the response is correct only if it also says there is no resulting image.
Here is the reference caption: *** {reference} ***
Here is the model's response: *** {response} ***
Return your analysis in the following format:
{{ "correctness": true or false, "reason": "brief explanation of why the answer is correct or incorrect" }}"""
USER_TEMPLATE = "carv.judge.user"
register_template(USER_TEMPLATE, PROMPT, ("reference", "response"))
_CORRECTNESS = re.compile(r'"?correctness"?\s*:\s*"?(true|false)\b', re.I)
_REASON = re.compile(r'"reason"\s*:\s*"((?:[^"\\]|\\.)*)"', re.S)


def _json_verdict(text: str) -> tuple[bool | None, str] | None:
    """The first JSON object in the reply with a boolean (or "true"/"false") `correctness`, as the paper's
    output format asks; None when there is none."""
    decoder = json.JSONDecoder()
    at = text.find("{")
    while at != -1:
        try:
            obj, _ = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict) and "correctness" in obj:
            value = obj["correctness"]
            if isinstance(value, str) and value.strip().lower() in ("true", "false"):
                value = value.strip().lower() == "true"
            if isinstance(value, bool):
                reason = obj.get("reason")
                return value, reason if isinstance(reason, str) else ""
        at = text.find("{", at + 1)
    return None


def parse_correctness(text: str) -> tuple[bool | None, str]:
    """(correct, reason) from the judge's reply (curly quotes read as straight ones): the first JSON object
    with a true/false `correctness`; else every `correctness: true|false` written in the text, which must
    agree; None (an invalid verdict) otherwise."""
    text = text.replace("\u201c", '"').replace("\u201d", '"')
    from_json = _json_verdict(text)
    if from_json is not None:
        return from_json
    found = {m.lower() for m in _CORRECTNESS.findall(text)}
    if len(found) != 1:
        return None, ""
    reason = _REASON.search(text)
    return found.pop() == "true", (reason.group(1) if reason else "")


def reference_image_part(path: str) -> tuple[dict[str, Any], str]:
    """The ground-truth image as an `image_url` part (the file's bytes, typed by its name) and its hash."""
    data = Path(path).read_bytes()
    mime = mimetypes.guess_type(path)[0] or "image/png"
    url = f"data:{mime};base64,{base64.b64encode(data).decode()}"
    return {"type": "image_url", "image_url": {"url": url}}, hashlib.sha256(data).hexdigest()


class CarvLLMJudge(ModelJudge):
    id = "carv-llm"
    version = "5"
    prompt_templates = (USER_TEMPLATE,)

    def __init__(self, endpoint: EndpointConfig, reference_image: bool = True, cache_path: str | None = None,
                 identical: str = "ask", prompts: PromptBook | None = None):
        if identical not in ("ask", "skip"):
            raise ValueError(f"carv-llm option identical must be 'ask' (the paper's) or 'skip', got {identical!r}")
        super().__init__(endpoint, cache_path=cache_path)
        self.reference_image = reference_image
        self.identical = identical
        self.text = (prompts or PromptBook()).text(USER_TEMPLATE)
        self.prompt_hash = text_hash(self.text)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "reference_image": self.reference_image, "identical": self.identical}

    async def score(self, episode: Episode, blobs: BlobStore | None = None) -> Verdict:
        base = dict(judge_model=self.config.model, prompt_hash=self.prompt_hash)
        caption = answer_caption_text(episode.answer)
        if not caption:
            return self.verdict(episode, score=0.0, correct=False, rationale="no answer", **base)
        reference = episode.task.answers[0] if episode.task.answers else ""
        if self.identical == "skip" and caption.strip().lower() == reference.strip().lower():
            return self.verdict(episode, score=1.0, correct=True, extracted=caption,
                                rationale="identical to the reference caption (no judge call)", **base)
        text = self.text.format(reference=reference, response=caption)
        content: str | list[dict[str, Any]] = text
        image_hash = ""
        if self.reference_image and episode.task.reference_images:
            try:
                part, image_hash = reference_image_part(episode.task.reference_images[0])
            except OSError as exc:
                return self.verdict(episode, score=0.0, correct=False, extracted=caption, **base,
                                    error=f"ground-truth image {episode.task.reference_images[0]}: {exc}")
            content = [{"type": "text", "text": text}, part]
        key = text_hash(self.config.model, self.prompt_hash, reference, caption, image_hash)
        output = self.cache.get(key)
        if output is None:
            try:
                response = await self.endpoint.chat([{"role": "user", "content": content}], temperature=0)
            except EndpointError as exc:
                return self.verdict(episode, score=0.0, correct=False, extracted=caption, error=str(exc), **base)
            output = response.content
        correct, reason = parse_correctness(output)
        if correct is None:
            return self.verdict(episode, score=0.0, correct=False, extracted=caption, raw=output,
                                error=f"judge reply has no single \"correctness\": true|false: {output[:200]!r}",
                                **base)
        await self.cache.put(key, output)
        return self.verdict(episode, score=float(correct), correct=correct, extracted=caption, rationale=reason,
                            raw=output, **base)


CARV_PROMPT_VALUES = {"paper": True, "arena": False}
"""carv-llm's older `prompt` option values -> its `reference_image` option (runs recorded before the judge's texts
became a prompt template name its request layout so: "paper", the ground-truth image attached; "arena", the text
alone; their text was the one of its value, now the prompt book's)."""


def carv_reference_image(prompt: str) -> bool:
    """The carv-llm `reference_image` value of an older run's (or command line's) `prompt` option value."""
    if prompt not in CARV_PROMPT_VALUES:
        raise ValueError(f"carv-llm option prompt (now reference_image) must be one of "
                         f"{', '.join(CARV_PROMPT_VALUES)}, got {prompt!r}")
    return CARV_PROMPT_VALUES[prompt]


def carv_llm(model: str, base_url: str, api_key_env: str | None = None, reference_image: bool = True,
             cache_path: str | None = None, timeout: float = 120.0, max_retries: int = 4,
             retry_initial: float = 1.0, max_tokens: int | None = 512, identical: str = "ask",
             prompts: PromptBook | None = None, prompt: str | None = None) -> CarvLLMJudge:
    """The carv-llm judge; `prompt` is the option's older name and values (`paper`: the ground-truth image
    attached, `arena`: the text alone), still read."""
    if prompt is not None:
        reference_image = carv_reference_image(prompt)
    endpoint = EndpointConfig(base_url=base_url, model=model, api_key_env=api_key_env, timeout=timeout,
                              max_retries=max_retries, retry_initial=retry_initial, temperature=0.0,
                              max_tokens=max_tokens)
    return CarvLLMJudge(endpoint, reference_image=reference_image, cache_path=cache_path, identical=identical,
                        prompts=prompts)


# --- metrics ---------------------------------------------------------------------------------------------------

_TABLE2 = (("Single", "single", "single"), ("Union SS", "union", "SS"), ("Union DS", "union", "DS"),
           ("Intersection SS", "intersection", "SS"), ("Intersection DS", "intersection", "DS"),
           ("Difference SS", "difference", "SS"), ("Difference DS", "difference", "DS"))


def _pct(values: list[float]) -> float | None:
    return round(100.0 * sum(values) / len(values), 4) if values else None


def carv_metrics(rows: list[tuple[Episode, Verdict | None]]) -> dict[str, Any]:
    """Accuracy over valid verdicts per cell of the paper's Table 2 and per |T| (Shared Source, Figure 6),
    and the agreement of the verdicts with the caption parser."""
    valid = [(e, v) for e, v in rows if v is not None and v.error is None]
    cells: dict[str, list[float]] = {}
    atomic: dict[str, list[float]] = {}
    for episode, verdict in valid:
        task = episode.task
        for label, operation, setting in _TABLE2:
            if task.category == operation and task.level == setting and (task.hops or 2) == 2:
                cells.setdefault(label, []).append(score_of(verdict))
        if task.level == "SS" and task.hops:
            atomic.setdefault(f"{task.category} |T|={task.hops}", []).append(score_of(verdict))
    judged = [bool(v.correct) for _, v in valid]
    parsed = [parser_agrees(e.answer, e.task.answers[0]) if e.task.answers else False for e, _ in valid]
    return {
        "accuracy": _pct([score_of(v) for _, v in valid]),
        "valid": len(valid),
        "invalid": len(rows) - len(valid),
        "table2": {label: _pct(cells[label]) for label, _, _ in _TABLE2 if label in cells},
        "table2_counts": {label: len(cells[label]) for label, _, _ in _TABLE2 if label in cells},
        "by_atomic": {k: _pct(v) for k, v in sorted(atomic.items())},
        "parser_agreement": _pct([float(x == y) for x, y in zip(judged, parsed)]),
        "parser_kappa": None if (kappa := cohen_kappa(judged, parsed)) is None else round(kappa, 4),
    }
