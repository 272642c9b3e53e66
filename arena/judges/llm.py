"""`llm`: a separate model judges semantic equivalence (VistaArena's Validation Agent), as the paper ran it.

Published flow (ahang0712/vistahop `evaluation/run_vistahop_eval.py`, `llm_judge_score`), in our words: the
answer is extracted from the final output with the published rule (`arena.judges.normalized.extract_answer_published`);
a published exact match short-cuts the call; otherwise one call per accepted answer, in order, stopping at the
first Yes. Each call has a system message (the grading principles) and a user message (question, one reference
answer, the extracted answer) followed by the item's image, smart-resized (factor 32, 65,536 to 8,294,400
pixels, bicubic) and sent as JPEG quality 85; temperature 0. An empty extracted answer is still judged, as in the
original. `with_image=False` sends text only. `rules="strict"` uses the arena's own answer and normalisation
instead (the episode's answer; no call for an empty one). In tool settings a correct verdict also gets an
evidence verdict (`judges/evidence.py`; `evidence=False` turns it off).

The judge must reply `<judge>Yes|No</judge><reason>...</reason>`. `verdict="first"` (the published reading,
`--protocol original`) takes the first verdict tag anywhere in the reply; `verdict="single"` (`--protocol arena`)
reads the text after the last `</think>` and needs exactly one distinct verdict. A reply with no verdict is a judge
error (scored 0, counted, fixable by re-judging) unless a later accepted answer gets a Yes. Under `original` the
evidence call is off (the published script has none; `--judge-option evidence=true` turns it on).

The two texts are templates `vistahop.judge.system` and `vistahop.judge.user` (placeholders `{question}`,
`{reference}`, `{answer}`): the arena's wording below, or a user's prompts file (`arena.core.prompt_book`,
`arena run --prompts FILE`), e.g. with the published text, which the project does not copy. Calls are cached by
(judge model, prompt hash, question, truth, answer, image), in memory and, when `cache_path` is set, in a
JSON-lines file that survives restarts.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import math
import re
import threading
from pathlib import Path
from typing import Any, Awaitable, Callable

from PIL import Image

from arena.core.blobs import BlobStore
from arena.endpoints.client import REASONING_MODEL, Endpoint, EndpointConfig, EndpointError, RejectedError
from arena.core.jsonl import append_line
from arena.core.judge import Judge, register_judge, text_hash
from arena.core.trajectory import Episode, Usage
from arena.core.verdict import Verdict

from .evidence import EvidenceJudge
from arena.core.prompt_book import PromptBook, register_template
from .protocols import register_arena_variant, register_original_variant
from .normalized import em_published, extract_answer_published, final_output, normalized_match

SYSTEM_PROMPT = """You grade a model's answer to a question about an image against a reference answer.
Apply these principles:
1. Take the image, the question and the reference answer together before judging the answer.
2. Decide strictly Yes or No: is the answer factually right and in agreement with the reference?
3. An answer that is a more specific form of the reference is correct.
4. An answer with every key fact plus minor extra details is correct when the extra details are true.
5. An answer that contradicts, changes or leaves out a critical part of the reference is incorrect.
6. Numbers are correct when equal after a change of units.
7. For a person's name, first and last name must be right; a correct extra middle name is fine.
8. A yes/no question needs exactly "Yes" or "No" as in the reference.
9. When the text alone settles the question, you may ignore the image; look at it only when needed.
10. If several reference answers are possible, matching any one of them by these rules is correct.
11. For multiple-choice questions (A, B, C, D), be lenient: the right letter with extra text or formatting is correct.
12. If the answer clearly intends the right choice letter anywhere in it, it is correct.
13. Ignore formatting such as extra brackets or parentheses and minor wording differences when the core answer is right.

Reply in this format:
<judge>Yes/No</judge>
<reason>Why the answer is or is not correct.</reason>"""

USER_PROMPT = """Grade the model's answer using the image, the question and the reference answer.
Question: {question}
Reference answer: {reference}
Model answer: {answer}

Instructions
Decide whether the model answer is correct under the principles above and give a Yes/No verdict with a short
justification.

Reply format
<judge>Yes/No</judge>
<reason>Your reasoning under the principles.</reason>"""

PROMPT = SYSTEM_PROMPT + "\n\n" + USER_PROMPT
JUDGE_FACTOR = 32
JUDGE_MIN_PIXELS = 65_536
JUDGE_MAX_PIXELS = 8_294_400
JUDGE_JPEG_QUALITY = 85
IMAGE_URLS_KEPT = 8

_VERDICT = re.compile(r"<judge>\s*(yes|no)\s*</judge>", re.I)
_FIRST_VERDICT = re.compile(r"<judge>\s*(yes|no)\s*</judge>", re.I | re.S)
SYSTEM_TEMPLATE = "vistahop.judge.system"
USER_TEMPLATE = "vistahop.judge.user"
register_template(SYSTEM_TEMPLATE, SYSTEM_PROMPT)
register_template(USER_TEMPLATE, USER_PROMPT, ("question", "reference", "answer"))
_REASON = re.compile(r"<reason>(.*?)</reason>", re.S | re.I)
PROMPT_HASH = text_hash(PROMPT)


# Room for a thinking judge's thought before its verdict (the original evaluator allows 8192).
JUDGE_MAX_TOKENS = 8192


# vLLM 0.10-0.11 (vllm/entrypoints/openai/serving_engine.py, _validate_input) refuses a completion limit
# larger than what the context leaves: "'max_tokens' or 'max_completion_tokens' is too large: 8192. This
# model's maximum context length is 4096 tokens and your request has 300 input tokens (8192 > 4096 - 300)."
_TOO_LARGE = re.compile(r"maximum context length is (\d+) tokens and your request has (\d+) input tokens", re.I)


def completion_room(message: str) -> int | None:
    """The completion limit a small-context server can take, from its refusal of a larger one."""
    match = _TOO_LARGE.search(message)
    room = int(match.group(1)) - int(match.group(2)) if match else 0
    return room if room > 0 else None


def parse_judgement(text: str) -> tuple[bool | None, str]:
    """(True/False, reason) from `<judge>Yes|No</judge><reason>..</reason>`; None when absent or ambiguous.
    A thinking judge's thought is skipped: only the text after its last `</think>` counts."""
    lowered = text.lower()
    if "</think>" in lowered:
        text = text[lowered.rfind("</think>") + len("</think>"):]
    found = {m.lower() for m in _VERDICT.findall(text)}
    reason = _REASON.search(text)
    if len(found) != 1:
        return None, ""
    return found.pop() == "yes", (reason.group(1).strip() if reason else "")


def parse_first_judgement(text: str) -> tuple[bool | None, str]:
    """(True/False, reason) as the published evaluator reads a reply (`llm_judge_score`, ahang0712/vistahop
    evaluation/run_vistahop_eval.py @1d6a961): the first `<judge>Yes|No</judge>` anywhere in it, thinking
    included, decides; None when there is none."""
    match = _FIRST_VERDICT.search(text)
    if match is None:
        return None, ""
    reason = _REASON.search(text[match.end():])
    return match.group(1).lower() == "yes", (reason.group(1).strip() if reason else "")


class JudgeCache:
    """Judge outputs by key, in memory and appended (fsynced) to `path`. `append(path, line)` does the write off the
    event loop (default: a thread of asyncio's pool, one write and fsync at a time; a run sets its run writer's
    `append_async`, which writes the lines in order and fsyncs them before the commit of the episode or verdict they
    were made for, with no wait). No lock is held across the write: puts made at the same moment do not queue."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else None
        self.append: Callable[[Path, bytes], Awaitable[Any]] = self._append_in_thread
        self._memory: dict[str, str] = {}
        self._writing = threading.Lock()  # the default append's: one `append_line` at a time (each cuts a torn tail)
        if self.path and self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                    self._memory[row["key"]] = row["output"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue

    def get(self, key: str) -> str | None:
        return self._memory.get(key)

    async def put(self, key: str, output: str) -> None:
        self._memory[key] = output
        if self.path:
            await self.append(self.path, (json.dumps({"key": key, "output": output}) + "\n").encode())

    async def _append_in_thread(self, path: Path, line: bytes) -> None:
        await asyncio.to_thread(self._append_one, path, line)

    def _append_one(self, path: Path, line: bytes) -> None:
        with self._writing:
            append_line(path, line)


class ModelJudge(Judge):
    """A judge that asks an OpenAI-compatible model: its endpoint, its call cache, and the hash of
    the prompt its verdicts depend on (`prompt_hash`, set by each subclass)."""

    prompt_hash: str = ""

    def __init__(self, endpoint: EndpointConfig, cache_path: str | Path | None = None):
        self.config = endpoint
        self.endpoint = Endpoint(endpoint)
        self.cache = JudgeCache(cache_path)

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "version": self.version, "model": self.config.model, "prompt_hash": self.prompt_hash}

    async def aclose(self) -> None:
        await self.endpoint.aclose()


def judge_image_size(width: int, height: int) -> tuple[int, int]:
    """(width, height) the published judge resizes an image to: each side a multiple of 32, the area brought
    into [65,536, 8,294,400] pixels (truncating the scaled side before rounding, as the original does)."""
    if max(width, height) / min(width, height) > 200:
        raise ValueError(f"image aspect ratio {max(width, height) / min(width, height):.1f} exceeds 200")
    f = JUDGE_FACTOR
    h, w = max(f, round(height / f) * f), max(f, round(width / f) * f)
    if h * w > JUDGE_MAX_PIXELS:
        beta = math.sqrt(height * width / JUDGE_MAX_PIXELS)
        h, w = math.floor(int(height / beta) / f) * f, math.floor(int(width / beta) / f) * f
    elif h * w < JUDGE_MIN_PIXELS:
        beta = math.sqrt(JUDGE_MIN_PIXELS / (height * width))
        h, w = math.ceil(int(height * beta) / f) * f, math.ceil(int(width * beta) / f) * f
    return w, h


def judge_image_jpeg(data: bytes) -> bytes:
    """The task image as the published judge sends it: RGB, smart-resized (bicubic), JPEG quality 85."""
    image = Image.open(io.BytesIO(data))
    image.load()
    if image.mode != "RGB":
        image = image.convert("RGB")
    size = judge_image_size(*image.size)
    if size != image.size:
        image = image.resize(size, Image.BICUBIC)
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=JUDGE_JPEG_QUALITY)
    return out.getvalue()


class LLMJudge(ModelJudge):
    id = "llm"
    version = "2"
    prompt_hash = PROMPT_HASH

    prompt_templates = (SYSTEM_TEMPLATE, USER_TEMPLATE)

    def __init__(self, endpoint: EndpointConfig, with_image: bool = True, cache_path: str | Path | None = None,
                 rules: str = "published", evidence: bool = True, verdict: str = "first",
                 prompts: PromptBook | None = None):
        if rules not in ("published", "strict"):
            raise ValueError(f"rules must be 'published' or 'strict', got {rules!r}")
        if verdict not in ("first", "single"):
            raise ValueError(f"verdict must be 'first' or 'single', got {verdict!r}")
        super().__init__(endpoint, cache_path)
        self.with_image = with_image
        self.rules = rules
        self._image_urls: dict[str, str] = {}  # the last IMAGE_URLS_KEPT task images, encoded: repeats, budgets
        # and settings of one task share them (a 4K decode, resize and JPEG encode is ~0.25 s)
        self.verdict_rule = verdict
        self.evidence = EvidenceJudge(self.endpoint) if evidence else None
        book = prompts or PromptBook()
        self.system_text, self.user_text = book.format(SYSTEM_TEMPLATE), book.text(USER_TEMPLATE)
        self.prompt_hash = text_hash(self.system_text + "\n\n" + self.user_text)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "with_image": self.with_image, "rules": self.rules,
                "evidence": self.evidence is not None, "verdict": self.verdict_rule}

    def read_verdict(self, text: str) -> tuple[bool | None, str]:
        """The reply's verdict under this judge's reading (`verdict` option)."""
        return parse_first_judgement(text) if self.verdict_rule == "first" else parse_judgement(text)

    async def score(self, episode: Episode, blobs: BlobStore | None = None) -> Verdict:
        """The correctness verdict, then (tool settings, correct answers) whether the evidence supports it;
        `usage` holds the tokens of the correctness calls."""
        spent: list[Usage] = []
        verdict = await self.judge_answer(episode, blobs, spent)
        if spent:
            verdict.usage = sum(spent[1:], spent[0])
        if self.evidence is None:
            return verdict
        return await self.evidence.check(verdict, episode, verdict.extracted or "", blobs, judge_image_jpeg)

    def candidate(self, episode: Episode) -> str | None:
        """The answer the judge sees: the published extraction of the final output (None only under strict)."""
        if self.rules == "strict":
            return episode.answer or None
        return extract_answer_published(final_output(episode))

    def image_part(self, episode: Episode, blobs: BlobStore | None) -> dict[str, Any] | None:
        if not self.with_image or blobs is None or not episode.images:
            return None
        ref = episode.images[0]  # a content hash: the same ref is the same image in any run
        url = self._image_urls.pop(ref, None)
        if url is None:
            url = f"data:image/jpeg;base64,{base64.b64encode(judge_image_jpeg(blobs.get(ref))).decode()}"
        self._image_urls[ref] = url  # most recently used last
        while len(self._image_urls) > IMAGE_URLS_KEPT:
            del self._image_urls[next(iter(self._image_urls))]
        return {"type": "image_url", "image_url": {"url": url}}

    async def _ask(self, episode: Episode, truth: str, answer: str, image: dict[str, Any] | None,
                   spent: list[Usage] | None = None) -> str:
        key = text_hash(self.config.model, self.prompt_hash, episode.task.question, truth, answer,
                        str(image is not None) + (episode.images[0] if image is not None else ""))
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        user = self.user_text.format(question=episode.task.question, reference=truth, answer=answer)
        content: Any = [{"type": "text", "text": user}, image] if image is not None else user
        messages = [{"role": "system", "content": self.system_text}, {"role": "user", "content": content}]
        try:
            response = await self.endpoint.chat(messages)
        except RejectedError as exc:
            room = completion_room(exc.server_message)
            if room is None:
                raise
            field = self.config.token_param
            if field == "auto":
                field = "max_completion_tokens" if REASONING_MODEL.match(self.config.model) else "max_tokens"
            response = await self.endpoint.chat(messages, **{field: room})
        if spent is not None:
            spent.append(response.usage)
        if response.finish_reason == "length":
            raise EndpointError(f"{self.config.where()}: the judge's reply was cut at its token limit "
                                f"(max_tokens={self.config.max_tokens}, finish_reason length); raise it with "
                                "--judge-option max_tokens=N")
        if self.read_verdict(response.content)[0] is not None:
            await self.cache.put(key, response.content)
        return response.content

    async def judge_answer(self, episode: Episode, blobs: BlobStore | None = None,
                           spent: list[Usage] | None = None) -> Verdict:
        answer = self.candidate(episode)
        base = dict(judge_model=self.config.model, prompt_hash=self.prompt_hash, extracted=answer)
        if answer is None:
            return self.verdict(episode, score=0.0, correct=False, rationale="no answer", **base)
        match = (normalized_match(answer, episode.task.answers) if self.rules == "strict"
                 else em_published(answer, episode.task.answers))
        if match is not None:
            return self.verdict(episode, score=1.0, correct=True,
                                rationale=f"matches {match!r} after normalisation (no judge call)", **base)
        try:
            image = self.image_part(episode, blobs)
        except (OSError, ValueError) as exc:
            return self.verdict(episode, score=0.0, correct=False, error=f"cannot prepare the task image: {exc}",
                                **base)
        outputs: list[str] = []
        unreadable: str | None = None
        reason = ""
        for truth in episode.task.answers:
            try:
                output = await self._ask(episode, truth, answer, image, spent)
            except EndpointError as exc:
                return self.verdict(episode, score=0.0, correct=False, error=str(exc), raw="\n".join(outputs), **base)
            outputs.append(output)
            yes, said = self.read_verdict(output)
            if yes is None:
                unreadable = unreadable or output
                continue
            reason = said
            if yes:
                return self.verdict(episode, score=1.0, correct=True, rationale=reason, raw="\n".join(outputs), **base)
        if unreadable is not None:
            return self.verdict(episode, score=0.0, correct=False, raw="\n".join(outputs),
                                error=f"judge output has no single <judge>Yes|No</judge>: {unreadable[:200]!r}",
                                **base)
        return self.verdict(episode, score=0.0, correct=False, rationale=reason if outputs else "no accepted answers",
                            raw="\n".join(outputs), **base)


@register_judge("llm")
def llm(model: str, base_url: str, api_key_env: str | None = None, with_image: bool = True,
        rules: str = "published", evidence: bool = True, cache_path: str | None = None, timeout: float = 120.0, max_retries: int = 4,
        retry_initial: float = 1.0, max_tokens: int | None = JUDGE_MAX_TOKENS, temperature: float | None = 0.0,
        token_param: str = "auto", reasoning_effort: str | None = None, verdict: str = "first",
        prompts: PromptBook | None = None) -> LLMJudge:
    """`temperature` and `max_tokens` are sent only when not None (`--judge-option temperature=null`);
    OpenAI reasoning models never get a temperature and get `max_completion_tokens`."""
    endpoint = EndpointConfig(base_url=base_url, model=model, api_key_env=api_key_env, timeout=timeout,
                              max_retries=max_retries, retry_initial=retry_initial, temperature=temperature,
                              max_tokens=max_tokens, token_param=token_param,  # type: ignore[arg-type]
                              reasoning_effort=reasoning_effort)
    return LLMJudge(endpoint, with_image=with_image, cache_path=cache_path, rules=rules, evidence=evidence,
                    verdict=verdict, prompts=prompts)


# --protocol arena: one distinct verdict after the thinking (docs/protocols.md); --protocol original: no evidence
# call (the published script makes none).
register_arena_variant("llm", verdict="single")
register_original_variant("llm", evidence=False)
