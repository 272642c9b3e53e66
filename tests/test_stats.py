"""Issue 16, items 6-7: confidence intervals, pass@k, majority@k, McNemar, `arena compare`, exports and frames."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from arena.core.budget import Budget
from arena.core.task import TaskRef
from arena.core.trajectory import Episode
from arena.core.verdict import Verdict
from arena.judges.metrics import summarize
from arena.judges.stats import bootstrap_ci, majority_at_k, mcnemar_exact, pass_at_k
from arena.review.analysis import episode_rows, load_run_frames
from arena.cli.main import app
from arena.review.rundata import load_run
from arena.store.store import RunStore
from tests.support.tiny_dataset import write_tiny_dataset

runner = CliRunner()


def test_pass_at_k_is_the_unbiased_estimator():
    # Chen et al. 2021: 1 - C(n-c, k) / C(n, k)
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)
    assert pass_at_k(5, 0, 3) == 0.0 and pass_at_k(5, 5, 1) == 1.0 and pass_at_k(5, 3, 3) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


def test_majority_vote_and_ties():
    assert majority_at_k([("a", False), ("b", True), ("b", True)], 3) is True
    assert majority_at_k([("a", False), ("b", True), ("b", True)], 1) is False
    assert majority_at_k([("a", True), ("b", False)], 2) is True  # tie: the earliest answer


def test_mcnemar_exact_values():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(10, 0) == pytest.approx(2 / 1024)
    assert mcnemar_exact(3, 5) == pytest.approx(2 * (1 + 8 + 28 + 56) / 256)
    assert mcnemar_exact(5, 3) == mcnemar_exact(3, 5)
    assert mcnemar_exact(1, 2) == 1.0


def test_bootstrap_is_recomputable_and_covers_repeats():
    scores = [[1.0], [0.0], [1.0], [1.0], [0.0], [1.0], [0.0], [1.0]]
    low, high = bootstrap_ci(scores)
    assert bootstrap_ci(scores) == (low, high) and low < 5 / 8 < high
    assert bootstrap_ci([[1.0]] * 10) == (1.0, 1.0) and bootstrap_ci([]) is None
    # every task has the same mean: only the second level (repeats) gives the interval a width
    low, high = bootstrap_ci([[0.0, 1.0]] * 20)
    assert low < 0.5 < high
    assert bootstrap_ci([[0.5]] * 20) == (0.5, 0.5)


def episode(task: str, repeat: int, answer: str) -> Episode:
    return Episode(id=f"{task}-{repeat}", run_id="r", key=f"{task}|s|5|{repeat}|a",
                   task=TaskRef(id=task, suite="x", question="?", answers=["yes"]), agent="a", setting="s",
                   budget=Budget(max_rounds=5), repeat=repeat, answer=answer, finish_reason="answered")


def test_group_metrics_over_repeats():
    answers = {"t1": ["yes", "no", "yes"], "t2": ["no", "no", "yes"], "t3": ["no", "no", "no"]}
    episodes = [episode(t, r, a) for t, given in answers.items() for r, a in enumerate(given)]
    verdicts = [Verdict(episode_id=e.id, key=e.key, judge="normalized", score=float(e.answer == "yes"),
                        correct=e.answer == "yes", extracted=e.answer) for e in episodes]
    (group,) = summarize(episodes, verdicts, "normalized")["groups"]
    assert group["pass1"] == pytest.approx(100 * 3 / 9, abs=1e-3)
    expected_ci = bootstrap_ci([[float(a == "yes") for a in given] for given in answers.values()])
    assert group["pass1_ci"] == [round(100 * expected_ci[0], 4), round(100 * expected_ci[1], 4)]
    # pass@k: mean over tasks of 1 - C(n-c, k)/C(n, k) with n = 3, c = 2, 1, 0
    assert group["pass_at_k"] == {"1": pytest.approx(100 / 3, abs=1e-3),
                                  "2": pytest.approx(100 * (1 + 2 / 3) / 3, abs=1e-3), "3": pytest.approx(66.6667)}
    # majority: t1 yes (2 of 3); t2 no; t3 no. First 2: t1 tie -> earliest "yes"; t2 "no"; t3 "no"
    assert group["majority_at_k"] == {"1": pytest.approx(33.3333), "2": pytest.approx(33.3333),
                                      "3": pytest.approx(33.3333)}
    with_error = verdicts[:-1] + [verdicts[-1].model_copy(update={"error": "judge said nonsense"})]
    (group,) = summarize(episodes, with_error, "normalized")["groups"]
    assert group["judge_errors"] == 1 and group["judge_error_reasons"] == {"judge said nonsense": 1}


def make_run(tmp_path: Path, run_id: str, answers: dict[str, str]) -> Path:
    data = tmp_path / "data" / "annotations.jsonl"
    if not data.exists():
        write_tiny_dataset(tmp_path / "data", n_items=4)
    script = tmp_path / f"{run_id}.json"
    script.write_text(json.dumps({k: [{"answer": v}] for k, v in answers.items()}))
    result = runner.invoke(app, ["run", "--data", str(data), "--agent", "scripted", "--script", str(script),
                                 "--setting", "no-tool", "--judge", "normalized", "--out", str(tmp_path / "logs"),
                                 "--run-id", run_id])
    assert result.exit_code == 0, result.output
    return tmp_path / "logs" / run_id


def test_compare_two_runs_on_the_same_tasks(tmp_path):
    a = make_run(tmp_path, "a", {"q1": "Mirelle Dastrow", "q2": "1875", "q3": "1874", "q4": "no idea"})
    b = make_run(tmp_path, "b", {"q1": "Mirelle Dastrow", "q2": "1874", "q3": "1875", "q4": "1874"})
    out = runner.invoke(app, ["compare", str(a), str(b)])
    assert out.exit_code == 0, out.output
    row = next(line for line in out.output.splitlines() if line.startswith("no-tool · N=10 "))
    cells = re.split(r"\s{2,}", row.strip())
    # A 2/4, B 3/4; B wins q2 and q4, loses q3, ties q1; discordant 1 vs 2 -> exact p = 2 * 4/8 = 1
    assert cells[1:4] == ["4", "50.00", "75.00"] and cells[4].startswith("+25.00 [") and cells[5:] == ["1", "0/0"]
    assert "no-tool · N=10: B won 2, lost 1, tied 1 of 4 tasks; correct only in A: 1, only in B: 2" in out.output
    report = runner.invoke(app, ["report", str(a), str(b), "--out", str(tmp_path / "report")])
    assert report.exit_code == 0 and "Paired comparison: A = a, B = b" in report.output


def test_exports_and_frames(tmp_path):
    run = make_run(tmp_path, "a", {"q1": "Mirelle Dastrow", "q2": "1875", "q3": "1874", "q4": "no idea"})
    for fmt in ("csv", "parquet", "jsonl"):
        out = runner.invoke(app, ["export", str(run), "--format", fmt])
        assert out.exit_code == 0, out.output
    table = pq.read_table(run / "export.parquet").to_pandas()
    lines = [json.loads(line) for line in (run / "export.jsonl").read_text().splitlines()]
    csv = pd.read_csv(run / "export.csv")
    assert len(table) == len(lines) == len(csv) == 4
    assert {"task_id", "level", "category", "finish_reason", "prompt_tokens", "completion_tokens", "seconds",
            "judge", "score", "correct", "judge_error", "score[normalized]"} <= set(table.columns)
    assert sorted(table["score"]) == [0.0, 0.0, 1.0, 1.0] and set(table["judge"]) == {"normalized"}
    frames = load_run_frames(run)
    assert frames.judge == "normalized" and len(frames.episodes) == 4 and len(frames.verdicts) == 4
    rows = {r["episode_id"]: r for r in episode_rows(load_run(run))}  # streamed: each row against its record
    verdicts = {v.episode_id: v for v in RunStore(run).verdicts()}
    for e in RunStore(run).episodes():
        v = verdicts[e.id]
        assert {k: rows[e.id][k] for k in ("key", "task_id", "hops", "seed", "repeat", "finish_reason", "answer",
                                           "error", "rounds", "prompt_tokens", "judge", "score", "correct",
                                           "extracted", "score[normalized]")} == {
            "key": e.key, "task_id": e.task.id, "hops": e.task.hops, "seed": e.seed, "repeat": e.repeat,
            "finish_reason": e.finish_reason, "answer": e.answer, "error": e.error, "rounds": e.totals.rounds,
            "prompt_tokens": e.totals.prompt_tokens, "judge": v.judge, "score": v.score, "correct": v.correct,
            "extracted": v.extracted, "score[normalized]": v.score}
    assert len(frames.steps) == 4 and set(frames.steps["action"]) == {"answer"}
    summary = json.loads((run / "summary.json").read_text())
    assert 100 * frames.episodes["score"].mean() == summary["groups"][0]["pass1"]
    clobber = runner.invoke(app, ["export", str(run), "--format", "jsonl", "--out", str(run / "episodes.jsonl")])
    assert clobber.exit_code == 2 and "is a file of the run store" in clobber.output
    bad = runner.invoke(app, ["export", str(run), "--format", "xlsx"])
    assert bad.exit_code == 2 and "'xlsx' is not one of 'csv', 'parquet', 'jsonl'" in " ".join(bad.output.replace("│", " ").split())


def test_grouped_draws_match_drawing_task_by_task():
    import numpy as np

    from arena.judges.stats import _direct

    tasks = [(0.0, 1.0, 1.0), (0.0, 0.0, 1.0), (1.0, 1.0, 1.0), (0.0, 0.0, 0.0), (0.0, 0.5)] * 8
    fast = bootstrap_ci(tasks, resamples=20_000)
    slow = np.quantile(_direct(tasks, np.random.default_rng(1), 20_000), [0.025, 0.975])
    assert abs(fast[0] - slow[0]) < 0.02 and abs(fast[1] - slow[1]) < 0.02


def test_the_interval_is_np_quantiles_to_the_last_bit_without_importing_numpy_ma() -> None:
    """`_percentiles` computes numpy's "linear" quantiles from the sorted means (np.quantile's first use imports
    numpy.ma, ~11 ms a process): the same floats on ties, infinities, NaN and any level (a zero's sign too, but
    where -0.0 and 0.0 are both among the means: np.quantile's partial sort may leave either first)."""
    import subprocess
    import sys

    import numpy as np

    from arena.judges import stats

    rng = np.random.default_rng(7)
    for trial in range(3000):
        n = int(rng.integers(1, 1200))
        x = [rng.random(n), rng.integers(0, 5, n) / rng.integers(1, 7), rng.normal(0, 1e6, n),
             rng.choice([0.0, 1.0, 0.5, 1 / 3], n), np.full(n, -0.0)][trial % 5]
        for special in (np.nan, np.inf, -np.inf):
            if rng.random() < 0.03:
                x[rng.integers(0, n)] = special
        level = [0.95, 0.9, 0.99, 0.5, float(rng.random())][trial % 7 % 5]
        tail = (1.0 - level) / 2.0
        with np.errstate(invalid="ignore"):
            expected = [float(v) for v in np.quantile(x, [tail, 1.0 - tail])]
        got = stats._percentiles(x, level)
        assert [repr(v) for v in got] == [repr(v) for v in expected], (n, level)
    code = ("import sys; from arena.judges.stats import bootstrap_ci; bootstrap_ci([[1.0], [0.0, 1.0], [0.5]]); "
            "print('numpy.ma' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
