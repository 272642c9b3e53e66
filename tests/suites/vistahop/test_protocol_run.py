"""Differential test of whole VistaHop episodes: raw model turns through the CLI under `--protocol original`
give, item by item, what the published evaluator gives; under `--protocol arena` exactly the documented
differences (docs/protocols.md) and nothing else.

The reference below is written from the published behaviour (ahang0712/vistahop
`evaluation/run_vistahop_eval.py` @1d6a961: `parse_tool_call`, the turn loop of `evaluate_tool`, `load_datasets`,
`evaluate_sample`), in our own words: a turn calls a tool only when the first complete `<tool_call>` pair of its
raw text holds JSON that parses to a non-empty object; any other turn ends the episode and the record (every turn
so far, closed by `<|im_end|>`) is scored; when the turns run out the record ends with an opened assistant turn;
every method of reward_fn + unused_reward_fn scores the record."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from arena.cli.main import app
from tests.suites.vistahop.test_published import ref_llm_score, ref_mcq_correct
from tests.suites.vistahop.test_published_run import published_judge
from tests.support.openai_server import OpenAIStub
from tests.support.tiny_dataset import scene

runner = CliRunner()
END, OPEN = "<|im_end|>", "<|im_start|>assistant\n"
ZOOM = '<tool_call>{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [0, 0, 500, 500]}}</tool_call>'
MAX_ROUNDS = 3


def zoom_call(box) -> str:
    return '<tool_call>{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": %s}}</tool_call>' % json.dumps(box)


# case -> (raw turns the model writes, arena Pass@1 score, arena finish reason). The arena column is the
# documented difference of each case (docs/protocols.md, VistaHop table).
CASES = {
    "bad_json_then_answer": (['<tool_call>{bad}</tool_call><answer>Lyon</answer>', "<answer>Paris</answer>"],
                             0.0, "answered"),
    "answer_before_call": (["<answer>Lyon</answer>" + ZOOM, "<answer>Paris</answer>"], 1.0, "answered"),
    "call_inside_think": (["<think>" + ZOOM + "</think><answer>Lyon</answer>", "<answer>Paris</answer>"],
                          1.0, "answered"),
    "unclosed_call": (['<tool_call>{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [0, 0, 500, 500]}} '
                       "<answer>Lyon</answer>", "<answer>Paris</answer>"], 0.0, "answered"),
    "empty_turn": (["", "<answer>Lyon</answer>"], 1.0, "answered"),
    "empty_json": (["<tool_call>{}</tool_call><answer>Lyon</answer>", "<answer>Paris</answer>"], 0.0, "answered"),
    "parameters_key": (['<tool_call>{"name": "image_zoom_in_tool", "parameters": {"bbox_2d": [0, 0, 500, 500]}}'
                        "</tool_call>", "<answer>Lyon</answer>"], 1.0, "answered"),
    "bbox_key": (['<tool_call>{"name": "image_zoom_in_tool", "arguments": {"bbox": [0, 0, 500, 500], '
                  '"img_idx": 0}}</tool_call>', "<answer>Lyon</answer>"], 1.0, "answered"),
    "round_limit": ([ZOOM, ZOOM, ZOOM, "<answer>Lyon</answer>"], 1.0, "budget"),
    "plain": ([ZOOM, "<answer>Lyon</answer>"], 1.0, "answered"),
    "think_then_answer": (["<think>maybe Paris</think>It is <answer>Lyon</answer>"], 1.0, "answered"),
    "untagged": (["The city is Lyon."], 1.0, "answered"),
    "not_an_object": (['<tool_call>["image_zoom_in_tool"]</tool_call><answer>Lyon</answer>',
                       "<answer>Paris</answer>"], 0.0, "answered"),
    "inverted_box": ([zoom_call([600, 600, 100, 100]), "<answer>Lyon</answer>"], 1.0, "answered"),
    "inverted_y_only": ([zoom_call([0, 700, 500, 200]), "<answer>Lyon</answer>"], 1.0, "answered"),
    "box_beyond_the_image": ([zoom_call([1200, 0, 1500, 500]), "<answer>Lyon</answer>"], 1.0, "answered"),
    "text_coordinate": ([zoom_call(["left", 0, 500, 500]), "<answer>Lyon</answer>"], 1.0, "answered"),
    "three_coordinates": ([zoom_call([0, 0, 500]), "<answer>Lyon</answer>"], 1.0, "answered"),
    "clamped_box": ([zoom_call([-100, -50, 1400, 900]), "<answer>Lyon</answer>"], 1.0, "answered"),
}


def ref_crop_fails(box) -> bool:
    """Whether the published crop raises on this box over the task image (our restatement of `crop_image`):
    coordinates read as numbers over 1000, left/top raised to 0, right/bottom lowered to 1, scaled to pixels
    (truncated), then cropped with Pillow, which refuses a right (bottom) edge left of (above) the left (top)."""
    try:
        image = scene()
        x1, y1, x2, y2 = (float(c) / 1000.0 for c in box)
        x1, y1, x2, y2 = max(0, x1), max(0, y1), min(1, x2), min(1, y2)
        w, h = image.size
        image.crop((int(x1 * w), int(y1 * h), int(x2 * w), int(y2 * h)))
    except (TypeError, ValueError, OverflowError):
        return True
    return False


def ref_episode(turns: list[str], max_turns: int) -> tuple[str, str, int]:
    """(record, finish, turns played) as the published loop produces them (our restatement)."""
    record = ""
    for n, turn in enumerate(turns[:max_turns], start=1):
        found = re.search(r"<tool_call>\s*(.*?)\s*</tool_call>", turn, re.S)
        call = None
        if found:
            try:
                call = json.loads(found.group(1).strip())
            except ValueError:
                call = None
        if call and not isinstance(call, dict):
            return "", "error", n  # the sample fails: every method scores 0
        if not call:
            return record + turn + END, "no_tool_calls", n
        if call.get("name") == "image_zoom_in_tool":
            box = call.get("arguments", {}).get("bbox_2d") or call.get("arguments", {}).get("bbox")
            if box and len(box) == 4 and ref_crop_fails(box):
                return "", "error", n  # the sample fails: every method scores 0
        record += f"{turn}{END}<|im_start|>user\n<tool_response>...</tool_response>{END}\n{OPEN}"
    return record, "max_turns", max_turns


def ref_scores(turns: list[str]) -> dict[str, float]:
    record, finish, _ = ref_episode(turns, MAX_ROUNDS)
    if finish == "error":
        return {"llm": 0.0, "mcq": 0.0}
    return {"llm": ref_llm_score(record, ["Lyon"])[0], "mcq": float(ref_mcq_correct(record, ["Lyon"]))}


def write_data(root, reward: dict | None = None, extra_items: list | None = None):
    (root / "images").mkdir(parents=True)
    scene().save(root / "images" / "scene.png")
    items = [{"id": case, "prompt": [{"role": "user", "content": "<image>Which city is this?"}],
              "reward_model": {"ground_truth": ["Lyon"]}, "image": ["images/scene.png"]} for case in CASES]
    (root / "cities.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items + (extra_items or [])))
    entry = {"annotation": "cities.jsonl", **(reward if reward is not None else
                                                {"reward_fn": ["llm_score"], "unused_reward_fn": ["em_score_mcq"]})}
    (root / "datasets.json").write_text(json.dumps({"cities": entry}))
    return root / "datasets.json"


def run_cli(tmp_path, data, script: dict, protocol: str | None, run_id: str, judge_url: str):
    (tmp_path / f"{run_id}.json").write_text(json.dumps(script))
    args = ["run", "--data", str(data), "--agent", "scripted", "--script", str(tmp_path / f"{run_id}.json"),
            "--setting", "search+crop", "--max-rounds", str(MAX_ROUNDS), "--judge", "auto",
            "--judge-model", "judge", "--judge-base-url", judge_url, "--out", str(tmp_path / "logs"),
            "--run-id", run_id]
    return runner.invoke(app, args + (["--protocol", protocol] if protocol else []))


def read_run(run_dir):
    episodes = {e["id"]: e for e in map(json.loads, (run_dir / "episodes.jsonl").read_text().splitlines())}
    scores: dict[str, dict[str, float]] = {}
    for v in map(json.loads, (run_dir / "verdicts.jsonl").read_text().splitlines()):
        scores.setdefault(episodes[v["episode_id"]]["task"]["id"], {})[v["judge"]] = v["score"]
    return {e["task"]["id"]: e for e in episodes.values()}, scores


def test_whole_episodes_under_original_match_the_published_loop_and_arena_differs_only_as_documented(tmp_path):
    data = write_data(tmp_path / "data")
    script = {case: [{"text": t} for t in turns] for case, (turns, _, _) in CASES.items()}
    with OpenAIStub(published_judge) as judge:
        original = run_cli(tmp_path, data, script, None, "orig", judge.base_url)
        assert original.exit_code == 0, original.output
        assert "protocol: original" in original.output
        arena = run_cli(tmp_path, data, script, "arena", "arena", judge.base_url)
        assert arena.exit_code == 0, arena.output
        assert "protocol: arena" in arena.output

    run_json = json.loads((tmp_path / "logs" / "orig" / "run.json").read_text())
    assert run_json["config"]["grid"]["protocol"] == "original"
    assert run_json["config"]["limits"]["final_answer_turn"] is False
    summary = json.loads((tmp_path / "logs" / "orig" / "summary.json").read_text())
    assert summary["protocol"] == "original"

    episodes, scores = read_run(tmp_path / "logs" / "orig")
    for case, (turns, _, _) in CASES.items():
        _, finish, played = ref_episode(turns, MAX_ROUNDS)
        assert scores[case] == ref_scores(turns), case  # both methods, as reward_fn + unused_reward_fn name them
        assert len(episodes[case]["steps"]) == played, case
        assert (episodes[case]["finish_reason"] == "invalid") == (finish == "error"), case
    assert episodes["parameters_key"]["steps"][0]["arguments"] == {}
    assert episodes["parameters_key"]["steps"][0]["observation"]["error"] is True
    assert episodes["bbox_key"]["steps"][0]["arguments"] == {"bbox_2d": [0, 0, 500, 500]}
    assert episodes["bbox_key"]["steps"][0]["observation"]["error"] is False
    assert episodes["round_limit"]["finish_reason"] == "budget"
    assert not any(s["final_turn"] for s in episodes["round_limit"]["steps"])

    a_episodes, a_scores = read_run(tmp_path / "logs" / "arena")
    differing = set()
    for case, (turns, arena_score, arena_finish) in CASES.items():
        assert set(a_scores[case]) == {"llm"}, case  # the arena scores with the task's own judge only
        assert a_scores[case]["llm"] == arena_score, case
        assert a_episodes[case]["finish_reason"] == arena_finish, case
        if arena_score != scores[case]["llm"]:
            differing.add(case)
    assert differing == {"bad_json_then_answer", "answer_before_call", "call_inside_think", "unclosed_call",
                         "empty_turn", "empty_json", "round_limit", "inverted_box", "inverted_y_only",
                         "box_beyond_the_image", "text_coordinate"}
    assert a_episodes["parameters_key"]["steps"][0]["arguments"] == {"bbox_2d": [0, 0, 500, 500]}
    assert a_episodes["bbox_key"]["steps"][0]["observation"]["error"] is True  # the arena reads bbox_2d only


def test_original_reads_items_and_reward_fn_as_the_published_loader(tmp_path):
    listed = {"id": "listed", "prompt": [{"role": "user", "content": [{"type": "text", "text": "Which city?"}]}],
              "reward_model": {"ground_truth": ["Lyon"]}, "image": ["images/scene.png"]}
    string_image = {"id": "string_image", "prompt": [{"role": "user", "content": "<image>Which city?"}],
                    "reward_model": {"ground_truth": ["Lyon"]}, "image": "images/scene.png"}
    data = write_data(tmp_path / "data", extra_items=[listed, string_image])
    script = {"*": [{"text": "<answer>Lyon</answer>"}]}
    with OpenAIStub(published_judge) as judge:
        for protocol in ("original", "arena"):
            result = run_cli(tmp_path, data, script, protocol, protocol, judge.base_url)
            # the original pipeline fails on the string image: an errored episode, so the run exits 1 (issue 30)
            assert result.exit_code == (1 if protocol == "original" else 0), result.output
            if protocol == "original":
                assert "1 of " in result.output and "ended in an error" in result.output
    episodes, scores = read_run(tmp_path / "logs" / "original")
    assert episodes["listed"]["task"]["question"] == ""  # a list content gives the original no question
    assert episodes["string_image"]["finish_reason"] == "error"
    assert "not a list" in episodes["string_image"]["error"]
    assert "string_image" not in scores  # an errored episode is not judged; protocol original counts it as wrong
    a_episodes, a_scores = read_run(tmp_path / "logs" / "arena")
    assert a_episodes["listed"]["task"]["question"] == "Which city?"
    assert a_episodes["string_image"]["finish_reason"] == "answered" and a_scores["string_image"] == {"llm": 1.0}


def test_original_refuses_a_dataset_without_scoring_methods_as_the_published_loader(tmp_path):
    data = write_data(tmp_path / "data", reward={})
    script = {"*": [{"text": "<answer>Lyon</answer>"}]}
    with OpenAIStub(published_judge) as judge:
        refused = run_cli(tmp_path, data, script, None, "refused", judge.base_url)
        assert refused.exit_code != 0
        assert "has no scoring method (reward_fn or unused_reward_fn)" in " ".join(refused.output.split())
        assert run_cli(tmp_path, data, script, "arena", "kept", judge.base_url).exit_code == 0
    bad = write_data(tmp_path / "data2", reward={"reward_fn": ["f1_score"]})
    result = runner.invoke(app, ["run", "--data", str(bad), "--agent", "scripted", "--script",
                                 str(tmp_path / "refused.json"), "--out", str(tmp_path / "logs")])
    assert result.exit_code != 0 and "unknown scoring method(s) f1_score" in " ".join(result.output.split())
