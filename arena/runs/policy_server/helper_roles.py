"""`arena serve`'s helper roles: the requests the arena's judges and web summariser send, recognised by their
prompt templates and answered in the format each expects, by rule rather than by a model.

A request is a helper's when its last user message's text is its template with the placeholders filled: the
template text of the prompt book the server was given (`--prompts FILE`, as the run was, else the arena's wording),
each `{name}` read back as the text between the template's fixed parts. The rules:

- `vistahop.judge.user` (the `llm` judge): Yes when the model answer equals the reference answer after the arena's
  normalisation (`arena.judges.normalized.normalized_match`), as `<judge>Yes|No</judge><reason>...</reason>`;
- `carv.judge.user` (CARV's `carv-llm` judge): the CARV caption parser's comparison (`parser_agrees`), as
  `{"correctness": true|false, "reason": ...}`;
- the evidence check (`arena.judges.evidence`): Yes when the answer, normalised, appears in the evidence text, as
  `<supported>Yes|No</supported><reason>...</reason>`;
- the web summariser (`arena.tools.summarise`): an extractive summary (the five sentences sharing most words with
  the query, `arena.tools.corpus_index.summarize`).
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass
from typing import Callable

from arena.core.prompt_book import PromptBook
from arena.judges.evidence import EVIDENCE_USER, normalize_answer
from arena.judges.llm import USER_TEMPLATE as VISTAHOP_JUDGE
from arena.judges.normalized import normalized_match
from arena.suites.carv.judge import USER_TEMPLATE as CARV_JUDGE
from arena.suites.carv.judge import parser_agrees
from arena.tools.corpus_index import summarize
from arena.tools.summarise import FINAL_PROMPT, PAGE_PROMPT

JUDGE_MODEL = "arena-serve/normalized-judge"
SUMMARY_MODEL = "arena-serve/extractive-summary"
SUMMARY_SENTENCES = 5


def template_pattern(text: str) -> re.Pattern[str]:
    """A regex that matches `text` formatted with any values: each placeholder a named group (a repeated one must
    repeat its value)."""
    pattern, seen = "", set()
    for literal, name, _, _ in string.Formatter().parse(text.strip()):
        pattern += re.escape(literal)
        if name is None:
            continue
        pattern += f"(?P={name})" if name in seen else f"(?P<{name}>.*?)"
        seen.add(name)
    return re.compile(pattern, re.S)


@dataclass(frozen=True)
class HelperRole:
    """One kind of helper request: its template's pattern, how to answer it, and the model id answered with."""

    name: str
    pattern: re.Pattern[str]
    answer: Callable[[dict[str, str]], str]
    model: str


def _vistahop_verdict(values: dict[str, str]) -> str:
    match = normalized_match(values["answer"], [values["reference"]])
    if match is not None:
        return (f"<judge>Yes</judge>\n<reason>The answer equals the reference {match!r} after normalisation "
                "(arena serve: normalized match, no model).</reason>")
    return (f"<judge>No</judge>\n<reason>The answer {values['answer']!r} differs from the reference "
            f"{values['reference']!r} after normalisation (arena serve: normalized match, no model).</reason>")


def _carv_verdict(values: dict[str, str]) -> str:
    agrees = parser_agrees(values["response"], values["reference"])
    reason = ("the caption parser finds every property equal" if agrees else
              "the caption parser finds a property that differs") + " (arena serve: no model)"
    return json.dumps({"correctness": agrees, "reason": reason})


def _evidence_verdict(values: dict[str, str]) -> str:
    answer = normalize_answer(values["answer"])
    found = bool(answer) and f" {answer} " in f" {normalize_answer(values['evidence'])} "
    said = "appears" if found else "does not appear"
    return (f"<supported>{'Yes' if found else 'No'}</supported>\n<reason>The answer {said} in the retrieved "
            "evidence (arena serve: text containment, no model).</reason>")


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w\w+", text.lower()))


def _page_summary(values: dict[str, str]) -> str:
    return summarize(values["text"], _words(values["query"]), SUMMARY_SENTENCES)


def _overall_summary(values: dict[str, str]) -> str:
    listing = re.sub(r"^\[\d+\]\s*", "", values["summaries"], flags=re.M)
    return summarize(listing, _words(values["query"]), SUMMARY_SENTENCES)


def helper_roles(book: PromptBook) -> list[HelperRole]:
    """The helper requests the server answers, their judge templates read from `book`."""
    return [
        HelperRole("vistahop judge", template_pattern(book.text(VISTAHOP_JUDGE)), _vistahop_verdict, JUDGE_MODEL),
        HelperRole("carv judge", template_pattern(book.text(CARV_JUDGE)), _carv_verdict, JUDGE_MODEL),
        HelperRole("evidence check", template_pattern(EVIDENCE_USER), _evidence_verdict, JUDGE_MODEL),
        HelperRole("page summary", template_pattern(PAGE_PROMPT), _page_summary, SUMMARY_MODEL),
        HelperRole("overall summary", template_pattern(FINAL_PROMPT), _overall_summary, SUMMARY_MODEL),
    ]


def recognise(roles: list[HelperRole], text: str) -> tuple[HelperRole, dict[str, str]] | None:
    """The helper role whose template `text` is, with the placeholders' values; None when it is none of them."""
    for role in roles:
        match = role.pattern.fullmatch(text.strip())
        if match:
            return role, match.groupdict()
    return None
