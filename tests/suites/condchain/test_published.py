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
