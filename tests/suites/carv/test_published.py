"""Differential tests: the CARV LLM judge against the paper's evaluator as described (no code is public).

Reference written from the CARV paper, Appendix A.1 (the evaluation prompt asks for `{"correctness": true or
false, "reason": ...}`) and §4 (accuracy over the tasks with a verdict), in our own words: the reply's first JSON
object carrying a true/false correctness decides; curly quotes count as straight ones (the paper prints them).
The arena also reads a bare `correctness: true` when no JSON object carries one.
"""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from arena.suites.carv.judge import carv_llm, parse_correctness
from tests.support.published_episodes import final_turn_episode
from tests.support.openai_server import OpenAIStub


def ref_fallback(reply: str) -> bool | None:
    """The arena's documented extension when no JSON object carries a verdict: every `correctness: true|false`
    written in the text (key quoted or not, value quoted or not), which must agree."""
    text = reply.replace("“", '"').replace("”", '"')
    values = {m.lower() for m in re.findall(r'"?correctness"?\s*:\s*"?(true|false)\b', text, re.I)}
    return (values.pop() == "true") if len(values) == 1 else None


def ref_verdict(reply: str) -> bool | None:
    text = reply.replace("“", '"').replace("”", '"')
    for start in [i for i, c in enumerate(text) if c == "{"]:
        try:
            obj, _ = json.JSONDecoder().raw_decode(text[start:])
        except ValueError:
            continue
        if isinstance(obj, dict) and "correctness" in obj:
            value = obj["correctness"]
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.strip().lower() in ("true", "false"):
                return value.strip().lower() == "true"
    return None


JSON_REPLIES = [
    '{"correctness": true, "reason": "same"}', '{"correctness": false, "reason": "colour differs"}',
    '{ "correctness": true }', '```json\n{"correctness": false, "reason": "x"}\n```', '{“correctness”: true, “reason”: “ok”}',
    '{"correctness": "true", "reason": "quoted"}', '{"correctness": "False"}', '{"reason": "r", "correctness": true}',
    'Analysis first. {"correctness": false, "reason": "under vs on"}', '{"correctness": true, "reason": "correctness: false?"}',
    '{"correctness": false, "reason": "{\\"correctness\\": true}"}', '{"a": {"correctness": true}}',
    '{"correctness": true}{"correctness": false}', '{"correctness": false} {"correctness": true}',
    '{"correctness": 1}', '{"correctness": null, "reason": "n/a"}', '{"correctness": "yes"}',
    '{"Correctness": true}', '{"correctness": true,}', '{correctness: true}', 'text {not json} {"correctness": true}',
    '{"reason": "no verdict"}', '[{"correctness": true}]', '{"correctness": true, "reason": "a \\"quote\\""}',
    '{"correctness":false,"reason":"compact"}', '{\n  "correctness": true,\n  "reason": "multi\\nline"\n}',
    '{"correctness": true} trailing', '{"correctness": " true "}', '{"correctness": false, "extra": [1, 2]}',
    '{"correctness": true, "reason": "}"}', '{{"correctness": true}}', '{"correctness": TRUE}',
    '{"correctness": true, "correctness": false}', '{"x": 1} {"correctness": false}', '{"correctness": "maybe"}',
    '{"correctness": [true]}', '{"correctness": false, "reason": ""}', '{"correctness":true}',
    '   {"correctness": false}   ', '{"correctness": true, "reason": "\\u00e9t\\u00e9"}', '{"correctness": 0}',
    '{"correctness": "TRUE"}', '{"correctness": "false", "reason": "string"}', 'Here: {"correctness": true}.',
    '{"correctness": false /* comment */}', '{"reason": "x", "correctness": false, "score": 0}',
    '```\n{"correctness": true}\n```', '“{"correctness": true}”', '{"correctness": true}\n{"correctness": true}',
    '{"correctness": false}\n\nI am sure.',
]


def test_enough_replies():
    assert len(JSON_REPLIES) >= 50


@pytest.mark.parametrize("reply", JSON_REPLIES)
def test_reply_reading_equals_the_paper_format(reply):
    expected = ref_verdict(reply)
    assert parse_correctness(reply)[0] == (expected if expected is not None else ref_fallback(reply))


def test_llm_judge_end_to_end_accuracy_over_valid_verdicts():
    replies = iter(JSON_REPLIES)

    async def scenario(server):
        judge = carv_llm(model="j", base_url=server.base_url, retry_initial=0.01)
        for i, reply in enumerate(JSON_REPLIES):
            episode = final_turn_episode(f"<answer>caption {i}</answer>", ["one red bowl on a blue table"],
                                         suite="carv", answer=f"caption {i}")
            verdict = await judge.score(episode)
            expected = ref_verdict(reply)
            if expected is not None:
                assert verdict.error is None and verdict.correct == expected
        await judge.aclose()

    with OpenAIStub(lambda request: next(replies)) as server:
        asyncio.run(scenario(server))


# Captions against the reference "one red bowl on a blue table": the paper's evaluator (§4, Appendix A.1) is asked
# for every item that has a caption, the reference-equal ones included; its reply decides. The arena variant
# (`identical="skip"`) scores a caption equal to the reference, case and surrounding spaces aside, without a call.
REFERENCE = "one red bowl on a blue table"
CAPTIONS = [REFERENCE, REFERENCE.upper(), f"  {REFERENCE} ", "one red bowl on a blue table.", "two red bowls",
            "No resulting image."]


@pytest.mark.parametrize("identical", ["ask", "skip"])
def test_the_paper_evaluator_is_asked_for_every_caption_also_one_equal_to_the_reference(identical):
    async def scenario(server):
        for caption in CAPTIONS:
            judge = carv_llm(model="j", base_url=server.base_url, retry_initial=0.01, identical=identical)
            before = len(server.requests)
            episode = final_turn_episode(f"<answer>{caption}</answer>", [REFERENCE], suite="carv", answer=caption)
            verdict = await judge.score(episode)
            equal = caption.strip().lower() == REFERENCE
            asked = identical == "ask" or not equal
            assert len(server.requests) - before == int(asked)
            # the stub judge says false to everything: only an unasked equal caption scores 1
            assert verdict.correct == (not asked)
            await judge.aclose()

    with OpenAIStub(lambda request: '{"correctness": false, "reason": "stub"}') as server:
        asyncio.run(scenario(server))


def test_the_older_prompt_option_is_still_read_as_the_request_layout():
    # runs recorded before `reference_image` named the layout `prompt="paper"|"arena"` (arena.store.migrate)
    paper = carv_llm(model="j", base_url="http://127.0.0.1:9", prompt="paper")
    text_only = carv_llm(model="j", base_url="http://127.0.0.1:9", prompt="arena")
    assert (paper.reference_image, text_only.reference_image) == (True, False)
    assert paper.describe()["reference_image"] is True and "prompt" not in paper.describe()
    assert paper.text == text_only.text  # the text is the prompt book's, whichever layout
    with pytest.raises(ValueError, match="prompt \\(now reference_image\\) must be one of paper, arena"):
        carv_llm(model="j", base_url="http://127.0.0.1:9", prompt="published")
