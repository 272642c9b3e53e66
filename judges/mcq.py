"""`mcq`: extract an option letter A–D and compare it exactly with the truth.

Extraction order: the `<answer>` content (the episode's answer), then `\\boxed{}`,
then "Answer: (X)"-style phrases, then a lone letter.
"""

from __future__ import annotations

import re

from arena.blobs import BlobStore
from arena.judge import Judge, register_judge
from arena.trajectory import Episode
from arena.verdict import Verdict

LETTERS = "ABCD"
_BOXED = re.compile(r"\\boxed\{\s*\(?([A-Da-d])\)?\s*\}")
_PHRASE = re.compile(r"(?:final\s+)?answer\s*(?:is|:)?\s*[:\-]?\s*\(?\**\s*([A-D])\b", re.I)
_LONE = re.compile(r"^\s*\(?([A-D])\)?(?:[.:)]\s.*|[.:)]?\s*)$", re.S)
_ANY = re.compile(r"\b([A-D])\b")


def extract_choice(text: str | None) -> str | None:
    """The option letter a response commits to, or None."""
    if not text:
        return None
    for pattern in (_BOXED, _PHRASE, _LONE):
        found = pattern.findall(text)
        if found:
            return found[-1].upper()
    letters = set(_ANY.findall(text))
    return letters.pop() if len(letters) == 1 else None


def truth_letter(truth: str, options: list[str]) -> str:
    letter = extract_choice(truth)
    if letter and len(truth.strip()) <= 4:
        return letter
    for i, option in enumerate(options[: len(LETTERS)]):
        if option.strip().lower() == truth.strip().lower():
            return LETTERS[i]
    return (letter or truth.strip()[:1]).upper()


class MCQJudge(Judge):
    id = "mcq"
    version = "1"

    async def score(self, episode: Episode, blobs: BlobStore | None = None) -> Verdict:
        choice = extract_choice(episode.answer)
        truths = {truth_letter(t, episode.task.options) for t in episode.task.answers}
        correct = choice is not None and choice in truths
        rationale = "no option letter found" if choice is None else f"chose {choice}; accepted {sorted(truths)}"
        return self.verdict(episode, score=float(correct), correct=correct, extracted=choice, rationale=rationale)


@register_judge("mcq")
def mcq() -> MCQJudge:
    return MCQJudge()
