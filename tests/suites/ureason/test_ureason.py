"""UReason: marker rules, the public-format loader, criteria and the structural verifier, judges, metrics."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pytest
from PIL import Image

from arena.core.blobs import BlobStore
from arena.core.budget import Budget
from arena.core.dataset import DatasetError, load_datasets
from arena.core.images import encode_png
from arena.core.task import TaskRef
from arena.core.tool import ToolError, ToolOptions
from arena.core.trajectory import Episode, Observation, Step
from arena.core.verdict import Verdict
from arena.suites.ureason.loader import extract_refined_prompt
from arena.suites.ureason.world import Criterion, build, generate, gold_svg, wrong_svg
from arena.suites.ureason.image_gen import GenerateImageTool, extract_markup
from arena.suites.ureason.judge import (
    read_yes_no, ureason_metrics, ureason_reasoning, ureason_verify, ureason_vlm, verify,
)
from tests.support.openai_server import OpenAIStub, Reply, last_user_text
from arena.tools.render import RenderTool


@pytest.mark.parametrize("text, expected, found", [
    ("Let me think. Refined prompt: A red apple on a table.", "A red apple on a table.", True),
    ("**Refined Prompt:** Two cats.</think><image_start>", "Two cats.", True),
    ("prompt: draft one. Then the final scene prompt: the real one", "the real one", True),
    ("The refined prompt is: three pears", "three pears", True),
    ("No marker here at all.", "No marker here at all.", False),
])
def test_refined_prompt_follows_ureason_marker_rules(text, expected, found):
    assert extract_refined_prompt(text) == (expected, found)


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_loader_reads_reasoning_and_direct_files(tmp_path):
    item = {"id": 301, "prompt": "Task: x\nInstructions: ... refined prompt ...", "expect_en": "Left is A.",
            "category": "spatial"}
    _write(tmp_path / "spatial.jsonl", [item, item | {"id": 302}])
    _write(tmp_path / "direct_spatial.jsonl", [item | {"prompt": "Task: x\nGenerate directly."}])
    (tmp_path / "notes.jsonl").write_text('{"other": 1}\n')
    dataset = load_datasets(tmp_path)[0]
    levels = {t.id: t.level for t in dataset.tasks}
    assert levels == {"spatial-301-direct": "direct", "spatial-301-guided": "guided",
                      "spatial-301-decontext": "decontext", "spatial-302-guided": "guided",
                      "spatial-302-decontext": "decontext"}
    direct = next(t for t in dataset.tasks if t.level == "direct")
    assert (direct.question, direct.answers, direct.category, direct.kind) == \
        ("Task: x\nGenerate directly.", ["Left is A."], "spatial", "image")
    assert "render" in dataset.format_instruction
    assert len(load_datasets(tmp_path / "spatial.jsonl")[0].tasks) == 4


def test_loader_errors_name_file_line_and_field(tmp_path):
    _write(tmp_path / "text.jsonl", [{"id": 1, "prompt": "p", "expect_en": "e"}, {"id": 2, "prompt": "p",
                                                                                    "expect_en": ""}])
    with pytest.raises(DatasetError, match=r"text.jsonl:2: field expect_en: missing"):
        load_datasets(tmp_path / "text.jsonl")
    _write(tmp_path / "text.jsonl", [{"id": 1, "prompt": "p", "expect_en": "e"}] * 2)
    with pytest.raises(DatasetError, match=r"text.jsonl:2: field id: task 'text-1-guided' already"):
        load_datasets(tmp_path / "text.jsonl")


def test_world_public_files_load_like_the_world(tmp_path):
    world = build(tmp_path / "w", seed=2, size="small")
    mine = {t.id: t for t in load_datasets(world)[0].tasks}
    public = {t.id: t for t in load_datasets(world / "data")[0].tasks}
    assert set(mine) == set(public) and len(mine) == 30
    for task_id, task in mine.items():
        assert (public[task_id].question, public[task_id].answers) == (task.question, task.answers)
        assert Criterion.parse(task.answers[0]) is not None


@pytest.mark.parametrize("text, yes", [
    ("analysis...\n<answer>Yes</answer>", True), ("<answer>No</answer> although yes-ish", False),
    ("<answer>maybe</answer> yes", True), ("Not really matching.", False), ("nothing", False),
    ("It matches. YES.", True),
])
def test_yes_no_reading_matches_the_original(text, yes):
    assert read_yes_no(text) is yes


def test_criteria_parse_back_and_reject_other_sentences():
    for item in generate(seed=5, per_family=4):
        assert Criterion.parse(item.criterion.sentence()) == item.criterion
    for other in ("Top-left is a bar of soap.", "Exactly 2 red apples remaining.", 'The word "rose" is written.'):
        assert Criterion.parse(other) is None


def test_verifier_accepts_gold_and_rejects_wrong_markup():
    criteria = [item.criterion for item in generate(seed=0, per_family=2)]
    html = ('<div style="display:flex;gap:20px;padding:20px">'
            '<div style="width:60px;height:60px;background:#ff0000;border-radius:50%"></div>'
            '<div style="width:60px;height:60px;background:rgb(0,0,255)"></div></div>')

    async def scenario():
        tool = RenderTool(ToolOptions())
        try:
            out = []
            for criterion in criteria:
                gold = await tool({"svg": gold_svg(criterion)}, None)
                wrong = await tool({"svg": wrong_svg(criterion)}, None)
                out.append((criterion, gold.data, wrong.data))
            return out, (await tool({"html": html}, None)).data
        finally:
            await tool.aclose()

    results, html_data = asyncio.run(scenario())
    for criterion, gold, wrong in results:
        assert verify(criterion, gold["elements"], gold["width"], gold["height"])[0], criterion
        assert not verify(criterion, wrong["elements"], wrong["width"], wrong["height"])[0], criterion
    order = Criterion("order", sequence=(("red", "circle"), ("blue", "square")))
    assert verify(order, html_data["elements"], html_data["width"], html_data["height"])[0]
    assert not verify(Criterion("count", shape="circle", color="red", count=2), html_data["elements"], 512, 512)[0]


def _png(color: str = "red") -> bytes:
    return encode_png(Image.new("RGB", (8, 8), color))


def _episode(blobs: BlobStore | None, level: str = "guided", image: bool = True,
             answers=("Exactly 1 red circle is shown.",), color: str = "red") -> Episode:
    task = TaskRef(id=f"code-1-{level}", suite="ureason", question="Draw what the code draws.",
                   answers=list(answers), kind="image", category="code", level=level)
    steps = [Step(round=1, action="tool_call", tool="render", arguments={"svg": "<svg/>"},
                  output="I think one red circle. refined prompt: one red circle",
                  observation=Observation(text="ok", images=[blobs.put(_png(color))] if image and blobs else [],
                                          data={"elements": [], "width": 8, "height": 8}))]
    steps.append(Step(round=2, action="answer", answer="done", output="<answer>done</answer>"))
    return Episode(id=f"e-{level}-{image}", run_id="r", key="k", task=task, agent="a", setting="render",
                   budget=Budget(), steps=steps, answer="done", finish_reason="answered")


def test_vlm_judge_sends_the_image_and_criterion(tmp_path):
    blobs = BlobStore(tmp_path / "blobs")
    replies = iter(["Step 1... <answer>Yes</answer>", "The image shows two circles. <answer>No</answer>"])

    async def scenario(base_url):
        judge = ureason_vlm(model="vlm", base_url=base_url, max_retries=0, missing="fail")
        skipper = ureason_vlm(model="vlm", base_url=base_url, max_retries=0)  # published default: skip
        try:
            return [await judge.score(_episode(blobs), blobs),
                    await judge.score(_episode(blobs, level="direct", color="blue"), blobs),
                    await judge.score(_episode(blobs, image=False), blobs),
                    await skipper.score(_episode(blobs, image=False), blobs)]
        finally:
            await judge.aclose()
            await skipper.aclose()

    with OpenAIStub(lambda request: next(replies)) as server:
        yes, no, missing, skipped = asyncio.run(scenario(server.base_url))
    content = server.requests[0]["messages"][0]["content"]
    assert content[0]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(_png()).decode()
    assert 'Target Description: "Exactly 1 red circle is shown."' in content[1]["text"]
    assert (yes.correct, no.correct) == (True, False)
    assert (missing.score, missing.error, skipped.error) == (0.0, None, "no generated image")
    assert len(server.requests) == 2


def test_reasoning_judge_reads_the_thought_and_skips_direct(tmp_path):
    blobs = BlobStore(tmp_path / "blobs")

    async def scenario(base_url):
        judge = ureason_reasoning(model="llm", base_url=base_url, max_retries=0)
        try:
            return await judge.score(_episode(blobs), blobs), await judge.score(_episode(blobs, "direct"), blobs)
        finally:
            await judge.aclose()

    with OpenAIStub(lambda request: "<answer>Yes</answer>") as server:
        guided, direct = asyncio.run(scenario(server.base_url))
    prompt = last_user_text(server.requests[0])
    assert "I think one red circle" in prompt and "Exactly 1 red circle is shown." in prompt
    assert guided.correct and direct.error is not None and len(server.requests) == 1


def test_verify_judge_needs_a_render_structure(tmp_path):
    blobs = BlobStore(tmp_path / "blobs")
    judge = ureason_verify()
    assert asyncio.run(judge.score(_episode(blobs, image=False))).score == 0.0
    assert asyncio.run(judge.score(_episode(blobs))).correct is False
    assert asyncio.run(judge.score(_episode(blobs, answers=("Left is a lamp.",)))).error is not None


def test_metrics_report_settings_families_and_gains():
    rows = []
    table = {"direct": {"code": 0, "text": 0}, "guided": {"code": 1, "text": 0}, "decontext": {"code": 1, "text": 1}}
    for level, families in table.items():
        for family, score in families.items():
            ep = _episode(None, level=level, image=False).model_copy(
                update={"task": TaskRef(id=f"{family}-{level}", suite="ureason", question="q", answers=["a"],
                                        level=level, category=family)})
            rows.append((ep, Verdict(episode_id=ep.id, key="k", judge="j", score=score, correct=bool(score))))
    rows.append((rows[0][0], None))
    metrics = ureason_metrics(rows)
    assert metrics["accuracy"] == {"direct": 0.0, "guided": 50.0, "decontext": 100.0}
    assert (metrics["delta_1_2"], metrics["delta_2_3"]) == (50.0, 50.0)
    assert metrics["delta_per_family"]["text"] == {"delta_1_2": 0.0, "delta_2_3": 100.0}
    assert metrics["per_family"]["guided"] == {"code": 100.0, "text": 0.0}
    assert (metrics["valid"], metrics["invalid"], metrics["missing_images"]) == (6, 1, 7)


def test_generate_image_tool_posts_to_the_images_endpoint():
    png = _png("blue")

    def respond(request):
        return Reply(body={"created": 0, "data": [{"b64_json": base64.b64encode(png).decode()}]})

    with OpenAIStub(respond) as server:
        tool = GenerateImageTool(ToolOptions(images_base_url=server.base_url, images_model="painter",
                                             images_size="256x256"))

        async def scenario():
            try:
                return await tool({"prompt": "a blue square"}, None)
            finally:
                await tool.aclose()

        result = asyncio.run(scenario())
    request = server.requests[0]
    assert (request["prompt"], request["model"], request["size"], request["response_format"]) == \
        ("a blue square", "painter", "256x256", "b64_json")
    assert result.images[0].getpixel((0, 0)) == (0, 0, 255)
    with pytest.raises(ToolError, match="images_base_url"):
        asyncio.run(GenerateImageTool(ToolOptions())({"prompt": "x"}, None))


def test_generate_image_tool_names_the_servers_error_and_retries_only_transient_failures(monkeypatch):
    """A 400 in OpenAI's error shape is not sent again and its message is in the error (the key is not); a 503 is
    sent again and the image of the retry is returned."""
    png = base64.b64encode(_png("blue")).decode()
    monkeypatch.setenv("IMAGES_KEY", "sk-secret-123")
    replies = iter([Reply(status=400, error="Invalid size '7x7'. Supported sizes are 256x256 and 1024x1024."),
                    Reply(status=503, error="The server is overloaded or not ready yet."),
                    Reply(body={"created": 0, "data": [{"url": f"data:image/png;base64,{png}"}]})])

    async def generate(tool: GenerateImageTool):
        try:
            return await tool({"prompt": "a blue square"}, None)
        finally:
            await tool.aclose()

    with OpenAIStub(lambda request: next(replies)) as server:
        def tool() -> GenerateImageTool:
            return GenerateImageTool(ToolOptions(images_base_url=server.base_url, images_api_key_env="IMAGES_KEY",
                                                 images_size="7x7"))
        with pytest.raises(ToolError) as refused:
            asyncio.run(generate(tool()))
        assert len(server.requests) == 1
        result = asyncio.run(generate(tool()))
        assert len(server.requests) == 3
    assert "HTTP 400 (invalid_request_error): Invalid size '7x7'. Supported sizes are 256x256 and 1024x1024." in \
        str(refused.value) and "sk-secret" not in str(refused.value)
    assert result.images[0].getpixel((0, 0)) == (0, 0, 255)


def test_markup_is_found_in_model_replies():
    assert extract_markup("Here:\n```svg\n<svg width='1'></svg>\n```") == ("svg", "<svg width='1'></svg>")
    assert extract_markup("<html><body>x</body></html>") == ("html", "<html><body>x</body></html>")
    assert extract_markup("no markup") is None
