"""Every judge's model calls are recorded exactly (issue 20, item 5): the llm judge (with the episode's image and
its evidence checks) and the suite judges that call a model (CARV's caption judge, MMIR's open-ended id mapping,
UReason's VLM judge with the generated image and its reasoning judge), each scored inside a judge recording
scope against a server that keeps the raw bodies it got and sent, answered and refused."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Callable

import pytest
from PIL import Image

from arena.core.blobs import BlobStore
from arena.core.dataset import load_datasets
from arena.core.trajectory import Episode
from arena.endpoints import transcript
from arena.store.calls import TranscriptWriter, read_calls
from arena.judges.llm import llm
from arena.suites.carv.judge import carv_llm
from arena.suites.carv.loader import NO_RESULT
from arena.suites.carv.world import build as build_carv
from arena.suites.mmir.judge import mmir
from arena.suites.ureason.judge import ureason_reasoning, ureason_vlm
from tests.support.openai_server import OpenAIStub, Reply
from tests.support.published_episodes import final_turn_episode
from tests.suites.carv.test_carv import episode as carv_episode
from tests.suites.ureason.test_ureason import _episode as ureason_episode
from tests.suites.vistahop.test_published import episode_with


def llm_case(tmp_path: Path, blobs: BlobStore, base_url: str):
    Image.new("RGB", (300, 200), (200, 10, 10)).save(tmp_path / "scene.png")
    episode = episode_with("<answer>It is Lyon.</answer>", ["Lyon"], images=[blobs.put_file(tmp_path / "scene.png")])
    return llm(model="judge", base_url=base_url, retry_initial=0.01), episode


def carv_case(tmp_path: Path, blobs: BlobStore, base_url: str):
    world = build_carv(tmp_path / "carv", seed=3, size="small")
    task = next(t for t in load_datasets(world)[0].tasks if t.answers != [NO_RESULT])
    return carv_llm(model="judge", base_url=base_url, max_retries=0), carv_episode(task, "a reworded caption")


def mmir_case(tmp_path: Path, blobs: BlobStore, base_url: str):
    episode = final_turn_episode("<ans>the title</ans>", ["3"], suite="mmir", task_id="web-1:open",
                                 kind="element_ids", options=["3: a title", "5: a logo"])
    return mmir(model="judge", base_url=base_url, retry_initial=0.01), episode


def ureason_vlm_case(tmp_path: Path, blobs: BlobStore, base_url: str):
    return ureason_vlm(model="judge", base_url=base_url, max_retries=0, missing="fail"), ureason_episode(blobs)


def ureason_reasoning_case(tmp_path: Path, blobs: BlobStore, base_url: str):
    return ureason_reasoning(model="judge", base_url=base_url, max_retries=0), ureason_episode(blobs)


CASES: dict[str, tuple[Callable[..., tuple[Any, Episode]], str]] = {
    "llm": (llm_case, "<judge>Yes</judge><reason>the city matches</reason>"),
    "carv-llm": (carv_case, '{"correctness": true, "reason": "same scene"}'),
    "mmir": (mmir_case, '<id>"[3]"</id>'),
    "ureason-vlm": (ureason_vlm_case, "One red circle. <answer>Yes</answer>"),
    "ureason-reasoning": (ureason_reasoning_case, "<answer>Yes</answer>"),
}
# a refusal as vLLM words an unknown model (vllm/entrypoints/openai/serving_engine.py, `_check_model`)
REFUSAL = "The model `judge` does not exist."


def score_recorded(tmp_path: Path, name: str, respond) -> tuple[list[dict], list[tuple[bytes, int, bytes]], Any]:
    blobs = BlobStore(tmp_path / "blobs")
    writer = TranscriptWriter(tmp_path, blobs)

    async def scenario(base_url: str):
        judge, episode = CASES[name][0](tmp_path, blobs, base_url)
        try:
            with transcript.scope(writer, episode.key, "judge"):
                verdict = await judge.score(episode, blobs)
        finally:
            await judge.aclose()
        return episode, verdict

    with OpenAIStub(respond) as server:
        episode, verdict = asyncio.run(scenario(server.base_url))
        exchanges = list(server.exchanges)
    return read_calls(tmp_path, episode.key), exchanges, verdict


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_judge_records_its_calls_exactly(tmp_path, name):
    calls, exchanges, verdict = score_recorded(tmp_path, name, lambda request: Reply(content=CASES[name][1]))
    assert verdict.error is None and verdict.correct, verdict
    assert exchanges and len(calls) == len(exchanges)
    for call, (body, status, reply) in zip(calls, exchanges):
        assert (call["role"], call["request"], call["response"]) == ("judge", json.loads(body), json.loads(reply))
    if name in ("llm", "ureason-vlm"):  # the judge is shown an image: it comes back as the very data URL sent
        urls = [p["image_url"]["url"] for m in calls[0]["request"]["messages"] if isinstance(m["content"], list)
                for p in m["content"] if p.get("type") == "image_url"]
        assert urls and all(u.startswith("data:image/") for u in urls)
        assert list((tmp_path / "blobs").rglob("*.png")) or list((tmp_path / "blobs").rglob("*.jpg"))


@pytest.mark.parametrize("name", ["llm", "ureason-vlm"])
def test_a_refused_judge_call_is_recorded_with_the_servers_error(tmp_path, name):
    calls, exchanges, verdict = score_recorded(tmp_path, name, lambda request: Reply(status=404, error=REFUSAL))
    assert verdict.error and REFUSAL in verdict.error
    assert len(calls) == len(exchanges) >= 1
    for call, (body, status, reply) in zip(calls, exchanges):
        assert (call["request"], call["response"], call["status"]) == (json.loads(body), json.loads(reply), 404)
        assert REFUSAL in call["error"]
