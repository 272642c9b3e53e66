from pathlib import Path

import pytest

from runs.plugins import load_plugins
from tests.support.tiny_dataset import write_tiny_dataset

load_plugins()


@pytest.fixture
def tiny_data(tmp_path: Path) -> Path:
    return write_tiny_dataset(tmp_path / "data")
