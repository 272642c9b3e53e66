"""The layering of the `arena` package:

    cli -> runs, review -> suites -> agents, judges, tools -> endpoints, store -> core

`store` (the run directory) sits beside `endpoints` (HTTP), under everything that plays or reviews; playing
(`runs`) and reviewing (`review`) are siblings.

Read with `ast` from the source, imports inside functions and `TYPE_CHECKING` blocks included:
no module imports from a higher layer, no two modules import each other through any chain, and
the core stays small and names no tool or suite. Everything the project installs lives under `arena`.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "arena"
# the longest matching prefix decides a module's layer; `arena` itself only re-exports the core
LAYER = {"arena": 0, "arena.core": 0, "arena.endpoints": 1, "arena.store": 1, "arena.tools": 2, "arena.agents": 2,
         "arena.judges": 2, "arena.suites": 3, "arena.runs": 4, "arena.review": 4, "arena.cli": 5}
SIBLING_LAYERS = (1, 2, 4)
"""Layers whose packages never import each other: endpoints and store (HTTP and the run directory); tools, agents
and judges (each usable alone); runs and review (playing and reviewing)."""
CORE_MODULE_LINE_LIMIT = 400
"""The largest core module (episode.py, the episode loop, is ~320 lines). A cap on the core's total once decided
where code went (records the run directory needed were kept out of the core to stay under it); what matters is
that each core concept stays readable in one sitting, so the cap is per module."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def group_of(module: str) -> str:
    """The entry of LAYER a module belongs to (its longest prefix there)."""
    parts = module.split(".")
    for n in range(len(parts), 1, -1):
        if ".".join(parts[:n]) in LAYER:
            return ".".join(parts[:n])
    if module == "arena":
        return module
    raise AssertionError(f"{module} is in no layer of LAYER")


def layer_of(module: str) -> int:
    return LAYER[group_of(module)]


def imported_modules(path: Path, module: str, known: set[str]) -> set[str]:
    """Every project module `path` imports, anywhere in the file; `from pkg import mod` resolves to pkg.mod."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target.split(".")[0] == "arena" and target != module:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    known = set(files)
    return {module: imported_modules(path, module, known) for module, path in files.items()}


def test_imports_flow_one_way():
    upward = sorted(f"{src} -> {dst}" for src, targets in import_graph().items() for dst in targets
                    if layer_of(dst) > layer_of(src))
    assert not upward, "imports against cli -> runs, review -> suites -> agents, judges, tools -> endpoints, store -> core:\n" + "\n".join(upward)


def crossings(graph: dict[str, set[str]]) -> list[str]:
    """Imports between two packages of one sibling layer (`SIBLING_LAYERS`)."""
    return sorted(f"{src} -> {dst}" for src, targets in graph.items() for dst in targets
                  if layer_of(src) == layer_of(dst) in SIBLING_LAYERS and group_of(src) != group_of(dst))


def test_siblings_stay_apart():
    """endpoints and store; tools, agents and judges; runs and review: none imports another of its layer."""
    crossing = crossings(import_graph())
    assert not crossing, "\n".join(crossing)


def test_playing_and_reviewing_never_import_each_other():
    graph = import_graph()
    both = sorted(f"{src} -> {dst}" for src, targets in graph.items() for dst in targets
                  if {group_of(src), group_of(dst)} == {"arena.runs", "arena.review"})
    assert not both, "\n".join(both)
    assert any(group_of(m) == "arena.review" for m in graph) and any(group_of(m) == "arena.runs" for m in graph)
    # the check sees a crossing when there is one
    assert crossings({"arena.review.report": {"arena.runs.rejudge"}, "arena.runs.rejudge": set()})


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = defaultdict(int)
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node], _ = 1, stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state[nxt] == 1:
                return stack[stack.index(nxt):] + [nxt]
            if state[nxt] == 0 and (cycle := visit(nxt)):
                return cycle
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(graph):
        if state[node] == 0 and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_cycles():
    graph = import_graph()
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_core_modules_are_readable_in_one_sitting_and_name_no_tool_or_suite():
    files = sorted((PACKAGE / "core").rglob("*.py"))
    long = sorted(f"{p.relative_to(ROOT)}: {n} lines" for p in files
                  if (n := len(p.read_text(encoding="utf-8").splitlines())) > CORE_MODULE_LINE_LIMIT)
    assert not long, f"core modules over {CORE_MODULE_LINE_LIMIT} lines:\n" + "\n".join(long)
    names = ["image_zoom_in_tool", "text_search_tool", "image_search_tool", "vistahop", "condchain", "mmir",
             "carv", "ureason", "browser"]
    mentions = sorted(f"{p.relative_to(ROOT)}: {name}" for p in files for name in names
                      if name in p.read_text(encoding="utf-8").lower())
    assert not mentions, "the core names tools or suites:\n" + "\n".join(mentions)


def test_the_store_names_no_suite():
    """The run directory's records and their migrations are generic: a suite's own older option names (e.g.
    carv-llm's `prompt`) are read by the suite, never by the store."""
    suites = sorted(p.name for p in (PACKAGE / "suites").iterdir() if (p / "suite.py").is_file())
    assert "carv" in suites
    files = sorted((PACKAGE / "store").rglob("*.py"))
    mentions = sorted(f"{p.relative_to(ROOT)}: {name}" for p in files for name in suites
                      if name in p.read_text(encoding="utf-8").lower())
    assert not mentions, "the store names suites:\n" + "\n".join(mentions)


def test_the_project_installs_one_top_level_package():
    """Nothing but `arena` (and the repository's tests, bench and scripts) sits at the top: a generic top-level
    `agents` or `tools` would collide with other packages of the field (the OpenAI Agents SDK installs `agents`)."""
    top = sorted(p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    assert top in (["arena"], ["arena", "tests"]), top


def test_every_project_import_names_a_module_that_exists():
    """An import of `arena.x.y` (or `from .y import`) whose module is not in the tree fails only when that line
    runs, and the layer checks above would read it as its package: name it here instead (e.g. a module left
    behind by a move)."""
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    missing = []
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    base = ".".join(anchor[: len(anchor) - (node.level - 1)] + ([base] if base else []))
                names = [base] if base.startswith("arena") else []
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names if alias.name.startswith("arena")]
            else:
                continue
            missing += [f"{path.relative_to(ROOT)}:{node.lineno}: {name}" for name in names if name not in files]
    assert not missing, "imports of modules that do not exist:\n" + "\n".join(missing)
