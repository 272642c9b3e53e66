"""Every command of the README and the docs/ pages, run as written (issues 31, 36), as `tests/test_readme_tour.py`
runs the tour: the pages continue the tour, so the tour runs first (on a tiny world, `--size small` becoming
`--size tiny`), then each page's command blocks and Python blocks in order, in the same directory. The model
servers are the pages' own `arena serve` lines (in-process, on free ports: `tests/support/doc_commands.py`); the
tests' Serper stand-in (`tests/support/fake_serper.py`) answers for Google in the blocks that say they need a Serper
key. What the pages call "the released data" (`vistahop/datasets.json`) is a `datasets.json` pointing at the tour
world's VistaArena export.

A block that is not meant to run says why (`<!-- not run: REASON -->` before its fence), a block that needs what a
fresh clone lacks says so on its first line (`# needs WHAT`); both are few and listed here (`NOT_RUN`, `NEEDS`), so
a new one is a decision this test sees."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
from typer.testing import CliRunner

from arena.cli.main import app
from tests.support.doc_commands import (README, ROOT, Block, ServedModels, command_blocks, commands, pages,
                                        python_blocks)
from tests.support.fake_serper import FakeGoogleApis

# The blocks not run, by page: none today.
NOT_RUN: dict[str, int] = {}
# The blocks that need a Serper key, by page (run here against the Serper stand-in).
NEEDS = {"README.md": 1, "docs/live-web.md": 1}

TOUR = command_blocks(README)[0]


def run_block(block: Block, models: ServedModels, serper: FakeGoogleApis, monkeypatch) -> list[str]:
    """Run a command block's commands in order in the current directory; their outputs. A world is built at
    the tiny size; an `arena serve` line starts its server; a Serper search is pointed at the stand-in (which serves
    on loopback, with no pause between listings). A block that needs a Serper key gets its own models: the tour
    world's `text-only` policy served (it searches the question, so Google is asked through the stand-in; the
    oracle's gold path needs the world's own corpus)."""
    if block.needs:
        with ServedModels() as searching:
            searching.start(("--data", "worlds/vh", "--policy", "text-only"), block.where)
            return run_commands(block, searching, serper, monkeypatch)
    return run_commands(block, models, serper, monkeypatch)


def run_commands(block: Block, models: ServedModels, serper: FakeGoogleApis, monkeypatch) -> list[str]:
    runner, outputs = CliRunner(), []
    for command in commands(block):
        if command.kind == "export":
            monkeypatch.setenv(*command.args)
            continue
        if command.kind == "serve":
            models.start(command.args, command.where)
            continue
        if command.kind != "arena":
            continue
        args = models.rewrite(command.args)
        if args[:2] == ["world", "build"]:
            args = ["tiny" if a == "small" else a for a in args]
        if "web_provider=serper" in args:
            args += ["--tool-option", f"web_endpoint={serper.base}", "--tool-option", "allow_private_hosts=true",
                     "--tool-option", "web_min_interval=0"]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, f"{command.where}: arena {' '.join(command.args)}\n{result.output}"
        outputs.append(result.output)
    return outputs


@pytest.fixture(scope="module")
def toured(tmp_path_factory):
    """A directory where the README's tour has run, the stand-ins serving; the released data staged."""
    home = tmp_path_factory.mktemp("docs")
    serper = FakeGoogleApis({"...": None, "key1": None, "key2": None})
    with ServedModels() as models, pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.chdir(home)
        monkeypatch.setenv("ARENA_PROGRESS_EVERY", "30")
        run_block(TOUR, models, serper, monkeypatch)
        export = json.loads((home / "worlds/vh/vistaarena/datasets.json").read_text())
        (entry,) = export.values()
        (home / "vistahop").mkdir()
        (home / "vistahop/datasets.json").write_text(json.dumps(
            {"vistahop": {**entry, "root": "../worlds/vh"}}, indent=2))
        yield home, models, serper, monkeypatch
    serper.stop()


def page_ids() -> list[str]:
    return [str(p.relative_to(ROOT)) for p in pages()]


@pytest.mark.parametrize("page", page_ids())
def test_every_command_of_the_page_runs_as_written(page, toured):
    home, models, serper, monkeypatch = toured
    path = ROOT / page
    blocks = [b for b in command_blocks(path) if b != TOUR]
    skipped = [b for b in blocks if b.not_run]
    assert len(skipped) == NOT_RUN.get(page, 0), [(b.where, b.not_run) for b in skipped]
    needing = [b for b in command_blocks(path) if b.needs]
    assert len(needing) == NEEDS.get(page, 0), [(b.where, b.needs) for b in needing]
    assert all("Serper key" in b.needs for b in needing), "only a Serper key has a stand-in here"
    for block in blocks:
        if not block.not_run:
            run_block(block, models, serper, monkeypatch)
    for block in python_blocks(path):
        # a page's placeholder RUN_DIR (docs/python-api.md) stands for the tour's oracle run
        scope = {"__name__": f"docs:{block.where}", "RUN_DIR": str(home / "logs" / "tour-oracle")}
        exec(compile(block.text, block.where, "exec"), scope)


def test_the_reproduce_command_runs_the_papers_settings(toured):
    """The README's "Reproduce the paper" run: the published protocol, the three settings at N = 10 with five
    repeats, the llm judge, the model's search answered by the Serper stand-in and summarised."""
    home, models, serper, monkeypatch = toured
    run = home / "logs" / "paper-mine"
    if not (run / "run.json").exists():
        block = next(b for b in command_blocks(README) if "paper-mine" in b.text)
        run_block(block, models, serper, monkeypatch)
    config = json.loads((run / "run.json").read_text())["config"]
    assert config["grid"]["protocol"] == "original"
    assert sorted(config["grid"]["settings"]) == ["no-tool", "search", "search+crop"]
    assert config["grid"]["max_rounds"] == [10] and config["grid"]["repeats"] == 5
    assert config["judge"]["name"] == "llm"
    calls = [json.loads(line) for line in (run / "calls.jsonl").read_text().splitlines()]
    agent = [c for c in calls if c["request"]["model"] == "YOUR/MODEL"]
    published = {"temperature": 0.7, "max_tokens": 4096, "top_p": 0.8, "top_k": 20, "presence_penalty": 1.5,
                 "repetition_penalty": 1.0, "seed": 3407}  # PROTOCOLS.md, "At the wire"
    assert agent and all({k: c["request"].get(k) for k in published} == published for c in agent)
    assert {c["response"]["model"] for c in agent} == {"arena-serve/text-only"}
    summaries = [c for c in calls if c["request"]["model"] == "Qwen/Qwen3-32B"]  # the web summariser's calls
    assert summaries and {c["response"]["model"] for c in summaries} == {"arena-serve/extractive-summary"}
    assert serper.calls["/search"] >= 1, "the model's search went to Google through the Serper stand-in"
    assert "SERPER_API_KEY" in os.environ


def test_a_command_outside_a_block_the_tests_run_is_refused(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text\n\n```bash\narena summary logs/x\nrm -rf logs\n```\n")
    block = command_blocks(page)[0]
    with pytest.raises(ValueError, match=r"page.md:5: not a command the docs tests can run: 'rm -rf logs'"):
        commands(block)


def test_a_block_marked_not_run_says_why(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("<!-- not run: needs a live Serper key -->\n\n```bash\narena run --data x\n```\n\n"
                    "```bash\narena summary logs/x  # runs\n```\n\n```bash\nmake demo\n```\n\n"
                    "```bash\n# needs a Serper key\narena serve --data w --port 8000 &\narena run --data w\n```\n")
    marked, plain, needing = command_blocks(page)
    assert marked.not_run == "needs a live Serper key" and plain.not_run is None and plain.needs is None
    assert [c.args for c in commands(plain)] == [("summary", "logs/x")]
    assert needing.needs == "a Serper key" and needing.not_run is None
    assert [(c.kind, c.args) for c in commands(needing)] == [("serve", ("--data", "w", "--port", "8000")),
                                                              ("arena", ("run", "--data", "w"))]


def test_a_serve_line_that_would_block_is_refused(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```bash\narena serve --data w\n```\n")
    with pytest.raises(ValueError, match=r"page.md:2: `arena serve` runs until stopped: end the line with &"):
        commands(command_blocks(page)[0])


def test_the_index_lists_every_page_and_the_readme_links_the_first_hour_pages():
    index = (ROOT / "docs" / "index.md").read_text()
    listed = set(re.findall(r"\]\(([\w-]+\.md)\)", index))
    assert listed == {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    readme = README.read_text()
    assert "(docs/python-api.md)" in readme and "(docs/serve.md)" in readme
    assert re.search(r"`make demo` takes about \d+ (seconds|minutes?)", " ".join(readme.split()))


def test_make_demo_says_it_is_installing(tmp_path):
    """The first `make demo` installs for minutes: a line says so before pip runs, and pip is not silenced."""
    dry = subprocess.run(["make", "-n", "demo", f"VENV={tmp_path / 'venv'}"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    installs = [i for i, line in enumerate(dry) if "pip install" in line]
    assert installs and all(" -q" not in dry[i] for i in installs)
    assert any(line.startswith("echo") and "installing" in line for line in dry[:installs[0]])
