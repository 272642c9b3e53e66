"""Budget sweeps: prefix sharing equals separate runs for a budget-blind deterministic agent, saves
model calls (at most 1.3x the single largest-budget run), and produces the Table 5 layout and plot."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from arena.core.trajectory import episode_key
from arena.runs.config import AgentChoice, RunConfig
from arena.runs.prefix import model_call_counts
from arena.review.report import build_report, sweep_tables
from arena.review.rundata import load_run
from arena.runs.runner import run
from arena.store.store import RunStoreError
from tests.support.openai_server import OpenAIStub, Reply
from tests.test_sweep_support import NEEDS, ConcurrencyProbe, comparable, policy, policy_config, write_sweep_dataset

BUDGETS = [6, 8, 10, 12, 14]


@pytest.fixture
def sweep_data(tmp_path: Path) -> Path:
    return write_sweep_dataset(tmp_path / "data")


def test_prefix_sharing_matches_separate_runs_and_saves_calls(sweep_data: Path, tmp_path: Path) -> None:
    with OpenAIStub(policy) as server:
        shared = run(policy_config(sweep_data, server.base_url, tmp_path / "logs", run_id="shared"))
        shared_calls = len(server.requests)
        del server.requests[:]
        separate = run(policy_config(sweep_data, server.base_url, tmp_path / "logs", run_id="separate",
                                     prefix_sharing=False))
        separate_calls = len(server.requests)
        del server.requests[:]
        run(policy_config(sweep_data, server.base_url, tmp_path / "logs", run_id="single", max_rounds=[14]))
        single_calls = len(server.requests)

    assert shared.summary["prefix_sharing"] is True and "prefix_sharing" not in separate.summary
    assert len(shared.episodes) == len(separate.episodes) == len(NEEDS) * len(BUDGETS)
    by_key = {e.key: e for e in separate.episodes}
    for episode in shared.episodes:
        assert comparable(episode) == comparable(by_key[episode.key])
    assert sorted((v.key, v.correct) for v in shared.verdicts) == sorted((v.key, v.correct) for v in separate.verdicts)

    assert shared_calls == shared.summary["model_calls"]["made"] < separate_calls
    assert separate_calls == separate.summary["model_calls"]["made"] == shared.summary["model_calls"]["separate_runs"]
    assert shared_calls <= 1.3 * single_calls
    derived = [e for e in shared.episodes if e.meta.get("prefix_of")]
    assert len(derived) == len(NEEDS) * (len(BUDGETS) - 1)
    assert all(e.meta["model_calls"] in (0, 1) for e in derived)

    pass1 = {g["max_rounds"]: g["pass1"] for g in shared.summary["groups"]}
    assert [round(pass1[n] * len(NEEDS) / 100) for n in BUDGETS] == [2, 3, 4, 5, 6]


def test_sweep_report_has_table5_layout_and_plot(tmp_path: Path) -> None:
    data = write_sweep_dataset(tmp_path / "data", needs=[2, 9])
    with OpenAIStub(policy) as server:
        result = run(policy_config(data, server.base_url, tmp_path / "logs", run_id="t5", repeats=2))
    report = build_report([load_run(result.run_dir)])
    [table] = sweep_tables(report.runs)
    assert table.columns == ["Max Rounds", "Pass@1 (%)", "L1 (%)", "L2 (%)", "L3 (%)", "Avg. Tool Calls",
                             "Avg. Rounds", "Tool Util. (%)"]
    assert [row[0] for row in table.rows] == [f"N={n}" for n in BUDGETS]
    assert [row[1] for row in table.rows] == ["50.00 ± 0.00"] * 2 + ["100.00 ± 0.00"] * 3
    html_path, png_path = report.write(tmp_path / "out")
    assert png_path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    page = html_path.read_text()
    assert "data:image/png;base64," in page and "N=14" in page


def test_grid_over_agents_settings_and_repeats(tiny_data: Path, tmp_path: Path) -> None:
    answer = [{"answer": "Mirelle Dastrow"}]
    config = RunConfig(data=str(tiny_data), agents=[
        AgentChoice(agent="scripted", options={"script": answer, "id": "first"}),
        AgentChoice(agent="scripted", options={"script": [{"answer": "no idea"}], "id": "second"})],
        settings=["no-tool", "search+crop"], max_rounds=[3, 5], repeats=2, out=str(tmp_path / "logs"))
    result = run(config)
    keys = {e.key for e in result.episodes}
    assert keys == {episode_key(t, s, n, r, a) for t in ("q1", "q2") for s in ("no-tool", "search+crop")
                    for n in (3, 5) for r in (0, 1) for a in ("first", "second")}
    assert {e.agent: e.answer for e in result.episodes} == {"first": "Mirelle Dastrow", "second": "no idea"}
    copies = [e for e in result.episodes if e.budget.max_rounds == 3]
    assert all(e.meta["model_calls"] == 0 for e in copies)
    assert model_call_counts(result.episodes)["made"] == len(result.episodes) - len(copies)


def test_clashing_agent_ids_are_refused(tiny_data: Path, tmp_path: Path) -> None:
    config = RunConfig(data=str(tiny_data), agents=[AgentChoice(agent="scripted", options={"script": []}),
                                                    AgentChoice(agent="scripted", options={"script": []})],
                       out=str(tmp_path / "logs"))
    with pytest.raises(ValueError, match="same id|the id scripted"):
        run(config)


def test_failed_source_fails_its_derived_budgets_and_resume_retries_them(sweep_data: Path, tmp_path: Path) -> None:
    down = {"on": True}

    def flaky(request):
        return Reply(status=503, error="overloaded") if down["on"] else policy(request)

    with OpenAIStub(flaky) as server:
        config = policy_config(sweep_data, server.base_url, tmp_path / "logs", run_id="flaky", max_rounds=[6, 10])
        first = run(config)
        assert {e.finish_reason for e in first.episodes} == {"error"}
        assert all("failed" in (e.error or "") for e in first.episodes if e.meta.get("prefix_of"))
        down["on"] = False
        second = run(config)
    assert second.ran == len(NEEDS) * 2
    assert {e.finish_reason for e in second.episodes} <= {"answered", "budget"}


def test_changed_grid_is_refused_unless_forced(tiny_data: Path, tmp_path: Path) -> None:
    base = dict(data=str(tiny_data), agent="scripted", agent_options={"script": [{"answer": "x"}]},
                run_id="same", out=str(tmp_path / "logs"))
    run(RunConfig(**base, max_rounds=[3]))
    with pytest.raises(RunStoreError, match="different configuration"):
        run(RunConfig(**base, max_rounds=[3, 4]))
    result = run(RunConfig(**base, max_rounds=[3, 4]), force=True)
    assert {e.budget.max_rounds for e in result.episodes} == {3, 4}


def test_scheduling_options_do_not_change_the_fingerprint(tiny_data: Path) -> None:
    a = RunConfig(data=str(tiny_data))
    b = RunConfig(data=str(tiny_data), concurrency=1, backend="ray", ray_workers=3,
                  endpoint_limits={"*": {"max_parallel": 2}})
    assert a.grid_fingerprint() == b.grid_fingerprint()
    assert a.grid_fingerprint() != RunConfig(data=str(tiny_data), prefix_sharing=False).grid_fingerprint()


def test_show_budget_turns_prefix_sharing_off_by_default(tiny_data: Path) -> None:
    assert RunConfig(data=str(tiny_data), max_rounds=[6, 8]).shares_prefixes()
    assert not RunConfig(data=str(tiny_data), max_rounds=[6, 8], show_budget=True).shares_prefixes()
    assert RunConfig(data=str(tiny_data), max_rounds=[6, 8], show_budget=True, prefix_sharing=True).shares_prefixes()
    assert not RunConfig(data=str(tiny_data), max_rounds=[6]).shares_prefixes()


def test_endpoint_limit_caps_parallel_requests(sweep_data: Path, tmp_path: Path) -> None:
    probe = ConcurrencyProbe(0.02)

    with OpenAIStub(probe) as server:
        run(policy_config(sweep_data, server.base_url, tmp_path / "logs", max_rounds=[4], concurrency=6,
                          endpoint_limits={server.base_url: {"max_parallel": 2}}))
    assert 1 <= probe.max <= 2


def test_sliding_window_admits_per_minute() -> None:
    from arena.runs.limits import SlidingWindow

    clock = {"t": 0.0}
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        clock["t"] += seconds

    async def main() -> list[float]:
        window = SlidingWindow(3, clock=lambda: clock["t"], sleep=sleep)
        starts = []
        for _ in range(7):
            await window.admit()
            starts.append(clock["t"])
        return starts

    starts = asyncio.run(main())
    assert starts == [0.0, 0.0, 0.0, 60.0, 60.0, 60.0, 120.0]
