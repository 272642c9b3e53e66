"""UReason end to end: scripted agents reproduce known accuracies and gains; the image_gen agent plays the
three settings against stub chat and images endpoints."""

from __future__ import annotations

import base64
import json

from PIL import Image

from arena.core.dataset import load_datasets
from arena.core.images import encode_png
from arena.suites.ureason.world import Criterion, build, gold_svg, wrong_svg
from arena.runs.config import RunConfig
from arena.runs.runner import run
from tests.support.openai_server import OpenAIStub, Reply

GOOD_FAMILIES = {"direct": {"code"}, "guided": {"code", "text", "spatial"},
                 "decontext": {"code", "text", "spatial", "attribute", "arithmetic"}}


def test_scripted_render_run_reproduces_known_accuracies_and_gains(tmp_path):
    world = build(tmp_path / "ureason", seed=4, size="small")
    tasks = load_datasets(world)[0].tasks
    script = {}
    for task in tasks:
        criterion = Criterion.parse(task.answers[0])
        good = task.category in GOOD_FAMILIES[task.level]
        svg = gold_svg(criterion) if good else wrong_svg(criterion)
        call = json.dumps({"name": "render", "arguments": {"svg": svg}})
        thought = f"<think>Working it out.</think>refined prompt: {task.answers[0]}\n<tool_call>{call}</tool_call>"
        script[task.id] = [{"text": thought}, {"answer": "done"}]
    missing = next(t.id for t in tasks if t.level == "decontext" and t.category == "code")
    script[missing] = [{"answer": "I could not draw it."}]
    (tmp_path / "script.json").write_text(json.dumps(script))
    config = RunConfig(data=str(world), agent="scripted", agent_options={"script": str(tmp_path / "script.json")},
                       settings=["render"], judge="ureason-verify", out=str(tmp_path / "logs"), concurrency=4)
    result = run(config)
    metrics = result.summary["groups"][0]["suites"]["ureason"]
    assert metrics["accuracy"] == {"direct": 20.0, "guided": 60.0, "decontext": 90.0}
    assert (metrics["delta_1_2"], metrics["delta_2_3"]) == (40.0, 30.0)
    assert metrics["per_family"]["decontext"]["code"] == 50.0 and metrics["missing_images"] == 1
    assert metrics["valid"] == 30


def test_image_gen_agent_conditions_each_setting_as_ureason_does(tmp_path):
    world = build(tmp_path / "ureason", seed=0, size="small")
    item = next(t for t in load_datasets(world)[0].tasks if t.category == "attribute")
    ids = [item.id.replace("-direct", f"-{s}") for s in ("direct", "guided", "decontext")]
    criterion = Criterion.parse(item.answers[0])
    thought = f"The mixture is {criterion.color}.\n**Refined prompt:** one {criterion.color} {criterion.shape}"
    png = base64.b64encode(encode_png(Image.new("RGB", (4, 4)))).decode()

    def respond(request):
        if "messages" not in request:
            return Reply(body={"created": 0, "data": [{"b64_json": png}]})
        if request["messages"][0]["role"] == "system" or len(request["messages"]) > 1:
            return f"```svg\n{gold_svg(criterion)}\n```"
        return thought

    with OpenAIStub(respond) as server:
        common = dict(data=str(world), agent="image_gen", task_ids=ids, concurrency=3, out=str(tmp_path / "logs"),
                      agent_options={"model": "umm", "base_url": server.base_url, "max_retries": 0})
        images = run(RunConfig(settings=["generate_image"], judge="ureason-verify", run_id="images",
                               tool_options={"images_base_url": server.base_url, "images_model": "t2i"}, **common))
        image_prompts = {r["prompt"] for r in server.requests if "prompt" in r}
        chats_for_images = sum(1 for r in server.requests if "messages" in r)
        before = len(server.requests)
        rendered = run(RunConfig(settings=["render"], judge="ureason-verify", run_id="render", **common))
        paint_requests = [r["messages"] for r in server.requests[before:] if "messages" in r]
    by_level = {e.task.level: e for e in images.episodes}
    assert image_prompts == {by_level["direct"].task.question,
                             f"{by_level['guided'].task.question}\n\n{thought}",
                             f"one {criterion.color} {criterion.shape}"}
    assert chats_for_images == 1
    assert all(v.error and "records no page structure" in v.error for v in images.verdicts)
    assert by_level["guided"].steps[0].output == thought
    assert sorted(v.correct for v in rendered.verdicts) == [True, True, True]
    assert "warnings" not in rendered.summary and "warnings" not in images.summary
    assert len(paint_requests) == 4
    assert [{"role": "user", "content": f"one {criterion.color} {criterion.shape}"}] == \
        [m[1] for m in paint_requests if m[0]["role"] == "system" and m[1]["content"] != item.question]


def test_runs_warn_when_decontext_tasks_are_played_by_another_kind_of_agent(tmp_path):
    from arena.core.world import WORLD_BUILDERS
    from arena.runs.config import RunConfig
    from arena.runs.runner import run

    world = WORLD_BUILDERS["ureason-mini"](tmp_path / "w", seed=0, size="small")
    result = run(RunConfig(data=str(world), agent="scripted", agent_options={"script": [{"answer": "x"}]},
                           settings=["render"], judge="ureason-verify", out=str(tmp_path / "logs"), limit=6))
    decontext = [t for t in ("decontext",) if any(e.task.level == t for e in result.episodes)]
    assert decontext, "the first tasks include de-contextualised ones"
    [warning] = result.summary["warnings"]
    assert "need an agent of kind 'image_gen'" in warning and "'scripted'" in warning


def test_a_prompts_file_gives_the_generation_instruction_of_every_request(tmp_path):
    """`ureason.agent.instruction` (the instruction to use the generation tools, a named template): the arena's
    wording without a prompts file, the file's text with one, after the question of every agent request."""
    from arena.suites.ureason.loader import GENERATION_INSTRUCTION

    items = build(tmp_path / "ureason", seed=0, size="small") / "data"  # the published item files
    task = load_datasets(items)[0].tasks[0]
    prompts = tmp_path / "prompts.yaml"
    prompts.write_text("ureason.agent.instruction: |-\n  DRAW IT with {{braces}} kept, from the test.\n")
    with OpenAIStub(lambda request: "<answer>done</answer>") as server:
        for run_id, extra in (("arena", {}), ("file", {"prompts": str(prompts)})):
            run(RunConfig(data=str(items), agent="openai", task_ids=[task.id], settings=["render"],
                          judge="ureason-verify", out=str(tmp_path / "logs"), run_id=run_id,
                          agent_options={"model": "m", "base_url": server.base_url, "max_retries": 0}, **extra))
        texts = [r["messages"][1]["content"][-1]["text"] for r in server.requests]
    assert len(texts) == 2
    assert texts[0].endswith(f"\n\n{GENERATION_INSTRUCTION}")
    assert texts[1].endswith("\n\nDRAW IT with {braces} kept, from the test.")
    recorded = json.loads((tmp_path / "logs" / "file" / "run.json").read_text())["prompts"]["templates"]
    assert recorded["ureason.agent.instruction"]["wording"] == "file"
