"""A wheel of the project installs one top-level package, `arena`, with the viewer's page files in it.

Built offline from a copy of the sources (pyproject.toml, README.md, arena/) with the environment's setuptools
(`pip wheel --no-build-isolation --no-deps`), so nothing is fetched and the repository gets no build/ directory.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def top_level_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return {name.split("/", 1)[0] for name in zf.namelist()}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("wheel") is None:
        pytest.skip("building a wheel offline needs the `wheel` package (pyproject's dev extra): pip install wheel")
    src = tmp_path_factory.mktemp("src")
    shutil.copy(ROOT / "pyproject.toml", src)
    shutil.copy(ROOT / "README.md", src)
    shutil.copytree(ROOT / "arena", src / "arena", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                           "-q", "-w", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    [built] = out.glob("arena-*.whl")
    return built


def test_the_wheel_holds_one_top_level_package(wheel: Path) -> None:
    names = top_level_names(wheel)
    dist_info = {n for n in names if n.endswith(".dist-info")}
    assert len(dist_info) == 1 and names - dist_info == {"arena"}, sorted(names)


def test_the_wheel_ships_the_viewer_page_files(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        shipped = set(zf.namelist())
        for name in ("page.html", "viewer.css", "viewer.js"):
            path = f"arena/review/viewer/{name}"
            assert path in shipped, path
            assert zf.read(path) == (ROOT / path).read_bytes()
        assert "arena/py.typed" in shipped
        entry_points = next(n for n in shipped if n.endswith(".dist-info/entry_points.txt"))
        assert "arena = arena.cli.main:main" in zf.read(entry_points).decode()


def test_the_check_sees_a_second_top_level_package(tmp_path: Path) -> None:
    fake = tmp_path / "two.whl"
    with zipfile.ZipFile(fake, "w") as zf:
        zf.writestr("arena/__init__.py", "")
        zf.writestr("agents/__init__.py", "")
        zf.writestr("arena-0.1.0.dist-info/METADATA", "")
    names = top_level_names(fake)
    assert names - {n for n in names if n.endswith(".dist-info")} == {"arena", "agents"}
