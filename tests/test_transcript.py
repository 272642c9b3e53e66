"""Every model call of a run is recoverable exactly as the server received and answered it (issue 20):
`arena transcript --json` against a server that keeps each raw body it got and each raw body it sent."""

import base64
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.core.blobs import BlobStore
from arena.store.calls import TranscriptWriter
from arena.cli.main import app
from arena.runs.config import AgentChoice, RunConfig
from arena.runs.fork import fork_config
from arena.review.replay import calls_by_step
from arena.review.rundata import load_run
from arena.runs.runner import run
from arena.store.store import RunStore
from tests.support.openai_server import OpenAIStub, Reply

BOXES = [[0, 0, 500, 500], [500, 0, 1000, 500], [0, 500, 500, 1000], [500, 500, 1000, 1000], [250, 250, 750, 750]]


def crop_agent(native: bool):
    """Five crops (one per round, every crop stays in context), then an answer the llm judge must read."""

    failed = []

    def respond(request):
        if request["model"] == "qwen" and native and not failed and len(request["messages"]) > 4:
            failed.append(request)  # one 503 mid-episode: the retried request is recorded once, as answered
            return Reply(status=503, error="The server is overloaded or not ready yet.")
        if request["model"] == "judge":
            return Reply(content="<judge>Yes</judge><reason>the year matches</reason>")
        n = sum(m["role"] == "assistant" for m in request["messages"])
        if n < len(BOXES):
            args = {"bbox_2d": BOXES[n], "label": f"part {n}"}
            if native:
                return Reply(content=None, tool_calls=[{"id": f"c{n}", "name": "image_zoom_in_tool", "arguments": args}],
                             reasoning=f"look at part {n}")
            return Reply(content=f"<think>part {n}</think>\n<tool_call>\n"
                                 f"{json.dumps({'name': 'image_zoom_in_tool', 'arguments': args})}\n</tool_call>")
        return Reply(content="<think>done</think><answer>It was built in the year 1874.</answer>")

    return respond


def transcript_json(run_dir: Path, episode: str) -> list[dict]:
    out = CliRunner().invoke(app, ["transcript", str(run_dir), "--episode", episode, "--json"])
    assert out.exit_code == 0, out.output
    return [json.loads(line) for line in out.stdout.splitlines()]


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@pytest.mark.parametrize("mode", ["xml", "native"])
def test_every_call_is_returned_exactly(tiny_data, tmp_path, monkeypatch, mode):
    monkeypatch.setenv("ARENA_TEST_KEY", "sk-secret-value-123")
    with OpenAIStub(crop_agent(mode == "native")) as server:
        result = run(RunConfig(
            data=str(tiny_data), agent="openai", out=str(tmp_path / "logs"), task_ids=["q2"], max_rounds=[6],
            agent_options={"model": "qwen", "base_url": server.base_url, "api_key_env": "ARENA_TEST_KEY",
                           "tool_mode": mode, "temperature": 0.3, "max_tokens": 512, "retry_initial": 0.01},
            judge="llm", judge_options={"model": "judge", "base_url": server.base_url}))
        exchanges = list(server.exchanges)
    [episode] = result.episodes
    assert [s.tool for s in episode.steps] == ["image_zoom_in_tool"] * 5 + [None] and episode.answer
    assert result.verdicts[0].judge == "llm" and result.verdicts[0].correct

    calls = transcript_json(result.run_dir, episode.id)
    sent = [(json.loads(body), json.loads(reply)) for body, status, reply in exchanges if status == 200]
    judged = sum(request["model"] == "judge" for request, _ in sent)
    assert judged >= 1  # the correctness call (and the evidence checks)
    assert [(c["role"], c["round"]) for c in calls] == ([("agent", k) for k in range(1, 7)]
                                                       + [("judge", k) for k in range(1, judged + 1)])
    assert len(sent) == len(calls)  # each request the server answered, and no other
    assert len(exchanges) == len(sent) + (mode == "native")  # the 503 is not a call that was answered
    for call, (request, response) in zip(calls[:6], [x for x in sent if x[0]["model"] == "qwen"]):
        assert call["request"] == request  # parsed-JSON equality, images included
        assert call["response"] == response
    key = lambda pair: json.dumps(pair, sort_keys=True)  # judge calls may run side by side: compare as sets
    assert sorted(map(key, [(c["request"], c["response"]) for c in calls[6:]])) == \
        sorted(map(key, [x for x in sent if x[0]["model"] == "judge"]))
    last = calls[5]["request"]["messages"]
    images = [p["image_url"]["url"] for m in last if isinstance(m.get("content"), list)
              for p in m["content"] if p.get("type") == "image_url"]
    assert len(images) == 6 and all(u.startswith("data:image/png;base64,") for u in images)  # the task image + 5 crops
    assert ("tools" in calls[0]["request"]) == (mode == "native")

    received = sum(len(body) for body, _, _ in exchanges)
    assert dir_bytes(result.run_dir) < received, (dir_bytes(result.run_dir), received)
    lines = (result.run_dir / "calls.jsonl").read_text()
    assert "base64,iVBOR" not in lines  # no PNG inline: each image is one blob, referenced by every call
    refs = {json.dumps(p["image_url"]["url"]) for c in map(json.loads, lines.splitlines()) for m in c["add"]
            if isinstance(m.get("content"), list) for p in m["content"] if p.get("type") == "image_url"}
    distinct = {p["image_url"]["url"] for request, _ in sent for m in request["messages"]
                if isinstance(m.get("content"), list) for p in m["content"] if p.get("type") == "image_url"}
    assert len(refs) == len(distinct) >= 6
    for path in result.run_dir.rglob("*"):
        if path.is_file() and path.suffix in (".jsonl", ".json"):
            assert "sk-secret-value-123" not in path.read_text(errors="replace")

    one = CliRunner().invoke(app, ["transcript", str(result.run_dir), "--episode", episode.key, "--round", "3"])
    assert one.exit_code == 0, one.output
    assert "round 3 · agent" in one.stdout and "[image data:image/png;base64," in one.stdout
    assert "round 4" not in one.stdout


def test_unknown_episode_is_a_clear_error(tiny_data, tmp_path):
    with OpenAIStub(crop_agent(False)) as server:
        result = run(RunConfig(data=str(tiny_data), agent="openai", out=str(tmp_path / "logs"), task_ids=["q2"],
                               max_rounds=[6], agent_options={"model": "qwen", "base_url": server.base_url},
                               judge="normalized"))
    out = CliRunner().invoke(app, ["transcript", str(result.run_dir), "--episode", "nope"])
    assert out.exit_code != 0 and "no recorded model call for episode 'nope'" in out.output


def test_smolagents_calls_are_recorded_exactly(tiny_data, tmp_path):
    """The smolagents agent talks through the openai SDK in worker threads: its calls are recorded too."""
    from tests.test_smolagents import run_agent, scripted_model

    with OpenAIStub(scripted_model) as server:
        result = run_agent(tiny_data, tmp_path / "smol", "smolagents", server.base_url)
        exchanges = list(server.exchanges)
    sent = [(json.loads(body), json.loads(reply)) for body, status, reply in exchanges if status == 200]
    calls = [c for e in result.episodes for c in transcript_json(result.run_dir, e.key)]
    assert {c["role"] for c in calls} == {"agent"} and len(calls) == len(sent) > 2
    key = lambda pair: json.dumps(pair, sort_keys=True)
    assert sorted(key((c["request"], c["response"])) for c in calls) == sorted(map(key, sent))
    assert any(p.get("type") == "image_url" for c in calls for m in c["request"]["messages"]
               if isinstance(m.get("content"), list) for p in m["content"])


def test_judging_a_finished_run_again_records_its_calls(tiny_data, tmp_path):
    with OpenAIStub(crop_agent(False)) as server:
        result = run(RunConfig(data=str(tiny_data), agent="openai", out=str(tmp_path / "logs"), task_ids=["q2"],
                               max_rounds=[6], agent_options={"model": "qwen", "base_url": server.base_url},
                               judge="normalized"))
        [episode] = result.episodes
        assert {c["role"] for c in transcript_json(result.run_dir, episode.key)} == {"agent"}
        out = CliRunner().invoke(app, ["judge", str(result.run_dir), "--judge", "llm", "--judge-model", "judge",
                                       "--judge-base-url", server.base_url])
        assert out.exit_code == 0, out.output
        judged = [json.loads(body) for body, status, _ in server.exchanges if status == 200
                  and json.loads(body)["model"] == "judge"]
    calls = transcript_json(result.run_dir, episode.key)
    assert [c["request"] for c in calls if c["role"] == "judge"] == judged and judged
    assert sum(c["role"] == "agent" for c in calls) == 6


def test_a_call_line_cut_by_a_kill_is_dropped_when_the_run_is_reopened(tiny_data, tmp_path):
    from arena.store.store import RunStore

    with OpenAIStub(crop_agent(False)) as server:
        result = run(RunConfig(data=str(tiny_data), agent="openai", out=str(tmp_path / "logs"), task_ids=["q2"],
                               max_rounds=[6], agent_options={"model": "qwen", "base_url": server.base_url},
                               judge="normalized"))
    path = result.run_dir / "calls.jsonl"
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"episode": "q2|search+crop|6|0|openai:qwen", "role": "ag')
    store = RunStore(result.run_dir)
    store.open(store.info())
    assert path.read_bytes() == whole
    assert len(transcript_json(result.run_dir, result.episodes[0].key)) == 6


def answered(exchanges, model: str) -> list[dict]:
    return [json.loads(body) for body, status, _ in exchanges if status == 200 and json.loads(body)["model"] == model]


@pytest.mark.parametrize("mode", ["xml", "native"])
def test_a_fork_sends_again_exactly_what_the_recorded_round_sent(tiny_data, tmp_path, mode):
    """Fork at round 3: the first forked request is the source's round-4 request with the new model, although
    the new agent renders images smaller (its own rendering differs); its next request extends that one."""
    with OpenAIStub(crop_agent(False)) as server:
        source = run(RunConfig(data=str(tiny_data), agent="openai", out=str(tmp_path / "logs"), task_ids=["q2"],
                               max_rounds=[6], run_id="source", judge="normalized",
                               agent_options={"model": "qwen", "base_url": server.base_url, "tool_mode": mode,
                                              "temperature": 0.3}))
        [episode] = source.episodes
        out = CliRunner().invoke(app, ["fork", str(source.run_dir), "--episode", episode.id, "--at-round", "3",
                                       "--agent", "openai", "--model", "qwen2", "--base-url", server.base_url,
                                       "--tool-mode", mode, "--temperature", "0.3", "--run-id", "forked",
                                       "--agent-option", "image_max_pixels=60000", "--judge", "normalized"])
        assert out.exit_code == 0, out.output
        original, forked = answered(server.exchanges, "qwen"), answered(server.exchanges, "qwen2")
    assert len(original) == 6 and len(forked) == 3  # rounds 4, 5 and the answer
    assert forked[0] == {**original[3], "model": "qwen2"}
    recorded = original[3]["messages"]
    assert forked[1]["messages"][: len(recorded)] == recorded
    new_images = [p["image_url"]["url"] for m in forked[1]["messages"][len(recorded):]
                  if isinstance(m.get("content"), list) for p in m["content"] if p.get("type") == "image_url"]
    old_images = [p["image_url"]["url"] for m in original[4]["messages"][len(recorded):]
                  if isinstance(m.get("content"), list) for p in m["content"] if p.get("type") == "image_url"]
    assert len(new_images) == len(old_images) == 1 and len(new_images[0]) < len(old_images[0])  # its own size
    fork_dir = source.run_dir.parent / "forked"
    assert json.loads((fork_dir / "run.json").read_text())["forked_from"]["recorded_request"] is True
    [fork_episode] = RunStore(fork_dir).episodes()
    assert [c["request"] for c in transcript_json(fork_dir, fork_episode.id)] == forked


def test_a_fork_in_another_tool_mode_or_without_a_recording_renders_its_own(tiny_data, tmp_path):
    with OpenAIStub(crop_agent(False)) as server:
        source = run(RunConfig(data=str(tiny_data), agent="openai", out=str(tmp_path / "logs"), task_ids=["q2"],
                               max_rounds=[6], run_id="source", judge="normalized",
                               agent_options={"model": "qwen", "base_url": server.base_url}))
        [episode] = source.episodes
        native = run(fork_config(load_run(source.run_dir), episode.id, 3, AgentChoice(
            agent="openai", options={"model": "native", "base_url": server.base_url, "tool_mode": "native"})))
        (source.run_dir / "calls.jsonl").unlink()
        unrecorded = run(fork_config(load_run(source.run_dir), episode.id, 3, AgentChoice(
            agent="openai", options={"model": "again", "base_url": server.base_url}), run_id="unrecorded"))
        original = answered(server.exchanges, "qwen")
        [first_native], [first_again] = answered(server.exchanges, "native")[:1], answered(server.exchanges, "again")[:1]
    assert "tools" in first_native and first_native["messages"] != original[3]["messages"]
    assert first_again == {**original[3], "model": "again"}  # the same rendering, rebuilt by the agent
    assert RunStore(unrecorded.run_dir).info().forked_from["recorded_request"] is False
    assert RunStore(native.run_dir).info().forked_from["recorded_request"] is True


# vLLM's per-prompt image limit (vllm/multimodal/processing.py, `_validate_mm_counts`), as a 400
IMAGE_LIMIT = "At most 3 image(s) may be provided in one prompt. Set `--limit-mm-per-prompt` to increase this limit."


def test_a_rejected_call_is_recorded_with_the_error_the_server_sent(tiny_data, tmp_path):
    """A request refused for its context (here vLLM's image limit) is kept with its status and error body; the
    agent learns the limit and sends a trimmed request, kept as the next call."""
    script = crop_agent(False)

    def respond(request):
        images = sum(p.get("type") == "image_url" for m in request["messages"] if isinstance(m["content"], list)
                     for p in m["content"])
        return Reply(status=400, error=IMAGE_LIMIT) if images > 3 else script(request)

    with OpenAIStub(respond) as server:
        result = run(RunConfig(data=str(tiny_data), agent="openai", out=str(tmp_path / "logs"), task_ids=["q2"],
                               max_rounds=[6], judge="normalized",
                               agent_options={"model": "qwen", "base_url": server.base_url}))
        exchanges = list(server.exchanges)
    [episode] = result.episodes
    assert episode.answer and any(s.input and s.input.elided_images for s in episode.steps)
    calls = transcript_json(result.run_dir, episode.key)
    assert len(calls) == len(exchanges) == 7  # 6 answered, 1 refused
    for call, (body, status, reply) in zip(calls, exchanges):
        assert call["request"] == json.loads(body) and call["response"] == json.loads(reply)
        assert call.get("status", 200) == status
        assert ("error" in call) == (status != 200)
    [refused] = [c for c in calls if "error" in c]
    assert refused["status"] == 400 and IMAGE_LIMIT in refused["error"]
    text = CliRunner().invoke(app, ["transcript", str(result.run_dir), "--episode", episode.key]).stdout
    assert "failed: HTTP 400" in text

    # arena replay shows each step's recorded calls: the refused one and its trimmed resend with their step
    by_step = calls_by_step(episode, calls)
    assert sorted(by_step) == list(range(6)) and sum(map(len, by_step.values())) == 7
    assert [c["round"] for c in by_step[calls.index(refused)]] == [refused["round"], refused["round"] + 1]
    shown = CliRunner().invoke(app, ["replay", str(result.run_dir), "--episode", episode.key], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.count("model input (call") == 7 and "model call failed: HTTP 400" in shown.stdout
    assert "response: finish stop" in shown.stdout
    bare = CliRunner().invoke(app, ["replay", str(result.run_dir), "--episode", episode.key, "--no-calls"])
    assert bare.exit_code == 0 and "model input" not in bare.stdout


def test_no_transcript_records_nothing_and_says_so_in_run_json(tiny_data, tmp_path):
    with OpenAIStub(crop_agent(False)) as server:
        out = CliRunner().invoke(app, ["run", "--data", str(tiny_data), "--agent", "openai", "--model", "qwen",
                                       "--base-url", server.base_url, "--task", "q2", "--max-rounds", "6",
                                       "--judge", "llm", "--judge-model", "judge", "--judge-base-url", server.base_url,
                                       "--out", str(tmp_path / "logs"), "--run-id", "quiet", "--no-transcript"])
        assert out.exit_code == 0, out.output
        run_dir = tmp_path / "logs" / "quiet"
        assert json.loads((run_dir / "run.json").read_text())["config"]["output"]["transcript"] is False
        assert not (run_dir / "calls.jsonl").exists() and len(server.exchanges) >= 7
        judged = CliRunner().invoke(app, ["judge", str(run_dir), "--judge", "llm", "--judge-model", "judge",
                                          "--judge-base-url", server.base_url])
        assert judged.exit_code == 0, judged.output
    assert not (run_dir / "calls.jsonl").exists()
    shown = CliRunner().invoke(app, ["transcript", str(run_dir), "--episode", "q2"])
    assert shown.exit_code != 0 and "no calls.jsonl" in shown.output


def test_image_urls_are_stored_as_blobs_only_when_that_gives_back_the_same_text(tmp_path):
    writer = TranscriptWriter(tmp_path, BlobStore(tmp_path / "blobs"))
    for raw in (b"", b"A", b"AB", b"ABC", b"ABCD", bytes(range(256)) * 7):
        url = "data:image/png;base64," + base64.b64encode(raw).decode()
        ref = writer.image_ref(url)
        assert ref["prefix"] == "data:image/png;base64," and writer.blobs.get(ref["$image"]) == raw
    # spare bits set in the last group ("QR==" and "QUJ=" decode like "QQ==" and "QUI="), a missing padding, a
    # newline: each would come back different from its blob, so each is kept as the text that was sent
    for b64 in ("QUJDQR==", "QUJ=", "QUJ", "QUJD\nQUJD"):
        assert writer.image_ref("data:image/png;base64," + b64) == "data:image/png;base64," + b64


def test_smolagents_refused_call_is_recorded_with_the_servers_error(tiny_data, tmp_path):
    """The openai SDK under smolagents does not retry a 400: the response hook keeps it with its error body."""
    from tests.test_smolagents import run_agent, scripted_model

    def respond(request):
        if sum(m["role"] == "assistant" for m in request["messages"]) >= 1:
            return Reply(status=400, error=IMAGE_LIMIT)
        return scripted_model(request)

    with OpenAIStub(respond) as server:
        result = run_agent(tiny_data, tmp_path / "smol", "smolagents", server.base_url)
        exchanges = list(server.exchanges)
    calls = [c for e in result.episodes for c in transcript_json(result.run_dir, e.key)]
    assert len(calls) == len(exchanges) and any(status == 400 for _, status, _ in exchanges)
    key = lambda triple: json.dumps(triple, sort_keys=True)
    assert sorted(key((c["request"], c["response"], c.get("status", 200))) for c in calls) == \
        sorted(key((json.loads(body), json.loads(reply), status)) for body, status, reply in exchanges)


def test_images_recorded_from_the_payloads_of_their_parts_are_what_decoding_the_urls_would_store(
        tiny_data, tmp_path, monkeypatch):
    """The openai agent's image parts carry the bytes their data URLs encode (`serialised_part(payload=)`): the
    recorder stores those without decoding any URL, and the run's requests and blobs are byte for byte those of a
    run that decodes the URLs (no payload found), or that reads its parts back out of their bytes."""
    import arena.endpoints.transcript as transcript_module
    import arena.store.calls as calls_module
    from arena.core import context_image

    decoded: list[int] = []
    real = calls_module.base64.b64decode

    def spy(data, *args, **kwargs):
        decoded.append(len(data))
        return real(data, *args, **kwargs)
    monkeypatch.setattr(calls_module.base64, "b64decode", spy)

    def one_run(name: str) -> tuple[list[bytes], dict[str, bytes]]:
        monkeypatch.setattr(context_image, "MODEL_PNGS", context_image.LRU(256, 256 << 20, len))  # encoded again
        monkeypatch.setattr(transcript_module, "_SHARED_PARTS", context_image.LRU(256))  # and serialised again
        with OpenAIStub(crop_agent(native=False)) as server:
            result = run(RunConfig(data=str(tiny_data), agent="openai", out=str(tmp_path / name), task_ids=["q2"],
                                   max_rounds=[4], agent_options={"model": "qwen", "base_url": server.base_url}))
            bodies = [body for body, status, _ in server.exchanges]
        blobs = {p.name: p.read_bytes() for p in (result.run_dir / "blobs").rglob("*") if p.is_file()}
        return bodies, blobs

    handed = one_run("handed")
    assert decoded == [] and len(handed[0]) == 4
    with monkeypatch.context() as patch:
        plain = transcript_module._plain
        patch.setattr(transcript_module, "_plain", lambda message, parts: plain(message, {}))  # no payload found:
        decoding = one_run("decoding")  # decode the URLs
    assert len(decoded) == 4 and decoding == handed  # the task image and three crops
    monkeypatch.setattr(transcript_module._PARTS, "put", lambda key, value: None)  # parts read out of their bytes
    read_back = one_run("read-back")
    assert len(decoded) == 8 and read_back == handed


def test_runs_in_one_process_store_the_images_of_shared_parts_without_decoding_them(tiny_data, tmp_path,
                                                                                      monkeypatch):
    """Runs in one process (a sweep, or a worker process whose every episode has its own recorder) share the
    image parts: a run without transcript and then two recording runs over the same task decode no data URL (a
    payload travels with its part, not with one recorder), and the recording runs store the same blobs."""
    import arena.store.calls as calls_module

    decoded: list[int] = []
    real = calls_module.base64.b64decode
    monkeypatch.setattr(calls_module.base64, "b64decode",
                        lambda data, *args, **kwargs: decoded.append(len(data)) or real(data, *args, **kwargs))
    blobs = []
    for run_id in ("unrecorded", "first", "second"):
        with OpenAIStub(crop_agent(native=False)) as server:
            out = CliRunner().invoke(app, ["run", "--data", str(tiny_data), "--agent", "openai", "--model", "qwen",
                                           "--base-url", server.base_url, "--task", "q2", "--max-rounds", "4",
                                           "--judge", "normalized", "--out", str(tmp_path / "logs"),
                                           "--run-id", run_id, *(["--no-transcript"] if run_id == "unrecorded" else [])])
            assert out.exit_code == 0, out.output
        blobs.append(sorted(p.name for p in (tmp_path / "logs" / run_id / "blobs").rglob("*") if p.is_file()))
        if run_id != "unrecorded":
            [episode] = RunStore(tmp_path / "logs" / run_id).episodes()
            assert len(transcript_json(tmp_path / "logs" / run_id, episode.key)) == 4
    assert decoded == [] and blobs[1] == blobs[2] and len(blobs[1]) > len(blobs[0])


def test_messages_with_pre_serialised_parts_read_back_as_their_json():
    """`_plain` (what the recorder keeps of the new messages) equals parsing the serialised message, whether an image
    part is read fast (exactly url, nothing escaped) or parsed (detail, escapes, non-ASCII, other parts)."""
    import orjson

    from arena.endpoints.transcript import _plain, serialised_part

    png = "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 3).decode()
    parts = [{"type": "image_url", "image_url": {"url": png}},
             {"type": "image_url", "image_url": {"url": png, "detail": "high"}},
             {"type": "image_url", "image_url": {"url": 'data:text/plain,a"b\\c'}},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,é"}},
             {"type": "text", "text": "look"}]
    message = {"role": "user", "content": [orjson.Fragment(orjson.dumps(p)) for p in parts] + [{"type": "text",
                                                                                                "text": "plain"}],
               "name": "x"}
    known = {**message, "content": [serialised_part(p) for p in parts] + message["content"][len(parts):]}
    for value in (message, known, {"role": "assistant", "content": "text"}, {"role": "user", "content": []}, "odd"):
        assert _plain(value) == orjson.loads(orjson.dumps(value))
    assert list(_plain(message)) == ["role", "content", "name"]
    assert all(got is part for got, part in zip(_plain(known)["content"], parts))  # given back, not read back


def test_image_parts_joined_around_their_url_are_the_json_orjson_would_write():
    """`serialised_part` joins a base64 image part around its URL instead of running orjson over megabytes; the
    bytes are orjson's whenever it takes that way, and anything it cannot vouch for goes through orjson."""
    import orjson

    from arena.endpoints.transcript import serialised_part

    b64 = base64.b64encode(bytes(range(256)) * 3).decode()
    safe = [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64}"}},
            {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{b64}", "detail": "high"}},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64}", "detail": 'a"\\\né'}}]
    unsafe = [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64[:40]}\n{b64[40:]}"}},
              {"type": "image_url", "image_url": {"url": f'data:image/png;base64,{b64}"'}},
              {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64}\0"}},
              {"type": "image_url", "image_url": {"url": f"data:image/png;base64,\t{b64}"}},
              {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64}\\"}},
              {"type": "image_url", "image_url": {"url": f"data:image/png;base64,é{b64}"}},
              {"type": "image_url", "image_url": {"url": f'data:image/png";base64,{b64}'}},
              {"type": "image_url", "image_url": {"url": "https://example.org/a.png"}},
              {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64}", "extra": 1}},
              {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64}"}, "cache_control": {}}]
    for part in safe + unsafe:
        assert orjson.dumps(serialised_part(part)) == orjson.dumps(part), part
        assert orjson.loads(orjson.dumps([serialised_part(part)])) == [part]


def test_episodes_showing_one_image_share_one_serialised_part(tiny_data, tmp_path, monkeypatch):
    """Two tasks with the same task image: its part is serialised once for both episodes (and once for a second
    run in the process); the requests are byte for byte those of a run that serialises it per episode."""
    import arena.endpoints.transcript as transcript_module
    from arena.core import context_image

    made: list[int] = []
    real = transcript_module.serialised_part

    def counting(part, key=None, payload=None):
        made.append(len(part["image_url"]["url"]) if part.get("type") == "image_url" else 0)
        return real(part, key, payload)
    monkeypatch.setattr(transcript_module, "serialised_part", counting)

    def one_run(name: str) -> list[bytes]:
        with OpenAIStub(crop_agent(native=False)) as server:
            result = run(RunConfig(data=str(tiny_data), agent="openai", out=str(tmp_path / name),
                                   task_ids=["q1", "q2"], max_rounds=[4],
                                   agent_options={"model": "qwen", "base_url": server.base_url}))
            assert len(result.episodes) == 2 and all(e.totals.rounds >= 2 for e in result.episodes)
            return sorted(body for body, status, _ in server.exchanges)  # (the two episodes play at once)

    monkeypatch.setattr(transcript_module, "_SHARED_PARTS", context_image.LRU(256))
    shared = one_run("shared")
    task_parts = made.count(max(made))
    assert task_parts == 1  # the task image (the largest part), made for the first episode only
    assert one_run("again") == shared and made.count(max(made)) == 1  # the second run reuses it too
    monkeypatch.setattr(transcript_module, "shared_part", lambda key: None)
    assert one_run("per-episode") == shared and made.count(max(made)) == 3


def test_request_bodies_in_pieces_join_to_the_json_of_the_request():
    """`body_pieces`: large parts made by `serialised_part` go out as their own bytes (the same objects, not
    copied), the JSON around them in between; joined, the pieces are `orjson.dumps(params)` byte for byte."""
    import orjson

    from arena.endpoints.transcript import PIECE, body_pieces, serialised_part

    big = "data:image/png;base64," + base64.b64encode(bytes(range(256)) * (PIECE // 128)).decode()
    small = "data:image/png;base64," + base64.b64encode(b"tiny").decode()
    known = [serialised_part({"type": "image_url", "image_url": {"url": u}}) for u in (big, small, big + "QQ==")]
    stranger = orjson.Fragment(orjson.dumps({"type": "image_url", "image_url": {"url": big}}))  # not ours
    params = {"model": "m", "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [known[0], {"type": "text", "text": "what is this? \u00e9\u0000"}, known[1]]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                               "function": {"name": "zoom", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "zoomed"},
        {"role": "user", "content": [stranger, known[2], known[0]]}], "max_tokens": 5}
    pieces = body_pieces(params)
    assert b"".join(pieces) == orjson.dumps(params)
    large = [piece for piece in pieces if len(piece) >= PIECE]
    # the three known large parts, and the JSON around them that holds the stranger (serialised inline)
    assert len(large) == 4 and all(isinstance(piece, bytes) for piece in pieces) and stranger not in pieces
    assert large[0] is large[3]  # the one photo shown twice: one object, sent twice
    assert body_pieces({"model": "m", "messages": [{"role": "user", "content": "hi"}]}) == [
        orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})]
    # a NUL byte in the JSON around the pieces (a Fragment made elsewhere) cannot be cut around: one piece
    odd = orjson.Fragment(b'{"type":"text","text":"\0"}')
    with_nul = {"model": "m", "messages": [{"role": "user", "content": [known[0], odd]}]}
    assert body_pieces(with_nul) == [orjson.dumps(with_nul)]
    assert orjson.dumps(serialised_part({"type": "image_url", "image_url": {"url": small + "\0"}})).endswith(
        b'\\u0000"}}')  # no raw NUL from `serialised_part` (escaped by orjson)


def test_bodies_of_a_growing_conversation_in_a_scope_join_to_the_json_of_each_request(tmp_path):
    """In a scope, `body_pieces` looks only at the messages the previous body did not send: every round's pieces
    still join to `orjson.dumps(params)` (its large parts as pieces), when messages are built again each round
    (equal, not the same objects), when the front of the conversation changes, and when a message is sent again as
    the same object after being changed in place; the recorder keeps each request byte for byte."""
    import orjson

    from arena.endpoints import transcript
    from arena.endpoints.transcript import PIECE, body_pieces, serialised_part
    from arena.store.calls import read_calls

    def image(seed: int) -> orjson.Fragment:
        data = bytes([seed]) * PIECE + bytes(range(256))
        url = "data:image/png;base64," + base64.b64encode(data).decode()
        return serialised_part({"type": "image_url", "image_url": {"url": url}}, payload=data)

    def sent_as_json(params: dict) -> bytes:
        pieces = body_pieces(params)
        fragments = [part for m in params["messages"] if isinstance(m["content"], list) for part in m["content"]
                     if isinstance(part, orjson.Fragment)]
        assert b"".join(pieces) == orjson.dumps(params)
        assert sorted(piece for piece in pieces if len(piece) >= PIECE) == sorted(orjson.dumps(f) for f in fragments)
        return b"".join(pieces)

    photo, crop, other = image(1), image(2), image(3)
    user = lambda: {"role": "user", "content": [photo, {"type": "text", "text": "what year?"}]}  # built each round
    shown = lambda: {"role": "user", "content": [{"type": "text", "text": "the crop:"}, crop]}
    rounds = [[user()], [user(), {"role": "assistant", "content": "zoom"}, shown()],
              [user(), {"role": "assistant", "content": "zoom"}, shown(), {"role": "assistant", "content": "more"}],
              [{"role": "system", "content": "new"}, user(), {"role": "assistant", "content": "zoom"}, shown()]]
    writer = TranscriptWriter(tmp_path, BlobStore(tmp_path / "blobs"))
    sent = []
    with transcript.scope(writer, "k", "agent"):
        for messages in rounds:
            params = {"model": "m", "messages": messages}
            sent.append(sent_as_json(params))
            transcript.record_params(params, {"choices": []})
    assert [orjson.dumps(call["request"]) for call in read_calls(tmp_path, "k")] == sent
    kept = shown()  # one object sent in every round, changed in place after it was sent: looked at again
    with transcript.scope(writer, "changed", "agent"):
        sent_as_json({"model": "m", "messages": [user(), kept]})
        kept["content"][1] = other
        sent_as_json({"model": "m", "messages": [user(), kept]})
        kept["content"] = [other, crop, photo]
        sent_as_json({"model": "m", "messages": [user(), kept]})


def test_episodes_awaiting_one_image_together_base64_encode_it_once(tiny_data, tmp_path, monkeypatch):
    """Eight repeats of a task at concurrency 8 show the task image and crop the same five boxes at the same
    moments: every image is base64-encoded for its data URL once, not once per episode that was waiting for it."""
    import arena.agents.openai_agent as agent_module
    import arena.endpoints.transcript as transcript_module
    from arena.core import context_image

    encoded: list[bytes] = []
    real = agent_module.base64.b64encode
    monkeypatch.setattr(agent_module.base64, "b64encode", lambda data: encoded.append(data) or real(data))
    monkeypatch.setattr(transcript_module, "_SHARED_PARTS", context_image.LRU(256))  # nothing from earlier tests
    with OpenAIStub(crop_agent(native=False)) as server:
        result = run(RunConfig(data=str(tiny_data), agent="openai", out=str(tmp_path / "logs"), task_ids=["q1"],
                               max_rounds=[8], repeats=8, concurrency=8, judge="normalized",
                               agent_options={"model": "qwen", "base_url": server.base_url}))
    assert len(result.episodes) == 8 and all(e.totals.rounds == 6 for e in result.episodes)
    assert len(encoded) == len(set(encoded)) >= 4  # the task image and the crops (some alike), each once
    # (before: 34 encodings, every episode that was waiting for an image encoding it again)


def test_recovered_requests_are_the_bodies_sent_byte_for_byte_and_tools_are_stored_once_per_episode(
        tiny_data, tmp_path, monkeypatch):
    """orjson writes the request back as the very bytes the server got (fields in their order, tools in their
    place); the tools list is serialised for the record once per episode, not once per call."""
    import orjson

    from arena.store.calls import read_calls

    stored = []
    json_ref = TranscriptWriter.json_ref
    monkeypatch.setattr(TranscriptWriter, "json_ref",
                        lambda self, value: stored.append(value) or json_ref(self, value))
    with OpenAIStub(crop_agent(False)) as server:
        result = run(RunConfig(
            data=str(tiny_data), agent="openai", out=str(tmp_path / "logs"), task_ids=["q2"], max_rounds=[6],
            agent_options={"model": "qwen", "base_url": server.base_url, "tool_mode": "native", "max_tokens": 512,
                           "parallel_tool_calls": False}))
        bodies = [body for body, status, _ in server.exchanges if status == 200]
    [episode] = result.episodes
    calls = read_calls(result.run_dir, episode.key)
    assert len(calls) == len(bodies) == 6
    assert [orjson.dumps(call["request"]) for call in calls] == bodies
    assert sum(isinstance(value, list) for value in stored) == 1  # the tools, once for the episode's six calls
    lines = [orjson.loads(line) for line in (result.run_dir / "calls.jsonl").read_bytes().splitlines()]
    assert len({orjson.dumps(line["request"]["tools"]) for line in lines}) == 1


def test_a_response_with_lone_surrogates_is_recorded_mended_and_marked(tmp_path):
    """A server's lone surrogates (JSON cannot carry them) come back as U+FFFD in a response marked `arena_note`;
    the request as sent, the next call's response as it is."""
    from arena.endpoints import transcript
    from arena.store.calls import read_calls

    writer = TranscriptWriter(tmp_path, BlobStore(tmp_path / "blobs"))
    params = {"model": "m", "messages": [{"role": "user", "content": "q"}]}
    with transcript.scope(writer, "k", "agent"):
        transcript.record_params(params, {"choices": [{"message": {"content": "a\ud800b"}}]})
        transcript.record_params(params, {"choices": [{"message": {"content": "fine"}}]})
    first, second = read_calls(tmp_path, "k")
    assert first["response"] == {"choices": [{"message": {"content": "a\ufffdb"}}],
                                 "arena_note": "invalid Unicode replaced by U+FFFD"}
    assert second["response"] == {"choices": [{"message": {"content": "fine"}}]}
    assert first["request"] == second["request"] == params


def test_a_task_png_sent_as_it_is_is_recorded_as_its_stored_blob_without_hashing_it_again(tmp_path, monkeypatch):
    """A task PNG the model takes at its size goes as its own bytes, read from the run's copy of the file (stored under
    its content address when the episode started): the transcript refers to that blob without hashing the bytes
    again, and gives back exactly what the server got. Without a copy (a store in memory), the dataset's file is
    read and its bytes hashed, as before."""
    import asyncio
    import hashlib

    import orjson
    from PIL import Image

    import arena.core.content_ids as content_ids
    from arena.core.context_image import ContextImage, MODEL_PNGS
    from arena.store.calls import read_calls

    data = tmp_path / "data"
    (data / "images").mkdir(parents=True)
    scene = Image.linear_gradient("L").resize((280, 224)).convert("RGB")  # 10x8 patches of 28: kept as it is
    scene.save(data / "images" / "scene.png")
    sent = (data / "images" / "scene.png").read_bytes()
    (data / "annotations.jsonl").write_text("".join(json.dumps({
        "id": f"t{i}", "prompt": [{"role": "user", "content": "<image>Which year?"}],
        "reward_model": {"ground_truth": "1874"}, "image": ["images/scene.png"]}) + "\n" for i in range(2)))

    hashed: list[bytes] = []

    class Spy:
        def sha256(self, value=b""):
            hashed.append(bytes(value))
            return hashlib.sha256(value)
    monkeypatch.setattr(content_ids, "hashlib", Spy())
    with OpenAIStub(lambda request: Reply(content="<answer>1874</answer>")) as server:
        result = run(RunConfig(data=str(data / "annotations.jsonl"), agent="openai", out=str(tmp_path / "logs"),
                               judge="normalized", protocol="arena",
                               agent_options={"model": "qwen", "base_url": server.base_url}))
        bodies = [body for body, status, _ in server.exchanges if status == 200]
    assert len(bodies) == 2 and all(base64.b64encode(sent) in body for body in bodies)
    assert sent not in hashed  # the payload was vouched for by the stored copy, not hashed
    for episode in result.episodes:
        [call] = read_calls(result.run_dir, episode.key)
        assert orjson.dumps(call["request"]) in bodies
        assert base64.b64decode(call["request"]["messages"][-1]["content"][0]["image_url"]["url"].split(",", 1)[1]) \
            == sent
    line = orjson.loads((result.run_dir / "calls.jsonl").read_bytes().splitlines()[0])
    [ref] = [part["image_url"]["url"]["$image"] for message in line["add"] if isinstance(message, dict)
             for part in message.get("content", []) if part.get("type") == "image_url"]
    assert ref == "sha256:" + hashlib.sha256(sent).hexdigest() + ".png"
    assert BlobStore(result.run_dir / "blobs").get(ref) == sent

    # no copy to read (a store in memory): the dataset's file, hashed when recorded
    monkeypatch.setattr(content_ids, "_IDS", content_ids.LRU(256))
    MODEL_PNGS.get(("sha256:no-copy", 28, 3136, 1003520), pop=True)
    image = ContextImage("sha256:no-copy", source="task", path=data / "images" / "scene.png",
                         stored=tmp_path / "missing.png")
    png = asyncio.run(image.model_png(28, 3136, 1003520))
    assert png == sent and content_ids.known_content_id(png, "png") is None
    assert content_ids.content_id(png, "png") == ref and hashed[-1] == sent
