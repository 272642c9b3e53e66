"""A run as pandas DataFrames, for analysis in a notebook, and `arena export`.

    from runs.analysis import load_run_frames
    frames = load_run_frames("logs/<run-id>")          # the run's own judge; judge="llm" for another
    frames.episodes.groupby(["setting", "max_rounds"])["score"].mean() * 100   # = Pass@1 of `arena summary`

(`arena/` is the core and cannot import `runs/`, so the API lives here: `from runs.analysis import load_run_frames`;
it is not re-exported from `runs/__init__` so that importing `runs` does not load pandas.)

- `episodes`: one row per episode (the latest record of each grid key): identity (run, episode id, key, task,
  suite, level, category, hops, agent, setting, max_rounds, repeat, seed), outcome (finish_reason, error, answer),
  effort (rounds, tool_calls, invalid_calls, ignored_calls, prompt_tokens, completion_tokens, seconds, cost when the
  episode records one in `meta.cost`), the verdict that counts (`judge`, `score`, `correct`, `judge_error`,
  `extracted`; `score` is 0 for an unjudged episode or a judge error, as in Pass@1), and `score[J]` /
  `correct[J]` for every judge J with verdicts in the run.
- `steps`: one row per step (episode id, key, round, action, tool, arguments as JSON, error, answer, tokens,
  model and tool seconds, observation text length and images).
- `verdicts`: every verdict record (episode id, key, judge, judge version and model, score, correct, extracted,
  rationale, error).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from judges.metrics import latest_verdicts, score_of

from .rundata import RunData, load_run


@dataclass
class RunFrames:
    """The three tables of a run and the judge whose verdicts `episodes.score` holds."""

    episodes: pd.DataFrame
    steps: pd.DataFrame
    verdicts: pd.DataFrame
    judge: str
    run_id: str


def episode_rows(run: RunData) -> list[dict[str, Any]]:
    """One flat dict per episode (see the module docstring for the columns)."""
    judges = sorted({v.judge for v in run.verdicts})
    per_judge = {j: latest_verdicts(run.episodes, run.verdicts, j) for j in judges}
    with_cost = any("cost" in e.meta for e in run.episodes)
    rows = []
    for e in run.episodes:
        v = run.chosen.get(e.id)
        row: dict[str, Any] = {
            "run_id": run.run_id, "episode_id": e.id, "key": e.key, "task_id": e.task.id, "suite": e.task.suite,
            "level": e.task.level, "category": e.task.category, "hops": e.task.hops, "agent": e.agent,
            "setting": e.setting, "max_rounds": e.budget.max_rounds, "repeat": e.repeat, "seed": e.seed,
            "finish_reason": e.finish_reason, "error": e.error, "answer": e.answer,
            "rounds": e.totals.rounds, "tool_calls": e.totals.tool_calls, "invalid_calls": e.totals.invalid_calls,
            "ignored_calls": e.totals.ignored_calls, "prompt_tokens": e.totals.prompt_tokens,
            "completion_tokens": e.totals.completion_tokens, "seconds": round(e.totals.seconds, 4),
        }
        if with_cost:
            row["cost"] = e.meta.get("cost")
        row.update({"judge": v.judge if v else None, "score": score_of(v), "correct": bool(v and v.error is None
                                                                                        and v.correct),
                    "judge_error": v.error if v else None, "extracted": v.extracted if v else None,
                    "judged": v is not None})
        for j in judges:
            other = per_judge[j].get(e.id)
            row[f"score[{j}]"] = None if other is None else score_of(other)
            row[f"correct[{j}]"] = None if other is None else bool(other.error is None and other.correct)
        rows.append(row)
    return rows


def step_rows(run: RunData) -> list[dict[str, Any]]:
    rows = []
    for e in run.episodes:
        for s in e.steps:
            rows.append({"episode_id": e.id, "key": e.key, "round": s.round, "final_turn": s.final_turn,
                         "action": s.action, "tool": s.tool,
                         "arguments": None if s.arguments is None else json.dumps(s.arguments, ensure_ascii=False),
                         "error": s.error, "answer": s.answer, "prompt_tokens": s.usage.prompt_tokens,
                         "completion_tokens": s.usage.completion_tokens, "model_seconds": s.model_seconds,
                         "tool_seconds": s.tool_seconds,
                         "observation_chars": len(s.observation.text) if s.observation else 0,
                         "observation_images": len(s.observation.images) if s.observation else 0,
                         "observation_error": bool(s.observation and s.observation.error)})
    return rows


def verdict_rows(run: RunData) -> list[dict[str, Any]]:
    return [{"episode_id": v.episode_id, "key": v.key, "judge": v.judge, "judge_version": v.judge_version,
             "judge_model": v.judge_model, "score": v.score, "correct": v.correct, "extracted": v.extracted,
             "rationale": v.rationale, "error": v.error} for v in run.verdicts]


def frames_of(run: RunData) -> RunFrames:
    return RunFrames(episodes=pd.DataFrame(episode_rows(run)), steps=pd.DataFrame(step_rows(run)),
                     verdicts=pd.DataFrame(verdict_rows(run)), judge=run.judge, run_id=run.run_id)


def load_run_frames(path: str | Path, judge: str | None = None) -> RunFrames:
    """A run directory as DataFrames; `episodes.score` is by `judge`, by default the judge the run used."""
    return frames_of(load_run(path, judge))


FORMATS = ("csv", "parquet", "jsonl")


def export_episodes(run: RunData, target: Path, fmt: str) -> Path:
    """Write one row per episode as CSV, Parquet (pyarrow) or JSON lines; returns the file written."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; valid: {', '.join(FORMATS)}")
    store_files = {p.resolve() for p in (run.store.run_json, run.store.episodes_path, run.store.verdicts_path,
                                         run.store.dir / "summary.json", run.store.dir / "judge_cache.jsonl")}
    if target.resolve() in store_files:
        raise ValueError(f"{target}: is a file of the run store; export elsewhere (--out FILE)")
    frame = pd.DataFrame(episode_rows(run))
    target.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        frame.to_csv(target, index=False)
    elif fmt == "parquet":
        frame.to_parquet(target, index=False, engine="pyarrow")
    else:
        frame.to_json(target, orient="records", lines=True, force_ascii=False)
    return target
