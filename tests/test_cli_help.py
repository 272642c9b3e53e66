"""What a newcomer sees first (issue 31): `--help` at 80 columns cuts no option name, `arena --help` lists each
command once in a named group, and a mistyped setting, tool, agent, judge or option gets a "did you mean"."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from arena.cli.main import app
from arena.runs.names import closest, setting_did_you_mean

ARENA = str(Path(sys.executable).with_name("arena"))


def help_at(columns: int, *command: str) -> str:
    """`arena COMMAND --help` as a terminal of that width shows it (a real process: rich reads COLUMNS)."""
    env = {**os.environ, "COLUMNS": str(columns), "TERMINAL_WIDTH": str(columns)}
    done = subprocess.run([ARENA, *command, "--help"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("command", [["run"], ["fork"], ["judge"], ["view"]])
def test_no_option_name_is_cut_at_80_columns(command):
    text = help_at(80, *command)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in text
    click_command = typer.main.get_command(app).commands[command[0]]
    names = [name for param in click_command.params for name in (*param.opts, *param.secondary_opts)
             if name.startswith("--")]
    assert len(names) > 5
    cells = {cell for line in lines for cell in re.split(r"[│\s,]+", line)}
    missing = [name for name in names if name not in cells]
    assert not missing, f"cut or missing at 80 columns: {missing}"


def test_top_help_lists_each_command_once_in_a_named_group():
    text = help_at(80)
    listed = re.findall(r"^│ ([a-z][a-z-]*) {2,}", text, re.M)
    assert len(listed) == len(set(listed)), sorted(listed)
    visible = [name for name, cmd in typer.main.get_command(app).commands.items() if not cmd.hidden]
    assert sorted(listed) == sorted(visible)
    assert "sweep" not in listed and "(`arena sweep` is the same command)" in " ".join(text.split()).replace("│ ", "")
    panels = re.findall(r"^╭─ (.+?) ─", text, re.M)
    assert panels == ["Options", "Run", "Look at runs", "Worlds and plugins"], panels
    # a command's line is its docstring's first paragraph, wrapped to the panel, not broken where the source was
    assert "tasks x settings x budgets x repeats x agents/models" in " ".join(
        part.strip() for part in re.findall(r"│(.*)│", text))


def test_sweep_is_still_the_run_command():
    result = CliRunner().invoke(app, ["sweep", "--help"])
    assert result.exit_code == 0 and "--max-rounds" in result.output


@pytest.mark.parametrize("extra, suggestion", [
    (["--setting", "serch+crop"], "setting 'serch+crop' names unknown tool(s) serch (did you mean 'search+crop'?)"),
    (["--setting", "search+crp"], "unknown tool(s) crp (did you mean 'search+crop'?)"),
    (["--setting", "image_zoom_in_tol"], "(did you mean 'image_zoom_in_tool'?)"),
    (["--tool-limit", "text_serch_tool=2"], "unknown tool 'text_serch_tool' (did you mean 'text_search_tool'?)"),
    (["--agent", "oracel"], "unknown agent 'oracel' (did you mean 'oracle'?)"),
    (["--judge", "normalised"], "unknown judge 'normalised' (did you mean 'normalized'?)"),
    (["--tool-option", "top_kk=3"], "unknown tool option(s) top_kk (did you mean 'top_k'?)"),
    (["--agent", "scripted", "--agent-option", "scirpt=x"], "does not take scirpt (did you mean 'script'?)"),
])
def test_a_mistyped_name_gets_a_did_you_mean(tiny_data, tmp_path, extra, suggestion):
    agent = [] if "--agent" in extra else ["--agent", "oracle"]
    args = ["run", "--data", str(tiny_data), *agent, "--out", str(tmp_path / "logs"), *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert suggestion in " ".join(result.output.replace("│", " ").split()), result.output
    assert not (tmp_path / "logs").exists()


def test_no_suggestion_for_a_name_close_to_nothing():
    assert closest("teleport", ["search", "search+crop", "no-tool"]) is None
    assert closest("oracle", ["normalized", "mcq", "llm"]) is None
    assert setting_did_you_mean("teleport+crop") == ""
    assert setting_did_you_mean("no-tol") == " (did you mean 'no-tool'?)"
