"""The layering of the `arena` package: `cli -> runs -> suites -> agents, judges, tools -> endpoints -> core`.

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
LAYER = {"arena": 0, "arena.core": 0, "arena.endpoints": 1, "arena.tools": 2, "arena.agents": 2,
         "arena.judges": 2, "arena.suites": 3, "arena.runs": 4, "arena.runs.cli": 5}
MIDDLE = 2
CORE_LINE_LIMIT = 2250  # 2000 before the suite contract (core/suite.py) and the tools' run resources


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def group_of(module: str) -> str:
    """The entry of LAYER a module belongs to (its longest prefix there)."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYER:
            return ".".join(parts[:n])
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
    assert not upward, "imports against cli -> runs -> suites -> agents, judges, tools -> endpoints -> core:\n" + "\n".join(upward)


def test_siblings_of_the_middle_layer_stay_apart():
    """tools, agents and judges are one layer: none imports another, so each can be used alone."""
    crossing = sorted(f"{src} -> {dst}" for src, targets in import_graph().items() for dst in targets
                      if layer_of(src) == layer_of(dst) == MIDDLE and group_of(src) != group_of(dst))
    assert not crossing, "\n".join(crossing)


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


def test_core_is_small_and_names_no_tool_or_suite():
    files = sorted((PACKAGE / "core").rglob("*.py"))
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in files)
    assert lines <= CORE_LINE_LIMIT, f"arena/core/ holds {lines} lines (limit {CORE_LINE_LIMIT})"
    names = ["image_zoom_in_tool", "text_search_tool", "image_search_tool", "vistahop", "condchain", "mmir",
             "carv", "ureason", "browser"]
    mentions = sorted(f"{p.relative_to(ROOT)}: {name}" for p in files for name in names
                      if name in p.read_text(encoding="utf-8").lower())
    assert not mentions, "the core names tools or suites:\n" + "\n".join(mentions)


def test_the_project_installs_one_top_level_package():
    """Nothing but `arena` (and the repository's tests, bench and scripts) sits at the top: a generic top-level
    `agents` or `tools` would collide with other packages of the field (the OpenAI Agents SDK installs `agents`)."""
    top = sorted(p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    assert top in (["arena"], ["arena", "tests"]), top
