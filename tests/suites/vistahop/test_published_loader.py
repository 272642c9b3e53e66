"""Differential test of the VistaHop loader: what the published loader skips or reads leniently is loaded the
same way by a run under `--protocol original`, and refused (as before) under `--protocol arena` and by every
other reader of the data.

Reference, written in our own words from ahang0712/vistahop `evaluation/run_vistahop_eval.py` @1d6a961,
`load_datasets`: a datasets.json entry whose annotation file does not exist is skipped with a warning (before its
scoring methods are looked at); so is a file that starts as a JSON list but does not parse; a JSON-lines file is
read line by line, blank lines dropped, one trailing comma cut off each line, and a line that still does not parse
is skipped with a warning; a row whose `reward_model` has no `ground_truth` gets the answer list `[""]`; every other
row is a sample."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from arena.core.dataset import DatasetError, load_datasets
from arena.cli.main import app
from tests.suites.vistahop.test_published import ref_llm_score, ref_mcq_correct
from tests.suites.vistahop.test_published_run import published_judge
from tests.support.openai_server import OpenAIStub
from tests.support.tiny_dataset import scene

runner = CliRunner()


def ref_load(lines: list[str]) -> list[dict]:
    """The samples the published loader keeps from a JSON-lines file: (item id, answers) in file order."""
    samples = []
    for line in (raw.strip() for raw in lines):
        line = line[:-1] if line.endswith(",") else line
        if not line:
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        reward = item.get("reward_model") if isinstance(item.get("reward_model"), dict) else {}
        samples.append({"id": item["id"], "answers": reward.get("ground_truth", [""])})
    return samples


def item(i: str, truth: list[str] | None) -> str:
    record = {"id": i, "prompt": [{"role": "user", "content": "<image>Which one?"}], "image": ["images/scene.png"],
              "reward_model": {} if truth is None else {"ground_truth": truth}}
    return json.dumps(record)


MCQ_LINES = [item("m0", ["A"]), '{"id": "m1", "prompt": [broken', "", item("m2", None), item("m3", ["C"])]
OPEN_LINES = [item("o0", ["Paris"]), item("o1", None), item("o2", None), "not json at all", item("o3", ["Rome"]) + ","]
OUTPUTS = {"m0": "<answer>A</answer>", "m2": "<answer>B</answer>", "m3": "<answer>C</answer>",
           "o0": "<answer>Paris</answer>", "o1": "<answer></answer>", "o2": "<answer>Lyon</answer>",
           "o3": "<answer>Rome</answer>"}


def write_data(root):
    (root / "images").mkdir(parents=True)
    scene().save(root / "images" / "scene.png")
    (root / "mcq.jsonl").write_text("\n".join(MCQ_LINES) + "\n")
    (root / "open.jsonl").write_text("\n".join(OPEN_LINES) + "\n")
    (root / "broken.json").write_text("[" + item("l0", ["A"]) + ",\n{oops}]")
    (root / "datasets.json").write_text(json.dumps({
        "letters": {"annotation": "mcq.jsonl", "reward_fn": ["em_score_mcq"]},
        "gone": {"annotation": "missing.jsonl"},
        "listy": {"annotation": "broken.json", "reward_fn": ["em_score_mcq"]},
        "cities": {"annotation": "open.jsonl", "reward_fn": ["llm_score"]}}))
    return root / "datasets.json"


def run_cli(tmp_path, data, protocol):
    (tmp_path / "script.json").write_text(json.dumps({k: [{"text": v}] for k, v in OUTPUTS.items()}))
    with OpenAIStub(published_judge) as judge:
        return runner.invoke(app, ["run", "--data", str(data), "--agent", "scripted", "--protocol", protocol,
                                   "--script", str(tmp_path / "script.json"), "--setting", "no-tool",
                                   "--max-rounds", "1", "--judge", "auto", "--judge-model", "judge",
                                   "--judge-base-url", judge.base_url, "--out", str(tmp_path / "logs"),
                                   "--run-id", protocol])


def test_original_loads_and_scores_what_the_published_loader_loads(tmp_path):
    data = write_data(tmp_path / "data")
    result = run_cli(tmp_path, data, "original")
    assert result.exit_code == 0, result.output
    run_dir = tmp_path / "logs" / "original"
    episodes = [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines()]
    loaded = {e["task"]["id"]: e["task"]["answers"] for e in episodes}
    expected = {s["id"]: s["answers"] for s in ref_load(MCQ_LINES) + ref_load(OPEN_LINES)}
    assert loaded == expected
    by_episode = {e["id"]: e["task"]["id"] for e in episodes}
    scores = {by_episode[v["episode_id"]]: v["score"] for line in (run_dir / "verdicts.jsonl").read_text().splitlines()
              for v in [json.loads(line)] if v["judge"] == ("mcq" if by_episode[v["episode_id"]][0] == "m" else "llm")}
    reference = {i: float(ref_mcq_correct(OUTPUTS[i] + "<|im_end|>", a)) if i[0] == "m"
                 else ref_llm_score(OUTPUTS[i] + "<|im_end|>", a)[0] for i, a in expected.items()}
    assert scores == reference and reference["o1"] == 1.0  # an empty answer matches the answer "" exactly
    warnings = json.loads((run_dir / "run.json").read_text())["warnings"]
    text = "\n".join(warnings)
    assert "1 JSON line that does not parse" in text and f"{tmp_path / 'data' / 'mcq.jsonl'}:2" in text
    assert "2 row without reward_model.ground_truth" in text and "open.jsonl:2" in text and "open.jsonl:3" in text
    assert "1 JSON line ending with a comma" in text and "open.jsonl:5" in text
    assert "1 annotation JSON list that does not parse" in text and "broken.json" in text
    assert "1 datasets.json entry whose annotation file does not exist" in text and "'gone'" in text


@pytest.mark.parametrize("lines, config, message", [
    (MCQ_LINES[:2], {"annotation": "a.jsonl", "reward_fn": ["em_score_mcq"]}, "a.jsonl:2: invalid JSON"),
    ([item("m2", None)], {"annotation": "a.jsonl", "reward_fn": ["em_score_mcq"]},
     "a.jsonl:1: field reward_model.ground_truth: missing"),
    ([item("m0", ["A"])], {"annotation": "gone.jsonl"}, "field annotation: 'gone.jsonl' not found"),
    ([item("m0", ["A"]) + ","], {"annotation": "a.jsonl", "reward_fn": ["em_score_mcq"]}, "a.jsonl:1: invalid JSON"),
    (["[" + item("m0", ["A"]) + ",", "{oops}]"], {"annotation": "a.jsonl", "reward_fn": ["em_score_mcq"]},
     "a.jsonl:2: invalid JSON"),
])
def test_arena_and_other_readers_refuse_as_before(tmp_path, lines, config, message):
    root = tmp_path / "data"
    (root / "images").mkdir(parents=True)
    scene().save(root / "images" / "scene.png")
    (root / "a.jsonl").write_text("\n".join(lines) + "\n")
    (root / "datasets.json").write_text(json.dumps({"d": config}))
    with pytest.raises(DatasetError, match=message):
        load_datasets(root / "datasets.json")
    result = run_cli(tmp_path, root / "datasets.json", "arena")
    assert result.exit_code != 0 and message in " ".join(result.output.split())
