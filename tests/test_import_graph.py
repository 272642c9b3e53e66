"""The layering of the packages: `cli -> runs -> suites -> agents, judges, tools -> endpoints -> arena`.

Read with `ast` from the source, imports inside functions and `TYPE_CHECKING` blocks included:
no module imports from a higher layer, no two modules import each other through any chain, and
the core stays small and names no tool or suite.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("arena", "endpoints", "tools", "agents", "judges", "suites", "runs")
LAYER = {"arena": 0, "endpoints": 1, "tools": 2, "agents": 2, "judges": 2, "suites": 3, "runs": 4, "runs.cli": 5}
CORE_LINE_LIMIT = 2000


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> int:
    return LAYER["runs.cli"] if module == "runs.cli" or module.startswith("runs.cli.") else LAYER[module.split(".")[0]]


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
            if target and target.split(".")[0] in PACKAGES and target != module:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    files = {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    known = set(files)
    return {module: imported_modules(path, module, known) for module, path in files.items()}


def test_imports_flow_one_way():
    upward = sorted(f"{src} -> {dst}" for src, targets in import_graph().items() for dst in targets
                    if layer_of(dst) > layer_of(src))
    assert not upward, "imports against cli -> runs -> suites -> agents, judges, tools -> endpoints -> arena:\n" + "\n".join(upward)


def test_siblings_of_the_middle_layer_stay_apart():
    """tools, agents and judges are one layer: none imports another, so each can be used alone."""
    crossing = sorted(f"{src} -> {dst}" for src, targets in import_graph().items() for dst in targets
                      if layer_of(src) == layer_of(dst) == 2 and src.split(".")[0] != dst.split(".")[0])
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
    files = sorted((ROOT / "arena").rglob("*.py"))
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in files)
    assert lines <= CORE_LINE_LIMIT, f"arena/ holds {lines} lines (limit {CORE_LINE_LIMIT})"
    names = ["image_zoom_in_tool", "text_search_tool", "image_search_tool", "vistahop", "condchain", "mmir",
             "carv", "ureason", "browser"]
    mentions = sorted(f"{p.relative_to(ROOT)}: {name}" for p in files for name in names
                      if name in p.read_text(encoding="utf-8").lower())
    assert not mentions, "the core names tools or suites:\n" + "\n".join(mentions)
