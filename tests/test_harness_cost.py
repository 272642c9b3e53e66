"""A run measures itself: driver and worker CPU per round and per episode, the harness's share of episode time
(summary.json `harness`), printed under the summary and in `arena report`, recomputable from the episode records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.cli.main import app
from arena.runs.harness_cost import DRIVER_SATURATED, HINT_MIN_SECONDS, bottleneck_hint, episode_figures
from arena.runs.runner import run
from arena.store.records import HarnessCost
from arena.store.store import RunStore
from tests.support.openai_server import OpenAIStub
from tests.test_sweep_support import ConcurrencyProbe, policy_config, write_sweep_dataset

cli = CliRunner()


@pytest.mark.parametrize("workers", [0, 2])
def test_the_run_reports_what_the_harness_cost_and_the_figures_are_recomputable(tmp_path: Path, workers: int) -> None:
    data = write_sweep_dataset(tmp_path / "data", needs=[2, 5])
    with OpenAIStub(ConcurrencyProbe(0.02)) as server:
        result = run(policy_config(data, server.base_url, tmp_path / "logs", run_id="measured", max_rounds=[3, 6],
                                   workers=workers or None))
    written = json.loads(RunStore(result.run_dir).summary_path.read_text())
    h = HarnessCost.model_validate(written["harness"])
    assert h.backend == ("workers" if workers else "asyncio") and h.workers == workers
    assert h.driver_cpu_seconds > 0 and h.wall_seconds > 0
    assert (h.worker_cpu_seconds is None) == (not workers)
    if workers:
        assert h.worker_cpu_seconds > 0 and h.worker_cpu_per_round_ms > 0
    assert h.harness_share is not None and 0 <= h.harness_share <= 1
    assert 0 < h.model_seconds <= h.episode_seconds

    # the rounds are the model calls the run made (prefix sharing: the shorter budgets' copies made none)
    assert h.rounds == written["model_calls"]["made"] > 0
    # the episode-side sums, recomputed from the records: the played episodes are those that made a call
    played = [e for e in RunStore(result.run_dir).episodes() if e.meta.get("model_calls", len(e.steps))]
    again = episode_figures(played)
    assert h.episodes == again.episodes and h.rounds == again.rounds
    assert h.episode_seconds == pytest.approx(again.seconds, abs=1e-5)
    assert h.model_seconds == pytest.approx(again.model_seconds, abs=1e-5)
    assert h.tool_seconds == pytest.approx(again.tool_seconds, abs=1e-5)
    assert h.harness_seconds == pytest.approx(again.seconds - again.model_seconds, abs=1e-5)
    assert h.harness_share == pytest.approx(h.harness_seconds / h.episode_seconds, abs=1e-5)
    assert h.driver_cpu_per_round_ms == pytest.approx(1000 * h.driver_cpu_seconds / h.rounds, rel=1e-3)
    assert h.driver_cpu_per_episode_ms == pytest.approx(1000 * h.driver_cpu_seconds / h.episodes, rel=1e-3)
    assert h.driver_load == pytest.approx(h.driver_cpu_seconds / h.wall_seconds, abs=1e-3)

    # `arena report` shows them; a resume that plays nothing keeps them
    report = cli.invoke(app, ["report", str(result.run_dir)], terminal_width=400)
    assert report.exit_code == 0, report.output
    assert "Harness cost" in report.output and f"{h.driver_cpu_per_round_ms:.3f}" in report.output
    resumed = cli.invoke(app, ["resume", str(result.run_dir)], terminal_width=400)
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(RunStore(result.run_dir).summary_path.read_text())["harness"] == written["harness"]
    said = " ".join(resumed.output.split())
    # the line adds up for a reader: episode time = model calls + harness (tools + the rest)
    assert (f"episode time {h.episode_seconds:.2f} s (summed over the played episodes) = model calls "
            f"{h.model_seconds:.2f} s + harness {h.harness_seconds:.2f} s") in said and "driver CPU" in said


def test_the_hint_names_more_workers_only_when_the_driver_saturates_a_core() -> None:
    assert bottleneck_hint(DRIVER_SATURATED - 0.01, "asyncio", 0, 60.0) is None
    assert "try --workers 2" in bottleneck_hint(0.95, "asyncio", 0, 60.0)
    assert "try --workers 8" in bottleneck_hint(1.3, "workers", 4, 60.0)
    assert bottleneck_hint(1.3, "ray", 4, 60.0) is None
    assert bottleneck_hint(1.5, "asyncio", 0, HINT_MIN_SECONDS - 0.1) is None  # a short run: workers cost more
    lines = HarnessCost(backend="asyncio", episodes=3, rounds=9, wall_seconds=2.0, driver_cpu_seconds=1.9,
                        driver_load=0.95, episode_seconds=3.0, model_seconds=2.0, harness_seconds=1.0,
                        harness_share=1 / 3, hint=bottleneck_hint(0.95, "asyncio", 0, 60.0)).lines()
    assert lines[-1].startswith("hint: the driver is the bottleneck") and "33.3%" in lines[1]
