"""An out-of-tree suite is one package with one `Suite` class, named by an `arena` entry point: its loader,
judge, agents, world, world check, metrics and paper table work from `arena run`, `arena report`,
`arena world build` and `arena world check`, found only through `importlib.metadata` (as `test_plugins`
installs its plug-in: a package and a `*.dist-info` directory on the subprocess's PYTHONPATH)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arena.core.suite import SUITES, Suite, register_suite

ARENA = str(Path(sys.executable).with_name("arena"))

SUITE = '''
"""Riddles answered by one word: a third-party arena suite in one class."""
import json
from pathlib import Path

from arena.core.agent import Agent, AgentTurn
from arena.core.dataset import Dataset, Loader
from arena.core.judge import Judge
from arena.core.suite import PaperTable, Suite, cell
from arena.core.task import Task
from arena.core.verdict import Verdict
from arena.core.world import Baseline, WorldCheck, WorldInfo, write_world

RIDDLES = [("What has keys but opens no locks?", "piano"), ("What runs but never walks?", "river"),
           ("What has hands but cannot clap?", "clock")]


def riddle(i, question, answer):
    return Task(id=f"riddle-{i}", suite="riddle", question=question, answers=[answer], judge="riddle-exact")


def load_riddles(path, root=None):
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    tasks = [riddle(i, row["q"], row["a"]) for i, row in enumerate(rows)]
    return [Dataset(name=path.stem, root=(root or path.parent).resolve(), tasks=tasks, source=path)]


def build_world(out, *, seed=0, size="small"):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = [riddle(i, q, a) for i, (q, a) in enumerate(RIDDLES)]
    (out / "tasks.jsonl").write_text("".join(t.model_dump_json() + "\\n" for t in tasks))
    write_world(out, WorldInfo(name="riddle-mini", suite="riddle", seed=seed, size=size, counts={"tasks": len(tasks)}))
    return out


def static(world, tasks):
    problems = [f"task {t.id}: no answer" for t in tasks if not t.answers]
    return problems, {"riddles": len(tasks)}


class Oracle(Agent):
    def __init__(self, id="riddle-oracle"):
        self.id = id

    async def act(self, view):
        return AgentTurn(output="", action="answer", answer=view.task.answers[0])


class Blank(Agent):
    def __init__(self, id="riddle-blank"):
        self.id = id

    async def act(self, view):
        return AgentTurn(output="", action="answer", answer="no idea")


class Exact(Judge):
    id = "riddle-exact"

    async def score(self, episode, blobs=None):
        ok = (episode.answer or "").strip().lower() in [a.lower() for a in episode.task.answers]
        return Verdict(episode_id=episode.id, key=episode.key, judge=self.id, score=float(ok), correct=ok)


def solved(rows):
    return {"solved": sum(1 for _, v in rows if v is not None and v.correct), "asked": len(rows)}


class Riddles(Suite):
    """Riddles: one word answers, judged exactly."""

    name = "riddle"
    loaders = (Loader("riddles", detect=lambda path: path.suffix == ".riddles", load=load_riddles, published=False),)
    judges = {"riddle-exact": Exact}
    agents = {"riddle-oracle": Oracle, "riddle-blank": Blank}
    worlds = {"riddle-mini": build_world}
    world_checks = {"riddle-mini": WorldCheck(
        baselines=(Baseline("riddle-oracle", "no-tool", max_rounds=1, min_pass=1.0),
                   Baseline("riddle-blank", "no-tool", max_rounds=1, max_pass=0.0)),
        static=static, judge="auto", oracle="riddle-oracle")}
    metrics = solved

    @classmethod
    def paper_tables(cls, groups):
        return [PaperTable("Riddles solved", ["model", "solved", "asked"],
                           [[g.label, cell(g.figures["solved"]), cell(g.figures["asked"])] for g in groups])]
'''


def install_suite(site: Path) -> Path:
    """Lay out `arena_riddle_suite` 0.1 as an installed distribution whose entry point names its one class."""
    (site / "arena_riddle_suite").mkdir(parents=True)
    (site / "arena_riddle_suite" / "__init__.py").write_text(SUITE)
    info = site / "arena_riddle_suite-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: arena-riddle-suite\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[arena]\nriddle = arena_riddle_suite:Riddles\n")
    (info / "RECORD").write_text("")
    return site


def arena(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
           "COLUMNS": "200"}
    return subprocess.run([ARENA, *args], env=env, capture_output=True, text=True, timeout=600)


def test_an_out_of_tree_suite_runs_reports_and_checks_its_world(tmp_path: Path) -> None:
    site = install_suite(tmp_path / "site")
    data = tmp_path / "mine.riddles"
    data.write_text('{"q": "What has a neck but no head?", "a": "bottle"}\n{"q": "What gets wetter as it dries?", '
                    '"a": "towel"}\n')
    done = arena(site, "run", "--data", str(data), "--agent", "riddle-oracle", "--setting", "no-tool",
                 "--max-rounds", "1", "--out", str(tmp_path / "logs"), "--run-id", "riddles")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((tmp_path / "logs" / "riddles" / "summary.json").read_text())
    assert [g["suites"]["riddle"] for g in summary["groups"]] == [{"solved": 2, "asked": 2}]
    shown = arena(site, "report", str(tmp_path / "logs" / "riddles"))
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "Riddles solved" in shown.stdout

    world = tmp_path / "riddle-world"
    built = arena(site, "world", "build", "riddle-mini", "--out", str(world))
    assert built.returncode == 0, built.stdout + built.stderr
    checked = arena(site, "world", "check", str(world), "--out", str(tmp_path / "check"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "riddle-mini (small, seed 0): OK" in checked.stdout
    assert "riddle-blank" in checked.stdout and "Pass@1   0.00%" in checked.stdout


def test_without_the_package_its_world_is_unknown(tmp_path: Path) -> None:
    done = arena(tmp_path / "empty-site", "world", "build", "riddle-mini", "--out", str(tmp_path / "w"))
    assert done.returncode != 0 and "unknown world 'riddle-mini'" in done.stdout + done.stderr


def test_a_suite_is_registered_once_and_a_taken_name_is_refused() -> None:
    builtin = SUITES["vistahop"]
    assert register_suite(builtin) is builtin, "registering the same class again changes nothing"
    clone = type("VistaHopClone", (Suite,), {"name": "vistahop"})
    with pytest.raises(ValueError, match="suite 'vistahop' registered twice"):
        register_suite(clone)
    thief = type("Thief", (Suite,), {"name": "thief", "agents": {"oracle": lambda: None}})
    with pytest.raises(ValueError, match="agent 'oracle' registered twice"):
        register_suite(thief)
    with pytest.raises(TypeError, match="not a Suite subclass"):
        register_suite(type("Loose", (), {"name": "loose"}))  # type: ignore[arg-type]
    SUITES.pop("thief", None)


def test_every_built_in_suite_is_one_class_named_by_an_entry_point() -> None:
    from importlib.metadata import entry_points

    named = {ep.name: ep.value for ep in entry_points(group="arena") if ep.value.startswith("arena.suites.")}
    assert sorted(named) == ["carv", "condchain", "mmir", "ureason", "vistahop"]
    assert {SUITES[name].__module__ + ":" + SUITES[name].__name__ for name in named} == set(named.values())


def test_an_install_without_the_suites_entry_points_says_to_reinstall(monkeypatch: pytest.MonkeyPatch) -> None:
    from arena.runs import plugins

    monkeypatch.setattr(plugins, "entry_points", lambda group: [])
    monkeypatch.setattr(plugins, "_scanned", None)  # the scan an earlier load kept: this install is another one
    with pytest.raises(plugins.PluginError, match=r"built-in suites are not installed.*pip install -e \."):
        plugins.load_plugins()
