"""bm25s never starts jax in the arena's processes (jax claims a GPU's memory and its threads can deadlock the
workers' fork server; seen on an H200 host). A stand-in `jax` package records whether anything imported it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _stand_in_jax(where: Path) -> None:
    package = where / "jax"
    package.mkdir()
    (package / "__init__.py").write_text("import os\nopen(os.environ['JAX_MARK'], 'a').write('imported\\n')\n")
    (package / "lax.py").write_text(
        "import os\n"
        "def top_k(scores, k):\n"
        "    open(os.environ['JAX_MARK'], 'a').write('top_k\\n')\n"
        "    raise RuntimeError('jax started')\n")


def _run(tmp_path: Path, code: str) -> str:
    _stand_in_jax(tmp_path)
    mark = tmp_path / "mark"
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "JAX_MARK": str(mark)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return (mark.read_text() if mark.exists() else "") + "|" + done.stdout.strip()


def test_importing_the_search_tools_does_not_import_jax(tmp_path: Path) -> None:
    code = ("import sys\n"
            "import arena.tools.web_search, arena.tools.corpus_index\n"
            "import bm25s.selection\n"
            "print('jax' in sys.modules, bm25s.selection.JAX_IS_AVAILABLE)\n")
    assert _run(tmp_path, code) == "|False False"


def test_a_jax_the_process_already_imported_is_left_in_place_and_not_run(tmp_path: Path) -> None:
    code = ("import sys, jax, jax.lax\n"
            "mine = sys.modules['jax'], sys.modules['jax.lax']\n"
            "from arena.tools.corpus_index import CorpusIndex\n"
            "import bm25s.selection\n"
            "print((sys.modules['jax'], sys.modules['jax.lax']) == mine, bm25s.selection.JAX_IS_AVAILABLE)\n")
    assert _run(tmp_path, code) == "imported\n|True False"
