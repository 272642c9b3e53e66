"""A judge that raises (a bug in it, not a server's error, which a verdict records) loses no finished episode: the
episode is recorded unjudged, the run fails naming the episode, and `resume` judges it without playing it again."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.judges.llm import LLMJudge
from arena.runs.finishing import JudgeFailure
from arena.runs.runner import run
from arena.store.store import RunStore
from tests.support.openai_server import OpenAIStub
from tests.support.qwen_script import respond
from tests.test_openai_run import config_for


def test_a_judge_that_raises_keeps_the_episode_and_resume_judges_it(tiny_data: Path, tmp_path: Path,
                                                                     monkeypatch) -> None:
    async def broken(self, episode, blobs=None):
        raise KeyError("a field the judge expected")

    with OpenAIStub(respond) as server:
        config = config_for(server, tiny_data, tmp_path / "logs", max_rounds=[10], run_id="r")
        with monkeypatch.context() as patched:
            patched.setattr(LLMJudge, "score", broken)
            with pytest.raises(JudgeFailure, match=r"judging episode .* failed \(KeyError.*arena resume"):
                run(config)
        store = RunStore(tmp_path / "logs" / "r")
        played = store.episodes()
        assert len(played) == 2 and store.verdicts() == []
        requests = len(server.requests)
        resumed = run(config)
    assert len(server.requests) - requests == 3  # the judge's calls only (one correctness call, two evidence checks)
    assert [e.id for e in store.episodes()] == [e.id for e in played]
    assert len(store.all_episodes()) == 2 and {v.key for v in resumed.verdicts} == {e.key for e in played}
