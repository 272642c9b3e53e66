"""Differential tests: the `condchain` judge against a reference of MM-CondChain's published parsing.

Reference written from Accio-Lab/MM-CondChain `eval/utils.py` (`parse_answer`) and `eval/metrics.py` (exact
comparison), in our own words: the last box's content without spaces, with none/null/nan/empty meaning "None";
else the last whole-word capital letter followed by digits, or the word None; else "None".
"""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from arena.suites.condchain.judge import condchain
from arena.suites.condchain.loader import load_file
from tests.support.published_episodes import final_turn_episode


def ref_label(reply: str) -> str:
    boxes = []
    for m in re.finditer(r"\\boxed\s*\{", reply):
        close = reply.find("}", m.end())
        if close >= 0:
            boxes.append(reply[m.end():close])
    if boxes:
        label = "".join(boxes[-1].split(" ")).strip()
        return "None" if label.lower() in ("none", "null", "nan", "") else label
    tokens = [m.group(1) for m in re.finditer(r"(?<!\w)([A-Z]\d+|None)(?!\w)", reply)]
    return tokens[-1] if tokens else "None"


REPLIES = [
    "\\boxed{A1}", "\\boxed{ B2 }", "\\boxed{b2}", "\\boxed{None}", "\\boxed{none}", "\\boxed{NULL}", "\\boxed{nan}",
    "\\boxed{}", "\\boxed{ }", "\\boxed {C3}", "\\boxed\n{D4}", "\\boxed{A 1}", "\\boxed{A1} then \\boxed{B2}",
    "\\boxed{B2}<think>\\boxed{A1}</think>", "<think>\\boxed{A1}</think>\\boxed{B2}", "The answer is A1.",
    "A1 or B2", "B2, not A1", "None of them", "It is none", "NoneA1", "A1B2", "xA1", "A12", "G2.", "(C3)",
    "", "no label here", "a1", "\\boxed{A1", "\\boxed{{A1}}", "\\boxed{A1}}", "A1 \\boxed{}", "\\boxed{A1,B2}",
    "\\boxed{Option A1}", "\\boxed{A-1}", "Answer: \\boxed{E5}", "Final: None", "\\boxed{\\text{A1}}",
    "A1\nB2\nNone", "None\nA1", "**A1**", "`B2`", "\\boxed{A1} and also None", "Ä1", "A١", "Z99",
    "\\boxed{N/A}", "\\boxed{ null }", "<answer>\\boxed{C3}</answer>", "<answer>C3</answer>", "\\BOXED{A1}",
]
TRUTHS = ["A1", "B2", "None", "C3"]


def test_enough_replies():
    assert len(REPLIES) >= 50


@pytest.mark.parametrize("reply", REPLIES)
def test_condchain_judge_equals_published_parse(reply):
    for truth in TRUTHS:
        episode = final_turn_episode(reply, [truth], suite="condchain", task_id="x:true", kind="boxed",
                                     answer=reply or None)
        verdict = asyncio.run(condchain().score(episode))
        assert verdict.extracted == ref_label(reply)
        assert verdict.correct == (ref_label(reply) == truth)


def test_empty_reply_is_none_published_and_wrong_strict():
    episode = final_turn_episode("", ["None"], suite="condchain", task_id="x:false", answer=None)
    assert asyncio.run(condchain().score(episode)).correct
    assert not asyncio.run(condchain(no_answer="wrong").score(episode)).correct


# Stored labels with surrounding spaces: the published `compute_metrics` compares the parsed prediction with the
# stored `correct_answer` as it is (no strip), so such an item is never correct under the published rule.
STORED = ["A1", " A1", "A1 ", "None", " None", "B2\n"]


@pytest.mark.parametrize("stored", STORED)
def test_the_stored_label_is_compared_as_stored_under_original_and_stripped_under_arena(stored):
    for reply in ("\\boxed{A1}", "\\boxed{None}", "", "B2"):
        episode = final_turn_episode(reply, [stored], suite="condchain", task_id="x:true", kind="boxed")
        published = asyncio.run(condchain().score(episode))
        assert published.correct == (ref_label(reply) == stored)
        arena = asyncio.run(condchain(truth="stripped").score(episode))
        assert arena.correct == (ref_label(reply) == stored.strip())


def test_the_loader_keeps_the_stored_label(tmp_path):
    (tmp_path / "img.png").write_bytes(b"")
    item = {"id": "n1", "domain": "natural", "image": "img.png",
            "true_path": {"full_instruction": "Q", "pseudocode": "", "correct_answer": " A1"},
            "false_path": {"diverge_node": 1, "full_instruction": "Q", "pseudocode": "", "correct_answer": "None"}}
    (tmp_path / "natural.jsonl").write_text(json.dumps(item) + "\n")
    tasks = load_file(tmp_path / "natural.jsonl", tmp_path)
    assert [t.answers for t in tasks] == [[" A1"], ["None"]]


def write_two_items(root):
    """Two single-image items (four tasks): each true path's truth a label, each false path's None."""
    from PIL import Image
    (root / "images").mkdir(parents=True)
    lines = []
    for n, label in ((1, "B3"), (2, "A1")):
        Image.new("RGB", (64, 48), (40 * n, 10, 10)).save(root / "images" / f"n{n}.jpg")
        lines.append({"id": f"n{n}", "domain": "natural", "image": f"images/n{n}.jpg",
                      "true_path": {"full_instruction": f"ITEM{n} TRUE", "correct_answer": label},
                      "false_path": {"full_instruction": f"ITEM{n} FALSE", "correct_answer": "None"}})
    (root / "natural.jsonl").write_text("".join(json.dumps(item) + "\n" for item in lines))
    return root / "natural.jsonl"


# per task (item, path): the reply, or None for a request the server fails (HTTP 500, no retry)
REPLIES_BY_TASK = {("1", "TRUE"): "\\boxed{B3}", ("1", "FALSE"): None, ("2", "TRUE"): None,
                   ("2", "FALSE"): "\\boxed{None}"}
TRUTH_BY_TASK = {("1", "TRUE"): "B3", ("1", "FALSE"): "None", ("2", "TRUE"): "A1", ("2", "FALSE"): "None"}


def failing_server(request):
    from tests.support.openai_server import Reply
    text = json.dumps(request["messages"])
    task = next(k for k in REPLIES_BY_TASK if f"ITEM{k[0]} {k[1]}" in text)
    reply = REPLIES_BY_TASK[task]
    return Reply(status=500, error="upstream failure") if reply is None else reply


@pytest.mark.parametrize("protocol", ["original", "arena"])
def test_a_failed_request_is_the_prediction_none_under_original_and_left_out_under_arena(tmp_path, protocol):
    """The published `get_answer` returns "None" when the request fails, correct on a None-truth item: under
    `original` such an episode is judged so, in the suite's figures and in the Pass@1 that counts errors (the run is
    still incomplete and says so); under `arena` it is not judged."""
    from typer.testing import CliRunner

    from arena.cli.main import app
    from arena.store.store import RunStore
    from tests.support.openai_server import OpenAIStub
    data = write_two_items(tmp_path / "mm")
    with OpenAIStub(failing_server) as server:
        result = CliRunner().invoke(app, [
            "run", "--data", str(data), "--agent", "openai", "--model", "m", "--base-url", server.base_url,
            "--setting", "no-tool", "--max-rounds", "1", "--judge", "auto", "--out", str(tmp_path / "logs"),
            "--run-id", "r", "--protocol", protocol, "--agent-option", "max_retries=0"])
    output = " ".join(result.output.split())
    assert result.exit_code != 0 and "run incomplete: 2 of 4 episode(s) ended in an error" in output, output
    store = RunStore(tmp_path / "logs" / "r")
    episodes = store.episodes()
    verdicts = {v.episode_id: v for v in store.verdicts()}
    failed = [e for e in episodes if e.finish_reason == "error"]
    assert len(failed) == 2
    # the reference: the published prediction of each task (a failed request predicts None), compared as stored
    predicted = {key: ref_label(reply) if reply is not None else "None" for key, reply in REPLIES_BY_TASK.items()}
    scores = {key: float(predicted[key] == TRUTH_BY_TASK[key]) for key in REPLIES_BY_TASK}
    if protocol == "arena":
        assert not any(e.id in verdicts for e in failed)
        scores = {key: score if REPLIES_BY_TASK[key] is not None else 0.0 for key, score in scores.items()}
    else:
        assert all(verdicts[e.id].extracted == "None" and "request failed" in verdicts[e.id].rationale
                   for e in failed)
    group = json.loads((tmp_path / "logs" / "r" / "summary.json").read_text())["groups"][0]
    assert group["pass1_all"] == pytest.approx(100 * sum(scores.values()) / len(scores))
    played = [scores[k] for k, reply in REPLIES_BY_TASK.items() if reply is not None]
    assert group["pass1"] == pytest.approx(100 * sum(played) / len(played))  # over the episodes played, either way
    overall = group["suites"]["condchain"]["overall"]
    for path, figure in (("TRUE", "true_acc"), ("FALSE", "false_acc")):
        on_path = [score for key, score in scores.items() if key[1] == path]
        assert overall[figure] == pytest.approx(round(100 * sum(on_path) / len(on_path), 2))
