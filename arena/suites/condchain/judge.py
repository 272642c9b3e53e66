"""`condchain`: MM-CondChain's exact-label scoring, and True-path / False-path accuracy with Path F1.

Published rule (Accio-Lab/MM-CondChain `eval/utils.py` `parse_answer`, `eval/metrics.py`), in our words: the
predicted label is read from the model's raw final reply (the last turn's text, thinking included): the content
of the last `\\boxed{...}` with spaces removed ("none", "null", "nan" in any case, or empty, mean "None"); else
the last whole-word `[A-Z]<digits>` or `None` token; else "None". It must equal the true label exactly (case
matters) and to the true label as stored (`eval/metrics.py` `compute_metrics` compares the two strings as they
are: a stored " A1" never matches). An empty reply is therefore the prediction "None", correct on None-truth
items, and so is a request that failed (an episode that ended in an error, judged under `--protocol original`
only: `Suite.original_scores_failures`). Under `--protocol arena`: `no_answer="wrong"` keeps the arena's stricter
choice (an episode with no answer scores 0) and `truth="stripped"` compares with the stored label stripped of surrounding spaces.

Metrics per domain and overall (the overall figures pool all items, not an
average of domains), as percentages rounded to 2 decimals like the original:
True-path accuracy, False-path accuracy, Path F1 = their harmonic mean (0 when
both are 0). The path of a task comes from its id (`<id>:true` / `<id>:false`),
the domain from its category.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from arena.core.blobs import BlobStore
from arena.core.judge import Judge
from arena.suites.condchain.loader import parse_boxed, parse_task_id
from arena.core.trajectory import Episode
from arena.core.verdict import Verdict

from arena.judges.metrics import ERRORED, Row, score_of


def final_reply(episode: Episode) -> str:
    """The raw text of the episode's last turn (its answer when the turn kept no text)."""
    if not episode.steps:
        return episode.answer or ""
    last = episode.steps[-1]
    return last.output or last.answer or ""


class CondChainJudge(Judge):
    id = "condchain"
    version = "3"

    def __init__(self, no_answer: str = "none", truth: str = "stored"):
        if no_answer not in ("none", "wrong"):
            raise ValueError(f"no_answer must be 'none' (published) or 'wrong', got {no_answer!r}")
        if truth not in ("stored", "stripped"):
            raise ValueError(f"truth must be 'stored' (published) or 'stripped', got {truth!r}")
        self.no_answer = no_answer
        self.truth = truth

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "version": self.version, "no_answer": self.no_answer, "truth": self.truth}

    def true_label(self, episode: Episode) -> str:
        """The label the prediction must equal: as stored in the data (published; the loader keeps it as it is),
        or stripped of surrounding spaces (arena)."""
        stored = (episode.task.answers or ["None"])[0]
        return stored if self.truth == "stored" else stored.strip()

    async def score(self, episode: Episode, blobs: BlobStore | None = None) -> Verdict:
        truth = self.true_label(episode)
        if episode.answer is None and self.no_answer == "wrong":
            return self.verdict(episode, score=0.0, correct=False, extracted=None, rationale="no answer")
        if episode.finish_reason in ERRORED:  # judged only under --protocol original (judges.protocols.judged)
            correct = truth == "None"
            return self.verdict(episode, score=float(correct), correct=correct, extracted="None",
                                rationale=f"the request failed ({episode.finish_reason}): the published get_answer "
                                          f"predicts None; expected {truth}")
        predicted = parse_boxed(final_reply(episode))
        correct = predicted == truth
        return self.verdict(episode, score=float(correct), correct=correct, extracted=predicted,
                            rationale=f"predicted {predicted}; expected {truth}")


def condchain(no_answer: str = "none", truth: str = "stored") -> CondChainJudge:
    return CondChainJudge(no_answer=no_answer, truth=truth)


def path_f1(true_acc: float, false_acc: float) -> float:
    return 2 * true_acc * false_acc / (true_acc + false_acc) if true_acc + false_acc > 0 else 0.0


def _figures(correct: dict[str, list[float]]) -> dict[str, Any]:
    true_scores, false_scores = correct.get("true", []), correct.get("false", [])
    true_acc = sum(true_scores) / len(true_scores) if true_scores else 0.0
    false_acc = sum(false_scores) / len(false_scores) if false_scores else 0.0
    return {"true_acc": round(100 * true_acc, 2), "false_acc": round(100 * false_acc, 2),
            "path_f1": round(100 * path_f1(true_acc, false_acc), 2),
            "true_count": len(true_scores), "false_count": len(false_scores)}


def condchain_metrics(rows: list[Row]) -> dict[str, Any]:
    """True-path accuracy, False-path accuracy and Path F1, per domain and pooled overall."""
    per_domain: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    overall: dict[str, list[float]] = defaultdict(list)
    for episode, verdict in rows:
        _, path = parse_task_id(episode.task.id)
        if not path:
            continue
        score = score_of(verdict)
        per_domain[episode.task.category or "unknown"][path].append(score)
        overall[path].append(score)
    return {"overall": _figures(overall),
            "domains": {domain: _figures(scores) for domain, scores in sorted(per_domain.items())}}
