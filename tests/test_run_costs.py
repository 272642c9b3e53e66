"""End-of-run figures read in one streaming pass: the judges' token use from verdicts.jsonl equals the sum
of the Verdict objects' usages (Usage.__add__: None only where no verdict said), within the bytes given."""

from __future__ import annotations

from arena.core.trajectory import Usage
from arena.core.verdict import Verdict
from arena.runs.runner import add_judge_usage


def verdict(n: int, usage: Usage | None) -> Verdict:
    return Verdict(episode_id=f"e{n}", key=f"q{n}|direct|10|0", judge="llm", score=1.0, correct=True, usage=usage)


def test_judge_usage_streamed_equals_the_sum_of_verdict_usages(tmp_path):
    verdicts = [verdict(0, None), verdict(1, Usage(prompt_tokens=120, completion_tokens=7)),
                verdict(2, Usage(prompt_tokens=80, cached_tokens=64)), verdict(3, None),
                verdict(4, Usage(completion_tokens=3))]
    path = tmp_path / "verdicts.jsonl"
    lines = [v.model_dump_json().encode() + b"\n" for v in verdicts]
    path.write_bytes(b"".join(lines) + b'{"episode_id": "e5", "usage": {"prompt_tok')  # a torn last line
    summary: dict = {}
    add_judge_usage(summary, path, path.stat().st_size, (1.0, 2.0))
    used = [v.usage for v in verdicts if v.usage is not None]
    total = sum(used[1:], used[0])
    assert summary["judge_tokens"] == total.model_dump()
    assert summary["judge_tokens"]["reasoning_tokens"] is None and summary["judge_tokens"]["cached_tokens"] == 64
    assert summary["judge_cost"] == (200 * 1.0 + 10 * 2.0) / 1e6
    upto: dict = {}  # only the records within the first bytes count (the store as it was at the run's end)
    add_judge_usage(upto, path, sum(len(line) for line in lines[:2]), None)
    assert upto == {"judge_tokens": verdicts[1].usage.model_dump(), "judge_cost": None}
    nothing: dict = {}
    add_judge_usage(nothing, tmp_path / "absent.jsonl", 0, (1.0, 2.0))
    assert nothing == {}
