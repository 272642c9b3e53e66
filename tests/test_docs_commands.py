"""Every command of the README and the docs/ pages, run as written (issue 31), as `tests/test_readme_tour.py` runs
the tour: the pages continue the tour, so the tour runs first (on a tiny world, `--size small` becoming
`--size tiny`), then each page's command blocks and Python blocks in order, in the same directory, with local
OpenAI-compatible servers standing in for the model (:8000), the judge and the web summariser (:8001, :8002) and
the tests' Serper stand-in for Google (`tests/support/fake_serper.py`). What the pages call "the released data"
(`vistahop/datasets.json`) is a `datasets.json` pointing at the tour world's VistaArena export.

A block that is not meant to run says why (`<!-- not run: REASON -->` before its fence); such blocks are few and
listed in `NOT_RUN`, so a new one is a decision this test sees."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from arena.cli.main import app
from tests.support.doc_commands import (README, ROOT, Block, ModelStandIns, command_blocks, commands, pages,
                                        python_blocks)
from tests.support.fake_serper import FakeGoogleApis

# The blocks not run, by page: none today.
NOT_RUN: dict[str, int] = {}

TOUR = command_blocks(README)[0]


def run_block(block: Block, models: ModelStandIns, serper: FakeGoogleApis, monkeypatch) -> list[str]:
    """Run a command block's commands in order in the current directory; their outputs. A world is built at
    the tiny size; a Serper search is pointed at the stand-in (which serves on loopback, with no pause between
    listings)."""
    runner, outputs = CliRunner(), []
    for command in commands(block):
        if command.kind == "export":
            monkeypatch.setenv(*command.args)
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
    with ModelStandIns() as models, pytest.MonkeyPatch.context() as monkeypatch:
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
    sent = [r for r in models.agent.requests if r.get("model") == "YOUR/MODEL"]
    published = {"temperature": 0.7, "max_tokens": 4096, "top_p": 0.8, "top_k": 20, "presence_penalty": 1.5,
                 "repetition_penalty": 1.0, "seed": 3407}  # PROTOCOLS.md, "At the wire"
    assert sent and all({k: r.get(k) for k in published} == published for r in sent)
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
                    "```bash\narena summary logs/x  # runs\n```\n\n```bash\nmake demo\n```\n")
    marked, plain = command_blocks(page)
    assert marked.not_run == "needs a live Serper key" and plain.not_run is None
    assert [c.args for c in commands(plain)] == [("summary", "logs/x")]
