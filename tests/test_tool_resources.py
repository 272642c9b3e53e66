"""Tools keep run-scoped resources in the run's `RunResources`, not in modules: two runs in one process get
their own, a run's end releases them, and every process that plays episodes (the asyncio driver, each worker
process, each Ray worker) opens the run's tools once and closes them once."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arena.core.blobs import BlobStore
from arena.core.dataset import load_datasets
from arena.core.tool import RunResources, ToolContext, ToolError, ToolOptions
from arena.tools.image_search import ImageSearchTool
from arena.tools.text_search import TextSearchTool
from tests.support.tiny_dataset import write_tiny_dataset
from tests.test_web_search import FakeWeb

ARENA = str(Path(sys.executable).with_name("arena"))
TOOLS_DIR = Path(__file__).resolve().parents[1] / "arena" / "tools"

# Module- or class-level mutable containers that may stay in arena/tools, and why none is per-run state.
ALLOWED_PROCESS_STATE = {
    ("corpus_index.py", "CorpusIndex._cache"): "immutable on-disk corpora, keyed by file identity",
    ("image_index.py", "ReverseImageIndex._cache"): "immutable on-disk image indexes, keyed by file identity",
    ("keypool.py", "_SECRETS"): "key values to scrub from any message in the process",
    ("image_index.py", "IndexEntry.extra_boxes"): "a record field's default (pydantic copies it per record)",
}
MUTABLE = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
MUTABLE_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "WeakValueDictionary", "WeakKeyDictionary"}


def mutable_state(path: Path) -> list[str]:
    """Names bound to mutable containers at module or class level in one source file (public UPPER_CASE
    names are constants or registries, and `__all__` is not state)."""
    found = []

    def scan(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                scan(node.body, f"{prefix}{node.name}.")
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if value is None:
                continue
            call = isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) \
                in MUTABLE_CALLS
            if isinstance(value, MUTABLE) or call:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                found.extend(f"{prefix}{t.id}" for t in targets if isinstance(t, ast.Name)
                             and t.id != "__all__" and not (t.id.isupper() and not t.id.startswith("_")))

    scan(ast.parse(path.read_text()).body, "")
    return found


def test_no_module_global_run_state_is_left_in_tools() -> None:
    found = {(str(p.relative_to(TOOLS_DIR)), name) for p in sorted(TOOLS_DIR.rglob("*.py")) for name in mutable_state(p)}
    assert found - set(ALLOWED_PROCESS_STATE) == set(), "module- or class-level state in arena/tools: keep run " \
        "resources in RunResources (Tool.open), or say here why the state is process-wide"
    assert ("web_search.py", "_SHARED") not in found


def test_the_scan_sees_module_and_class_state(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("_SHARED: dict[int, object] = {}\nclass T:\n    cache = dict()\n")
    assert mutable_state(sample) == ["_SHARED", "T.cache"]


def search_options(web: FakeWeb, cassette: Path) -> ToolOptions:
    return ToolOptions(web="live", cassette=str(cassette), web_provider="searxng", web_endpoint=web.base,
                       allow_private_hosts=True, web_min_interval=0.0, fetch_pages=False, image_search="web")


def test_two_runs_in_one_process_get_their_own_web_and_its_end_releases_it(tmp_path: Path) -> None:
    first_web, second_web = FakeWeb(), FakeWeb()
    data = load_datasets(write_tiny_dataset(tmp_path / "data"))[0]
    ctx = ToolContext(task=data.tasks[0], dataset=data, images=[], blobs=BlobStore(tmp_path / "blobs"))

    async def go():
        runs = [RunResources(search_options(first_web, tmp_path / "a.sqlite")),
                RunResources(search_options(second_web, tmp_path / "b.sqlite"))]
        tools = [(TextSearchTool(run.options), ImageSearchTool(run.options)) for run in runs]
        for run, pair in zip(runs, tools):
            for tool in pair:
                await tool.open(run)
        (text_a, image_a), (text_b, _) = tools
        assert text_a.web.get() is image_a.web.get(), "the tools of one run share its web search"
        assert text_a.web.get() is not text_b.web.get(), "another run in the same process has its own"
        await text_a(dict(query="orvanta"), ctx)
        await text_b(dict(query="velmora"), ctx)
        web_a = text_a.web.get()
        searxng_a = web_a.provider
        assert searxng_a._http is not None and not searxng_a._http.is_closed
        for tool in tools[0]:
            await tool.aclose()
        await runs[0].aclose()
        assert searxng_a._http is None, "the run's end closed its HTTP client"
        with pytest.raises(ToolError, match="not opened for a run"):
            await text_a(dict(query="orvanta"), ctx)
        with pytest.raises(RuntimeError, match="closed"):
            runs[0].shared("web_search", lambda: None)
        again = await text_b(dict(query="kites"), ctx)  # the other run goes on
        for tool in tools[1]:
            await tool.aclose()
        await runs[1].aclose()
        return again

    try:
        again = asyncio.run(go())
    finally:
        first_web.stop()
        second_web.stop()
    assert "Orvanta Lighthouse" in again.text
    assert first_web.paths.count("/search") == 1 and second_web.paths.count("/search") == 2, \
        "each run searched through its own provider"


LIFECYCLE_PLUGIN = '''
"""A tool that writes `open <pid>` and `close <pid>` lines to the file named by the tool option `lifecycle_log`."""
import os
from pydantic import BaseModel
from arena.core.settings import register_setting
from arena.core.tool import Tool, ToolOptions, ToolResult, register_tool


class LifecycleOptions(ToolOptions):
    lifecycle_log: str = ""


class NoArgs(BaseModel):
    pass


@register_tool
class LifecycleTool(Tool):
    name = "lifecycle_tool"
    description = "Says which process serves it."
    Args = NoArgs
    Options = LifecycleOptions

    def _log(self, what):
        with open(self.options.lifecycle_log, "a") as out:
            out.write(f"{what} {os.getpid()}\\n")

    async def open(self, run):
        self._log("open")

    async def run(self, args, ctx):
        self._log("call")
        return ToolResult(text="ok")

    async def aclose(self):
        self._log("close")


register_setting("lifecycle", ["lifecycle_tool"])
'''


def install_lifecycle_plugin(site: Path) -> Path:
    (site / "arena_lifecycle_plugin").mkdir(parents=True)
    (site / "arena_lifecycle_plugin" / "__init__.py").write_text(LIFECYCLE_PLUGIN)
    info = site / "arena_lifecycle_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: arena-lifecycle-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[arena]\nlifecycle = arena_lifecycle_plugin\n")
    (info / "RECORD").write_text("")
    return site


SCRIPT = json.dumps([{"tool": "lifecycle_tool", "arguments": {}}, {"answer": "1874"}])


@pytest.mark.parametrize("backend", [[], ["--workers", "2"], ["--backend", "ray", "--ray-workers", "2"]],
                         ids=["asyncio", "workers", "ray"])
def test_every_process_that_plays_opens_the_tools_once_and_closes_them(backend: list[str], tmp_path: Path) -> None:
    if "ray" in backend:
        pytest.importorskip("ray")
    site = install_lifecycle_plugin(tmp_path / "site")
    data = write_tiny_dataset(tmp_path / "data", n_items=6)
    log = tmp_path / "lifecycle.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    script = tmp_path / "script.json"
    script.write_text(SCRIPT)
    driver = subprocess.Popen([ARENA, "run", "--data", str(data), "--agent", "scripted", "--agent-option",
                               f"script={script}", "--setting", "lifecycle", "--max-rounds", "3", "--concurrency",
                               "2", "--judge", "normalized", "--tool-option", f"lifecycle_log={log}", "--out",
                               str(tmp_path / "logs"), *backend], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    output, _ = driver.communicate(timeout=600)
    assert driver.returncode == 0, output
    lines = [line.split() for line in log.read_text().splitlines()]
    opened = [pid for what, pid in lines if what == "open"]
    closed = [pid for what, pid in lines if what == "close"]
    calls = [pid for what, pid in lines if what == "call"]
    assert len(calls) == 6
    assert sorted(opened) == sorted(set(opened)), "once per process"
    assert sorted(closed) == sorted(opened), "every process that opened the tools closed them"
    assert set(calls) <= set(opened), "no call before the tool was opened in its process"
    for pid in set(opened):
        mine = [what for what, p in lines if p == pid]
        assert mine[0] == "open" and mine[-1] == "close"
    if backend:
        assert str(driver.pid) not in opened, "the driver plays nothing, so it opens nothing"
    else:
        assert opened == [str(driver.pid)]


def test_a_failing_close_does_not_keep_the_others_open() -> None:
    closed: list[str] = []

    class Resource:
        def __init__(self, name: str, fails: bool = False):
            self.name, self.fails = name, fails

        async def aclose(self) -> None:
            closed.append(self.name)
            if self.fails:
                raise OSError(f"{self.name} would not close")

    run = RunResources(ToolOptions())
    for name in ("first", "second", "third"):
        run.shared(name, lambda name=name: Resource(name, fails=name == "second"))
    assert run.shared("first", lambda: Resource("again")).name == "first", "built once"
    with pytest.raises(OSError, match="second would not close"):
        asyncio.run(run.aclose())
    assert closed == ["third", "second", "first"], "newest first, every one"
