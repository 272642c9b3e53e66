"""run.json's record of the code that ran (`arena.runs.provenance`): the versions read from the METADATA headers are
those `importlib.metadata` gives, and the commit read from the repository's files is the one `git rev-parse HEAD`
gives, in a checkout, a linked worktree, with a packed or a detached HEAD, and outside any repository."""

from __future__ import annotations

import shutil
import subprocess
from importlib import metadata
from pathlib import Path

import pytest

from arena.runs import provenance


def test_every_installed_distributions_version_is_the_one_importlib_reads() -> None:
    names = {d.metadata["Name"] for d in metadata.distributions()}
    assert len(names) > 10
    for name in sorted(names):
        assert provenance.package_version(name) == metadata.version(name), name


def test_a_folded_or_missing_version_line_is_left_to_importlib(tmp_path: Path, monkeypatch) -> None:
    class Dist:
        def __init__(self, text: str):
            self.text = text

        def read_text(self, name: str) -> str | None:
            return self.text if name == "METADATA" else None

        @property
        def version(self) -> str:
            return "from importlib"
    for text, expected in (("Name: x\nVersion: 1.2\n\nVersion: 9\n", "1.2"), ("Version: 1.2\n  .3\n", "from importlib"),
                           ("Name: x\n", "from importlib"), ("Version: 1\nVersion: 2\n", "from importlib")):
        monkeypatch.setattr(provenance.metadata, "distribution", lambda name, text=text: Dist(text))
        assert provenance.package_version("x") == expected


def git(where: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=where, check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_commit_read_from_the_repositorys_files_is_the_one_git_gives(tmp_path: Path, monkeypatch) -> None:
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES"):
        monkeypatch.delenv(name, raising=False)
    repo = tmp_path / "repo"
    (repo / "pkg" / "sub").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for n in range(2):
        (repo / "pkg" / "f.txt").write_text(str(n))
        git(repo, "add", ".")
        git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", str(n))
    where = repo / "pkg" / "sub"
    assert provenance._head_commit(where) == git(where, "rev-parse", "HEAD")  # a loose branch ref
    git(repo, "pack-refs", "--all")
    assert provenance._head_commit(where) == git(where, "rev-parse", "HEAD")  # packed
    git(repo, "worktree", "add", "-q", str(tmp_path / "linked"), "HEAD~1")
    linked = tmp_path / "linked" / "pkg"
    assert provenance._head_commit(linked) == git(linked, "rev-parse", "HEAD") != git(where, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    assert provenance._head_commit(where) == git(where, "rev-parse", "HEAD")  # detached
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert provenance._head_commit(outside) is None  # git is asked where it would look elsewhere
    assert provenance.git_hash() == subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                                   cwd=Path(provenance.__file__).parent).stdout.strip() or None
