"""Differential tests: UReason's published rules against the arena's.

References written from UReason/UReason `evaluation/qwen_vision_batch.py` (`extract_answer`, the skip of items
without an image) and `Bagel/extract_thought.py` (the refined-prompt marker), in our own words.
"""

from __future__ import annotations

import asyncio
import re

import pytest
from PIL import Image

from arena.core.blobs import BlobStore
from arena.suites.ureason.loader import extract_refined_prompt
from arena.suites.ureason.judge import read_yes_no, ureason_vlm
from tests.support.published_episodes import Observation, Step, final_turn_episode
from tests.support.openai_server import OpenAIStub


def ref_yes_no(reply: str) -> int:
    """First <answer>…</answer> on a single line (tags in any case); yes wins, then no; else the whole reply."""
    lowered = reply.lower()
    start = lowered.find("<answer>")
    while start >= 0:
        stop = lowered.find("</answer>", start + 8)
        inside = reply[start + 8:stop] if stop >= 0 else None
        if inside is not None and "\n" not in inside:
            content = inside.strip().lower()
            if "yes" in content:
                return 1
            if "no" in content:
                return 0
            break
        start = lowered.find("<answer>", start + 1)
    if "yes" in lowered:
        return 1
    return 0


JUDGE_REPLIES = [
    "<answer>Yes</answer>", "<answer>No</answer>", "<answer>yes</answer>", "<ANSWER>YES</ANSWER>",
    "<answer> No </answer>", "<answer>\nNo\n</answer>", "Yes, it matches.\n<answer>\nNo\n</answer>",
    "<answer>Nope</answer>", "<answer>unknown</answer>", "<answer>None</answer>", "<answer>eyes</answer>",
    "<answer>maybe</answer> yes", "<answer>maybe</answer> no", "<answer>maybe</answer>", "Yes", "No",
    "The answer is no.", "I cannot say.", "", "<answer>No</answer> but yes", "<answer>Yes</answer> but no",
    "<answer>Yes</answer><answer>No</answer>", "<answer>No</answer><answer>Yes</answer>", "yesno", "noyes",
    "<answer>Not really, yes</answer>", "<answer>Yes</answer", "<answer>No", "Yes</answer>",
    "<answer></answer> yes", "<answer></answer>", "analysis: the image shows...\n<answer>Yes</answer>",
    "<answer>Y e s</answer>", "<answer>YES!</answer>", "<answer>nO</answer>", "Know", "Eyes only",
    "<answer>\nYes</answer> no", "<answer>Yes\n</answer>", "<Answer>No</Answer> yes", "<answer>\tYes\t</answer>",
    "<answer>no</answer>\n<answer>yes</answer>", "The description does not match.", "There is nothing.",
    "<answer>Yes.</answer>", "<answer>No.</answer>", "Answer: Yes", "Answer: No", "answer>yes</answer",
    "<answer>Noted yes</answer>", "<answer>yesterday</answer>",
]

MARKER_TEXTS = [
    "Let me think. Refined prompt: two red apples on a table.", "**Refined Prompt:** a cat", "prompt is a dog",
    "The refined prompt is: three cubes", "final scene prompt: a house</think>", "Final prompt:: a boat <image_start>",
    "no marker at all", "prompt: first\nprompt: second", "promptly done", "the prompt is **bold** here",
    "PROMPT: upper", "Refined   prompt : spaced", "**prompt**: stars",
]


def ref_refined(text: str) -> str:
    marker = re.compile(r"(?:\*\*|)\b(?:refined\s+prompt|the\s+refined\s+prompt|final\s+scene\s+prompt|"
                        r"final\s+prompt|prompt)\b(?:\s+is|):*", re.I)
    last = None
    for last in marker.finditer(text):
        pass
    out = text[last.end():].strip().lstrip("*").strip() if last else text.strip()
    return out.replace("</think>", "").replace("<image_start>", "").strip()


def test_enough_replies():
    assert len(JUDGE_REPLIES) >= 50


@pytest.mark.parametrize("reply", JUDGE_REPLIES)
def test_judge_reply_reading_equals_published(reply):
    assert int(read_yes_no(reply)) == ref_yes_no(reply)


@pytest.mark.parametrize("text", MARKER_TEXTS)
def test_refined_prompt_marker_equals_published(text):
    assert extract_refined_prompt(text)[0] == ref_refined(text)


def test_vlm_judge_end_to_end_and_missing_images_skipped(tmp_path):
    blobs = BlobStore(tmp_path / "blobs")
    Image.new("RGB", (64, 64), (255, 0, 0)).save(tmp_path / "img.png")
    blob = blobs.put_file(tmp_path / "img.png")
    replies = iter(JUDGE_REPLIES)

    def respond(request):
        return next(replies)

    async def scenario(server):
        judge = ureason_vlm(model="j", base_url=server.base_url, retry_initial=0.01)
        for i, reply in enumerate(JUDGE_REPLIES):
            made = Step(round=1, output="", action="tool_call", tool="render",
                        observation=Observation(text="ok", images=[blob]))
            episode = final_turn_episode("<answer>done</answer>", [f"{i} red apples"], suite="ureason",
                                         steps=[made], level="guided", category="ARITHMETIC")
            verdict = await judge.score(episode, blobs)
            assert verdict.error is None and verdict.score == ref_yes_no(reply)
        missing = final_turn_episode("<answer>no image</answer>", ["x"], suite="ureason", level="guided")
        skipped = await judge.score(missing, blobs)
        assert skipped.error and len(server.requests) == len(JUDGE_REPLIES)
        failed = await ureason_vlm(model="j", base_url=server.base_url, missing="fail").score(missing, blobs)
        assert failed.error is None and failed.score == 0
        await judge.aclose()

    with OpenAIStub(respond) as server:
        asyncio.run(scenario(server))
