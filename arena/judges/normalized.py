"""`normalized`: exact match after normalisation against any accepted answer (VistaArena's first check).

Published rules (default; ahang0712/vistahop `evaluation/run_vistahop_eval.py`, `extract_answer_allow_no_tag`,
`normalize_answer`, `em_check`), in our words:

- The text scored is the model's final output as the original pipeline records it: the last turn, ended by
  `<|im_end|>` (`final_output`). Only what follows the last `<|im_start|>assistant` counts, then only what
  follows the last `</think>` or `</thinking>` (lower case, exactly these tags).
- The answer is the content of the last `<answer>...</answer>` (lower-case tags, may span lines), trimmed;
  without such a block, the text before the first `<|im_end|>`, trimmed.
- Normalisation: lower-case, drop every ASCII punctuation character (Python's `string.punctuation`; other
  punctuation such as curly quotes or full-width signs stays), drop the words a/an/the unless the whole text is
  the single word "a", collapse white space. No Unicode normalisation.
- Correct when the normalised answer equals the normalised form of any accepted answer (an empty answer equals
  an empty truth).

`normalized-strict` keeps the arena's own rule: the episode's answer (case-insensitive tags), Unicode NFKC,
every Unicode punctuation character dropped, articles always dropped, an empty answer never correct.
"""

from __future__ import annotations

import re
import string
import unicodedata

from arena.core.blobs import BlobStore
from arena.core.judge import Judge, register_judge
from arena.core.trajectory import Episode
from arena.core.verdict import Verdict

from .evidence import deterministic

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_SPACES = re.compile(r"\s+")
_THINK_END = re.compile(r"</think(?:ing)?>")
_ANSWER_BLOCK = re.compile(r"<answer>(.*?)</answer>", re.S)
ASSISTANT_MARK = "<|im_start|>assistant"
TURN_END = "<|im_end|>"
_DROP_ASCII_PUNCT = str.maketrans("", "", string.punctuation)


def final_output(episode: Episode) -> str:
    """The final model output as the original pipeline records it: the last turn's text plus `<|im_end|>`.

    An episode whose last turn is a tool call (the budget ran out with no final-answer turn) ends, in the
    original's record, with an opened assistant turn: nothing after it. A turn with no text but an answer
    (an agent answering through a native tool) is written as `<answer>...</answer>`, as is the answer of a
    record that keeps no steps."""
    if not episode.steps:
        return "" if episode.answer is None else f"<answer>{episode.answer}</answer>{TURN_END}"
    last = episode.steps[-1]
    if last.action == "invalid" and (last.error or "").startswith("crash:"):
        return ""  # protocol original: the published pipeline failed on this sample and scored it 0
    if last.action == "tool_call" and not last.final_turn:
        return f"{TURN_END}\n{ASSISTANT_MARK}\n"
    text = last.output or (f"<answer>{last.answer}</answer>" if last.answer else "")
    return text + TURN_END


def visible_tail(text: str) -> str:
    """What follows the last assistant marker, then what follows the last `</think>`/`</thinking>`."""
    text = text.rsplit(ASSISTANT_MARK, 1)[-1]
    return _THINK_END.split(text)[-1]


def extract_answer_published(text: str | None) -> str:
    """The published answer extraction: last `<answer>` block, else the text up to the first `<|im_end|>`."""
    if not text:
        return ""
    tail = visible_tail(text)
    blocks = _ANSWER_BLOCK.findall(tail)
    if blocks:
        return blocks[-1].strip()
    return tail.split(TURN_END)[0].strip()


def normalize_published(text: str) -> str:
    """The published normalisation (ASCII punctuation, the lone-"a" exception, no Unicode folding)."""
    text = text.lower().translate(_DROP_ASCII_PUNCT)
    if text.strip().lower() != "a":
        text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def em_published(answer: str | None, truths: list[str]) -> str | None:
    """The first accepted truth the answer equals under the published normalisation, else None."""
    if answer is None:
        return None
    norm = normalize_published(answer)
    return next((t for t in truths if normalize_published(t) == norm), None)


class _Punctuation(dict):
    """`str.translate` table deleting Unicode punctuation (categories P*), filled as characters are first seen."""

    def __missing__(self, code: int) -> int | None:
        value = None if unicodedata.category(chr(code)).startswith("P") else code
        self[code] = value
        return value


_PUNCTUATION = _Punctuation()


def normalize_answer(text: str) -> str:
    """The arena's strict normalisation: NFKC, lowercase, drop Unicode punctuation and a/an/the, collapse spaces."""
    text = unicodedata.normalize("NFKC", text).lower().translate(_PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return _SPACES.sub(" ", text).strip()


def normalized_match(answer: str | None, truths: list[str]) -> str | None:
    """The first accepted truth the answer equals after the strict normalisation, else None."""
    if answer is None:
        return None
    norm = normalize_answer(answer)
    if not norm:
        return None
    return next((t for t in truths if normalize_answer(t) == norm), None)


class NormalizedJudge(Judge):
    """The published exact match (see the module docstring)."""

    id = "normalized"
    version = "2"

    async def score(self, episode: Episode, blobs: BlobStore | None = None) -> Verdict:
        answer = extract_answer_published(final_output(episode))
        match = em_published(answer, episode.task.answers)
        rationale = (f"matches {match!r} after normalisation" if match is not None
                     else "matches no accepted answer after normalisation")
        return deterministic(self.verdict(episode, score=1.0 if match is not None else 0.0, correct=match is not None,
                                          extracted=answer, rationale=rationale), episode)


class StrictNormalizedJudge(Judge):
    """The arena's own exact match (Unicode-aware, case-insensitive tags)."""

    id = "normalized-strict"
    version = "1"

    async def score(self, episode: Episode, blobs: BlobStore | None = None) -> Verdict:
        match = normalized_match(episode.answer, episode.task.answers)
        rationale = (f"matches {match!r} after normalisation" if match is not None
                     else "no answer" if episode.answer is None else "matches no accepted answer after normalisation")
        return self.verdict(episode, score=1.0 if match is not None else 0.0, correct=match is not None,
                            extracted=episode.answer, rationale=rationale)


@register_judge("normalized")
def normalized() -> NormalizedJudge:
    return NormalizedJudge()


@register_judge("normalized-strict")
def normalized_strict() -> StrictNormalizedJudge:
    return StrictNormalizedJudge()
