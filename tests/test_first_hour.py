"""Issue 36, items 2-4 and 6: what a new user meets in the first hour. Results tables read whole at 80 columns
(and piped output honours COLUMNS), `arena summary --format` for scripts, every screen of an incomplete run says
so first with an "N of M" count, a run refused before it starts leaves no directory, Ctrl-C says what is kept
and how to resume, usage errors are one line, a permalink's episode is at the top of the viewer."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from arena.cli.common import PlainProgress, output_width
from arena.cli.main import app
from arena.review.fit import fits
from arena.review.rundata import load_run
from arena.review.table import fitted_summary, summary_table
from arena.review.viewer import write_viewer
from arena.runs.config import RunConfig
from arena.runs.runner import run
from tests.support.tiny_dataset import write_tiny_dataset

ARENA = str(Path(sys.executable).with_name("arena"))
ROOT = Path(__file__).resolve().parents[1]
cli = CliRunner()
SCRIPT = {"*": [{"tool": "text_search_tool", "arguments": {"query": "Orvanta lighthouse"}}, {"answer": "1874"}]}


def arena(*args: str, columns: int | None = None, **kwargs) -> subprocess.CompletedProcess:
    """`arena ARGS` in a real process whose stdout is a pipe (COLUMNS set when given, else unset)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run([ARENA, *args], capture_output=True, text=True, env=env, timeout=120, **kwargs)


@pytest.fixture
def sweep(tiny_data: Path, tmp_path: Path) -> Path:
    """A finished 10,21 budget sweep of a scripted agent (4 episodes)."""
    return run(RunConfig(data=str(tiny_data), agent="scripted", agent_options={"script": SCRIPT}, max_rounds=[10, 21],
                         judge="normalized", out=str(tmp_path / "logs"), run_id="sweep")).run_dir


@pytest.mark.parametrize("columns", [80, 120, None])
def test_summary_piped_fits_the_width_and_shows_both_budgets(sweep: Path, columns: int | None) -> None:
    done = arena("summary", str(sweep), columns=columns)
    assert done.returncode == 0, done.stderr
    width = columns or 80  # piped without COLUMNS: laid out for 80
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= width, done.stdout
    assert "…" not in done.stdout
    assert "agent: scripted" in done.stdout  # one agent: named above the table, not in a column
    rows = [line.split() for line in lines if line.startswith("search+crop")]
    assert [row[:2] for row in rows] == [["search+crop", "10"], ["search+crop", "21"]]
    assert all(row[2] == "2" and row[3:6] == ["50.00", "[0.0,", "100.0]"] for row in rows), rows  # whole
    wide = arena("summary", str(sweep), "--wide", columns=200)
    assert "util %" in wide.stdout and "tok/ep" in wide.stdout and "util %" not in done.stdout


def test_output_width_follows_columns_then_the_terminal_then_80() -> None:
    assert output_width({"COLUMNS": "120"}, terminal=False) == 120
    assert output_width({}, terminal=False) == 80
    assert output_width({}, terminal=True) is None  # rich asks the terminal
    assert output_width({"COLUMNS": "x"}, terminal=False) == 80


def test_summary_formats_for_scripts_and_papers(sweep: Path) -> None:
    recomputed = load_run(sweep).summary
    as_json = json.loads(arena("summary", str(sweep), "--format", "json").stdout)
    assert as_json["groups"] == json.loads(json.dumps(recomputed["groups"]))
    assert as_json["completeness"] == {"planned": 4, "recorded": 4, "errored": 0, "never_played": 0,
                                       "complete": True}
    rows = list(csv.DictReader(io.StringIO(arena("summary", str(sweep), "--format", "csv").stdout)))
    assert [(r["max_rounds"], r["episodes"], float(r["pass1"])) for r in rows] == [("10", "2", 50.0),
                                                                                   ("21", "2", 50.0)]
    markdown = arena("summary", str(sweep), "--format", "markdown").stdout
    assert "| agent | setting | N | eps | Pass@1 % [95% CI] | errored | finish |" in markdown
    assert "| scripted | search+crop | 21 | 2 | 50.00 [0.0, 100.0] | 0 | answered:2 |" in markdown


def test_summary_of_a_path_that_does_not_exist() -> None:
    result = cli.invoke(app, ["summary", "/nonexistent/run"])
    assert result.exit_code == 2 and "/nonexistent/run: no such directory" in result.output


def test_a_usage_error_is_one_line() -> None:
    done = arena("run", "--data", "x", "--nothing-like-it")
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("arena run: error: No such option: --nothing-like-it") and line.endswith(
        "(arena run -h for help)"), line


def test_a_run_refused_before_it_starts_leaves_no_directory(tiny_data: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("SERPER_API_KEY", raising=False)
    out = tmp_path / "logs"
    refused = ["run", "--data", str(tiny_data), "--agent", "scripted", "--agent-option", f"script={json.dumps(SCRIPT)}",
               "--web", "record", "--tool-option", "web_provider=serper", "--out", str(out)]
    result = cli.invoke(app, [*refused, "--run-id", "paper"])
    assert result.exit_code == 2 and "needs an API key" in result.output, result.output
    assert not (out / "paper").exists()
    # a directory that was there before is never removed, even when its run is refused
    kept = run(RunConfig(data=str(tiny_data), agent="scripted", agent_options={"script": SCRIPT}, out=str(out),
                         run_id="kept")).run_dir
    again = cli.invoke(app, [*refused, "--run-id", "kept", "--force", "--repeats", "2"])  # new episodes to play
    assert again.exit_code == 2 and (kept / "episodes.jsonl").stat().st_size > 0


def test_run_warnings_come_before_the_table_every_time(tmp_path: Path) -> None:
    data = write_tiny_dataset(tmp_path / "data")
    lines = data.read_text().splitlines()
    data.write_text("\n".join([lines[0], "{broken", *lines[1:]]) + "\n")
    ran = cli.invoke(app, ["run", "--data", str(data), "--agent", "direct", "--out", str(tmp_path / "logs"),
                           "--run-id", "bad"])
    assert ran.exit_code == 0, ran.output
    for _ in range(2):
        shown = " ".join(cli.invoke(app, ["summary", str(tmp_path / "logs" / "bad")]).output.split())
        warning = shown.index("JSON line that does not parse (line skipped)")
        assert f"{data}:2" in "".join(shown.split()) and warning < shown.index("Pass@1")  # a long path folds


def test_the_progress_start_line_is_said_once_for_several_runs() -> None:
    said: list[str] = []
    progress = PlainProgress(10.0, write=said.append)
    for _ in range(3):  # arena world check plays three baselines
        progress.start(5, 5)
    assert len(said) == 1 and progress.todo == 15


WITH_DEFAULT_SIGINT = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                       "os.execv(sys.argv[1], sys.argv[1:])")
"""Run the command its arguments name with SIGINT's default disposition (kept across `exec`, unlike a handler)."""


@pytest.fixture
def slow_server():
    """The tests' OpenAI-compatible stand-in in its own process, answering each request after 1.5 s."""
    server = subprocess.Popen([sys.executable, "-m", "tests.support.openai_server", "--delay", "1.5"],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        yield server.stdout.readline().strip()
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_ctrl_c_says_what_is_kept_and_how_to_resume(slow_server: str, tmp_path: Path) -> None:
    data = write_tiny_dataset(tmp_path / "data", n_items=6)
    run_dir = tmp_path / "logs" / "slow"
    env = {**os.environ, "ARENA_PROGRESS_EVERY": "0"}
    # a user's Ctrl-C reaches a command whose SIGINT is the default; a test run started as a background job (`cmd &`
    # in a script) has it ignored, and its children inherit that: the command is started with it set back
    command = [ARENA, "run", "--data", str(data), "--agent", "openai", "--model", "m", "--base-url", slow_server,
               "--concurrency", "2", "--out", str(tmp_path / "logs"), "--run-id", "slow"]
    process = subprocess.Popen([sys.executable, "-c", WITH_DEFAULT_SIGINT, *command], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env)
    deadline = time.monotonic() + 60
    episodes = run_dir / "episodes.jsonl"
    while time.monotonic() < deadline and not (episodes.is_file() and episodes.read_text().count("\n") >= 1):
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 130, output
    kept = episodes.read_text().count("\n")
    said = " ".join(output.split())
    assert f"interrupted: {kept} of 6 episode(s) are kept in {run_dir}" in said, output
    assert f"will be played again by `arena resume {run_dir}`" in said
    assert 1 <= kept < 6
    # every screen of the unfinished run says so first, with its count
    summary = " ".join(cli.invoke(app, ["summary", str(run_dir)]).output.split())
    assert summary.startswith(f"incomplete: {6 - kept} of 6 episodes never played"), summary
    assert f"`arena resume {run_dir}`" in summary
    complete = run(RunConfig(data=str(data), agent="scripted", agent_options={"script": SCRIPT},
                             out=str(tmp_path / "logs"), run_id="complete")).run_dir
    compared = " ".join(cli.invoke(app, ["compare", str(complete), str(run_dir)]).output.split())
    assert compared.startswith(f"warning: run B (slow) is incomplete: {6 - kept} of 6 episodes never played")
    assert "run A" not in compared
    report = " ".join(cli.invoke(app, ["report", str(run_dir), "--out", str(tmp_path / "rep")]).output.split())
    assert report.startswith(f"warning: slow is incomplete: {6 - kept} of 6")
    html_report = (tmp_path / "rep" / "report.html").read_text()
    assert html_report.index("class=incomplete") < html_report.index("<table")
    viewed = cli.invoke(app, ["view", str(run_dir)])
    assert viewed.exit_code == 0 and " ".join(viewed.output.split()).startswith("warning: slow is incomplete")
    page = (run_dir / "viewer.html").read_text()
    assert page.index('class="incomplete"') < page.index('id="summary"')
    assert f"{6 - kept} of 6 episodes never played" in page
    judged = " ".join(cli.invoke(app, ["judge", str(run_dir), "--judge", "normalized", "--as", "again"]).output.split())
    assert f"incomplete: {6 - kept} of 6 episodes never played" in judged, judged
    assert judged.index("incomplete:") < judged.index("Pass@1")


def test_a_permalink_brings_its_episode_to_the_top(tiny_data: Path, tmp_path: Path) -> None:
    playwright_api = pytest.importorskip("playwright.async_api")
    from arena.tools.chromium import launch_chromium

    result = run(RunConfig(data=str(tiny_data), agent="scripted", agent_options={"script": SCRIPT},
                           max_rounds=[10, 21], repeats=2, judge="normalized", out=str(tmp_path / "logs"),
                           run_id="linked"))
    page_path = write_viewer([load_run(result.run_dir)], tmp_path / "viewer.html")
    last = json.loads(result.run_dir.joinpath("episodes.jsonl").read_text().splitlines()[-1])["id"]

    async def top_of_opened_row() -> float:
        async with playwright_api.async_playwright() as p:
            browser = await launch_chromium(p)
            try:
                page = await browser.new_page(viewport={"width": 1280, "height": 900})
                await page.goto(page_path.resolve().as_uri() + f"#ep={last}")
                await page.wait_for_selector("body[data-ready='1']", timeout=15000)
                return await page.evaluate("document.querySelector('tr.row.focus').getBoundingClientRect().top")
            finally:
                await browser.close()

    # before, the page scrolled while it was still too short: the row stopped a band lower than the top
    assert abs(asyncio.run(top_of_opened_row())) < 2


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_two_long_agent_names_read_whole_at_any_width(sweep: Path, columns: int) -> None:
    """Two agents named as model runs name them: each name breaks after its last "/" and no word of any cell is
    cut, folded or dropped, stacked or as blocks when the terminal is too narrow for one line per row."""
    summary = load_run(sweep).summary
    names = ["openai:Qwen/Qwen2.5-VL-7B-Instruct", "openai:OpenGVLab/InternVL3-8B"]
    summary["groups"] = [dict(g, agent=name) for name in names for g in summary["groups"]]
    console = Console(width=columns, file=io.StringIO(), color_system=None)
    console.print(fitted_summary(console, summary, title="two"))
    shown = console.file.getvalue()
    assert max(len(line) for line in shown.splitlines()) <= columns, shown
    words = shown.split()
    for name in names:
        head, _, tail = name.rpartition("/")
        assert name in words or (f"{head}/" in words and tail in words), shown
    assert shown.count("search+crop") == 4 and "…" not in shown
    assert fits(console, summary_table(summary, "two")) == (columns >= 120)  # else stacked
