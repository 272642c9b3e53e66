"""Metrics of a run, computed only from its episodes and verdicts (so anyone can recompute them).

Groups are (agent, setting, max_rounds). Per group: Pass@1 as the mean score
(an episode that errored or has no verdict scores 0 and is counted), its standard
deviation over repeats, per level and category, average tool calls (and per
tool), average rounds, tool utilisation = average tool calls / maximum allowed
calls, correct answers split by evidence verdict (supported / unsupported / unknown, when
assessed), finish reasons, invalid and ignored calls, tokens and seconds. Suites add
their own figures (Path F1, per-source accuracy, ...) through `register_suite_metrics`.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from typing import Any, Callable, Iterable

from arena.discovery import registering
from arena.trajectory import Episode
from arena.verdict import Verdict

from .normalized import normalize_answer
from .stats import bootstrap_ci, ks_for, majority_at_k, pass_at_k

Row = tuple[Episode, "Verdict | None"]
SuiteMetrics = Callable[[list[Row]], dict[str, Any]]
SUITE_METRICS: dict[str, SuiteMetrics] = {}


def register_suite_metrics(suite: str):
    """Decorator for `fn(rows: list[(Episode, Verdict | None)]) -> dict` added to every group of that suite."""
    return registering(SUITE_METRICS, suite, "suite metrics")


def score_of(verdict: Verdict | None) -> float:
    return verdict.score if verdict is not None and verdict.error is None else 0.0


AUTO = "auto"


def judge_for_task(task: Any, judge: str) -> str:
    """The judge whose verdict counts for a task: `judge`, or with "auto" the task's own (default normalized)."""
    return (task.judge or "normalized") if judge == AUTO else judge


def judge_for(episode: Episode, judge: str) -> str:
    """The judge whose verdict counts for an episode (see `judge_for_task`)."""
    return judge_for_task(episode.task, judge)


def latest_verdicts(episodes: Iterable[Episode], verdicts: Iterable[Verdict], judge: str) -> dict[str, Verdict]:
    """The last verdict per episode id by the judge that counts for it."""
    wanted = {e.id: judge_for(e, judge) for e in episodes}
    out: dict[str, Verdict] = {}
    for verdict in verdicts:
        if wanted.get(verdict.episode_id) == verdict.judge:
            out[verdict.episode_id] = verdict
    return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100.0 * value, 4)


def _by(rows: list[Row], scores: list[float], field: str) -> dict[str, list[float]]:
    """Scores grouped by a task field (level, category); tasks without it are left out."""
    out: dict[str, list[float]] = defaultdict(list)
    for (episode, _), score in zip(rows, scores):
        value = getattr(episode.task, field)
        if value:
            out[value].append(score)
    return dict(sorted(out.items()))


def counts(rows: list[Row]) -> dict[str, Any]:
    """Episodes, distinct tasks and repeats."""
    return {"episodes": len(rows), "tasks": len({e.task.id for e, _ in rows}),
            "repeats": len({e.repeat for e, _ in rows})}


def pass_at_1(rows: list[Row]) -> dict[str, Any]:
    """Pass@1 (mean score, %), its standard deviation over repeats, per repeat, and correct episodes."""
    by_repeat: dict[int, list[float]] = defaultdict(list)
    for episode, verdict in rows:
        by_repeat[episode.repeat].append(score_of(verdict))
    repeat_means = [sum(v) / len(v) for _, v in sorted(by_repeat.items())]
    return {
        "pass1": _pct(_mean([score_of(v) for _, v in rows])),
        "pass1_std": _pct(statistics.stdev(repeat_means)) if len(repeat_means) > 1 else 0.0,
        "pass1_per_repeat": [_pct(m) for m in repeat_means],
        "correct": sum(1 for _, v in rows if v is not None and v.error is None and v.correct),
    }


def support_counts(rows: list[Row]) -> dict[str, int]:
    """Correct answers split by their evidence verdict: supported, unsupported, undecided (only where assessed)."""
    correct = [v for _, v in rows if v is not None and v.error is None and v.correct]
    assessed = [v for v in correct if v.supported is not None]
    if not assessed:
        return {}
    return {"correct_supported": sum(1 for v in assessed if v.supported == "yes"),
            "correct_unsupported": sum(1 for v in assessed if v.supported == "no"),
            "correct_support_unknown": sum(1 for v in assessed if v.supported == "unknown")}


def breakdowns(rows: list[Row]) -> dict[str, Any]:
    """Pass@1 per level and per category, with the episodes per level."""
    scores = [score_of(v) for _, v in rows]
    levels, categories = _by(rows, scores, "level"), _by(rows, scores, "category")
    return {"levels": {k: _pct(_mean(v)) for k, v in levels.items()},
            "level_counts": {k: len(v) for k, v in levels.items()},
            "categories": {k: _pct(_mean(v)) for k, v in categories.items()}}


def tool_use(rows: list[Row]) -> dict[str, Any]:
    """Average tool calls (and per tool), average rounds, and utilisation = calls / allowed calls (%)."""
    episodes = [e for e, _ in rows]
    tools = sorted({t for e in episodes for t in e.totals.calls_per_tool} | {t for e in episodes for t in e.tools})
    max_calls = [e.budget.max_rounds * e.budget.max_calls_per_round for e in episodes if e.tools]
    avg_calls = _mean([float(e.totals.tool_calls) for e in episodes]) or 0.0
    per_tool = {t: round(sum(e.totals.calls_per_tool.get(t, 0) for e in episodes) / len(episodes), 4)
                for t in tools} if episodes else {}
    return {"avg_tool_calls": round(avg_calls, 4), "avg_calls_per_tool": per_tool,
            "avg_rounds": round(_mean([float(e.totals.rounds) for e in episodes]) or 0.0, 4),
            "tool_utilisation": _pct(avg_calls / _mean([float(m) for m in max_calls])) if max_calls else None}


def outcomes(rows: list[Row]) -> dict[str, Any]:
    """Finish reasons, invalid and ignored calls, errored episodes, unjudged episodes and judge errors."""
    episodes = [e for e, _ in rows]
    return {"finish_reasons": dict(sorted(Counter(e.finish_reason for e in episodes).items())),
            "invalid_calls": sum(e.totals.invalid_calls for e in episodes),
            "ignored_calls": sum(e.totals.ignored_calls for e in episodes),
            "errors": sum(1 for e in episodes if e.finish_reason == "error"),
            "unjudged": sum(1 for _, v in rows if v is None),
            "judge_errors": sum(1 for _, v in rows if v is not None and v.error is not None)}


def judge_problems(rows: list[Row]) -> dict[str, Any]:
    """Why verdicts failed: the most frequent judge error messages (first 160 characters) with their counts."""
    reasons = Counter((v.error or "")[:160] for _, v in rows if v is not None and v.error is not None)
    return {"judge_error_reasons": dict(reasons.most_common(3))} if reasons else {}


def resources(rows: list[Row]) -> dict[str, Any]:
    """Average prompt and completion tokens and seconds per episode."""
    episodes = [e for e, _ in rows]
    return {"avg_prompt_tokens": round(_mean([float(e.totals.prompt_tokens or 0) for e in episodes]) or 0.0, 2),
            "avg_completion_tokens": round(_mean([float(e.totals.completion_tokens or 0) for e in episodes]) or 0.0, 2),
            "avg_seconds": round(_mean([e.totals.seconds for e in episodes]) or 0.0, 4)}


def _per_task(rows: list[Row]) -> dict[str, list[Row]]:
    """Rows per task id, each task's rows in repeat order."""
    out: dict[str, list[Row]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (r[0].task.id, r[0].repeat)):
        out[row[0].task.id].append(row)
    return dict(out)


def confidence(rows: list[Row]) -> dict[str, Any]:
    """95 % bootstrap interval of Pass@1 (%), over tasks and, with several repeats, over each task's repeats
    (`judges.stats.bootstrap_ci`, fixed seed)."""
    interval = bootstrap_ci([[score_of(v) for _, v in task_rows] for task_rows in _per_task(rows).values()])
    return {"pass1_ci": None if interval is None else [_pct(interval[0]), _pct(interval[1])]}


def _correct(verdict: Verdict | None) -> bool:
    return verdict is not None and verdict.error is None and verdict.correct


def repeat_metrics(rows: list[Row]) -> dict[str, Any]:
    """With several repeats per task: pass@k (unbiased estimator, %) and majority@k (%) over the repeats, for the
    k of `judges.stats.ks_for(n)`, n = the fewest repeats any task has. Majority voting groups answers by their
    normalised text (`normalized.normalize_answer` of the judge's extracted answer, else the episode's)."""
    tasks = _per_task(rows)
    n = min((len(r) for r in tasks.values()), default=0)
    if n < 2:
        return {}
    ks = ks_for(n)
    passes = {k: _mean([pass_at_k(n, sum(_correct(v) for _, v in r[:n]), k) for r in tasks.values()]) for k in ks}
    votes = {k: _mean([float(majority_at_k([(normalize_answer((v.extracted if v and v.extracted is not None
                                                                 else e.answer) or ""), _correct(v))
                                            for e, v in r], k)) for r in tasks.values()]) for k in ks}
    return {"pass_at_k": {str(k): _pct(v) for k, v in passes.items()},
            "majority_at_k": {str(k): _pct(v) for k, v in votes.items()}}


GROUP_METRICS: tuple[Callable[[list[Row]], dict[str, Any]], ...] = (
    counts, pass_at_1, confidence, support_counts, breakdowns, tool_use, outcomes, judge_problems, resources,
    repeat_metrics)


def group_metrics(rows: list[Row]) -> dict[str, Any]:
    """Every figure of one group of episodes: the union of `GROUP_METRICS`."""
    out: dict[str, Any] = {}
    for metric in GROUP_METRICS:
        out.update(metric(rows))
    return out


def summarize(episodes: list[Episode], verdicts: list[Verdict], judge: str = AUTO) -> dict[str, Any]:
    """Summary of a run for one judge ("auto": each task's own): one entry per (agent, setting, max_rounds)."""
    chosen = latest_verdicts(episodes, verdicts, judge)
    groups: dict[tuple[str, str, int], list[Row]] = defaultdict(list)
    for episode in episodes:
        groups[(episode.agent, episode.setting, episode.budget.max_rounds)].append((episode, chosen.get(episode.id)))
    out = []
    for (agent, setting, max_rounds), rows in sorted(groups.items()):
        entry: dict[str, Any] = {"agent": agent, "setting": setting, "max_rounds": max_rounds}
        entry.update(group_metrics(rows))
        suites = sorted({e.task.suite for e, _ in rows})
        extras = {s: SUITE_METRICS[s]([r for r in rows if r[0].task.suite == s]) for s in suites if s in SUITE_METRICS}
        if extras:
            entry["suites"] = extras
        out.append(entry)
    return {"judge": judge, "groups": out}
