"""A run as pandas DataFrames, for analysis in a notebook, and `arena export`.

    from arena.review.analysis import load_run_frames
    frames = load_run_frames("logs/<run-id>")          # the run's own judge; judge="llm" for another
    frames.episodes.groupby(["setting", "max_rounds"])["score"].mean() * 100   # = Pass@1 of `arena summary`

(`arena/` is the core and cannot import `runs/`, so the API lives here: `from arena.review.analysis import load_run_frames`;
pandas is imported when a frame is made, so that importing `runs` or starting `arena` does not load it.)

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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

from arena.judges.metrics import judge_for_task
from arena.store.scan import TaskJudge

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
    """One flat dict per episode (see the module docstring for the columns): one pass over the episode records
    (orjson, each dropped once its row is made) beside the run's columns (`arena.store.scan`: index and verdicts)."""
    scan = run.scan
    c = scan.cols
    chosen = scan.chosen(run.judge)
    latest: dict[tuple[str, str], tuple[float, bool, str | None]] = {}
    for episode_id, judge, score, correct, error, *_ in scan.verdict_rows:
        latest[(episode_id, judge)] = (score, correct, error)
    judges = sorted({judge for _, judge in latest})
    rows = []
    with_cost = False
    for r, e in enumerate(scan.records_of()):
        task, totals, meta = e["task"], e.get("totals") or {}, e.get("meta") or {}
        v = chosen.get(r)
        ok = v is not None and v[2] is None
        row: dict[str, Any] = {
            "run_id": run.run_id, "episode_id": c["id"][r], "key": c["key"][r], "task_id": c["task_id"][r],
            "suite": c["suite"][r], "level": c["level"][r], "category": c["category"][r], "hops": task.get("hops"),
            "agent": c["agent"][r], "setting": c["setting"][r], "max_rounds": c["max_rounds"][r],
            "repeat": c["repeat"][r], "seed": e.get("seed", 0), "finish_reason": c["finish"][r],
            "error": e.get("error"), "answer": c["answer"][r], "rounds": c["rounds"][r],
            "tool_calls": c["tool_calls"][r], "invalid_calls": c["invalid"][r], "ignored_calls": c["ignored"][r],
            "prompt_tokens": totals.get("prompt_tokens", 0), "completion_tokens": totals.get("completion_tokens", 0),
            "seconds": round(c["seconds"][r], 4), "cost": meta.get("cost"),
        }
        with_cost = with_cost or "cost" in meta
        row.update({"judge": judge_for_task(TaskJudge(c["judge"][r]), run.judge) if v is not None else None,
                    "score": v[0] if ok else 0.0, "correct": bool(ok and v[1]),
                    "judge_error": v[2] if v is not None else None, "extracted": v[4] if v is not None else None,
                    "judged": v is not None})
        for j in judges:
            other = latest.get((c["id"][r], j))
            row[f"score[{j}]"] = None if other is None else (other[0] if other[2] is None else 0.0)
            row[f"correct[{j}]"] = None if other is None else bool(other[2] is None and other[1])
        rows.append(row)
    if not with_cost:
        for row in rows:
            del row["cost"]
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
    import pandas as pd  # loaded on use: every `arena` command imports this module, few need pandas (0.5 s)

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
    import pandas as pd  # loaded on use (see frames_of)

    frame = pd.DataFrame(episode_rows(run))
    target.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        frame.to_csv(target, index=False)
    elif fmt == "parquet":
        frame.to_parquet(target, index=False, engine="pyarrow")
    else:
        frame.to_json(target, orient="records", lines=True, force_ascii=False)
    return target
