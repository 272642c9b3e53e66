"""`condchain`: MM-CondChain's exact-label scoring, and True-path / False-path accuracy with Path F1.

The predicted label is `suites.condchain.loader.parse_boxed` of the episode's
answer (last `\\boxed{}`, else last `A1`-style or `None` token, else "None"),
compared exactly with the true label. An episode with no answer at all scores 0
(arena default; the original parses an empty string as "None").

Metrics per domain and overall (the overall figures pool all items, not an
average of domains), as percentages rounded to 2 decimals like the original:
True-path accuracy, False-path accuracy, Path F1 = their harmonic mean (0 when
both are 0). The path of a task comes from its id (`<id>:true` / `<id>:false`),
the domain from its category.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from arena.blobs import BlobStore
from arena.judge import Judge, register_judge
from suites.condchain.loader import parse_boxed, parse_task_id
from arena.trajectory import Episode
from arena.verdict import Verdict

from judges.metrics import Row, register_suite_metrics, score_of


class CondChainJudge(Judge):
    id = "condchain"
    version = "1"

    async def score(self, episode: Episode, blobs: BlobStore | None = None) -> Verdict:
        truth = (episode.task.answers or ["None"])[0].strip()
        if episode.answer is None:
            return self.verdict(episode, score=0.0, correct=False, extracted=None, rationale="no answer")
        predicted = parse_boxed(episode.answer)
        correct = predicted == truth
        return self.verdict(episode, score=float(correct), correct=correct, extracted=predicted,
                            rationale=f"predicted {predicted}; expected {truth}")


@register_judge("condchain")
def condchain() -> CondChainJudge:
    return CondChainJudge()


def path_f1(true_acc: float, false_acc: float) -> float:
    return 2 * true_acc * false_acc / (true_acc + false_acc) if true_acc + false_acc > 0 else 0.0


def _figures(correct: dict[str, list[float]]) -> dict[str, Any]:
    true_scores, false_scores = correct.get("true", []), correct.get("false", [])
    true_acc = sum(true_scores) / len(true_scores) if true_scores else 0.0
    false_acc = sum(false_scores) / len(false_scores) if false_scores else 0.0
    return {"true_acc": round(100 * true_acc, 2), "false_acc": round(100 * false_acc, 2),
            "path_f1": round(100 * path_f1(true_acc, false_acc), 2),
            "true_count": len(true_scores), "false_count": len(false_scores)}


@register_suite_metrics("condchain")
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
