"""An out-of-tree plugin, installed as a distribution with an `arena` entry point, works from the CLI
and in Ray workers: its tool, setting, agent and judge are found by name everywhere.

The plugin is "installed" the way pip lays out a package: the module plus a `*.dist-info` directory
with `METADATA` and `entry_points.txt`, in a directory on the subprocess's `PYTHONPATH`; the arena
finds it only through `importlib.metadata` (nothing in the arena names it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arena.core.agent import register_agent
from arena.core.tool import register_tool
from arena.runs.plugins import load_entry_points
from tests.support.tiny_dataset import write_tiny_dataset

ARENA = str(Path(sys.executable).with_name("arena"))

PLUGIN = '''
"""A third-party arena plugin: an `echo_tool`, an `echo` setting, an `echo-agent` and an `echo-judge`."""
from pydantic import BaseModel
from arena.core.agent import Agent, AgentTurn, register_agent
from arena.core.judge import Judge, register_judge
from arena.core.settings import register_setting
from arena.core.tool import Tool, ToolResult, register_tool
from arena.core.verdict import Verdict


class EchoArgs(BaseModel):
    text: str


@register_tool
class EchoTool(Tool):
    name = "echo_tool"
    description = "Repeat the text, reversed."
    Args = EchoArgs

    async def run(self, args, ctx):
        return ToolResult(text=args.text[::-1])


register_setting("echo", ["echo_tool"])


class EchoAgent(Agent):
    id = "echo-agent"

    async def act(self, view):
        if not view.steps:
            return AgentTurn(output="call", action="tool_call", tool="echo_tool", arguments={"text": "olleh"})
        return AgentTurn(output="done", action="answer", answer=view.steps[-1].observation.text)


@register_agent("echo-agent")
def echo_agent():
    return EchoAgent()


class EchoJudge(Judge):
    id = "echo-judge"

    async def score(self, episode, blobs=None):
        ok = episode.answer == "hello"
        return Verdict(episode_id=episode.id, key=episode.key, judge=self.id, score=float(ok), correct=ok)


@register_judge("echo-judge")
def echo_judge():
    return EchoJudge()
'''


def install_plugin(site: Path) -> Path:
    """Lay out `arena_echo_plugin` 0.1 as an installed distribution under `site`."""
    (site / "arena_echo_plugin").mkdir(parents=True)
    (site / "arena_echo_plugin" / "__init__.py").write_text(PLUGIN)
    info = site / "arena_echo_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: arena-echo-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[arena]\necho = arena_echo_plugin\n")
    (info / "RECORD").write_text("")
    return site


def run_cli(site: Path, data: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([ARENA, "run", "--data", str(data), "--agent", "echo-agent", "--setting", "echo",
                           "--judge", "echo-judge", "--protocol", "arena", "--out", str(out), *extra],
                          env=env, capture_output=True, text=True, timeout=600)


def verdicts(run_root: Path) -> list[dict]:
    (run_dir,) = [p for p in run_root.iterdir() if p.is_dir()]
    return [json.loads(line) for line in (run_dir / "verdicts.jsonl").read_text().splitlines()]


@pytest.fixture
def plugin_site(tmp_path: Path) -> Path:
    return install_plugin(tmp_path / "site")


def test_an_installed_plugin_runs_from_the_cli(plugin_site: Path, tmp_path: Path) -> None:
    data = write_tiny_dataset(tmp_path / "data")
    done = run_cli(plugin_site, data, tmp_path / "logs")
    assert done.returncode == 0, done.stdout + done.stderr
    found = verdicts(tmp_path / "logs")
    assert len(found) == 2 and all(v["judge"] == "echo-judge" and v["correct"] for v in found)


def test_without_the_plugin_the_same_command_is_refused(tmp_path: Path) -> None:
    data = write_tiny_dataset(tmp_path / "data")
    done = run_cli(tmp_path / "empty-site", data, tmp_path / "logs")
    assert done.returncode != 0 and "echo-agent" in done.stdout + done.stderr


def test_an_installed_plugin_runs_in_ray_workers(plugin_site: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray")
    data = write_tiny_dataset(tmp_path / "data")
    done = run_cli(plugin_site, data, tmp_path / "logs", "--backend", "ray", "--ray-workers", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    found = verdicts(tmp_path / "logs")
    assert len(found) == 2 and all(v["correct"] for v in found)


def test_registries_refuse_a_second_entry_under_a_taken_name() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        @register_agent("scripted")
        def another_scripted():  # pragma: no cover - never called
            raise AssertionError

    from arena.tools.crop import CropTool

    clone = type("CropClone", (CropTool,), {})
    with pytest.raises(ValueError, match="tool 'image_zoom_in_tool' registered twice"):
        register_tool(clone)


def test_a_broken_plugin_names_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    (site / "broken_plugin").mkdir(parents=True)
    (site / "broken_plugin" / "__init__.py").write_text("raise RuntimeError('no luck')\n")
    info = site / "broken_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[arena-test-broken]\nbroken = broken_plugin\n")
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(Exception, match="plugin 'broken' .*no luck"):
        load_entry_points("arena-test-broken")


def test_loading_the_plugins_scans_the_installed_packages_once_per_install(monkeypatch, tmp_path: Path) -> None:
    from arena.runs import plugins

    scans = []
    entry_points = plugins.entry_points
    monkeypatch.setattr(plugins, "entry_points", lambda group: scans.append(group) or entry_points(group=group))
    monkeypatch.setattr(plugins, "_scanned", None)
    plugins.load_plugins()
    plugins.load_plugins()
    assert scans == [plugins.ENTRY_POINT_GROUP]  # the second load reuses the scan: nothing was installed
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    install_plugin(site)  # a distribution installed while the process runs is found by the next load's scan
    found = plugins.installed_entry_points()  # (not loaded: its registrations would outlive this test)
    assert len(scans) == 2 and "echo" in {ep.name for ep in found}
    plugins.installed_entry_points()
    assert len(scans) == 2


def test_run_json_versions_are_read_once_per_process(monkeypatch) -> None:
    from arena.runs import provenance, runner

    provenance._versions.cache_clear()
    read = []
    version = provenance.package_version
    monkeypatch.setattr(provenance, "package_version", lambda name: read.append(name) or version(name))
    first = runner.versions()
    first["arena"] = "changed by a caller"
    assert runner.versions()["arena"] != "changed by a caller" and len(read) == len(set(read)) > 0
