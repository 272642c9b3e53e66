"""What a newcomer sees first (issue 31): `arena demo` says what its agents are and, under the tables, what
every column and finish reason means; `arena summary --legend` does the same for any run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import get_args

from typer.testing import CliRunner

from arena.core.trajectory import FinishReason
from arena.cli.main import app
from arena.cli.demo import AGENT_ROLES, AGENTS
from arena.review.table import COLUMN_MEANINGS, FINISH_MEANINGS, legend_lines, summary_table


def test_every_column_and_finish_reason_has_a_meaning() -> None:
    group = {"agent": "a", "setting": "s", "max_rounds": 10, "episodes": 1, "pass1": 0.0, "avg_tool_calls": 0.0,
             "avg_rounds": 1.0, "tool_utilisation": 0.0, "invalid_calls": 0, "cost": 0.5,
             "finish_reasons": {reason: 1 for reason in get_args(FinishReason)}}
    summary = {"judge": "normalized", "groups": [group]}
    headers = [str(c.header) for c in summary_table(summary, wide=True).columns]
    assert "cost $" in headers
    assert [h for h in headers if not COLUMN_MEANINGS.get(h)] == []
    assert [r for r in get_args(FinishReason) if not FINISH_MEANINGS.get(r)] == []
    text = "\n".join(legend_lines(summary, width=80, wide=True))
    assert all(len(line) <= 80 for line in text.splitlines())
    for header in headers:
        assert re.search(rf"^  {re.escape(header)}  ", text, re.M), header


def test_the_demo_says_what_its_agents_are_and_what_its_columns_mean(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["demo", "--size", "tiny", "--out", str(tmp_path / "logs"),
                                      "--worlds", str(tmp_path / "worlds")])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())  # rich wraps at the console width
    for agent in AGENTS:
        assert f"{agent} {' '.join(AGENT_ROLES[agent].split())}" in out
    legend = out.split("what the columns mean", 1)[1]
    for header in ("Pass@1 % [95% CI]", "errored", "finish"):  # the compact table's columns
        assert f"{header} {' '.join(COLUMN_MEANINGS[header].split())}" in legend
    assert "arena summary RUN --wide" in out
    assert "answered the agent answered within its N rounds" in legend
    # the tiny world's oracle runs out of rounds at N = 10 on its longest chains: the final-answer turn is explained
    oracle = json.loads(next((tmp_path / "logs").glob("vistahop-mini-oracle-*/summary.json")).read_text())
    assert any("budget" in g["finish_reasons"] for g in oracle["groups"])
    assert f"budget {' '.join(FINISH_MEANINGS['budget'].split())}" in legend


def test_summary_legend_on_request(tiny_data: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"*": [{"answer": "x"}]}))
    ran = runner.invoke(app, ["run", "--data", str(tiny_data), "--agent", "scripted", "--script", str(script),
                              "--judge", "normalized", "--out", str(tmp_path / "logs"), "--run-id", "r"])
    assert ran.exit_code == 0, ran.output
    plain = runner.invoke(app, ["summary", str(tmp_path / "logs" / "r")])
    legend = runner.invoke(app, ["summary", str(tmp_path / "logs" / "r"), "--legend"])
    wide = runner.invoke(app, ["summary", str(tmp_path / "logs" / "r"), "--legend", "--wide"])
    assert "tool utilisation" not in plain.output and "util %" not in plain.output
    assert "episodes in the row" in legend.output and "answered" in legend.output.split("finish reasons:", 1)[1]
    assert "util %" not in legend.output  # the compact table's columns only
    assert "util %" in wide.output and "tool utilisation" in wide.output
