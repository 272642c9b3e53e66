"""No function in arena/ is longer than 80 lines (the developers' guide): read with `ast`, decorators left out,
nested functions and methods counted on their own and inside the function that holds them."""

from __future__ import annotations

import ast
from pathlib import Path

ARENA = Path(__file__).resolve().parent.parent / "arena"
LIMIT = 80


def long_functions(root: Path = ARENA, limit: int = LIMIT) -> list[str]:
    """`path:line name (N lines)` of every function or method of `root`'s modules longer than `limit` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_in_arena_is_over_80_lines() -> None:
    assert long_functions() == []


def test_the_check_sees_a_long_function(tmp_path: Path) -> None:
    body = "".join(f"        x{i} = {i}\n" for i in range(LIMIT))
    (tmp_path / "long.py").write_text(f"def short():\n    return 1\n\n\nclass C:\n    async def long(self):\n{body}")
    assert long_functions(tmp_path) == [f"{tmp_path.name}/long.py:6 long ({LIMIT + 1} lines)"]
