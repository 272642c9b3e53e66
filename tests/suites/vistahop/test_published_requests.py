"""Acceptance (issue 28): a VistaArena-format run under `--protocol original`, against local OpenAI-compatible
servers that keep every request body, sends what the published evaluation script sends.

The expected requests are built here, independently of the arena, from the published rules (ahang0712/vistahop
`evaluation/run_vistahop_eval.py` @1d6a961, restated in our words in ../shared/PROTOCOLS.md "At the wire"):

- every agent request carries the script's sampling fields as top-level JSON fields (its argparse defaults:
  max_tokens 4096, temperature 0.7, top_p 0.8, top_k 20, presence_penalty 1.5, repetition_penalty 1.0, seed 3407)
  and no `chat_template_kwargs`; explicit `--agent-option` values win, and the run records which differ;
- a crop comes back as one user message of three parts: "<tool_response>" + line break + "Here is the zoomed
  image:", the crop (cut from the original image with the box scaled from 0-1000 and truncated to pixels, then
  smart-resized with factor 32 between 65,536 and 8,294,400 pixels, bicubic), line break + "</tool_response>";
- the stored image-search results come back as a lead-in part "<tool_response>" + line break + "Reverse Image Search
  Results:", then per title a part "\\n\\nTitle i: <title>\\nThumbnail i: " followed by the thumbnail through the
  same resize when its file exists (a missing one is skipped), then line break + "</tool_response>";
- each judge request (one per ground truth, the exact match having failed) is `model`, `messages` (a system
  message with the system text, a user message of the user text then the task image through the same resize as
  JPEG quality 85), `temperature` 0.0 and `max_tokens` 8192. The judge texts here are stand-ins written for this
  test, given through `--prompts` as a user would give the published ones (the project does not copy them).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math

import pytest
from PIL import Image, ImageDraw
from typer.testing import CliRunner

from arena.cli.main import app
from tests.support.openai_server import OpenAIStub, Reply

runner = CliRunner()
SAMPLING = {"max_tokens": 4096, "temperature": 0.7, "top_p": 0.8, "top_k": 20, "presence_penalty": 1.5,
            "repetition_penalty": 1.0, "seed": 3407}
BOX = [250, 100, 750, 600]
SYSTEM_TEXT = "Stand-in system text of the test: grade strictly, reply <judge>Yes</judge> or <judge>No</judge>."
USER_TEXT = "Q: {question}\nTruth: {reference}\nReply: {answer}\nGrade it."
TITLES = ["Old town at dusk", "A river bank", "Bridge \"Pont\" {1}"]


# ---- the published rules, written for this test ----

def published_size(height: int, width: int, factor: int = 32, lo: int = 65_536, hi: int = 8_294_400):
    """The published smart_resize (the scaled side truncated to an integer before rounding to the factor)."""
    h, w = max(factor, round(height / factor) * factor), max(factor, round(width / factor) * factor)
    if h * w > hi:
        beta = math.sqrt(height * width / hi)
        h, w = math.floor(int(height / beta) / factor) * factor, math.floor(int(width / beta) / factor) * factor
    elif h * w < lo:
        beta = math.sqrt(lo / (height * width))
        h, w = math.ceil(int(height * beta) / factor) * factor, math.ceil(int(width * beta) / factor) * factor
    return h, w


def published_process(image: Image.Image) -> Image.Image:
    image = image.convert("RGB")
    h, w = published_size(image.height, image.width)
    return image.resize((w, h), Image.BICUBIC) if (w, h) != image.size else image


def published_crop(image: Image.Image, box: list[float]) -> Image.Image:
    x1, y1, x2, y2 = (float(c) / 1000.0 for c in box)
    x1, y1, x2, y2 = max(0, x1), max(0, y1), min(1, x2), min(1, y2)
    crop = image.crop((int(x1 * image.width), int(y1 * image.height), int(x2 * image.width), int(y2 * image.height)))
    if crop.width < 28 or crop.height < 28:
        crop = crop.resize((max(crop.width, 28), max(crop.height, 28)), Image.Resampling.LANCZOS)
    return published_process(crop)


def published_judge_jpeg(path) -> str:
    out = io.BytesIO()
    published_process(Image.open(path)).save(out, format="JPEG", quality=85)
    return "data:image/jpeg;base64," + base64.b64encode(out.getvalue()).decode()


# ---- the data ----

def picture(width: int, height: int, seed: int) -> Image.Image:
    image = Image.new("RGB", (width, height), (20 + seed * 40, 90, 160))
    draw = ImageDraw.Draw(image)
    for i in range(0, width, 37):
        draw.line([(i, 0), (width - i, height)], fill=(255 - seed * 30, (i * 7) % 255, 40), width=3)
    draw.rectangle([width // 5, height // 4, width // 2, height // 2], fill=(240, 230, 20 * seed))
    return image


def write_data(root) -> None:
    (root / "images").mkdir(parents=True)
    (root / "thumbs").mkdir()
    picture(1000, 800, 1).save(root / "images" / "scene.png")
    picture(120, 90, 2).save(root / "thumbs" / "t1.png")
    picture(200, 150, 3).save(root / "thumbs" / "t3.jpg", quality=90)
    item = {"id": "lyon", "prompt": [{"role": "user", "content": "<image>Which city is shown? "}],
            "reward_model": {"ground_truth": ["Lyon", "Lugdunum"]}, "image": ["images/scene.png"],
            "image_search_title_list": TITLES,
            "image_search_thumbnail_list": ["thumbs/t1.png", "thumbs/missing.png", "thumbs/t3.jpg"]}
    (root / "cities.jsonl").write_text(json.dumps(item) + "\n")
    (root / "datasets.json").write_text(json.dumps({"cities": {
        "annotation": "cities.jsonl", "reward_fn": ["llm_score"],
        "input_template": {"arguments": {"system_prompt": "You answer questions about images."}}}}))


def agent_turns(request: dict) -> Reply:
    done = sum(1 for m in request["messages"] if m["role"] == "assistant")
    call = [json.dumps({"name": "image_zoom_in_tool", "arguments": {"bbox_2d": BOX, "label": "centre"}}),
            json.dumps({"name": "image_search_tool", "arguments": {}})]
    if done < 2:
        return Reply(content=f"<think>look</think>\n<tool_call>\n{call[done]}\n</tool_call>")
    return Reply(content="<think>done</think>\n<answer>Paris</answer>")


def decoded(part: dict) -> Image.Image:
    url = part["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")


def same_pixels(part: dict, expected: Image.Image) -> bool:
    got = decoded(part)
    return got.size == expected.size and got.tobytes() == expected.tobytes()


def run(tmp_path, *extra: str, run_id: str, judge_reply: str = "<judge>No</judge><reason>wrong city</reason>",
        rounds: str = "5"):
    root = tmp_path / "data"
    if not root.exists():
        write_data(root)
    with OpenAIStub(agent_turns) as agent, OpenAIStub(lambda request: Reply(content=judge_reply)) as judge:
        result = runner.invoke(app, ["run", "--data", str(root / "datasets.json"), "--agent", "openai",
                                     "--model", "vlm", "--base-url", agent.base_url, "--setting", "search+crop",
                                     "--max-rounds", rounds, "--judge", "auto", "--judge-model", "Qwen3-VL-32B-Instruct",
                                     "--judge-base-url", judge.base_url, "--out", str(tmp_path / "logs"),
                                     "--run-id", run_id, *extra])
        assert result.exit_code == 0, result.output
        return result, root, agent.exchanges, judge.exchanges


def raw_requests(exchanges) -> list[bytes]:
    """The request bodies a stub server kept, as received."""
    return [raw for raw, _status, _answer in exchanges]


def test_original_sends_the_published_agent_and_judge_requests(tmp_path):
    prompts = tmp_path / "prompts.yaml"
    prompts.write_text("vistahop.judge.system: |-\n  " + SYSTEM_TEXT + "\nvistahop.judge.user: |-\n  "
                       + USER_TEXT.replace("\n", "\n  ") + "\n")
    result, root, agent_calls, judge_calls = run(tmp_path, "--prompts", str(prompts), run_id="orig")
    agent_requests = [json.loads(raw) for raw in raw_requests(agent_calls)]
    assert len(agent_requests) == 3
    for request in agent_requests:
        assert {k: request.get(k) for k in SAMPLING} == SAMPLING and "chat_template_kwargs" not in request
        first = request["messages"][1]["content"]
        assert [p["type"] for p in first] == ["image_url", "text"] and first[1]["text"] == "Which city is shown?"
        assert same_pixels(first[0], published_process(Image.open(root / "images" / "scene.png")))
    scene = Image.open(root / "images" / "scene.png")
    zoom_message = agent_requests[1]["messages"][3]
    assert agent_requests[2]["messages"][3] == zoom_message  # the whole conversation is sent again
    assert zoom_message["role"] == "user"
    parts = zoom_message["content"]
    assert [parts[0], parts[2]] == [{"type": "text", "text": "<tool_response>\nHere is the zoomed image:"},
                                    {"type": "text", "text": "\n</tool_response>"}]
    assert parts[1]["type"] == "image_url" and same_pixels(parts[1], published_crop(scene, BOX))
    search = agent_requests[2]["messages"][5]["content"]
    expected_text = ["<tool_response>\nReverse Image Search Results:",
                     f"\n\nTitle 1: {TITLES[0]}\nThumbnail 1: ", None,
                     f"\n\nTitle 2: {TITLES[1]}\nThumbnail 2: ",
                     f"\n\nTitle 3: {TITLES[2]}\nThumbnail 3: ", None,
                     "\n</tool_response>"]
    assert [p.get("text") if p["type"] == "text" else None for p in search] == expected_text
    assert same_pixels(search[2], published_process(Image.open(root / "thumbs" / "t1.png")))
    assert same_pixels(search[5], published_process(Image.open(root / "thumbs" / "t3.jpg")))

    # the judge: one request per ground truth, each byte for byte the published script's for this reply
    image = published_judge_jpeg(root / "images" / "scene.png")
    expected = [{"model": "Qwen3-VL-32B-Instruct", "messages": [
        {"role": "system", "content": SYSTEM_TEXT},
        {"role": "user", "content": [
            {"type": "text", "text": USER_TEXT.format(question="Which city is shown?", reference=truth,
                                                      answer="Paris")},
            {"type": "image_url", "image_url": {"url": image}}]}],
        "temperature": 0.0, "max_tokens": 8192} for truth in ("Lyon", "Lugdunum")]
    sent = [json.loads(raw) for raw in raw_requests(judge_calls)]
    assert sent == expected
    assert all(json.dumps(s, sort_keys=True) == json.dumps(e, sort_keys=True) for s, e in zip(sent, expected))
    assert all(isinstance(s["temperature"], float) for s in sent)

    info = json.loads((tmp_path / "logs" / "orig" / "run.json").read_text())
    digest = hashlib.sha256(prompts.read_bytes()).hexdigest()
    assert info["prompts"]["templates"] == {
        **{name: {"kind": "judge", "wording": "file", "file": str(prompts), "sha256": digest}
           for name in ("vistahop.judge.system", "vistahop.judge.user")},
        # the dataset's system prompt has no tools block: the arena's tools section follows it
        **{name: {"kind": "agent", "wording": "arena"} for name in ("agent.system.tools", "agent.user.tool_response")}}
    assert info["published_requests"][0]["fields"] == SAMPLING and info["published_requests"][0]["differences"] == []
    flat = " ".join(result.output.split())
    assert "agent prompts: arena wording (not the published text)" in flat and "judge and agent" not in flat


def test_explicit_agent_options_win_and_the_run_records_the_departures(tmp_path):
    result, _, agent_calls, judge_calls = run(
        tmp_path, "--agent-option", "temperature=0.2", "--agent-option",
        'extra_body={"top_k": 5, "chat_template_kwargs": {"enable_thinking": false}}', run_id="mine")
    for raw in raw_requests(agent_calls):
        request = json.loads(raw)
        assert request["temperature"] == 0.2 and request["top_k"] == 5
        assert {k: request[k] for k in SAMPLING if k not in ("temperature", "top_k")} == \
            {k: v for k, v in SAMPLING.items() if k not in ("temperature", "top_k")}
    info = json.loads((tmp_path / "logs" / "mine" / "run.json").read_text())
    assert info["published_requests"][0]["differences"] == [
        {"field": "temperature", "published": 0.7, "sent": 0.2}, {"field": "top_k", "published": 20, "sent": 5},
        {"field": "chat_template_kwargs", "published": None, "sent": {"enable_thinking": False}}]
    assert any("temperature sent as 0.2" in w for w in info["warnings"])
    # no prompts file: the judge's texts are the arena's, and every table title says so
    assert info["prompts"]["templates"]["vistahop.judge.user"] == {"kind": "judge", "wording": "arena"}
    assert "judge and agent prompts: arena wording (not the published text)" in " ".join(result.output.split())


def test_arena_protocol_sends_no_published_field(tmp_path):
    _, _, agent_calls, _ = run(tmp_path, "--protocol", "arena", run_id="arena")
    for raw in raw_requests(agent_calls):
        request = json.loads(raw)
        assert not set(SAMPLING) & set(request)
        for message in request["messages"][2:]:
            if message["role"] == "user":
                assert message["content"][0]["text"].startswith("<tool_response>\n")
                assert "Here is the zoomed image:" not in message["content"][0]["text"]


def verdict_of(tmp_path, run_id: str) -> dict:
    (line,) = (tmp_path / "logs" / run_id / "verdicts.jsonl").read_text().splitlines()
    return json.loads(line)


def test_a_judge_reply_is_read_by_its_first_verdict_tag_and_no_evidence_call_is_made(tmp_path):
    # published `llm_judge_score`: the first <judge>Yes|No</judge> anywhere in the reply decides
    twice = "<think>maybe <judge>No</judge></think> On reflection: <judge>Yes</judge><reason>same</reason>"
    _, _, _, judge_calls = run(tmp_path, judge_reply=twice, run_id="twice")
    assert len(judge_calls) == 2 and verdict_of(tmp_path, "twice")["score"] == 0.0  # No for each truth
    _, _, _, judge_calls = run(tmp_path, judge_reply="<judge>Yes</judge><reason>same</reason>", run_id="yes")
    assert len(judge_calls) == 1 and verdict_of(tmp_path, "yes")["score"] == 1.0  # no evidence call follows
    # under arena: one distinct verdict after the thinking is needed; the same reply reads as Yes there
    _, _, _, judge_calls = run(tmp_path, "--protocol", "arena", judge_reply=twice, run_id="twice-arena")
    assert verdict_of(tmp_path, "twice-arena")["score"] == 1.0


BAD_PROMPTS = [
    ("vistahop.judge.system: |-\n  fine\nvistahop.judge.usr: |-\n  Q: {question}\n", 3, "vistahop.judge.usr",
     "unknown template name"),
    ("# judge\nvistahop.judge.user: |-\n  Q: {question} T: {reference}\n", 2, "vistahop.judge.user",
     "missing placeholder(s) {answer}"),
    ("vistahop.judge.user: |-\n  Q: {question} T: {truth} A: {answer} {reference}\n", 1, "vistahop.judge.user",
     "unknown placeholder(s) {truth}"),
    ("vistahop.judge.system: 12\n", 1, "vistahop.judge.system", "the text must be a string"),
    ("vistahop.judge.system: |-\n  a } b\n", 1, "vistahop.judge.system", "Single '}'"),
]


def refusal(tmp_path, text: str) -> str:
    """The output of a run given `text` as its prompts file `bad.yaml`, which must stop before any agent request and
    write no episode (whitespace collapsed)."""
    write_data(tmp_path / "data")
    prompts = tmp_path / "bad.yaml"
    prompts.write_text(text)
    with OpenAIStub(agent_turns) as agent:
        result = runner.invoke(app, ["run", "--data", str(tmp_path / "data" / "datasets.json"), "--agent", "openai",
                                     "--model", "vlm", "--base-url", agent.base_url, "--judge-model", "j",
                                     "--judge-base-url", agent.base_url, "--prompts", str(prompts),
                                     "--out", str(tmp_path / "logs"), "--run-id", "bad"])
        assert agent.requests == []
    assert result.exit_code != 0
    assert not (tmp_path / "logs" / "bad" / "episodes.jsonl").exists()
    return " ".join(result.output.split())


@pytest.mark.parametrize("text,line,name,problem", BAD_PROMPTS)
def test_a_bad_prompts_file_is_refused_with_file_line_and_name_before_the_first_episode(tmp_path, text, line, name,
                                                                                      problem):
    flat = refusal(tmp_path, text)
    assert f"bad.yaml:{line}: template '{name}'" in flat and problem in flat
