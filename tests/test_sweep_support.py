"""Helpers shared by the runs tests (sweeps, Ray, resume): a small multi-task dataset and a
deterministic "model" served over real HTTP by the OpenAI stub. No tests here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from arena.store.calls import read_calls
from arena.runs.config import RunConfig
from arena.store.store import RunStore
from tests.support.openai_server import Reply, last_user_text
from tests.support.tiny_dataset import write_tiny_dataset

NEEDS = [2, 5, 7, 9, 11, 13]
"""Searches each task needs before the policy knows the answer; spread across budgets 6..14."""

TRUTH = "1874"
CROP = {"tool": "image_zoom_in_tool", "arguments": {"bbox_2d": [700, 50, 1000, 250], "label": "sign"}}
SEARCH = {"tool": "text_search_tool", "arguments": {"query": "Orvanta lighthouse built"}}


def write_sweep_dataset(root: Path, needs: list[int] = NEEDS) -> Path:
    """VistaArena-format items over the tiny dataset's image and corpus; item i needs `needs[i]` searches."""
    annotation = write_tiny_dataset(root)
    items = []
    for i, need in enumerate(needs):
        items.append({"id": f"t{i}", "prompt": [{"role": "user", "content":
                      f"<image>[needs {need}] In which year was the lighthouse on the sign built?"}],
                      "reward_model": {"ground_truth": [TRUTH]}, "image": ["images/scene.png"],
                      "image_search_title_list": ["Orvanta Lighthouse - Wiki"],
                      "image_search_thumbnail_list": ["images/thumb0.png"], "hops": need})
    annotation.write_text("".join(json.dumps(item) + "\n" for item in items))
    return annotation


def first_user_text(request: dict[str, Any]) -> str:
    for message in request.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
    return ""


def policy(request: dict[str, Any]) -> Reply:
    """Crop once, then search until the task's need is met, then answer; cut short, it guesses wrong.

    A pure function of the conversation, so it plays the same whatever the budget (it is
    never told it), which is what prefix sharing relies on.
    """
    need = int(re.search(r"\[needs (\d+)\]", first_user_text(request)).group(1))
    rounds = sum(1 for m in request.get("messages", []) if m.get("role") == "assistant")
    if "You have used all" in last_user_text(request):
        answer = TRUTH if rounds > need else "1901"
        return Reply(content=f"<think>out of rounds</think><answer>{answer}</answer>")
    if rounds == 0:
        action = CROP
    elif rounds <= need:
        action = SEARCH
    else:
        return Reply(content=f"<think>found it</think><answer>{TRUTH}</answer>")
    call = json.dumps({"name": action["tool"], "arguments": action["arguments"]})
    return Reply(content=f"<think>round {rounds + 1}</think>\n<tool_call>{call}</tool_call>")


def policy_config(data: Path, base_url: str, out: Path, **fields: Any) -> RunConfig:
    values: dict[str, Any] = {
        "data": str(data), "agent": "openai",
        "agent_options": {"model": "policy", "base_url": base_url, "max_retries": 0, "temperature": 0.0,
                          "image_max_pixels": 128 * 128},
        "settings": ["search+crop"], "max_rounds": [6, 8, 10, 12, 14], "judge": "normalized", "out": str(out),
        "concurrency": 4, "protocol": "arena",  # sweeps of the arena's pipeline (final-answer turn)
    }
    values.update(fields)
    return RunConfig(**values)


def comparable(episode) -> dict[str, Any]:
    """What must match between two plays of one episode (not ids, timings or bookkeeping)."""
    return {
        "key": episode.key, "finish": episode.finish_reason, "answer": episode.answer, "images": episode.images,
        "totals": episode.totals.model_dump(include={"rounds", "tool_calls", "calls_per_tool", "invalid_calls",
                                                     "ignored_calls", "prompt_tokens", "completion_tokens"}),
        "steps": [{"round": s.round, "final": s.final_turn, "output": s.output, "action": s.action, "tool": s.tool,
                   "arguments": s.arguments, "answer": s.answer, "error": s.error,
                   "observation": None if s.observation is None else s.observation.model_dump()}
                  for s in episode.steps],
    }


def assert_same_run(other, local) -> None:
    """Two runs of one grid (RunResults) on different backends: same episodes, verdicts and model-call counts, the
    same recorded model calls (calls.jsonl, with agent calls in it), and every image of the other run's store."""
    by_key = {e.key: e for e in local.episodes}
    assert len(other.episodes) == len(local.episodes)
    for episode in other.episodes:
        assert comparable(episode) == comparable(by_key[episode.key])
    assert sorted((v.key, v.correct) for v in other.verdicts) == sorted((v.key, v.correct) for v in local.verdicts)
    assert other.summary["model_calls"] == local.summary["model_calls"]
    calls = {key: read_calls(other.run_dir, key) for key in by_key}
    assert calls == {key: read_calls(local.run_dir, key) for key in by_key}
    agent_calls = [c for episode_calls in calls.values() for c in episode_calls if c["role"] == "agent"]
    assert agent_calls and all(c["request"]["messages"] for c in agent_calls)
    store = RunStore(other.run_dir)
    for episode in store.episodes():
        for blob_id in episode.images + [b for s in episode.steps if s.observation for b in s.observation.images]:
            assert store.blobs.path(blob_id).is_file()


def timeless(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Summary groups without wall-clock figures."""
    return [{k: v for k, v in g.items() if k not in ("avg_seconds",)} for g in summary["groups"]]


class ConcurrencyProbe:
    """A responder that serves `policy` after `delay` seconds and records the most requests in flight at once."""

    def __init__(self, delay: float):
        import threading

        self.delay, self.now, self.max = delay, 0, 0
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        import time

        with self._lock:
            self.now += 1
            self.max = max(self.max, self.now)
        time.sleep(self.delay)
        with self._lock:
            self.now -= 1
        return policy(request)
