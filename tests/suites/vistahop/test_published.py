"""Differential tests: the arena's VistaHop judges against a reference of the published evaluator's behaviour.

The reference below is written from the behaviour of ahang0712/vistahop `evaluation/run_vistahop_eval.py`
(`extract_answer_allow_no_tag`, `normalize_answer`/`em_check`, `extract_mcq_answer`/`check_answer`,
`llm_judge_score`), in our own words and shape. Each tricky output is scored both ways and must agree; a few
cases also pin the value the published evaluator gives (from the issue's examples).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
import base64
import io
import math
import re
import string

import pytest
from PIL import Image

from arena.core.blobs import BlobStore
from arena.core.budget import Budget
from arena.core.task import TaskRef
from arena.core.trajectory import Episode, Step
from arena.judges.llm import llm
from arena.judges.mcq import mcq, mcq_strict
from arena.judges.normalized import normalized, normalized_strict
from tests.support.openai_server import OpenAIStub, Reply

ASSISTANT = "<|im_start|>assistant"
END = "<|im_end|>"


# --- the reference -------------------------------------------------------------------------------------------

def ref_tail(record: str) -> str:
    """Keep what the last assistant turn wrote after its last closing think tag."""
    cut = record.rfind(ASSISTANT)
    if cut >= 0:
        record = record[cut + len(ASSISTANT):]
    ends = [record.rfind(tag) + len(tag) for tag in ("</think>", "</thinking>") if tag in record]
    return record[max(ends):] if ends else record


def ref_blocks(text: str) -> list[str]:
    """Contents of `<answer>`…`</answer>` pairs, scanning left to right, shortest pairs."""
    found, at = [], 0
    while True:
        start = text.find("<answer>", at)
        if start < 0:
            return found
        stop = text.find("</answer>", start + len("<answer>"))
        if stop < 0:
            return found
        found.append(text[start + len("<answer>"):stop])
        at = stop + len("</answer>")


def ref_answer(record: str) -> str:
    if not record:
        return ""
    tail = ref_tail(record)
    blocks = ref_blocks(tail)
    return blocks[-1].strip() if blocks else tail.split(END, 1)[0].strip()


def ref_norm(text: str) -> str:
    text = text.lower()
    text = "".join(c for c in text if c not in string.punctuation)
    if text.strip() != "a":
        text = re.sub(r"\b(?:the|an|a)\b", " ", text)
    return " ".join(text.split())


def ref_em(record: str, truths: list[str]) -> bool:
    guess = ref_norm(ref_answer(record))
    return any(ref_norm(t) == guess for t in truths)


def _not_latin(ch: str) -> bool:
    return not ("a" <= ch.lower() <= "z")


def _standalone_upper(text: str) -> list[str]:
    out = []
    for i, ch in enumerate(text):
        if ch in "ABCD" and (i == 0 or _not_latin(text[i - 1])) and (i + 1 == len(text) or _not_latin(text[i + 1])):
            out.append(ch)
    return out


def _marked(text: str) -> list[str]:
    """Letters written (X), [X], or X. X) X] with no Latin letter before X (case-insensitive), in order."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch in "([" and i + 2 < len(text) and text[i + 1].upper() in "ABCD" and text[i + 2] == {"(": ")", "[": "]"}[ch]:
            out.append(text[i + 1].upper())
            i += 3
            continue
        if ch.upper() in "ABCD" and (i == 0 or _not_latin(text[i - 1])) and i + 1 < len(text) and text[i + 1] in ".)]":
            out.append(ch.upper())
            i += 2
            continue
        i += 1
    return out


def ref_inside(span: str) -> str | None:
    if len(span) == 1 and span.upper() in "ABCD":
        return span.upper()
    marked = _marked(span)
    if marked:
        return marked[-1]
    alone = _standalone_upper(span)
    return alone[-1] if alone else None


def ref_mcq(record: str) -> str | None:
    if not record:
        return None
    text = ref_tail(record)
    blocks = ref_blocks(text)
    if blocks:
        return ref_inside(blocks[-1].strip())
    box = re.search(r"\\boxed\{([^}]+)\}", text)
    if box and any(c in "ABCDabcd" for c in box.group(1)):
        return ref_inside(box.group(1).strip())
    for rule in (r"answer:\s*\(([a-d])\)", r"(?:correct answer is|answer is)[:\s]*\(([a-d])\)"):
        hits = re.findall(rule, text, re.I)
        if hits:
            return hits[-1].upper()
    for bold in reversed(re.findall(r"\*\*[^*]+\*\*", text)):
        inner = re.search(r"\(([a-d])\)", bold, re.I)
        if inner:
            return inner.group(1).upper()
    hits = re.findall(r"\(([a-d])\)", text, re.I)
    if hits:
        return hits[-1].upper()
    hits = [m.group(1).upper() for m in re.finditer(r"([a-d])[)\]]", text, re.I)
            if m.start() == 0 or _not_latin(text[m.start() - 1])]
    if hits:
        return hits[-1]
    alone = _standalone_upper(text)
    return alone[-1] if alone else None


def ref_mcq_correct(record: str, truths: list[str]) -> bool:
    letter = ref_mcq(record)
    return letter is not None and any(letter == t.upper() for t in truths)


# --- episodes whose last turn wrote the output -----------------------------------------------------------------

def episode_with(output: str, truths: list[str], kind: str = "open", images: list[str] | None = None) -> Episode:
    task = TaskRef(id="t", suite="vistahop", question="Which city is shown?", answers=truths, kind=kind)
    step = Step(round=1, output=output, action="answer", answer=output)
    return Episode(id="e", run_id="r", key="t|s|10|0|a", task=task, agent="a", setting="s", budget=Budget(),
                   steps=[step], answer=output, finish_reason="answered", images=images or [])


def recorded(output: str) -> str:
    """The original's record of a final turn: the turn's text closed by `<|im_end|>`."""
    return output + END


MCQ_OUTPUTS = [
    "<answer>B</answer>", "<answer>b</answer>", "<answer> c </answer>", "(a) because the tower is red",
    "<answer>(D)</answer>", "<answer>[c]</answer>", "<answer>b.</answer>", "<answer>The answer is B</answer>",
    "<answer>Option A or B</answer>", "<answer>none</answer>", "<answer>a cat</answer>", "<answer>Bd</answer>",
    "<ANSWER>B</ANSWER>", "\\boxed{C}", "\\boxed{c}", "\\boxed{(b)}", "\\boxed{2} so the answer is (A)",
    "\\boxed{A} then \\boxed{B}", "\\boxed{Bad}", "\\boxed{answer}", "Answer: (C)", "answer: (d) and Answer: (B)",
    "The correct answer is (A).", "the answer is: (c)", "I pick **(B)** over (C)", "**Option (D)** is right, (A)",
    "**bold** but (C)", "A) red B) blue", "see b] then", "C", "I think C", "Between A and D, D",
    "nothing here", "", "<think>A</think>B", "<think>(A)</think><answer>C</answer>", "<thinking>D</thinking>(b)",
    "<answer>A</answer><think>x</think>no tag", "prefix<|im_start|>assistant\n<answer>D</answer>",
    "<answer>A</answer><|im_start|>assistant\nfinal: B", "<answer>A</answer><answer>C</answer>",
    "<answer>A</answer> and later <answer>e</answer>", "<answer>\nB\n</answer>", "<answer>(a)(b)</answer>",
    "<answer>AB</answer>", "Answer: B", "ABCD", "(E) is not an option, B.", "<answer>ⓑ</answer>",
    "<answer>Ｂ</answer>", "**(c)**", "(a)-(b)", "option d)", "<answer>d)</answer>", "x\\boxed{}y (C)",
    "<think>unclosed (A)", "</think>", "<answer>A.B.</answer>", "final answer is (b)", "\\boxed{ D }",
]

EM_OUTPUTS = [
    ("<answer>Lyon</answer>", ["Lyon"]), ("<answer>a</answer>", ["A"]), ("<answer>A.</answer>", ["a"]),
    ("<answer>an</answer>", ["A"]), ("<answer>the</answer>", ["The"]), ("Lyon<|im_end|>garbage", ["Lyon"]),
    ("<ANSWER>Lyon</ANSWER>", ["Lyon"]), ("<answer>Ｌｙｏｎ</answer>", ["Lyon"]), ("<answer>“Lyon”</answer>", ["Lyon"]),
    ("<answer>\"Lyon\"</answer>", ["Lyon"]), ("<answer>The Eiffel Tower!</answer>", ["eiffel tower"]),
    ("<answer>1,874</answer>", ["1874"]), ("<answer>1874.</answer>", ["1874"]), ("<answer>U.S.A.</answer>", ["USA"]),
    ("<answer>Jean-Luc</answer>", ["Jeanluc"]), ("<answer>Jean–Luc</answer>", ["Jeanluc"]),
    ("<answer>  saint   étienne </answer>", ["Saint Étienne"]), ("<answer>SAINT ÉTIENNE</answer>", ["saint étienne"]),
    ("<answer>Café</answer>", ["Cafe"]), ("<think>Paris</think><answer>Lyon</answer>", ["Lyon"]),
    ("<think>x</think>Lyon", ["Lyon"]), ("<thinking>x</thinking> Lyon ", ["Lyon"]), ("Lyon</think>Paris", ["Paris"]),
    ("<answer>Paris</answer> then <answer>Lyon</answer>", ["Lyon"]), ("<answer>Lyon</answer><|im_end|>", ["Lyon"]),
    ("plain answer Lyon", ["Lyon"]), ("Lyon", ["Lyon"]), ("", ["Lyon"]), ("   ", [""]),
    ("<answer></answer>", ["Lyon"]), ("<answer>Lyon", ["Lyon"]), ("Lyon</answer>", ["Lyon"]),
    ("x<|im_start|>assistant\n<answer>Lyon</answer>", ["Lyon"]), ("<answer>Lyon</answer><|im_start|>assistant\nNice",
                                                                 ["Nice"]),
    ("<answer>a cat</answer>", ["cat"]), ("<answer>A cat</answer>", ["a cat"]), ("<answer>cat a</answer>", ["cat"]),
    ("<answer>an apple</answer>", ["apple"]), ("<answer>the's</answer>", ["s"]), ("<answer>the’s</answer>", ["’s"]),
    ("<answer>Dr. No</answer>", ["dr no"]), ("<answer>42 m</answer>", ["42m"]), ("<answer>42m</answer>", ["42 m"]),
    ("<answer>Mirelle Dastrow.</answer>", ["Mirelle Dastrow"]), ("<answer>the Mirelle Dastrow</answer>",
                                                                 ["Mirelle Dastrow"]),
    ("<answer>Lyon\nFrance</answer>", ["Lyon France"]), ("<answer>\tLyon\t</answer>", ["lyon"]),
    ("<answer>Lyon, France</answer>", ["Lyon"]), ("<answer>Lyon</answer>", ["Paris", "Lyon"]),
    ("<answer>a</answer>", ["an"]), ("<answer>A</answer>", ["the a"]), ("<answer>¿Qué?</answer>", ["¿qué"]),
    ("<answer>Ⅻ</answer>", ["XII"]), ("<answer>İstanbul</answer>", ["istanbul"]), ("<answer>ß</answer>", ["ss"]),
    ("<answer>Lyon</answer >", ["Lyon"]), ("<answer>x</answer><think>y</think>Lyon", ["Lyon"]),
]


@pytest.mark.parametrize("output", MCQ_OUTPUTS)
def test_mcq_judge_equals_published_extraction(output):
    truths = ["A", "B", "C", "D"][len(output) % 4:][:1]
    verdict = asyncio.run(mcq().score(episode_with(output, truths, "mcq")))
    assert verdict.extracted == ref_mcq(recorded(output))
    assert verdict.correct == ref_mcq_correct(recorded(output), truths)


@pytest.mark.parametrize("output, truths", EM_OUTPUTS)
def test_normalized_judge_equals_published_em(output, truths):
    verdict = asyncio.run(normalized().score(episode_with(output, truths)))
    assert verdict.extracted == ref_answer(recorded(output))
    assert verdict.correct == ref_em(recorded(output), truths)


CITIES = ["Lyon", "Paris", "Nice", "Metz"]


@pytest.mark.parametrize("output", MCQ_OUTPUTS)
def test_an_option_text_truth_is_the_arena_protocols_extension_only(output):
    """Truth "Paris" among the options Lyon/Paris/Nice/Metz: under `--protocol original` (the judge built as the run
    builds it) the published check_answer alone, which never matches a letter to a city; under `arena` the letter of
    the option whose text is the truth counts too."""
    from arena.runs.judging import Judges
    task_episode = episode_with(output, ["Paris"], "mcq")
    task_episode.task.options = list(CITIES)
    original = Judges("mcq", {}, Path("unused"), protocol="original").get("mcq")
    arena = Judges("mcq", {}, Path("unused"), protocol="arena").get("mcq")
    published = asyncio.run(original.score(task_episode))
    assert published.correct == ref_mcq_correct(recorded(output), ["Paris"]) is False
    assert asyncio.run(arena.score(task_episode)).correct == (ref_mcq(recorded(output)) == "B")


def test_enough_tricky_outputs():
    assert len(MCQ_OUTPUTS) >= 50 and len(EM_OUTPUTS) >= 50


@pytest.mark.parametrize("output, letter", [
    ("<answer>b</answer>", "B"), ("(a) because", "A"), ("\\boxed{Bad}", None), ("\\boxed{2} so (A)", "A"),
    ("<answer>Option A or B</answer>", "B"), ("<ANSWER>B</ANSWER>", "B"),
])
def test_published_mcq_values_from_the_issue(output, letter):
    assert asyncio.run(mcq().score(episode_with(output, ["A"], "mcq"))).extracted == letter


@pytest.mark.parametrize("output, truth, correct", [
    ("<answer>a</answer>", "A", True), ("Lyon<|im_end|>garbage", "Lyon", True),
    ("<ANSWER>Lyon</ANSWER>", "Lyon", False), ("<answer>Ｌｙｏｎ</answer>", "Lyon", False),
    ("<answer>“Lyon”</answer>", "Lyon", False),
])
def test_published_em_values_from_the_issue(output, truth, correct):
    assert asyncio.run(normalized().score(episode_with(output, [truth]))).correct is correct


def test_strict_variants_keep_the_arena_rules():
    curly = episode_with("<answer>“Lyon”</answer>", ["Lyon"])
    curly.answer = "“Lyon”"
    assert asyncio.run(normalized_strict().score(curly)).correct
    assert not asyncio.run(normalized().score(curly)).correct
    lower = episode_with("<answer>b</answer>", ["B"], "mcq")
    lower.answer = "b"
    assert asyncio.run(mcq().score(lower)).correct
    assert not asyncio.run(mcq_strict().score(lower)).correct


# --- the LLM judge as the paper ran it -------------------------------------------------------------------------

def ref_judge_size(width: int, height: int) -> tuple[int, int]:
    """The published judge's resize: multiples of 32, area within [65536, 8294400] (truncate, then round)."""
    hb, wb = max(32, 32 * round(height / 32)), max(32, 32 * round(width / 32))
    if hb * wb > 8294400:
        scale = math.sqrt(height * width / 8294400)
        return 32 * (int(width / scale) // 32), 32 * (int(height / scale) // 32)
    if hb * wb < 65536:
        scale = math.sqrt(65536 / (height * width))
        return 32 * math.ceil(int(width * scale) / 32), 32 * math.ceil(int(height * scale) / 32)
    return wb, hb


LLM_CASES = [
    ("<answer>Lyon, France</answer>", ["Paris", "Lyon"]), ("<answer>lyon</answer>", ["Lyon"]),
    ("<think>maybe Paris</think>The city is Lyon<|im_end|>junk", ["Lyon"]), ("", ["Lyon"]),
    ("<answer>Lyons</answer>", ["Lyon", "Lugdunum", "Paris"]), ("<ANSWER>Lyon</ANSWER>", ["Lyon"]),
    ("<answer>Nice</answer>", ["Lyon", "Paris"]), ("<answer>a</answer>", ["A"]),
]


def judge_says(answer: str, truth: str) -> str:
    """The stub judge model: Yes when the answer mentions the truth's first four letters."""
    yes = truth[:4].lower() in answer.lower() and bool(answer.strip())
    return f"<judge>{'Yes' if yes else 'No'}</judge><reason>stub</reason>"


def ref_llm_score(record: str, truths: list[str]) -> tuple[float, list[tuple[str, str]]]:
    """(score, the (truth, answer) pairs the original sends, in order)."""
    answer = ref_answer(record)
    if any(ref_norm(t) == ref_norm(answer) for t in truths):
        return 1.0, []
    sent = []
    for truth in truths:
        sent.append((truth, answer))
        if judge_says(answer, truth).startswith("<judge>Yes"):
            return 1.0, sent
    return 0.0, sent


def test_llm_judge_follows_the_published_flow_with_the_image(tmp_path):
    blobs = BlobStore(tmp_path / "blobs")
    Image.new("RGBA", (1000, 37), (200, 10, 10, 255)).save(tmp_path / "wide.png")
    blob = blobs.put_file(tmp_path / "wide.png")

    def respond(request):
        user = request["messages"][1]["content"][0]["text"]
        truth = re.search(r"Reference answer: (.*)", user).group(1)
        answer = re.search(r"Model answer: (.*?)\n\nInstructions", user, re.S).group(1)
        return Reply(content=judge_says(answer, truth))

    async def scenario(server):
        judge = llm(model="j", base_url=server.base_url, retry_initial=0.01)
        for output, truths in LLM_CASES:
            before = len(server.requests)
            verdict = await judge.score(episode_with(output, truths, images=[blob]), blobs)
            expected, sent = ref_llm_score(recorded(output), truths)
            requests = server.requests[before:]
            assert verdict.score == expected, output
            assert len(requests) == len(sent), output
            for request, (truth, answer) in zip(requests, sent):
                system, user = request["messages"]
                assert system["role"] == "system" and user["role"] == "user"
                text, image = user["content"]
                assert f"Reference answer: {truth}\n" in text["text"]
                assert f"Model answer: {answer}\n" in text["text"]
                assert request["temperature"] == 0
                url = image["image_url"]["url"]
                assert url.startswith("data:image/jpeg;base64,")
                sent_image = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
                assert sent_image.format == "JPEG" and sent_image.size == ref_judge_size(1000, 37)
        text_only = llm(model="j", base_url=server.base_url, with_image=False)
        before = len(server.requests)
        await text_only.score(episode_with("<answer>Nice</answer>", ["Lyon"], images=[blob]), blobs)
        assert isinstance(server.requests[before]["messages"][1]["content"], str)
        await judge.aclose()
        await text_only.aclose()

    with OpenAIStub(respond) as server:
        asyncio.run(scenario(server))


@pytest.mark.parametrize("size", [(1000, 37), (4000, 3000), (100, 100), (333, 777), (5000, 30), (64, 1024)])
def test_judge_image_size_matches_the_published_resize(size):
    from arena.judges.llm import judge_image_size
    assert judge_image_size(*size) == ref_judge_size(*size)
