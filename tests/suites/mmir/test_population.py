"""MMIR accuracy under `--protocol original` over every question in the file (issue 28).

Published rule (eric-ai-lab/MMIR `eval/calculate_score.py`, `eval` @17f24c5), in our words: each source's score sum
is divided by the number of questions of that source in the questions file (grouped by the exact spellings "web page"
and "poster", anything else office), also when some of them were never answered; a missing answer counts 0. The
reference here is written from the questions file alone (json), independently of the arena's loader.

Under `--protocol arena` the arena divides by the questions the run played (documented in docs/protocols.md).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.cli.main import app
from arena.store import open_run
from arena.suites.mmir.world import build

LIMIT = 2


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("mmir-population") / "world", seed=5, size="small", count=5)


def ref_group(source: str) -> str:
    return "web" if source == "web page" else "poster" if source == "poster" else "office"


def questions(world: Path) -> list[dict]:
    return json.loads((world / "questions_mcq.json").read_text(encoding="utf-8"))


def script_for(items: list[dict]) -> dict[str, list[dict]]:
    """The first question answered exactly (score 1), every other one with an id that is no truth (score 0)."""
    script = {}
    for i, item in enumerate(items):
        truth = item["gt_ans"]
        ids = truth if i == 0 else [max(truth) + 1]
        answer = "<ans>" + ",".join(f'"[{t}]"' for t in ids) + "</ans><reason>scripted</reason>"
        for group in ("web", "office", "poster"):  # the id a protocol gives the question (published spelling or not)
            script[f"{group}-{i}:mcq"] = [{"answer": answer}]
    return script


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def run_limited(world: Path, tmp_path: Path, protocol: str) -> Path:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(script_for(questions(world))))
    invoke("run", "--data", world / "questions_mcq.json", "--agent", "scripted", "--script", script,
           "--setting", "no-tool", "--protocol", protocol, "--limit", str(LIMIT), "--out", tmp_path / "logs",
           "--run-id", protocol)
    return tmp_path / "logs" / protocol


def figures_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())["groups"][0]["suites"]["mmir"]


def test_original_divides_by_every_question_in_the_file(world: Path, tmp_path: Path):
    items = questions(world)
    n_file = len(items)
    assert n_file > LIMIT
    per_source = Counter(ref_group(item["source"]) for item in items)
    first = ref_group(items[0]["source"])
    expected = round(100 * 1 / n_file, 2)  # one question answered right, LIMIT run, the rest never run
    run_dir = run_limited(world, tmp_path, "original")

    figures = figures_of(run_dir)
    assert figures["accuracy"] == expected
    assert figures["modes"]["mcq"]["accuracy"] == expected
    assert figures["sources"] == {g: round(100 * (g == first) / n, 2) for g, n in per_source.items()}
    assert figures["questions"] == n_file and figures["not_run"] == n_file - LIMIT
    note = f"accuracy over all {n_file} questions in the file; {n_file - LIMIT} not run count as wrong"
    assert figures["denominator"] == note

    # the record the figures come from is in run.json, so they are recomputable from the run directory alone
    run = open_run(run_dir)
    (population,) = run.populations("mmir")
    assert population["questions"] == n_file and population["groups"] == dict(per_source)
    frame = run.frame()
    assert round(100 * frame["score"].sum() / population["questions"], 2) == expected

    # `arena summary`, `arena report` and `arena judge` (a re-judging) print the same figure and say what it is over
    shown = f"accuracy={expected:.2f}"
    assert shown in invoke("summary", run_dir)
    assert shown in invoke("judge", run_dir, "--judge", "mmir", "--as", "mmir-again")
    report = invoke("report", run_dir, "--out", tmp_path / "report")
    assert note in " ".join(report.split()) and f"{expected:.2f}" in report

    # a run recorded before the file's count was kept reads as before: over the questions it played
    info = json.loads((run_dir / "run.json").read_text())
    for entry in info["datasets"]:
        entry.pop("population", None)
    (run_dir / "run.json").write_text(json.dumps(info))
    played = round(100 * 1 / LIMIT, 2)
    assert f"accuracy={played:.2f}" in invoke("summary", run_dir)
    assert open_run(run_dir).populations("mmir") == []


def test_arena_divides_by_the_questions_played(world: Path, tmp_path: Path):
    items = questions(world)
    played = round(100 * 1 / LIMIT, 2)
    run_dir = run_limited(world, tmp_path, "arena")
    figures = figures_of(run_dir)
    assert figures["accuracy"] == played
    assert "denominator" not in figures and "not_run" not in figures
    assert sum(figures["counts"].values()) == LIMIT < len(items)
    assert open_run(run_dir).populations("mmir") == []
    assert re.search(rf"accuracy={played:.2f}\b", invoke("summary", run_dir))


def test_figures_over_two_files_with_repeats_and_a_file_never_run():
    """Both questions files recorded, only MCQ questions played (one of them twice, repeats): each question weighs
    one (its mean score), each setting divides by its own file, the overall by both."""
    from arena.core.verdict import Verdict
    from arena.suites.mmir.judge import mmir_metrics
    from tests.support.published_episodes import final_turn_episode

    played = [("web-0:mcq", 1.0), ("web-0:mcq", 0.0), ("office-1:mcq", 1.0)]
    rows = []
    for task_id, score in played:
        episode = final_turn_episode("<ans>1</ans>", ["1"], suite="mmir", task_id=task_id)
        rows.append((episode, Verdict(episode_id=episode.id, key=episode.key, judge="mmir", score=score,
                                      correct=score == 1.0)))
    populations = [{"suite": "mmir", "mode": "mcq", "questions": 4, "groups": {"web": 2, "office": 1, "poster": 1}},
                   {"suite": "mmir", "mode": "open", "questions": 3, "groups": {"web": 3}}]
    figures = mmir_metrics(rows, populations)
    assert figures["accuracy"] == round(100 * 1.5 / 7, 2)
    assert figures["denominator"] == "accuracy over all 7 questions in the 2 files; 5 not run count as wrong"
    assert figures["sources"] == {"office": 100.0, "poster": 0.0, "web": round(100 * 0.5 / 5, 2)}
    mcq, open_ended = figures["modes"]["mcq"], figures["modes"]["open"]
    assert mcq["accuracy"] == round(100 * 1.5 / 4, 2) and mcq["not_run"] == 2
    assert mcq["sources"] == {"office": 100.0, "poster": 0.0, "web": 25.0}
    assert open_ended["accuracy"] == 0.0 and open_ended["not_run"] == 3 and open_ended["counts"] == {}
    # without the records (an arena run, an older run): over the episodes played, as before
    assert mmir_metrics(rows)["accuracy"] == round(100 * 2 / 3, 2)
