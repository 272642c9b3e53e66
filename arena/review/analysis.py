"""A run as pandas DataFrames, for analysis in a notebook, and `arena export`.

    from arena.review.analysis import load_run_frames
    frames = load_run_frames("logs/<run-id>")          # the run's own judge; judge="llm" for another
    frames.episodes.groupby(["setting", "max_rounds"])["score"].mean() * 100   # = Pass@1 of `arena summary`

(The run as the store reads it, `arena.store.open_run(path).frame()`, extended by the fields only a trajectory holds;
pandas is imported when a frame is made, so that importing `arena.review` or starting `arena` does not load it.)

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

from .rundata import RunData, load_run


@dataclass
class RunFrames:
    """The three tables of a run and the judge whose verdicts `episodes.score` holds."""

    episodes: pd.DataFrame
    steps: pd.DataFrame
    verdicts: pd.DataFrame
    judge: str
    run_id: str


EPISODE_COLUMNS = ("run_id", "episode_id", "key", "task_id", "suite", "level", "category", "hops", "agent", "setting",
                   "max_rounds", "repeat", "seed", "finish_reason", "error", "answer", "rounds", "tool_calls",
                   "invalid_calls", "ignored_calls", "prompt_tokens", "completion_tokens", "seconds", "cost", "judge",
                   "score", "correct", "judge_error", "extracted", "judged")
"""The columns of `episodes` before the per-judge ones: `Run.frame()`'s (`arena.store.read.FRAME_COLUMNS`, less
`model_calls`) with the fields only a trajectory holds (`record_columns`), `cost` only when an episode records one."""


def record_columns(run: RunData) -> dict[str, list[Any]]:
    """hops, seed, error, cost and the token totals as recorded (None where a record has none; the index holds 0)
    of each episode, in `Run.frame()`'s row order: one pass over the episode records (orjson, each dropped once
    read); `cost` left out when no episode records one (`meta.cost`)."""
    cols: dict[str, list[Any]] = {"hops": [], "seed": [], "error": [], "cost": [], "prompt_tokens": [],
                                  "completion_tokens": []}
    for e in run.scan.records_of():
        meta, totals = e.get("meta") or {}, e.get("totals") or {}
        cols["prompt_tokens"].append(totals.get("prompt_tokens", 0))
        cols["completion_tokens"].append(totals.get("completion_tokens", 0))
        cols["hops"].append(e["task"].get("hops"))
        cols["seed"].append(e.get("seed", 0))
        cols["error"].append(e.get("error"))
        cols["cost"].append(meta.get("cost", _NO_COST))
    if all(c is _NO_COST for c in cols["cost"]):
        del cols["cost"]
    else:
        cols["cost"] = [None if c is _NO_COST else c for c in cols["cost"]]
    return cols


_NO_COST = object()


def episode_frame(run: RunData) -> pd.DataFrame:
    """`episodes` (see the module docstring): `Run.frame()` of the run, extended by `record_columns`."""
    frame = run.run.frame()
    for name, values in record_columns(run).items():
        frame[name] = values
    frame["seconds"] = [round(value, 4) for value in frame["seconds"]]
    per_judge = [c for c in frame.columns if "[" in c]
    return frame[[c for c in EPISODE_COLUMNS if c in frame.columns] + per_judge]


def episode_rows(run: RunData) -> list[dict[str, Any]]:
    """`episode_frame` as one flat dict per episode (missing values None)."""
    frame = episode_frame(run)
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


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

    return RunFrames(episodes=episode_frame(run), steps=pd.DataFrame(step_rows(run)),
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
    frame = episode_frame(run)
    target.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        frame.to_csv(target, index=False)
    elif fmt == "parquet":
        frame.to_parquet(target, index=False, engine="pyarrow")
    else:
        frame.to_json(target, orient="records", lines=True, force_ascii=False)
    return target
