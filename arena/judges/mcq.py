"""`mcq`: the option letter a response commits to, compared with the truth.

Published rules (default; ahang0712/vistahop `evaluation/run_vistahop_eval.py`, `extract_mcq_answer` and
`check_answer`), in our words. The text is the final output (`arena.judges.normalized.final_output`), cut to what follows
the last `<|im_start|>assistant` and then the last `</think>`/`</thinking>`. Letters are A-D.

1. If there is an `<answer>...</answer>` block (lower-case tags), only the last block's trimmed content is read:
   a lone letter of either case; else the last letter written as `(X)`, `[X]` or `X.`/`X)`/`X]` not preceded
   by a Latin letter (either case); else the last upper-case letter that stands alone (no Latin letter on
   either side); else no letter. Nothing outside the block is read.
2. Else the first `\\boxed{...}` (content without `}`): if the content holds any of a-d/A-D, it is read like an
   answer block (step 1) and the cascade stops there, letter or not; otherwise the cascade goes on.
3. Else, over the whole text, the first rule that finds something gives its last find: "Answer: (X)";
   "answer is (X)" / "correct answer is (X)" (a colon and spaces may follow "is"); a bold `**...**` segment holding
   "(X)" (the last such segment); any "(X)"; `X)` or `X]` not preceded by a Latin letter; the last upper-case
   standalone letter. Matching of the first five is case-insensitive; the letter is upper-cased.
Correct when the letter equals any accepted answer upper-cased (`check_answer`). As an arena extension for its own
tasks whose truth is an option's text, the letter of that option is accepted too (`option_text=True`, published
truths are letters): the arena protocol's variant (`--protocol arena`); under `--protocol original` the published
rule alone.

`mcq-strict` keeps the arena's own extraction (the episode's answer, case-insensitive tags, a lone letter must
be the whole answer, a letter mentioned among others is not a choice).
"""

from __future__ import annotations

import re
from typing import Any

from arena.core.blobs import BlobStore
from arena.core.judge import Judge, register_judge
from arena.core.trajectory import Episode
from arena.core.verdict import Verdict

from .evidence import deterministic
from .protocols import register_arena_variant
from .normalized import final_output, visible_tail

LETTERS = "ABCD"
_BOXED = re.compile(r"\\boxed\{\s*\(?([A-Da-d])\)?\s*\}")
_PHRASE = re.compile(r"(?:final\s+)?answer\s*(?:is|:)?\s*[:\-]?\s*\(?\**\s*([A-D])\b", re.I)
_LONE = re.compile(r"^\s*\(?([A-D])\)?(?:[.:)]\s.*|[.:)]?\s*)$", re.S)
_ANY = re.compile(r"\b([A-D])\b")

# --- the published cascade ---
_P_BLOCK = re.compile(r"<answer>(.*?)</answer>", re.S)
_P_SINGLE = re.compile(r"[A-Da-d]")
_P_MARKED = re.compile(r"\(([A-D])\)|\[([A-D])\]|(?<![A-Za-z])([A-D])[.)\]]", re.I)
_P_ALONE = re.compile(r"(?<![A-Za-z])([A-D])(?![A-Za-z])")
_P_BOXED = re.compile(r"\\boxed\{([^}]+)\}", re.I)
_P_ANSWER_COLON = re.compile(r"Answer:\s*\(([A-D])\)", re.I)
_P_ANSWER_IS = re.compile(r"(?:correct answer is|answer is)[:\s]*\(([A-D])\)", re.I)
_P_BOLD = re.compile(r"\*\*[^*]+\*\*")
_P_PAREN = re.compile(r"\(([A-D])\)", re.I)
_P_CLOSER = re.compile(r"(?<![A-Za-z])([A-D])[)\]]", re.I)


def _letter_in(span: str) -> str | None:
    """Steps of the published cascade inside an answer block or a box."""
    if _P_SINGLE.fullmatch(span):
        return span.upper()
    marked = _P_MARKED.findall(span)
    if marked:
        return "".join(marked[-1]).upper()
    alone = _P_ALONE.findall(span)
    return alone[-1].upper() if alone else None


def extract_choice_published(text: str | None) -> str | None:
    """The published MCQ letter of a final output, or None (see the module docstring)."""
    if not text:
        return None
    text = visible_tail(text)
    blocks = _P_BLOCK.findall(text)
    if blocks:
        return _letter_in(blocks[-1].strip())
    boxed = _P_BOXED.search(text)
    if boxed:
        content = boxed.group(1).strip()
        if re.search(r"[A-Da-d]", content):
            return _letter_in(content)
    for pattern in (_P_ANSWER_COLON, _P_ANSWER_IS):
        found = pattern.findall(text)
        if found:
            return found[-1].upper()
    for segment in reversed(_P_BOLD.findall(text)):
        inner = _P_PAREN.search(segment)
        if inner:
            return inner.group(1).upper()
    for pattern in (_P_PAREN, _P_CLOSER, _P_ALONE):
        found = pattern.findall(text)
        if found:
            return found[-1].upper()
    return None


def extract_choice(text: str | None) -> str | None:
    """The arena's strict extraction: the option letter a response commits to, or None."""
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


def accepted_published(truths: list[str], options: list[str], option_text: bool = False) -> set[str]:
    """Accepted answers upper-cased (the published `check_answer`); with `option_text`, also the letter of any option
    whose text is a truth (the arena extension)."""
    accepted = {t.upper() for t in truths}
    if not option_text:
        return accepted
    for i, option in enumerate(options[: len(LETTERS)]):
        if any(option.strip().lower() == t.strip().lower() for t in truths):
            accepted.add(LETTERS[i])
    return accepted


class MCQJudge(Judge):
    """The published letter cascade (see the module docstring)."""

    id = "mcq"
    version = "3"

    def __init__(self, option_text: bool = False):
        self.option_text = option_text

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "version": self.version, "option_text": self.option_text}

    async def score(self, episode: Episode, blobs: BlobStore | None = None) -> Verdict:
        choice = extract_choice_published(final_output(episode))
        accepted = accepted_published(episode.task.answers, episode.task.options, self.option_text)
        correct = choice is not None and choice in accepted
        rationale = "no option letter found" if choice is None else f"chose {choice}; accepted {sorted(accepted)}"
        return deterministic(self.verdict(episode, score=float(correct), correct=correct, extracted=choice,
                                          rationale=rationale), episode)


class StrictMCQJudge(Judge):
    """The arena's own letter extraction."""

    id = "mcq-strict"
    version = "1"

    async def score(self, episode: Episode, blobs: BlobStore | None = None) -> Verdict:
        choice = extract_choice(episode.answer)
        truths = {truth_letter(t, episode.task.options) for t in episode.task.answers}
        correct = choice is not None and choice in truths
        rationale = "no option letter found" if choice is None else f"chose {choice}; accepted {sorted(truths)}"
        return self.verdict(episode, score=float(correct), correct=correct, extracted=choice, rationale=rationale)


@register_judge("mcq")
def mcq(option_text: bool = False) -> MCQJudge:
    """`option_text`: an option whose text is the truth counts as its letter (the arena protocol's extension)."""
    if not isinstance(option_text, bool):
        raise ValueError(f"option_text must be true or false, got {option_text!r}")
    return MCQJudge(option_text=option_text)


register_arena_variant("mcq", option_text=True)


@register_judge("mcq-strict")
def mcq_strict() -> StrictMCQJudge:
    return StrictMCQJudge()
