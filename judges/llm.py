"""`llm`: a separate model judges semantic equivalence (VistaArena's Validation Agent).

A normalised exact match against any accepted answer short-cuts the call;
otherwise one call per accepted answer until one says Yes. The judge must reply
`<judge>Yes|No</judge><reason>...</reason>`; anything else is a judge error
(scored 0, counted, fixable by re-judging). Calls are cached by (judge model,
prompt hash, question, truth, answer), in memory and, when `cache_path` is set,
in a JSON-lines file that survives restarts.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from pathlib import Path
from typing import Any

from arena.blobs import BlobStore
from arena.endpoint import Endpoint, EndpointConfig, EndpointError
from arena.jsonl import append_line
from arena.judge import Judge, register_judge, text_hash
from arena.trajectory import Episode
from arena.verdict import Verdict

from .normalized import normalized_match

PROMPT = """You are grading an answer to a question about an image against a reference answer.

Question: {question}
Reference answer: {truth}
Candidate answer: {answer}

Decide whether the candidate answer means the same as the reference answer:
- A more specific form of the reference is correct (for example "Lyon, France" for "Lyon").
- An answer that contradicts the reference, changes it, or leaves out a critical part of it is incorrect.
- Numbers that are equal once units are converted are correct.
- A person's or organisation's name must be given in full enough to identify it.
- A yes/no answer must match the reference exactly.
- If the candidate gives several answers, it is correct only if it commits to one that matches.
- Ignore formatting, capitalisation and punctuation.

Reply in exactly this form and nothing else:
<judge>Yes</judge><reason>one sentence</reason>
or
<judge>No</judge><reason>one sentence</reason>"""

_VERDICT = re.compile(r"<judge>\s*(yes|no)\s*</judge>", re.I)
_REASON = re.compile(r"<reason>(.*?)</reason>", re.S | re.I)
PROMPT_HASH = text_hash(PROMPT)


def parse_judgement(text: str) -> tuple[bool | None, str]:
    """(True/False, reason) from `<judge>Yes|No</judge><reason>..</reason>`; None when absent or ambiguous."""
    found = {m.lower() for m in _VERDICT.findall(text)}
    reason = _REASON.search(text)
    if len(found) != 1:
        return None, ""
    return found.pop() == "yes", (reason.group(1).strip() if reason else "")


class JudgeCache:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else None
        self._memory: dict[str, str] = {}
        self._lock = asyncio.Lock()
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
        async with self._lock:
            self._memory[key] = output
            if self.path:
                append_line(self.path, (json.dumps({"key": key, "output": output}) + "\n").encode())


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


class LLMJudge(ModelJudge):
    id = "llm"
    version = "1"
    prompt_hash = PROMPT_HASH

    def __init__(self, endpoint: EndpointConfig, with_image: bool = False, cache_path: str | Path | None = None):
        super().__init__(endpoint, cache_path)
        self.with_image = with_image

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "with_image": self.with_image}

    async def _ask(self, episode: Episode, truth: str, blobs: BlobStore | None) -> str:
        answer = episode.answer or ""
        key = text_hash(self.config.model, PROMPT_HASH, episode.task.question, truth, answer,
                        str(self.with_image and bool(episode.images)))
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        prompt = PROMPT.format(question=episode.task.question, truth=truth, answer=answer)
        content: Any = prompt
        if self.with_image and blobs is not None and episode.images:
            data = base64.b64encode(blobs.get(episode.images[0])).decode()
            ext = episode.images[0].rsplit(".", 1)[-1].replace("jpg", "jpeg")
            content = [{"type": "image_url", "image_url": {"url": f"data:image/{ext};base64,{data}"}},
                       {"type": "text", "text": prompt}]
        response = await self.endpoint.chat([{"role": "user", "content": content}], temperature=0)
        if parse_judgement(response.content)[0] is not None:
            await self.cache.put(key, response.content)
        return response.content

    async def score(self, episode: Episode, blobs: BlobStore | None = None) -> Verdict:
        base = dict(judge_model=self.config.model, prompt_hash=PROMPT_HASH, extracted=episode.answer)
        if not episode.answer:
            return self.verdict(episode, score=0.0, correct=False, rationale="no answer", **base)
        match = normalized_match(episode.answer, episode.task.answers)
        if match is not None:
            return self.verdict(episode, score=1.0, correct=True,
                                rationale=f"matches {match!r} after normalisation (no judge call)", **base)
        outputs = []
        for truth in episode.task.answers:
            try:
                output = await self._ask(episode, truth, blobs)
            except EndpointError as exc:
                return self.verdict(episode, score=0.0, correct=False, error=str(exc), raw="\n".join(outputs), **base)
            outputs.append(output)
            yes, reason = parse_judgement(output)
            if yes is None:
                return self.verdict(episode, score=0.0, correct=False, raw="\n".join(outputs),
                                    error=f"judge output has no single <judge>Yes|No</judge>: {output[:200]!r}",
                                    **base)
            if yes:
                return self.verdict(episode, score=1.0, correct=True, rationale=reason, raw="\n".join(outputs), **base)
        return self.verdict(episode, score=0.0, correct=False, rationale=reason if outputs else "no accepted answers",
                            raw="\n".join(outputs), **base)


@register_judge("llm")
def llm(model: str, base_url: str, api_key_env: str | None = None, with_image: bool = False,
        cache_path: str | None = None, timeout: float = 120.0, max_retries: int = 4,
        retry_initial: float = 1.0, max_tokens: int | None = 512) -> LLMJudge:
    endpoint = EndpointConfig(base_url=base_url, model=model, api_key_env=api_key_env, timeout=timeout,
                              max_retries=max_retries, retry_initial=retry_initial, temperature=0.0,
                              max_tokens=max_tokens)
    return LLMJudge(endpoint, with_image=with_image, cache_path=cache_path)
