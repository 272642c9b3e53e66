import asyncio

import pytest

from arena.core.budget import Budget
from arena.core.task import TaskRef
from arena.core.trajectory import Episode
from arena.judges.llm import JudgeCache, llm, parse_judgement
from arena.judges.mcq import extract_choice, mcq
from arena.judges.normalized import normalize_answer, normalized, normalized_strict
from tests.support.openai_server import OpenAIStub, Reply


def episode(answer, answers, kind="open", options=()):
    task = TaskRef(id="t", suite="vistahop", question="Who?", answers=list(answers), kind=kind, options=list(options))
    return Episode(id="e1", run_id="r", key="t|s|10|0|a", task=task, agent="a", setting="s", budget=Budget(),
                   answer=answer, finish_reason="answered")


@pytest.mark.parametrize("a, b", [
    ("The Eiffel Tower!", "eiffel tower"), ("  A   cat ", "cat"), ("1,874", "1874"), ("Jean-Luc", "jeanluc"), ("U.S.A.", "usa"),
])
def test_normalisation(a, b):
    assert normalize_answer(a) == normalize_answer(b)


def test_normalized_judge():
    judge = normalized()
    assert asyncio.run(judge.score(episode("the Mirelle Dastrow.", ["Mirelle Dastrow"]))).correct
    assert not asyncio.run(judge.score(episode("Dastrow", ["Mirelle Dastrow"]))).correct
    missing = asyncio.run(normalized_strict().score(episode(None, ["x"])))
    assert missing.score == 0 and missing.rationale == "no answer"
    assert not asyncio.run(judge.score(episode(None, ["x"]))).correct


@pytest.mark.parametrize("text, letter", [
    ("B", "B"), ("(C)", "C"), ("\\boxed{D}", "D"), ("The answer is (A).", "A"), ("Answer: b", "B"),
    ("I think it's C because...", "C"), ("none of them", None), ("A or B", None), ("B. Blue", "B"),
])
def test_mcq_extraction(text, letter):
    assert extract_choice(text) == letter


def test_mcq_judge_accepts_option_text_truths_only_as_the_arena_extension():
    judge = mcq(option_text=True)
    assert asyncio.run(judge.score(episode("B", ["B"], "mcq"))).correct
    assert asyncio.run(judge.score(episode("(B)", ["Blue"], "mcq", ["Red", "Blue", "Green", "Pink"]))).correct
    assert not asyncio.run(judge.score(episode("A", ["B"], "mcq"))).correct
    published = mcq()  # the published check_answer: the letter against the truth upper-cased, nothing else
    assert not asyncio.run(published.score(episode("(B)", ["Blue"], "mcq", ["Red", "Blue", "Green", "Pink"]))).correct
    assert asyncio.run(published.score(episode("(B)", ["b"], "mcq"))).correct


def test_judgement_parsing_is_strict():
    assert parse_judgement("<judge>Yes</judge><reason>same</reason>") == (True, "same")
    assert parse_judgement("<judge> no </judge>") == (False, "")
    assert parse_judgement("Yes") == (None, "")
    assert parse_judgement("<judge>Yes</judge><judge>No</judge>")[0] is None


def test_llm_judge_calls_once_per_truth_caches_and_reports_garbage(tmp_path):
    replies = iter(["<judge>No</judge><reason>r1</reason>", "<judge>Yes</judge><reason>r2</reason>", "maybe?"])
    cache = str(tmp_path / "cache.jsonl")

    async def scenario(server):
        judge = llm(model="j", base_url=server.base_url, cache_path=cache, retry_initial=0.01)
        verdict = await judge.score(episode("Lyon, France", ["Paris", "Lyon"]))
        assert verdict.correct and verdict.rationale == "r2" and len(server.requests) == 2
        again = llm(model="j", base_url=server.base_url, cache_path=cache)
        assert (await again.score(episode("Lyon, France", ["Paris", "Lyon"]))).correct
        assert len(server.requests) == 2
        shortcut = await judge.score(episode("lyon", ["Lyon"]))
        assert shortcut.correct and len(server.requests) == 2
        broken = await judge.score(episode("Nice", ["Paris"]))
        assert broken.error and "no single <judge>" in broken.error and broken.score == 0
        await judge.aclose()
        await again.aclose()

    with OpenAIStub(lambda request: Reply(content=next(replies))) as server:
        asyncio.run(scenario(server))
    assert len(JudgeCache(tmp_path / "cache.jsonl")._memory) == 2


def test_llm_judge_endpoint_failure_is_a_judge_error(tmp_path):
    with OpenAIStub(lambda request: Reply(status=503)) as server:
        judge = llm(model="j", base_url=server.base_url, max_retries=1, retry_initial=0.01)
        verdict = asyncio.run(judge.score(episode("x", ["y"])))
    assert verdict.error and "after 2 attempts" in verdict.error and not verdict.correct
