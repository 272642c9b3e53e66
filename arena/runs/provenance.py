"""What run.json records of the code that ran: the versions of Python and of the packages a run depends on, and the
git commit of the arena's checkout.

Both are read without their general machinery, which a fresh process would pay for once per run: a package's
version is the `Version:` line of its METADATA header (`importlib.metadata.version` parses the whole file with the
email parser, ~1 ms a package), and the commit is read from the repository's HEAD and refs files as git finds them
(`git rev-parse HEAD` is a process started, ~1 ms of CPU and 3-4 ms of waiting). Whatever these readers do not
know for sure (a header without a plain `Version:` line, a repository git would look at differently: git's
variables for it set, another owner, another file system, a reftable, a symbolic ref that is not a branch) is left
to the general machinery, so the values are the same.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path

PACKAGES = ("arena", "openai", "pydantic", "pillow", "bm25s", "playwright")
"""The packages whose versions run.json records (those installed)."""
_GIT_LOOKS_ELSEWHERE = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES",
                        "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_NAMESPACE", "GIT_CONFIG", "GIT_CONFIG_GLOBAL",
                        "GIT_CONFIG_SYSTEM", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_DEFAULT_REF_FORMAT")
"""Variables that change which repository git finds or how it reads its refs: with one set, git is asked."""
_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def versions() -> dict[str, str]:
    """The versions of Python and of the packages a run depends on (for run.json), as this process loaded them."""
    return dict(_versions())


@lru_cache(maxsize=1)
def _versions() -> dict[str, str]:  # read once per process
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = package_version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def package_version(name: str) -> str:
    """`importlib.metadata.version(name)`, read from the `Version:` line of the distribution's METADATA header."""
    dist = metadata.distribution(name)
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    lines = text.split("\n\n", 1)[0].splitlines()
    found = [(i, line[8:].strip()) for i, line in enumerate(lines) if line.startswith("Version:")]
    if len(found) == 1 and found[0][1]:
        i, version = found[0]
        if i + 1 == len(lines) or not lines[i + 1][:1].isspace():  # one line, not folded onto the next
            return version
    return dist.version


def git_hash() -> str | None:
    """The commit checked out where the arena's code lies (`git rev-parse HEAD` there; None outside a repository)."""
    here = Path(__file__).resolve().parent
    try:
        known = _head_commit(here)
    except (OSError, UnicodeDecodeError):
        known = None
    return known if known is not None else _rev_parse(here)


def _rev_parse(where: Path) -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, cwd=where)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _head_commit(start: Path) -> str | None:
    """The commit HEAD names in the repository git finds from `start` (walking up to a `.git`), read from its files;
    None where git is to be asked (see the module docstring)."""
    if any(name in os.environ for name in _GIT_LOOKS_ELSEWHERE):
        return None
    device, directory = os.stat(start).st_dev, start
    while not os.path.exists(directory / ".git"):
        if directory.parent == directory or os.stat(directory.parent).st_dev != device:
            return None
        directory = directory.parent
    git = directory / ".git"
    if git.is_file():  # a worktree or submodule: "gitdir: PATH"
        pointer = git.read_text().strip()
        if not pointer.startswith("gitdir:"):
            return None
        git = (directory / pointer[7:].strip()).resolve()
    if os.stat(git).st_uid != os.getuid() or os.stat(directory).st_uid != os.getuid():  # git's safe.directory
        return None
    common = git / (git / "commondir").read_text().strip() if (git / "commondir").is_file() else git
    if (common / "reftable").exists():
        return None
    head = (git / "HEAD").read_text().strip()
    if _COMMIT.fullmatch(head):
        return head
    if not head.startswith("ref: refs/heads/"):
        return None
    return _ref_commit(common, head[5:].strip())


def _ref_commit(common: Path, ref: str) -> str | None:
    """The commit of branch `ref` (`refs/heads/...`): its loose file, else its line in packed-refs."""
    loose = common / ref
    if loose.is_file():
        value = loose.read_text().strip()
        return value if _COMMIT.fullmatch(value) else None
    packed = common / "packed-refs"
    if not packed.is_file():
        return None
    for line in packed.read_text().splitlines():
        value, _, name = line.partition(" ")
        if name == ref and _COMMIT.fullmatch(value):
            return value
    return None
