"""MM-CondChain under `--protocol original` and `arena`: a GUI item whose ten frames sort differently by name and
by number, run through the CLI with the OpenAI agent against a local server.

Reference (Accio-Lab/MM-CondChain `eval/data_loader.py` `resolve_gui_images`, `eval/utils.py`
`build_message_content` / `parse_answer`, `eval/evaluator/api_evaluator.py` `get_answer`, in our own words): the
frames are the folder's images sorted as path text, each after a text part "Image i:", then the evaluation prompt
with no other framing; the label is the last `\\boxed{}` of the whole raw reply, thinking included; an empty
reply (a reasoning model's thinking-only reply has no content) predicts "None"."""

from __future__ import annotations

import base64
import io
import json

from PIL import Image
from typer.testing import CliRunner

from arena.cli.main import app
from tests.support.openai_server import OpenAIStub, Reply

runner = CliRunner()
FRAMES = 10


def write_gui_item(root):
    folder = root / "images" / "gui" / "g1"
    folder.mkdir(parents=True)
    for n in range(1, FRAMES + 1):
        Image.new("RGB", (320, 240), (n * 20, 0, 0)).save(folder / f"g1_{n}.png")
    item = {"id": "g1", "domain": "gui", "image": "images/gui/g1",
            "true_path": {"full_instruction": "TRUE-INSTR pick the option", "correct_answer": "A1"},
            "false_path": {"full_instruction": "FALSE-INSTR pick the option", "correct_answer": "None",
                           "diverge_node": 1}}
    (root / "data").mkdir()
    (root / "data" / "gui.jsonl").write_text(json.dumps(item) + "\n")
    return root / "data" / "gui.jsonl"


def published_prompt(instruction: str) -> str:
    """The official evaluation prompt around an instruction (`eval/utils.py` `build_eval_prompt`), as its text:
    the instruction between a one-line request and the boxed-answer directions, ending with a line break."""
    return ("Please answer the following question based on the image(s):\n" + instruction + "\n\n"
            "Please select the correct option from all choices.\n"
            "Output your answer in the format: \\boxed{letter-number}\n"
            "Replace letter-number with the option you choose. If you believe there is no correct answer, output "
            "\\boxed{None}.\n")


def reply(request):
    text = " ".join(p["text"] for m in request["messages"] if isinstance(m["content"], list)
                    for p in m["content"] if p["type"] == "text")
    if "TRUE-INSTR" in text:
        return "\\boxed{B2}<think>checking again \\boxed{A1}</think>"
    return Reply(content=None, reasoning="only thinking, \\boxed{B2}")  # a reasoning model's thinking-only reply


def frame_of(part) -> int:
    data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
    return round(Image.open(io.BytesIO(data)).convert("RGB").getpixel((5, 5))[0] / 20)


def layout(request) -> list:
    """The user message as (label text | frame number | 'PROMPT...')."""
    out = []
    user = next(m for m in request["messages"] if m["role"] == "user")
    for part in user["content"]:
        out.append(frame_of(part) if part["type"] == "image_url" else part["text"])
    return out


def run(tmp_path, data, server, protocol):
    args = ["run", "--data", str(data), "--agent", "openai", "--model", "m", "--base-url", server.base_url,
            "--setting", "no-tool", "--max-rounds", "1", "--judge", "auto", "--out", str(tmp_path / "logs"),
            "--run-id", protocol or "default"]
    return runner.invoke(app, args + (["--protocol", protocol] if protocol else []))


def test_gui_frames_prompt_and_reply_reading_as_published_under_original_and_numeric_under_arena(tmp_path):
    data = write_gui_item(tmp_path / "mm")
    name_order = sorted(range(1, FRAMES + 1), key=lambda n: f"g1_{n}.png")
    assert name_order != list(range(1, FRAMES + 1))
    with OpenAIStub(reply) as server:
        result = run(tmp_path, data, server, None)
        assert result.exit_code == 0, result.output
        assert "protocol: original" in result.output
        assert "file-name order (used: the published loader's)" in " ".join(result.output.split())
        original = [r for r in server.requests]
        server.requests.clear()
        arena = run(tmp_path, data, server, "arena")
        assert arena.exit_code == 0, arena.output
        assert "numeric order (used)" in " ".join(arena.output.split())
        arena_requests = list(server.requests)

    for request in original:
        # the request as the official evaluator sends it: the model and one user message, nothing else
        assert set(request) == {"model", "messages"}
        assert [m["role"] for m in request["messages"]] == ["user"]
        parts = layout(request)
        expected = [x for i, n in enumerate(name_order) for x in (f"Image {i + 1}:", n)]
        assert parts[:-1] == expected
        instruction = "TRUE-INSTR pick the option" if "TRUE-INSTR" in parts[-1] else "FALSE-INSTR pick the option"
        assert parts[-1] == "\n\n" + published_prompt(instruction)
    for request in arena_requests:
        assert request["messages"][0]["role"] == "system"  # the arena's system prompt
    for request in arena_requests:
        parts = layout(request)
        assert parts[:-1] == list(range(1, FRAMES + 1))  # numeric order, no labels
        assert parts[-1].startswith(f"The {FRAMES} images are the frames of a GUI trajectory, in order")

    # the published request sends no sampling field: recorded with its source, nothing to depart from
    info = json.loads((tmp_path / "logs" / "default" / "run.json").read_text())
    (entry,) = info["published_requests"]
    assert (entry["suite"], entry["fields"], entry["differences"]) == ("condchain", {}, [])
    assert "api_evaluator.py" in entry["source"]

    # the thinking-only reply: the prediction "None" (published), or no answer, scored 0 (the arena's variant)
    for run_id, thinking_only in (("default", ("None", 1.0)), ("arena", (None, 0.0))):
        verdicts = [json.loads(line) for line in (tmp_path / "logs" / run_id / "verdicts.jsonl").read_text()
                    .splitlines()]
        by_key = {v["key"].split("|")[0]: v for v in verdicts}
        assert by_key["g1:true"]["extracted"] == "A1" and by_key["g1:true"]["score"] == 1.0  # the boxed in <think>
        assert (by_key["g1:false"]["extracted"], by_key["g1:false"]["score"]) == thinking_only


def test_a_single_image_item_is_sent_as_the_official_evaluator_sends_it(tmp_path):
    root = tmp_path / "mm"
    (root / "images").mkdir(parents=True)
    Image.new("RGB", (64, 48), (200, 10, 10)).save(root / "images" / "n1.jpg")
    item = {"id": "n1", "domain": "natural", "image": "images/n1.jpg",
            "true_path": {"full_instruction": "TRUE-INSTR one image", "correct_answer": "B3"},
            "false_path": {"full_instruction": "FALSE-INSTR one image", "correct_answer": "None"}}
    (root / "natural.jsonl").write_text(json.dumps(item) + "\n")
    with OpenAIStub(lambda request: "\\boxed{B3}") as server:
        result = run(tmp_path, root / "natural.jsonl", server, None)
        assert result.exit_code == 0, result.output
        requests = list(server.requests)
    assert len(requests) == 2
    for request in requests:
        assert set(request) == {"model", "messages"} and len(request["messages"]) == 1
        image, text = request["messages"][0]["content"]
        assert image["type"] == "image_url" and text["type"] == "text"
        url = "data:image/jpeg;base64," + base64.b64encode((root / "images" / "n1.jpg").read_bytes()).decode()
        assert image["image_url"] == {"url": url}  # the file's own bytes, typed by its name, not resized
        instruction = "TRUE-INSTR one image" if "TRUE-INSTR" in text["text"] else "FALSE-INSTR one image"
        assert text["text"] == published_prompt(instruction)  # no leading line breaks, the final one kept
