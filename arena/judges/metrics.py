"""Metrics of a run, computed only from its episodes and verdicts (so anyone can recompute them).

Groups are (agent, setting, max_rounds). Per group: Pass@1 as the mean score over the
episodes played to the end (an episode with no verdict, or whose judge failed, scores 0
and is counted; an episode that ended in an error of the infrastructure, `ERRORED`, is
left out and counted apart: `errored`, `played`; `pass1_all` counts them as wrong over
every episode, as `--protocol original` does), its standard
deviation over repeats, per level and category, average tool calls (and per
tool), average rounds, tool utilisation = average tool calls / maximum allowed
calls, correct answers split by evidence verdict (supported / unsupported / unknown, when
assessed), finish reasons, invalid and ignored calls, tokens and seconds. Suites add
their own figures (Path F1, per-source accuracy, ...) through their `Suite.metrics` (`arena.core.suite`).

Each figure is computed in one place, from a group's columns (`COLUMNS`): `summarize` builds them from
records, `arena.store.scan` from the episode index without parsing trajectories. Suites' own metrics get whole
(Episode, Verdict) records, since they look inside trajectories, and the populations the run recorded for the suite
(run.json `datasets[].population`, `arena.store.records.RunInfo.populations`: the questions of each file a suite's
published evaluator divides by), when there are any.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from typing import Any, Callable, Iterable

from arena.core.suite import suite_named
from arena.core.trajectory import Episode
from arena.core.verdict import AUTO, Verdict, judge_for_task  # noqa: F401 (AUTO re-exported)

from .normalized import normalize_answer
from .stats import bootstrap_ci, ks_for, majority_at_k, pass_at_k

Row = tuple[Episode, "Verdict | None"]
SuiteMetrics = Callable[..., dict[str, Any]]
Populations = dict[str, list[dict[str, Any]]]
"""Suite name -> the population records of the run's datasets of that suite (`arena.store.records.RunInfo.populations`)."""


def suite_metrics(suite: str) -> SuiteMetrics | None:
    """The suite's own figures, `fn(rows: list[(Episode, Verdict | None)][, populations]) -> dict`, added to every
    group holding its tasks (`Suite.metrics`); None when the suite declares none or is not installed."""
    declared = suite_named(suite)
    return declared.metrics if declared is not None else None


def suite_group_figures(metrics: SuiteMetrics, rows: list[Row], recorded: list[dict[str, Any]] | None
                        ) -> dict[str, Any]:
    """A suite's own figures of one group's rows: `metrics(rows, recorded)` with the suite's population records when
    the run recorded any, else `metrics(rows)` (every run before them, every `--protocol arena` run)."""
    return metrics(rows, recorded) if recorded else metrics(rows)


ERRORED = ("error", "rejected", "context_overflow")
"""Finish reasons of an episode that was not played to the end: the endpoint failed (error), refused the request
(rejected) or could not take the transcript even trimmed (context_overflow). Not sent to a judge; left out of
Pass@1 and the figures drawn from scores, counted beside them."""


def score_of(verdict: Verdict | None) -> float:
    return verdict.score if verdict is not None and verdict.error is None else 0.0


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


Columns = dict[str, list[Any]]
"""One group of episodes as columns, one list per name of `COLUMNS`, row i of every list the same episode."""

EPISODE_COLUMNS = ("task_id", "repeat", "level", "category", "finish", "answer", "tool_calls", "calls_per_tool",
                   "tools", "max_rounds", "max_calls", "rounds", "invalid", "ignored", "prompt_tokens",
                   "completion_tokens", "seconds")
"""Per-episode columns: the task's id, level and category; repeat; finish reason; answer; totals (tool calls,
calls per tool, rounds, invalid and ignored calls, prompt and completion tokens (None read as 0), seconds); the
episode's tools; its budget (max rounds, max calls per round). Names as in `arena.store.run_index.Entry`."""
VERDICT_COLUMNS = ("judged", "score", "correct", "judge_error", "supported", "extracted")
"""Per-episode columns of the verdict that counts: whether there is one; the score counted (0 without a verdict
or when the judge failed); correct (a verdict without error that says so); the judge's error; the evidence
verdict; the judge's extracted answer."""
COLUMNS = EPISODE_COLUMNS + VERDICT_COLUMNS


def columns_of(rows: list[Row]) -> Columns:
    """The columns of (Episode, chosen Verdict) rows."""
    eps = [e for e, _ in rows]
    vs = [v for _, v in rows]
    return {
        "task_id": [e.task.id for e in eps], "repeat": [e.repeat for e in eps], "level": [e.task.level for e in eps],
        "category": [e.task.category for e in eps], "finish": [e.finish_reason for e in eps],
        "answer": [e.answer for e in eps], "tool_calls": [e.totals.tool_calls for e in eps],
        "calls_per_tool": [e.totals.calls_per_tool for e in eps], "tools": [e.tools for e in eps],
        "max_rounds": [e.budget.max_rounds for e in eps], "max_calls": [e.budget.max_calls_per_round for e in eps],
        "rounds": [e.totals.rounds for e in eps], "invalid": [e.totals.invalid_calls for e in eps],
        "ignored": [e.totals.ignored_calls for e in eps],
        "prompt_tokens": [e.totals.prompt_tokens or 0 for e in eps],
        "completion_tokens": [e.totals.completion_tokens or 0 for e in eps],
        "seconds": [e.totals.seconds for e in eps],
        "judged": [v is not None for v in vs], "score": [score_of(v) for v in vs],
        "correct": [v is not None and v.error is None and v.correct for v in vs],
        "judge_error": [None if v is None else v.error for v in vs],
        "supported": [None if v is None else v.supported for v in vs],
        "extracted": [None if v is None else v.extracted for v in vs],
    }


def _by(c: Columns, name: str) -> dict[str, list[float]]:
    """Scores grouped by a task field (level, category); tasks without it are left out."""
    out: dict[str, list[float]] = defaultdict(list)
    for value, score in zip(c[name], c["score"]):
        if value:
            out[value].append(score)
    return dict(sorted(out.items()))


def counts(c: Columns) -> dict[str, Any]:
    """Episodes, distinct tasks and repeats."""
    return {"episodes": len(c["task_id"]), "tasks": len(set(c["task_id"])), "repeats": len(set(c["repeat"]))}


def pass_at_1(c: Columns) -> dict[str, Any]:
    """Pass@1 (mean score, %), its standard deviation over repeats, per repeat, and correct episodes."""
    by_repeat: dict[int, list[float]] = defaultdict(list)
    for repeat, score in zip(c["repeat"], c["score"]):
        by_repeat[repeat].append(score)
    repeat_means = [sum(v) / len(v) for _, v in sorted(by_repeat.items())]
    return {
        "pass1": _pct(_mean(c["score"])),
        "pass1_std": _pct(statistics.stdev(repeat_means)) if len(repeat_means) > 1 else 0.0,
        "pass1_per_repeat": [_pct(m) for m in repeat_means],
        "correct": sum(c["correct"]),
    }


def support_counts(c: Columns) -> dict[str, int]:
    """Correct answers split by their evidence verdict: supported, unsupported, undecided (only where assessed)."""
    assessed = [s for s, ok in zip(c["supported"], c["correct"]) if ok and s is not None]
    if not assessed:
        return {}
    return {"correct_supported": assessed.count("yes"), "correct_unsupported": assessed.count("no"),
            "correct_support_unknown": assessed.count("unknown")}


def breakdowns(c: Columns) -> dict[str, Any]:
    """Pass@1 per level and per category, with the episodes per level."""
    levels, categories = _by(c, "level"), _by(c, "category")
    return {"levels": {k: _pct(_mean(v)) for k, v in levels.items()},
            "level_counts": {k: len(v) for k, v in levels.items()},
            "categories": {k: _pct(_mean(v)) for k, v in categories.items()}}


def tool_use(c: Columns) -> dict[str, Any]:
    """Average tool calls (and per tool), average rounds, and utilisation = calls / allowed calls (%)."""
    n = len(c["tool_calls"])
    tools = sorted({t for per in c["calls_per_tool"] for t in per} | {t for ts in c["tools"] for t in ts})
    max_calls = [r * m for r, m, ts in zip(c["max_rounds"], c["max_calls"], c["tools"]) if ts]
    avg_calls = _mean([float(x) for x in c["tool_calls"]]) or 0.0
    per_tool = {t: round(sum(per.get(t, 0) for per in c["calls_per_tool"]) / n, 4) for t in tools} if n else {}
    return {"avg_tool_calls": round(avg_calls, 4), "avg_calls_per_tool": per_tool,
            "avg_rounds": round(_mean([float(x) for x in c["rounds"]]) or 0.0, 4),
            "tool_utilisation": _pct(avg_calls / _mean([float(m) for m in max_calls])) if max_calls else None}


def outcomes(c: Columns) -> dict[str, Any]:
    """Finish reasons, invalid and ignored calls, episodes that ended in `error`, unjudged episodes (of those played
    to the end: an errored one is never judged) and judge errors."""
    return {"finish_reasons": dict(sorted(Counter(c["finish"]).items())),
            "invalid_calls": sum(c["invalid"]), "ignored_calls": sum(c["ignored"]),
            "errors": c["finish"].count("error"),
            "unjudged": sum(1 for judged, finish in zip(c["judged"], c["finish"]) if not judged and finish not in ERRORED),
            "judge_errors": sum(1 for e in c["judge_error"] if e is not None)}


def judge_problems(c: Columns) -> dict[str, Any]:
    """Why verdicts failed: the most frequent judge error messages (first 160 characters) with their counts."""
    reasons = Counter(e[:160] for e in c["judge_error"] if e is not None)
    return {"judge_error_reasons": dict(reasons.most_common(3))} if reasons else {}


def resources(c: Columns) -> dict[str, Any]:
    """Average prompt and completion tokens and seconds per episode."""
    return {"avg_prompt_tokens": round(_mean([float(x) for x in c["prompt_tokens"]]) or 0.0, 2),
            "avg_completion_tokens": round(_mean([float(x) for x in c["completion_tokens"]]) or 0.0, 2),
            "avg_seconds": round(_mean(c["seconds"]) or 0.0, 4)}


def _per_task(c: Columns) -> list[list[int]]:
    """Row numbers per task id (tasks sorted by id), each task's rows in repeat order."""
    out: dict[str, list[int]] = defaultdict(list)
    for i, task_id in enumerate(c["task_id"]):
        out[task_id].append(i)
    repeat = c["repeat"]
    return [sorted(out[t], key=repeat.__getitem__) for t in sorted(out)]  # stable: equal repeats keep row order


def confidence(c: Columns) -> dict[str, Any]:
    """95 % bootstrap interval of Pass@1 (%), over tasks and, with several repeats, over each task's repeats
    (`arena.judges.stats.bootstrap_ci`, fixed seed)."""
    interval = bootstrap_ci([[c["score"][i] for i in rows] for rows in _per_task(c)])
    return {"pass1_ci": None if interval is None else [_pct(interval[0]), _pct(interval[1])]}


def repeat_metrics(c: Columns) -> dict[str, Any]:
    """With several repeats per task: pass@k (unbiased estimator, %) and majority@k (%) over the repeats, for the
    k of `arena.judges.stats.ks_for(n)`, n = the fewest repeats any task has. Majority voting groups answers by their
    normalised text (`normalized.normalize_answer` of the judge's extracted answer, else the episode's)."""
    tasks = _per_task(c)
    n = min((len(r) for r in tasks), default=0)
    if n < 2:
        return {}
    ks = ks_for(n)
    correct, extracted, answer = c["correct"], c["extracted"], c["answer"]
    normalized: dict[str, str] = {}  # answers repeat across repeats: each text is normalised once
    for text in {(extracted[i] if extracted[i] is not None else answer[i]) or "" for r in tasks for i in r}:
        normalized[text] = normalize_answer(text)
    ballots = [[(normalized[(extracted[i] if extracted[i] is not None else answer[i]) or ""], correct[i])
                for i in r] for r in tasks]
    passes = {k: _mean([pass_at_k(n, sum(correct[i] for i in r[:n]), k) for r in tasks]) for k in ks}
    votes = {k: _mean([float(majority_at_k(b, k)) for b in ballots]) for k in ks}
    return {"pass_at_k": {str(k): _pct(v) for k, v in passes.items()},
            "majority_at_k": {str(k): _pct(v) for k, v in votes.items()}}


GROUP_METRICS: tuple[Callable[[Columns], dict[str, Any]], ...] = (
    counts, pass_at_1, confidence, support_counts, breakdowns, tool_use, outcomes, judge_problems, resources,
    repeat_metrics)
"""Every figure of a group, each computed in one place from the group's columns (`COLUMNS`)."""


SCORE_METRICS = (pass_at_1, confidence, support_counts, breakdowns, repeat_metrics)
"""The figures drawn from scores: computed over the episodes played to the end (`ERRORED` ones left out)."""


def played_rows(c: Columns) -> Columns:
    """The columns of the episodes played to the end (finish reason not in `ERRORED`)."""
    keep = [i for i, finish in enumerate(c["finish"]) if finish not in ERRORED]
    if len(keep) == len(c["finish"]):
        return c
    return {name: [values[i] for i in keep] for name, values in c.items()}


def errored_counts(c: Columns) -> dict[str, Any]:
    """Episodes that ended in an error of the infrastructure (`errored`), those played to the end (`played`), and
    Pass@1 counting the errored ones as wrong over every episode (`pass1_all`: the published scripts' count)."""
    errored = sum(1 for finish in c["finish"] if finish in ERRORED)
    return {"errored": errored, "played": len(c["finish"]) - errored, "pass1_all": _pct(_mean(c["score"]))}


def group_metrics(c: Columns) -> dict[str, Any]:
    """Every figure of one group of episodes: the union of `GROUP_METRICS`, the score figures over the episodes
    played to the end (`played_rows`), and `errored_counts`."""
    played = played_rows(c)
    out: dict[str, Any] = {}
    for metric in GROUP_METRICS:
        out.update(metric(played if metric in SCORE_METRICS else c))
    out.update(errored_counts(c))
    return out


def summarize(episodes: list[Episode], verdicts: list[Verdict], judge: str = AUTO,
              populations: Populations | None = None) -> dict[str, Any]:
    """Summary of a run for one judge ("auto": each task's own): one entry per (agent, setting, max_rounds);
    `populations`: what the run's run.json records of its datasets' files (`arena.store.records.RunInfo.populations`)."""
    chosen = latest_verdicts(episodes, verdicts, judge)
    groups: dict[tuple[str, str, int], list[Row]] = defaultdict(list)
    for episode in episodes:
        groups[(episode.agent, episode.setting, episode.budget.max_rounds)].append((episode, chosen.get(episode.id)))
    out = []
    for (agent, setting, max_rounds), rows in sorted(groups.items()):
        entry: dict[str, Any] = {"agent": agent, "setting": setting, "max_rounds": max_rounds}
        entry.update(group_metrics(columns_of(rows)))
        suites = sorted({e.task.suite for e, _ in rows})
        extras = {s: suite_group_figures(metrics, [r for r in rows if r[0].task.suite == s], (populations or {}).get(s))
                  for s in suites if (metrics := suite_metrics(s)) is not None}
        if extras:
            entry["suites"] = extras
        out.append(entry)
    return {"judge": judge, "groups": out}
