"""UReason through whole runs under both protocols: scripted episodes (a rendered image, or none) on the world's
published-format files, raw judge replies from a local server through the `ureason-vlm` judge.

Reference written from UReason/UReason `evaluation/qwen_vision_batch.py` @216f9d0 (`extract_answer`, the skip of
items without a generated image; restated in `test_published.ref_yes_no`): an item's verdict is the reply read by
the published rule; an item whose image is missing is left out of accuracy. Under `--protocol arena` the one
documented difference (docs/protocols.md, UReason table): a missing image is scored 0 and counted."""

from __future__ import annotations

import json

from arena.core.dataset import load_datasets
from arena.runs.config import RunConfig
from arena.runs.runner import run
from arena.suites.ureason.world import Criterion, build, gold_svg
from tests.suites.ureason.test_published import JUDGE_REPLIES, ref_yes_no
from tests.support.openai_server import OpenAIStub

SETTINGS = ("direct", "guided", "decontext")


def test_whole_runs_under_original_read_replies_and_skip_missing_images_as_published(tmp_path):
    world = build(tmp_path / "ureason", seed=5, size="small")
    data = world / "data"
    tasks = load_datasets(data)[0].tasks
    replies = {task.answers[0]: JUDGE_REPLIES[i % len(JUDGE_REPLIES)] for i, task in enumerate(tasks)}
    missing = {t.id for i, t in enumerate(tasks) if i % 7 == 3}  # these episodes draw nothing
    script = {}
    for task in tasks:
        if task.id in missing:
            script[task.id] = [{"answer": "I could not draw it."}]
            continue
        call = json.dumps({"name": "render", "arguments": {"svg": gold_svg(Criterion.parse(task.answers[0]))}})
        script[task.id] = [{"text": f"<tool_call>{call}</tool_call>"}, {"answer": "done"}]

    def judge(request):
        text = next(p["text"] for p in request["messages"][0]["content"] if p["type"] == "text")
        return next(reply for criterion, reply in replies.items() if f'"{criterion}"' in text)

    results = {}
    with OpenAIStub(judge) as server:
        for protocol in (None, "arena"):
            config = RunConfig(data=str(data), agent="scripted", agent_options={"script": script},
                               settings=["render"], judge="ureason-vlm", protocol=protocol, concurrency=4,
                               judge_options={"model": "j", "base_url": server.base_url, "retry_initial": 0.01},
                               out=str(tmp_path / "logs"), run_id=protocol or "default")
            results[protocol or "default"] = run(config)
        judged = {next(p["text"] for p in r["messages"][0]["content"] if p["type"] == "text")
                  for r in server.requests}
    assert results["default"].summary["protocol"] == "original"  # the published format decides
    # a missing image is never sent to the judge, under either protocol
    assert {c for c in replies if any(f'"{c}"' in text for text in judged)} == \
        {t.answers[0] for t in tasks if t.id not in missing}

    def by_task(result):
        episodes = {e.id: e.task for e in result.episodes}
        return {episodes[v.episode_id].id: v for v in result.verdicts}

    ids = {t.id: t for t in tasks}
    expected: dict[str, dict[str, list[float]]] = {"default": {}, "arena": {}}
    for task in tasks:
        score = None if task.id in missing else float(ref_yes_no(replies[task.answers[0]]))
        if score is not None:
            expected["default"].setdefault(task.level, []).append(score)
        expected["arena"].setdefault(task.level, []).append(0.0 if score is None else score)
    for protocol, result in results.items():
        verdicts = by_task(result)
        assert set(verdicts) == set(ids)
        for task_id, verdict in verdicts.items():
            if task_id in missing:
                # original: left out (an invalid verdict); arena: scored 0 and counted
                assert (verdict.error is not None) == (protocol == "default"), (protocol, task_id)
                assert verdict.score == 0.0
            else:
                assert verdict.error is None and verdict.raw == replies[ids[task_id].answers[0]]
                assert verdict.score == ref_yes_no(verdict.raw), (protocol, task_id, verdict.raw)
        metrics = result.summary["groups"][0]["suites"]["ureason"]
        assert metrics["accuracy"] == {s: round(100.0 * sum(v) / len(v), 4)
                                       for s, v in expected[protocol].items()}
        assert metrics["missing_images"] == len(missing)
        assert metrics["valid"] == len(tasks) - (len(missing) if protocol == "default" else 0)
    assert results["default"].summary["groups"][0]["suites"]["ureason"]["accuracy"] != \
        results["arena"].summary["groups"][0]["suites"]["ureason"]["accuracy"]
