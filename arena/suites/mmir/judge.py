"""`mmir`: MMIR's scoring of element ids (0 / 0.5 / 1), and its accuracy per source.

MCQ items: the ids are the integers inside the answer's `<ans>...</ans>` (the
first one, as in MMIR's `calculate_score.py`). Open-ended items: a judge model
maps the `<ans>` sentence to option ids with MMIR's matching prompt and must
reply `<id>"[ID1]"</id>` or `<id>"[ID1],[ID2]"</id>`; those ids are scored the
same way. Whether an item is MCQ or open-ended comes from its task id
(`...:mcq` / `...:open`, see `arena.suites.mmir.loader`).

Published rules (eric-ai-lab/MMIR `eval/calculate_score.py`, `extract_xml`, `check_answer`, `llm_judge`, `eval`),
in our words: the text read is the model's raw final reply (the last turn). Its answer span is the content of the
first `<ans>...</ans>` (lower-case tags, may span lines), trimmed; without one the span is empty (score 0 for MCQ;
open-ended items still go to the judge, with an empty sentence). Scoring (`check_answer`): every run of digits is
an integer; de-duplicate; none or more than two → 0. One true id: the single predicted id equal to it → 1, the
true id among two predicted → 0.5. Two true ids: 0.5 per predicted id that is true. Accuracy: per source, the sum
of scores over the number of questions of that source in the questions file, also those never run; overall, over the
benchmark's fixed total of 534 questions (reported as `overall_of_534`). Under `--protocol original` the run records
the file's counts (`arena.suites.mmir.protocol`) and `mmir_metrics` divides by them (`accuracy` over all the file's
questions: the published overall for the public files); under `arena`, and for runs that recorded none, over the
episodes played.
`strict_ans=false` keeps the arena's lenient choice: without `<ans>` the whole episode answer is read.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any

from arena.core.blobs import BlobStore
from arena.endpoints.client import Endpoint, EndpointConfig, EndpointError
from arena.core.judge import Judge, text_hash
from arena.suites.mmir.loader import parse_task_id
from arena.core.trajectory import Episode
from arena.core.verdict import Verdict

from arena.judges.metrics import Row, score_of

MATCH_PROMPT = """You are given a sentence referring to one/a pair of elements. Match the element(s) referred in the \
sentence with the given options. Return the ID(s) of the matched option(s).
    Sentence:
{sentence}

Options:
{options}

Your answer must follow the following format:
    <id>
    "[ID1]" or "[ID1],[ID2]" <-- one problematic element ID, or two problematic element IDs from given options \
separated by comma
    </id>
    """
PROMPT_HASH = text_hash(MATCH_PROMPT)


def extract_xml(text: str, tag: str) -> str | None:
    """Content of the first `<tag>...</tag>`, or None."""
    match = re.search(f"<{tag}>(.*?)</{tag}>", text, re.DOTALL)
    return match.group(1) if match else None


def predicted_ids(answer: str) -> list[int]:
    """Every integer in the answer, de-duplicated, in order of first appearance."""
    return list(dict.fromkeys(int(n) for n in re.findall(r"\d+", answer)))


def check_answer(answer: str, truth: list[int]) -> float:
    """MMIR's score of predicted ids against the 1–2 true ids."""
    ids = predicted_ids(answer)
    if not ids or len(ids) > 2:
        return 0.0
    if len(truth) == 1:
        if len(ids) == 1:
            return 1.0 if ids[0] == truth[0] else 0.0
        return 0.5 if truth[0] in ids else 0.0
    return sum(1 for i in ids if i in truth) / 2


class MMIRJudge(Judge):
    id = "mmir"
    version = "2"

    def __init__(self, endpoint: EndpointConfig | None = None, strict_ans: bool = True, request: str = "published"):
        if request not in ("published", "arena"):
            raise ValueError(f"request must be 'published' or 'arena', got {request!r}")
        self.config = endpoint
        self.endpoint = Endpoint(endpoint) if endpoint else None
        self.request = request
        self.strict_ans = strict_ans

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "version": self.version, "strict_ans": self.strict_ans, "request": self.request,
                "model": self.config.model if self.config else None, "prompt_hash": PROMPT_HASH}

    def answer_span(self, episode: Episode) -> str:
        """The `<ans>` content of the raw final reply (published); with strict_ans off, else the whole answer."""
        last = episode.steps[-1] if episode.steps else None
        reply = (last.output or last.answer or "") if last is not None else (episode.answer or "")
        span = extract_xml(reply, "ans")
        if span is not None:
            return span.strip()
        return "" if self.strict_ans else (episode.answer or "").strip()

    async def score(self, episode: Episode, blobs: BlobStore | None = None) -> Verdict:
        task = episode.task
        try:
            truth = [int(a) for a in task.answers]
        except ValueError:
            return self.verdict(episode, score=0.0, correct=False, error=f"answers {task.answers} are not element ids")
        _, mode = parse_task_id(task.id)
        span = self.answer_span(episode)
        if mode != "open":
            score = check_answer(span, truth)
            return self.verdict(episode, score=score, correct=score == 1.0, extracted=span,
                                rationale=f"predicted ids {predicted_ids(span)}; true ids {truth}")
        return await self._score_open(episode, span, truth)

    def missing(self, task: Any) -> str | None:
        if self.endpoint is None and parse_task_id(task.id)[1] == "open":
            return "open-ended MMIR items need a judge model to map answers to element ids"
        return None

    async def _score_open(self, episode: Episode, span: str, truth: list[int]) -> Verdict:
        base: dict[str, Any] = {"prompt_hash": PROMPT_HASH, "judge_model": self.config.model if self.config else None}
        if not span and not self.strict_ans:
            return self.verdict(episode, score=0.0, correct=False, extracted="", rationale="no answer", **base)
        if self.endpoint is None:
            return self.verdict(episode, score=0.0, correct=False, extracted=span, **base,
                                error="open-ended MMIR items need a judge model: set judge options model and base_url")
        prompt = MATCH_PROMPT.format(sentence=span, options="\n".join(episode.task.options))
        try:
            if self.request == "published":  # only the model and one user message holding one text part
                response = await self.endpoint.chat([{"role": "user", "content": [{"type": "text", "text": prompt}]}])
            else:
                response = await self.endpoint.chat([{"role": "user", "content": prompt}], temperature=0)
        except EndpointError as exc:
            return self.verdict(episode, score=0.0, correct=False, extracted=span, error=str(exc), **base)
        matched = (extract_xml(response.content, "id") or "").strip()
        score = check_answer(matched, truth)
        return self.verdict(episode, score=score, correct=score == 1.0, extracted=matched, raw=response.content,
                            rationale=f"judge matched {predicted_ids(matched)}; true ids {truth}", **base)

    async def aclose(self) -> None:
        if self.endpoint is not None:
            await self.endpoint.aclose()


def mmir(model: str | None = None, base_url: str | None = None, api_key_env: str | None = None,
         strict_ans: bool = True, timeout: float = 120.0, max_retries: int = 4, retry_initial: float = 1.0,
         max_tokens: int | None = 256, request: str = "published") -> MMIRJudge:
    """`request="published"` sends what MMIR's `llm_judge` sends (the model and the messages: no temperature, no
    max_tokens, which reasoning judges such as the paper's o1-mini refuse); `"arena"` adds temperature 0 and
    `max_tokens`."""
    endpoint = None
    if model and base_url:
        published = request == "published"
        endpoint = EndpointConfig(base_url=base_url, model=model, api_key_env=api_key_env, timeout=timeout,
                                  max_retries=max_retries, retry_initial=retry_initial,
                                  temperature=None if published else 0.0, max_tokens=None if published else max_tokens)
    return MMIRJudge(endpoint, strict_ans=strict_ans, request=request)


MMIR_TOTAL = 534
"""The questions of each public MMIR file: the published `eval` divides the overall score sum by this constant."""

Population = dict[str, Any]
"""A questions file as `arena.suites.mmir.protocol.original_questions` counts it (run.json `datasets[].population`)."""


def _accuracy(rows: list[Row]) -> dict[str, Any]:
    """Over the episodes played (`--protocol arena`, and runs that recorded no population)."""
    by_group: dict[str, list[float]] = defaultdict(list)
    scores = []
    for episode, verdict in rows:
        group, _ = parse_task_id(episode.task.id)
        by_group[group or "unknown"].append(score_of(verdict))
        scores.append(score_of(verdict))
    return {
        "accuracy": round(100 * sum(scores) / len(scores), 2) if scores else None,
        "overall_of_534": round(100 * sum(scores) / MMIR_TOTAL, 2) if scores else None,
        "sources": {g: round(100 * sum(v) / len(v), 2) for g, v in sorted(by_group.items())},
        "counts": {g: len(v) for g, v in sorted(by_group.items())},
    }


def denominator_note(questions: int, not_run: int, files: int = 1) -> str:
    """What an accuracy over the file divides by, said in words (figures' `denominator`, table captions)."""
    where = "the file" if files == 1 else f"the {files} files"
    return f"accuracy over all {questions} questions in {where}; {not_run} not run count as wrong"


def _over_file(rows: list[Row], populations: list[Population]) -> dict[str, Any]:
    """Over every question of the files (`--protocol original`, the published `eval`): per group, the sum of the
    scores over the file's questions of that group; overall, over all of them. A task played several times
    (repeats) counts with its mean score, so that each question weighs one."""
    per_task: dict[str, list[float]] = defaultdict(list)
    for episode, verdict in rows:
        per_task[episode.task.id].append(score_of(verdict))
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for task_id, scores in per_task.items():
        group = parse_task_id(task_id)[0] or "unknown"
        sums[group] += sum(scores) / len(scores)
        counts[group] += 1
    questions = sum(int(p.get("questions") or 0) for p in populations)
    groups: Counter[str] = Counter()
    for p in populations:
        groups.update({str(g): int(n) for g, n in (p.get("groups") or {}).items()})
    total = sum(sums.values())
    not_run = max(0, questions - len(per_task))
    return {
        "accuracy": round(100 * total / questions, 2) if questions else None,
        "denominator": denominator_note(questions, not_run, len(populations)),
        "overall_of_534": round(100 * total / MMIR_TOTAL, 2),
        "sources": {g: round(100 * sums.get(g, 0.0) / n, 2) for g, n in sorted(groups.items()) if n},
        "counts": dict(sorted(counts.items())),
        "questions": questions,
        "not_run": not_run,
        "source_questions": dict(sorted(groups.items())),
    }


def mmir_metrics(rows: list[Row], populations: list[Population] | None = None) -> dict[str, Any]:
    """Accuracy (mean MMIR score, %) per source group (web, office, poster) and overall, per setting (mcq/open).

    With `populations` (the run's questions files, recorded under `--protocol original`): every figure divides by
    the file's questions, per group and overall, also those the run did not play (`denominator` says how many),
    per setting over its own file. Without: over the episodes played."""
    by_mode: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_mode[parse_task_id(row[0].task.id)[1] or "unknown"].append(row)
    if not populations:
        out = _accuracy(rows)
        out["modes"] = {mode: _accuracy(mode_rows) for mode, mode_rows in sorted(by_mode.items())}
        return out
    files: dict[str, list[Population]] = defaultdict(list)
    for population in populations:
        files[str(population.get("mode") or "unknown")].append(population)
    out = _over_file(rows, populations)
    out["modes"] = {mode: _over_file(by_mode.get(mode, []), files[mode]) if mode in files
                    else _accuracy(by_mode[mode]) for mode in sorted(set(by_mode) | set(files))}
    return out
