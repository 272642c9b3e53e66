"""Evidence verdicts (paper §4): is a correct answer supported by what the episode actually retrieved?

The paper's Validation Agent "checks whether retrieved evidence is relevant and whether the answer is supported
by visual or textual evidence" in tool settings. A verdict's `supported` is "yes", "no" or "unknown" (None when
the question does not arise: a setting without tools, or an answer judged incorrect), with `support_reason`.

- `chain_support` (deterministic, for generated worlds whose tasks carry `evidence`, the entities and values
  of the gold evidence chain): supported when every one of them appears, after the arena's normalisation, in
  what the tools returned (observation texts and result titles); else "no", naming what was never retrieved.
- `EvidenceJudge` (a model, for other data): one call with the question, the answer, the texts the tools
  returned and up to `max_images` of the images they returned (crops, thumbnails, screenshots), asking for
  `<supported>yes|no</supported><reason>...</reason>`; an unreadable reply or a failed call gives "unknown".
- A correct answer in a tool setting whose tools returned nothing is "no" without a call.
"""

from __future__ import annotations

import base64
import re
import unicodedata
from typing import Any

from arena.core.blobs import BlobStore
from arena.endpoints.client import Endpoint, EndpointError
from arena.core.judge import text_hash
from arena.core.trajectory import Episode, Observation
from arena.core.verdict import Verdict

EVIDENCE_SYSTEM = """You check whether an answer to a question about an image rests on evidence that an agent \
actually retrieved with its tools (search results, page texts, zoomed crops, reverse-image thumbnails).
Say Yes only if the retrieved evidence is relevant and, together with what the question states, establishes the \
answer; say No if the answer could not be reached from it (a guess, prior knowledge, or evidence about something \
else).
Reply in this format:
<supported>Yes/No</supported>
<reason>One or two sentences naming the evidence.</reason>"""

EVIDENCE_USER = """Question: {question}
Answer given: {answer}

Evidence the tools returned, in order:
{evidence}"""
EVIDENCE_HASH = text_hash(EVIDENCE_SYSTEM, EVIDENCE_USER)
MAX_EVIDENCE_CHARS = 12_000
_SUPPORTED = re.compile(r"<supported>\s*(yes|no)\s*</supported>", re.I)
_REASON = re.compile(r"<reason>(.*?)</reason>", re.S | re.I)


def normalize_answer(text: str) -> str:
    """Text for containment tests: NFKC, lower case, every punctuation or symbol character a space, words
    separated by single spaces."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in text)
    return " ".join(text.split())


def in_tool_setting(episode: Episode) -> bool:
    return bool(episode.tools)


def retrieved_texts(episode: Episode) -> list[str]:
    """Text each successful tool call returned, with the titles of its hits."""
    out = []
    for step in episode.steps:
        obs = step.observation
        if obs is None or obs.error:
            continue
        text = _returned_text(obs)
        if text:
            out.append(f"[{step.tool}] {text}")
    return out


def _returned_text(obs: Observation) -> str:
    titles = [str(h.get("title")) for h in obs.data.get("hits") or [] if isinstance(h, dict) and h.get("title")]
    return "\n".join([obs.text, *titles]).strip()


def retrieved_images(episode: Episode) -> list[str]:
    return [b for s in episode.steps if s.observation is not None and not s.observation.error
            for b in s.observation.images]


def retrieved_anything(episode: Episode) -> bool:
    """Whether `retrieved_texts` or `retrieved_images` would be non-empty (stops at the first step that returned
    something, building neither)."""
    for step in episode.steps:
        obs = step.observation
        if obs is not None and not obs.error and (obs.images or _returned_text(obs)):
            return True
    return False


def attach(verdict: Verdict, supported: str | None, reason: str | None) -> Verdict:
    return verdict.model_copy(update={"supported": supported, "support_reason": reason})


def chain_support(episode: Episode) -> tuple[str, str] | None:
    """("yes"|"no", reason) against the task's gold evidence; None when the task carries none."""
    facts = [f for f in episode.task.evidence if normalize_answer(f)]
    if not facts:
        return None
    seen = " " + " ".join(normalize_answer(t) for t in retrieved_texts(episode)) + " "
    missing = [f for f in facts if f" {normalize_answer(f)} " not in seen]
    if not missing:
        return "yes", f"every gold evidence item was retrieved ({len(facts)})"
    return "no", "never retrieved: " + ", ".join(missing[:8]) + (" ..." if len(missing) > 8 else "")


def deterministic(verdict: Verdict, episode: Episode) -> Verdict:
    """Attach a support decision that needs no model: not applicable, nothing retrieved, or the gold chain."""
    if not in_tool_setting(episode) or verdict.error is not None or not verdict.correct:
        return verdict
    if not retrieved_anything(episode):
        return attach(verdict, "no", "the tools returned nothing")
    found = chain_support(episode)
    return attach(verdict, *found) if found is not None else verdict


class EvidenceJudge:
    """Asks a model whether a correct answer is supported by the retrieved evidence (see the module docstring)."""

    def __init__(self, endpoint: Endpoint, max_images: int = 6):
        self.endpoint = endpoint
        self.max_images = max_images

    async def decide(self, episode: Episode, answer: str, blobs: BlobStore | None,
                     image_jpeg: Any = None) -> tuple[str, str]:
        texts = "\n\n".join(retrieved_texts(episode)) or "(no text)"
        if len(texts) > MAX_EVIDENCE_CHARS:
            texts = texts[:MAX_EVIDENCE_CHARS] + f"\n[... {len(texts) - MAX_EVIDENCE_CHARS} characters not shown]"
        user = EVIDENCE_USER.format(question=episode.task.question, answer=answer, evidence=texts)
        content: list[dict[str, Any]] = [{"type": "text", "text": user}]
        if blobs is not None:
            for blob_id in retrieved_images(episode)[-self.max_images:]:
                try:
                    raw = blobs.get(blob_id)
                    data = image_jpeg(raw) if image_jpeg is not None else raw
                except (OSError, ValueError):
                    continue
                mime = "jpeg" if image_jpeg is not None else blob_id.rsplit(".", 1)[-1].replace("jpg", "jpeg")
                content.append({"type": "image_url",
                                "image_url": {"url": f"data:image/{mime};base64,{base64.b64encode(data).decode()}"}})
        messages = [{"role": "system", "content": EVIDENCE_SYSTEM}, {"role": "user", "content": content}]
        try:
            response = await self.endpoint.chat(messages, temperature=0)
        except EndpointError as exc:
            return "unknown", f"evidence check failed: {exc}"
        found = {m.lower() for m in _SUPPORTED.findall(response.content)}
        if len(found) != 1:
            return "unknown", f"unreadable evidence reply: {response.content[:200]!r}"
        reason = _REASON.search(response.content)
        return ("yes" if found.pop() == "yes" else "no"), (reason.group(1).strip() if reason else "")

    async def check(self, verdict: Verdict, episode: Episode, answer: str, blobs: BlobStore | None,
                    image_jpeg: Any = None) -> Verdict:
        """The verdict with its support decision: deterministic when possible, else one model call."""
        verdict = deterministic(verdict, episode)
        if verdict.supported is not None or not in_tool_setting(episode) or verdict.error is not None \
                or not verdict.correct:
            return verdict
        return attach(verdict, *await self.decide(episode, answer, blobs, image_jpeg))
