"""`normalized`: exact match after normalisation against any accepted answer (VistaArena's first check)."""

from __future__ import annotations

import re
import unicodedata

from arena.blobs import BlobStore
from arena.judge import Judge, register_judge
from arena.trajectory import Episode
from arena.verdict import Verdict

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_SPACES = re.compile(r"\s+")


class _Punctuation(dict):
    """`str.translate` table deleting Unicode punctuation (categories P*), filled as characters are first seen."""

    def __missing__(self, code: int) -> int | None:
        value = None if unicodedata.category(chr(code)).startswith("P") else code
        self[code] = value
        return value


_PUNCTUATION = _Punctuation()


def normalize_answer(text: str) -> str:
    """Lowercase, drop punctuation and the articles a/an/the, collapse white space."""
    text = unicodedata.normalize("NFKC", text).lower().translate(_PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return _SPACES.sub(" ", text).strip()


def normalized_match(answer: str | None, truths: list[str]) -> str | None:
    """The first accepted truth the answer equals after normalisation, else None."""
    if answer is None:
        return None
    norm = normalize_answer(answer)
    if not norm:
        return None
    return next((t for t in truths if normalize_answer(t) == norm), None)


class NormalizedJudge(Judge):
    id = "normalized"
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
