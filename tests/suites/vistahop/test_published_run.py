"""Acceptance: a VistaArena-format dataset of tricky final outputs, run through the CLI and scored with
`--judge auto`, gets item by item the scores the published evaluator gives (reference in
tests/test_published_vistahop.py, written from ahang0712/vistahop `evaluation/run_vistahop_eval.py`)."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from arena.cli.main import app
from tests.support.openai_server import OpenAIStub, Reply
from tests.support.tiny_dataset import scene
from tests.suites.vistahop.test_published import (EM_OUTPUTS, MCQ_OUTPUTS, judge_says, recorded, ref_llm_score,
                                           ref_mcq_correct)

runner = CliRunner()


def published_judge(request):
    user = request["messages"][1]["content"]
    text = user[0]["text"] if isinstance(user, list) else user
    truth = re.search(r"Reference answer: (.*)", text).group(1)
    answer = re.search(r"Model answer: (.*?)\n\nInstructions", text, re.S).group(1)
    return Reply(content=judge_says(answer, truth))


def test_vistaarena_run_with_judge_auto_scores_like_the_published_evaluator(tmp_path):
    root = tmp_path / "data"
    (root / "images").mkdir(parents=True)
    scene().save(root / "images" / "scene.png")
    mcq_outputs = [o for o in MCQ_OUTPUTS if o.strip()]
    open_cases = [(o, t) for o, t in EM_OUTPUTS if o.strip()]
    mcq_items, open_items, script, expected = [], [], {}, {}
    for i, output in enumerate(mcq_outputs):
        truth = "ABCD"[i % 4]
        mcq_items.append({"id": f"m{i}", "prompt": [{"role": "user", "content": "<image>Which option?"}],
                          "reward_model": {"ground_truth": [truth]}, "image": ["images/scene.png"]})
        script[f"m{i}"] = [{"text": output}]
        expected[f"m{i}"] = float(ref_mcq_correct(recorded(output), [truth]))
    for i, (output, truths) in enumerate(open_cases):
        open_items.append({"id": f"o{i}", "prompt": [{"role": "user", "content": "<image>Which city?"}],
                           "reward_model": {"ground_truth": truths}, "image": ["images/scene.png"]})
        script[f"o{i}"] = [{"text": output}]
        expected[f"o{i}"] = ref_llm_score(recorded(output), truths)[0]
    (root / "mcq.jsonl").write_text("".join(json.dumps(i) + "\n" for i in mcq_items))
    (root / "open.json").write_text(json.dumps(open_items))
    (root / "datasets.json").write_text(json.dumps({
        "letters": {"annotation": "mcq.jsonl", "reward_fn": ["em_score_mcq"]},
        "cities": {"annotation": "open.json", "reward_fn": ["llm_score"]}}))
    (tmp_path / "script.json").write_text(json.dumps(script))
    with OpenAIStub(published_judge) as judge:
        result = runner.invoke(app, ["run", "--data", str(root / "datasets.json"), "--agent", "scripted",
                                     "--script", str(tmp_path / "script.json"), "--setting", "no-tool",
                                     "--max-rounds", "1", "--judge", "auto", "--judge-model", "judge",
                                     "--judge-base-url", judge.base_url, "--out", str(tmp_path / "logs"),
                                     "--run-id", "published"])
        assert result.exit_code == 0, result.output
        assert all(isinstance(r["messages"][1]["content"], list) for r in judge.requests), "image sent by default"
    run_dir = tmp_path / "logs" / "published"
    episodes = {json.loads(line)["id"]: json.loads(line)["task"]["id"]
                for line in (run_dir / "episodes.jsonl").read_text().splitlines()}
    verdicts = [json.loads(line) for line in (run_dir / "verdicts.jsonl").read_text().splitlines()]
    scores = {episodes[v["episode_id"]]: v["score"] for v in verdicts
              if v["judge"] == ("mcq" if episodes[v["episode_id"]].startswith("m") else "llm")}
    assert len(expected) >= 100 and scores == expected
