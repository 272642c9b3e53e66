"""Differential tests: the `mmir` judge against a reference of MMIR's published scoring.

Reference written from eric-ai-lab/MMIR `eval/calculate_score.py` (`extract_xml`, `check_answer`, `llm_judge`,
`eval`), in our own words: the first `<ans>` block of the raw reply (empty when absent), every digit run as an
integer, a set of them; 0 for none or more than two; single truth: 1 for exactly it, 0.5 when it is one of two;
two truths: half a point per true id. Open-ended: the judge always gets the span (possibly empty) and its `<id>`
reply is scored the same way.
"""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from PIL import Image

from arena.suites.mmir.judge import MMIR_TOTAL, mmir, mmir_metrics
from arena.judges.metrics import summarize
from arena.core.verdict import Verdict
from tests.support.published_episodes import final_turn_episode
from arena.runs.config import RunConfig
from arena.runs.runner import run
from tests.support.openai_server import OpenAIStub


def ref_span(text: str, tag: str) -> str:
    m = re.search(f"<{tag}>(.*?)</{tag}>", text, re.S)
    return m.group(1).strip() if m else ""


def ref_score(span: str, truth: list[int]) -> float:
    ids = {int(d) for d in re.findall(r"\d+", span)}
    if not ids or len(ids) > 2:
        return 0.0
    if len(truth) == 1:
        if len(ids) == 1:
            return float(truth[0] in ids)
        return 0.5 if truth[0] in ids else 0.0
    return len([i for i in ids if i in truth]) / 2


REPLIES = [
    "<ans>3</ans>", "<ans> 3 </ans>", "<ans>3, 5</ans>", "<ans>5,3</ans>", "<ans>3 3</ans>", "<ans>3,3,5</ans>",
    "<ans>3,5,7</ans>", "<ans>03</ans>", "<ans>element 3</ans>", "<ans>[3]</ans>", "<ans>\"[3]\",\"[5]\"</ans>",
    "<ans></ans>", "<ans>none</ans>", "3", "The answer is 3", "<answer>3</answer>", "<ANS>3</ANS>", "<ans>3",
    "3</ans>", "<ans>3</ans><ans>5</ans>", "<ans>\n3\n</ans>", "<ans>3.5</ans>", "<ans>-3</ans>", "<ans>３</ans>",
    "<ans>٣</ans>", "<ans>id3 and id12</ans>", "<ans>12</ans>", "<ans>1 2</ans>", "<think>7</think><ans>3</ans>",
    "<ans>3</ans> because 5", "x<ans>5</ans>y<ans>3</ans>", "<ans>0</ans>", "<ans>3,12</ans>", "<ans>12,3</ans>",
    "<ans>1e3</ans>", "<ans>3\t5</ans>", "<ans>3;5;7</ans>", "<ans>third</ans>", "<ans> </ans>", "", "<ans>5</ans>",
    "<ans>5, 12</ans>", "<ans>7,7</ans>", "<ans>100</ans>", "<ans>3</ans >", "< ans>3</ans>", "<ans>3/5</ans>",
    "<ans>3-5</ans>", "<ans>#3 #5</ans>", "<ans>3 and 5 and 3</ans>", "<ans>5 3</ans>",
]
TRUTHS = [[3], [5], [3, 5], [3, 12]]


def test_enough_replies():
    assert len(REPLIES) >= 50


@pytest.mark.parametrize("reply", REPLIES)
def test_mcq_score_equals_published(reply):
    judge = mmir()
    for truth in TRUTHS:
        episode = final_turn_episode(reply, [str(t) for t in truth], suite="mmir", task_id="web-1:mcq",
                                     kind="element_ids", answer=reply or None)
        verdict = asyncio.run(judge.score(episode))
        assert verdict.score == ref_score(ref_span(reply, "ans"), truth), (reply, truth)


def test_open_ended_always_asks_the_judge_with_the_published_span():
    judge_ids = iter(["<id>\"[3]\"</id>", "<id>\"[3]\",\"[5]\"</id>", "no id", "<id>\"[5]\"</id>"] * 20)

    def respond(request):
        return next(judge_ids)

    async def scenario(server):
        judge = mmir(model="j", base_url=server.base_url, retry_initial=0.01)
        for i, reply in enumerate(REPLIES[:20]):
            before = len(server.requests)
            episode = final_turn_episode(reply, ["3"], suite="mmir", task_id="web-1:open", kind="element_ids",
                                         options=["3: a title", "5: a logo"], answer=reply or None)
            verdict = await judge.score(episode)
            request = server.requests[before]
            # published request: the model and one user message of one text part, nothing else
            assert set(request) == {"model", "messages"}
            (part,) = request["messages"][0]["content"]
            prompt = part["text"]
            assert len(server.requests) == before + 1
            assert f"Sentence:\n{ref_span(reply, 'ans')}\n\nOptions:\n3: a title\n5: a logo" in prompt
            assert verdict.score == ref_score(ref_span(verdict.raw or "", "id"), [3])
        await judge.aclose()

    with OpenAIStub(respond) as server:
        asyncio.run(scenario(server))


def test_overall_over_the_fixed_total():
    rows = []
    for i, reply in enumerate(["<ans>3</ans>", "<ans>3,5</ans>", "<ans>9</ans>"]):
        episode = final_turn_episode(reply, ["3"], suite="mmir", task_id=f"web-{i}:mcq")
        rows.append((episode, Verdict(episode_id=episode.id, key=episode.key, judge="mmir",
                                      score=ref_score(ref_span(reply, "ans"), [3]), correct=False)))
    figures = mmir_metrics(rows)
    assert figures["overall_of_534"] == round(100 * 1.5 / MMIR_TOTAL, 2)
    assert figures["accuracy"] == round(100 * 1.5 / 3, 2)
    assert summarize([e for e, _ in rows], [v for _, v in rows], "mmir")["groups"][0]["pass1"] == 50.0


def test_arena_variant_request_adds_temperature_and_max_tokens():
    async def scenario(server):
        judge = mmir(model="j", base_url=server.base_url, retry_initial=0.01, request="arena")
        episode = final_turn_episode("<ans>the title</ans>", ["3"], suite="mmir", task_id="web-1:open",
                                     kind="element_ids", options=["3: a title", "5: a logo"], answer="the title")
        verdict = await judge.score(episode)
        await judge.aclose()
        return verdict

    with OpenAIStub(lambda request: "<id>[3]</id>") as server:
        verdict = asyncio.run(scenario(server))
        (request,) = server.requests
    assert verdict.score == 1.0
    assert request["temperature"] == 0 and request["max_tokens"] == 256
    assert isinstance(request["messages"][0]["content"], str)


# Sources in several spellings; the published `eval` groups "web page" and "poster" by exact spelling only.
SOURCES = ["web page", "Web Page", "webpage", "web", " web page", "poster", "Poster", "poster ", "slides", "table"]
STORED_DESCS = "  [1] Wide text span at top-center: 'Sale'\n\n[2] Image, description: a logo at center-center  \n"


def ref_group(source: str) -> str:
    return "web" if source == "web page" else ("poster" if source == "poster" else "office")


def write_open_questions(root) -> None:
    (root / "images").mkdir(parents=True)
    questions = []
    for i, source in enumerate(SOURCES):
        Image.new("RGB", (40, 30), (i * 20, 80, 120)).save(root / "images" / f"{i}.png")
        questions.append({"source": source, "descs": STORED_DESCS, "gt_ans": [1], "image": f"images/{i}.png"})
    (root / "questions_open.json").write_text(json.dumps(questions))


def test_original_groups_by_the_published_spelling_and_sends_the_stored_options_text(tmp_path):
    root = tmp_path / "mmir"
    write_open_questions(root)
    script = {}
    with OpenAIStub(lambda request: "<id>\"[1]\"</id>") as server:
        runs = {}
        for protocol in ("original", "arena"):
            result = run(RunConfig(data=str(root / "questions_open.json"), agent="scripted",
                                   agent_options={"script": [{"answer": "<ans>the sale banner</ans>"}]},
                                   settings=["no-tool"], judge="auto", protocol=protocol,
                                   judge_options={"model": "j", "base_url": server.base_url},
                                   out=str(tmp_path / "logs"), run_id=protocol))
            runs[protocol] = result
            prompts = [r["messages"][0]["content"] for r in server.requests[-len(SOURCES):]]
            script[protocol] = [p[0]["text"] if isinstance(p, list) else p for p in prompts]
    original_ids = sorted(e.task.id for e in runs["original"].episodes)
    assert original_ids == sorted(f"{ref_group(s)}-{i}:open" for i, s in enumerate(SOURCES))
    arena_groups = {e.task.id.split("-")[0] for e in runs["arena"].episodes}
    assert arena_groups == {"web", "poster", "office"}
    # the options text exactly as stored under original (no line stripped, the blank line kept)
    assert all(f"\n\nOptions:\n{STORED_DESCS}\n\nYour answer" in p for p in script["original"])
    tidy = "[1] Wide text span at top-center: 'Sale'\n[2] Image, description: a logo at center-center"
    assert all(f"\n\nOptions:\n{tidy}\n\nYour answer" in p for p in script["arena"])
