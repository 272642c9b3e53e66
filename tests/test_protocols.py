"""`--protocol`: the default follows the data (published format -> original, generated world -> arena), the
choice is recorded and shown; scoring-side switches select the published rule or the arena's variant."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

from PIL import Image
from rich.console import Console

from arena.core.prompt_book import TEMPLATES
from arena.judges.llm import judge_image_size
from arena.runs.config import RunConfig
from arena.runs.judging import Judges
from arena.review.rundata import load_run
from arena.review.report import build_report
from arena.runs.runner import run
from arena.review.table import summary_table
from arena.suites.carv.loader import parse_stem
from arena.suites.carv.world import render_state
from arena.suites.mmir.world import build as build_mmir
from arena.core.dataset import load_datasets
from arena.core.images import encode_png
from tests.support.openai_server import OpenAIStub
from tests.support.tiny_dataset import write_tiny_dataset


def title_of(summary) -> str:
    console = Console(record=True, width=200)
    console.print(summary_table(summary))
    return console.export_text()


def test_default_protocol_follows_the_data_and_is_recorded_and_shown(tmp_path: Path):
    published = write_tiny_dataset(tmp_path / "va")
    result = run(RunConfig(data=str(published), agent="scripted", agent_options={"script": [{"answer": "x"}]},
                           settings=["no-tool"], judge="normalized", out=str(tmp_path / "logs"), run_id="va"))
    assert result.summary["protocol"] == "original"
    info = json.loads((result.run_dir / "run.json").read_text())
    assert info["config"]["grid"]["protocol"] == "original" and info["config"]["limits"]["final_answer_turn"] is False
    assert "protocol: original" in title_of(result.summary)

    world = build_mmir(tmp_path / "mmir", seed=3, size="small", count=2)
    result = run(RunConfig(data=str(world), agent="scripted", agent_options={"script": [{"answer": "<ans>1</ans>"}]},
                           settings=["no-tool"], judge="normalized", out=str(tmp_path / "logs"), run_id="world"))
    # (normalized: the world's open-ended items would need an MMIR judge model, which the run refuses to lack)
    assert result.summary["protocol"] == "arena"
    info = json.loads((result.run_dir / "run.json").read_text())
    assert info["config"]["grid"]["protocol"] == "arena" and info["config"]["limits"]["final_answer_turn"] is True
    assert "protocol: arena" in title_of(result.summary)
    assert all(t.shown_title.endswith("· protocol: arena") for t in build_report([load_run(result.run_dir)]).tables)


def test_judges_are_built_with_the_arena_variant_only_under_arena(tmp_path: Path):
    endpoint = {"model": "j", "base_url": "http://127.0.0.1:9/v1"}
    built = {p: Judges("auto", endpoint, tmp_path / "cache.jsonl", p) for p in ("original", "arena")}
    assert built["original"].get("ureason-vlm").skip_missing is True
    assert built["arena"].get("ureason-vlm").skip_missing is False
    assert built["original"].get("condchain").no_answer == "none"
    assert built["arena"].get("condchain").no_answer == "wrong"
    assert (built["original"].get("mmir").strict_ans, built["arena"].get("mmir").strict_ans) == (True, False)
    explicit = Judges("auto", {**endpoint, "missing": "skip"}, tmp_path / "cache.jsonl", "arena")
    assert explicit.get("ureason-vlm").skip_missing is True  # an option given explicitly wins


def test_mmir_ans_tag_is_required_only_under_original(tmp_path: Path):
    world = build_mmir(tmp_path / "mmir", seed=3, size="small", count=5)
    task = next(t for t in load_datasets(world)[0].tasks if t.id.endswith(":mcq") and len(t.answers) == 1)
    script = {task.id: [{"answer": f"The wrong element is [{task.answers[0]}]"}]}  # no <ans>
    scores = {}
    for protocol in ("original", "arena"):
        result = run(RunConfig(data=str(world), agent="scripted", agent_options={"script": script},
                               settings=["no-tool"], judge=None, task_ids=[task.id], protocol=protocol,
                               out=str(tmp_path / "logs"), run_id=protocol))
        scores[protocol] = result.verdicts[0].score
    assert scores == {"original": 0.0, "arena": 1.0}


CARV_ITEM = {"context_image": ["one_mug_on_wood_table", "one_mug_on_red_table", "one_mug_on_wood_table",
                              "two_mug_on_wood_table", "one_mug_on_wood_table"], "label": "two_mug_on_red_table"}
CARV_CAPTION = "A pair of mugs sits on a red table."
# A stand-in for the paper's evaluation prompt (Appendix A.1), written for this test: the project does not copy it.
CARV_STAND_IN = "Stand-in evaluator text. Reference: <<{reference}>> Response: <<{response}>> Reply in JSON {{...}}."


def carv_runs(tmp_path: Path, protocols: tuple[str, ...], prompts: Path | None = None):
    """A CARV Union SS item run under each protocol by a scripted agent, against a stub judge that says false:
    (per protocol: the verdicts' scores, Pass@1 and the summary), the judge requests."""
    for stem in set(CARV_ITEM["context_image"]) | {CARV_ITEM["label"]}:
        (tmp_path / f"{stem}.png").write_bytes(encode_png(render_state(parse_stem(stem)).resize((48, 36))))
    data = tmp_path / "carv_union_ss.jsonl"
    data.write_text(json.dumps(CARV_ITEM) + "\n")
    # the model says "mugs" in other words: the parser reads it as two mugs on a red table; the LLM judge says no
    script = [{"answer": CARV_CAPTION}]
    with OpenAIStub(lambda request: '{"correctness": false, "reason": "stub"}') as server:
        by_protocol = {}
        for protocol in protocols:
            result = run(RunConfig(data=str(data), agent="scripted", agent_options={"script": script},
                                   settings=["no-tool"], judge="auto", protocol=protocol,
                                   judge_options={"model": "j", "base_url": server.base_url},
                                   prompts=str(prompts) if prompts else None,
                                   out=str(tmp_path / "logs"), run_id=protocol))
            verdicts = [json.loads(line) for line in (result.run_dir / "verdicts.jsonl").read_text().splitlines()]
            by_protocol[protocol] = ({v["judge"]: v["score"] for v in verdicts}, result.summary["groups"][0]["pass1"],
                                     result.summary)
        return by_protocol, [r for r in server.requests if r["model"] == "j"]


def test_carv_original_counts_the_paper_llm_judge_and_computes_the_parser_beside_it(tmp_path: Path):
    by_protocol, judge_requests = carv_runs(tmp_path, ("original", "arena"))
    # The paper's evaluator (Appendix A.1): one request with the evaluation text, the reference caption and the
    # model's caption, then the ground-truth image (the label's file, as it is). No prompts file: the text is the
    # arena's wording, and the table title says the judge's text is not the published one.
    assert len(judge_requests) == 1
    (message,) = judge_requests[0]["messages"]
    text, image = message["content"]
    assert text["text"] == TEMPLATES["carv.judge.user"].arena_text.format(reference="Two mugs on a red table.",
                                                                          response=CARV_CAPTION)
    assert text["text"].startswith("You are an evaluator for the image captioning task. Given the reference "
                                   "caption of the ground truth image")
    assert judge_requests[0]["temperature"] == 0
    label_png = (tmp_path / f"{CARV_ITEM['label']}.png").read_bytes()
    assert image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(label_png).decode()
    parser_score = by_protocol["arena"][0]["carv-parse"]
    assert by_protocol["original"][0] == {"carv-llm": 0.0, "carv-parse": parser_score}
    assert by_protocol["original"][1] == 0.0  # the LLM judge's verdict counts
    assert set(by_protocol["arena"][0]) == {"carv-parse"}
    assert by_protocol["arena"][1] == parser_score * 100
    summary = by_protocol["original"][2]
    assert summary["prompts"]["templates"]["carv.judge.user"] == {"kind": "judge", "wording": "arena"}
    assert summary_table(summary).title.endswith(
        "protocol: original · judge prompts: arena wording (not the published text)")


def test_carv_judge_text_from_the_prompts_file(tmp_path: Path):
    prompts = tmp_path / "paper.yaml"
    prompts.write_text(f"carv.judge.user: {json.dumps(CARV_STAND_IN)}\n")
    by_protocol, judge_requests = carv_runs(tmp_path, ("original",), prompts)
    (message,) = judge_requests[0]["messages"]
    text, image = message["content"]
    assert text == {"type": "text", "text": "Stand-in evaluator text. Reference: <<Two mugs on a red table.>> "
                                            f"Response: <<{CARV_CAPTION}>> Reply in JSON {{...}}."}
    assert image["type"] == "image_url"
    summary = by_protocol["original"][2]
    assert summary["prompts"]["templates"]["carv.judge.user"]["wording"] == "file"
    assert "not the published text" not in summary_table(summary).title
    assert by_protocol["original"][0]["carv-llm"] == 0.0


def test_the_protocol_is_said_before_the_first_episode_and_shown_in_the_cli_tables(tmp_path: Path):
    from typer.testing import CliRunner

    from arena.cli.main import app

    cli = CliRunner()
    published = write_tiny_dataset(tmp_path / "va")
    base = ["run", "--data", str(published), "--agent", "scripted", "--setting", "no-tool", "--judge", "normalized",
            "--out", str(tmp_path / "logs")]
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"answer": "x"}]))
    first = cli.invoke(app, base + ["--agent-option", f"script={script}", "--run-id", "a"])
    assert first.exit_code == 0, first.output
    lines = first.output.splitlines()
    assert lines[0] == "protocol: original (by the data's format (vistaarena); each suite's published pipeline)"
    second = cli.invoke(app, base + ["--agent-option", f"script={script}", "--run-id", "b", "--protocol", "arena"])
    assert second.exit_code == 0, second.output
    assert second.output.splitlines()[0] == "protocol: arena (as given; the arena's pipeline)"
    resumed = cli.invoke(app, ["resume", str(tmp_path / "logs" / "b")])
    assert resumed.exit_code == 0, resumed.output
    assert resumed.output.splitlines()[0] == "protocol: arena (as recorded; the arena's pipeline)"

    compared = cli.invoke(app, ["compare", str(tmp_path / "logs" / "a"), str(tmp_path / "logs" / "b")])
    assert compared.exit_code == 0, compared.output
    assert "protocol: original)" in compared.output and "protocol: arena)" in compared.output
    judged = cli.invoke(app, ["judge", str(tmp_path / "logs" / "a"), "--judge", "normalized", "--judge", "mcq"])
    assert judged.exit_code == 0, judged.output
    flat = " ".join(judged.output.split())
    assert "asked) · protocol: original" in flat and "judge agreement · protocol: original" in flat
    listed = cli.invoke(app, ["replay", str(tmp_path / "logs" / "a")])
    assert listed.exit_code == 0, listed.output
    assert "episodes · protocol: original" in " ".join(listed.output.split())


def test_carv_original_refuses_an_item_whose_ground_truth_image_is_missing(tmp_path: Path):
    q = "one_mug_on_wood_table"
    item = {"context_image": [q, "one_mug_on_red_table", q], "label": "one_mug_on_red_chair"}
    for stem in set(item["context_image"]):
        (tmp_path / f"{stem}.png").write_bytes(encode_png(render_state(parse_stem(stem)).resize((48, 36))))
    data = tmp_path / "carv_single.jsonl"
    data.write_text(json.dumps(item) + "\n")
    config = dict(data=str(data), agent="scripted", agent_options={"script": [{"answer": "x"}]},
                  settings=["no-tool"], judge="carv-parse", out=str(tmp_path / "logs"))
    try:
        run(RunConfig(**config, protocol="original", run_id="o"))
    except ValueError as exc:
        assert "field label: no image file for 'one_mug_on_red_chair'" in str(exc)
    else:
        raise AssertionError("the run should refuse the item")
    assert run(RunConfig(**config, protocol="arena", run_id="a")).summary["protocol"] == "arena"


def test_vistahop_images_are_sized_as_the_published_evaluator_under_original(tmp_path: Path):
    published = write_tiny_dataset(tmp_path / "va")
    with Image.open(tmp_path / "va" / "images" / "scene.png") as scene:
        size = scene.size
    sizes = {}
    with OpenAIStub(lambda request: "<answer>x</answer>") as server:
        for protocol in ("original", "arena"):
            run(RunConfig(data=str(published), agent="openai", agent_options={"model": "m",
                                                                              "base_url": server.base_url},
                          settings=["no-tool"], judge="normalized", protocol=protocol, limit=1,
                          out=str(tmp_path / "logs"), run_id=protocol))
            part = next(p for p in server.requests[-1]["messages"][1]["content"] if p["type"] == "image_url")
            data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
            sizes[protocol] = Image.open(io.BytesIO(data)).size
    # the published evaluator resizes model images with the same function (and defaults) as its judge's images
    assert sizes["original"] == judge_image_size(*size)
    assert sizes["arena"] != sizes["original"]  # the arena's Qwen-VL sizes (factor 28)
