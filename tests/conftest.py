import os
import tempfile
from pathlib import Path

import pytest

from arena.runs.plugins import load_plugins
from tests.support.tiny_dataset import write_tiny_dataset

load_plugins()
# the digests of task files that runs remember (`arena.store.file_digests`) go to a directory of this session, not to the
# user's ~/.cache (the CLI's subprocesses inherit it)
os.environ.setdefault("ARENA_CACHE_DIR", tempfile.mkdtemp(prefix="arena-test-cache-"))
# the CLI lays its output out for $COLUMNS (80 when unset and not a terminal) and wraps long messages there; tests
# read messages whole at a wide width (set before `arena.cli` is imported); tests of widths set their own
os.environ["COLUMNS"] = "200"


@pytest.fixture
def tiny_data(tmp_path: Path) -> Path:
    return write_tiny_dataset(tmp_path / "data")
