"""The commands of the README and of the docs/ pages, read as a user would paste them, for the tests that run them
(`tests/test_readme_tour.py`, `tests/test_docs_commands.py`).

A page's fenced ```bash blocks that hold at least one `arena` command are command blocks; a block of other commands
only (`make demo`) is not. A command block runs unless the last non-blank line before its fence is a marker
`<!-- not run: REASON -->`. A block whose first line is a visible comment `# needs WHAT` (a key, the released data)
needs something a fresh clone lacks: the tests run it with their stand-in for it (the Serper stand-in for a Serper
key) and list such blocks. In a command block, continuation lines (`\\` at the end) are joined and comments
dropped; each line is `arena ARGS` (run in-process through the CLI), `arena serve ARGS &` (the model server, started
in the background), `export NAME=VALUE` (set for the commands after it) or `source .venv/bin/activate` (nothing to
do in-process); any other line is an error naming page and line, so a page cannot hold a command no test runs.
```python blocks are run as they stand.

The pages name model endpoints at http://127.0.0.1:PORT/v1 (:8000 the agent's model, :8001 and :8002 a judge or
the web summariser). `ServedModels` starts each `arena serve ... &` of the pages as an in-process `PolicyServer` on
a free port, parsed by the CLI's own option parser, and rewrites the addresses in the commands: a port a serve line
named goes to that server; a port no serve line named (a page's real model server, e.g. the paper's judge at :8002)
to the first server started.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import typer

from arena.cli.main import app
from arena.runs.policy_server import PolicyServer

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
_NOT_RUN = re.compile(r"^<!--\s*not run:\s*(\S.*?)\s*-->$")
_NEEDS = re.compile(r"^#\s*needs\s+(\S.*?)\s*$")
_MODEL_URL = re.compile(r"http://127\.0\.0\.1:(\d+)/v1")


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: its language, text, first line (1-based), when marked why it is not run, and
    what it needs when its first line says (`# needs WHAT`)."""
    page: Path
    line: int
    language: str
    text: str
    not_run: str | None
    needs: str | None = None

    @property
    def where(self) -> str:
        return f"{_shown(self.page)}:{self.line}"


@dataclass(frozen=True)
class Command:
    """One line of a command block: `arena` with its arguments, `arena serve` in the background (`serve`, its
    arguments after `serve`), an `export`, or nothing to do (`source`)."""
    kind: str  # "arena" | "serve" | "export" | "source"
    args: tuple[str, ...]
    where: str


def _shown(page: Path) -> str:
    """A page as messages name it: relative to the checkout when it is in it."""
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else page.name


def pages() -> list[Path]:
    """The README, then every docs/ page in name order."""
    return [README, *sorted(DOCS.glob("*.md"))]


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = [b for b in text[:match.start()].splitlines() if b.strip()]
        marker = _NOT_RUN.match(before[-1].strip()) if before else None
        first = match.group(2).lstrip().splitlines()[:1]
        needs = _NEEDS.match(first[0]) if first else None
        found.append(Block(page, line, match.group(1), match.group(2), marker.group(1) if marker else None,
                           needs.group(1) if needs else None))
    return found


def _lines(block: Block) -> Iterator[tuple[int, str]]:
    """The block's logical lines (continuations joined, comments dropped) with the page line each starts on."""
    pending, start = "", 0
    for offset, raw in enumerate(block.text.splitlines()):
        if not pending:
            start = block.line + 1 + offset
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        line = shlex.join(shlex.split(pending + raw, comments=True))
        pending = ""
        if line:
            yield start, line


def commands(block: Block) -> list[Command]:
    """The commands of a command block (see the module docstring)."""
    out = []
    for line_no, line in _lines(block):
        where = f"{_shown(block.page)}:{line_no}"
        words = shlex.split(line)
        if words[:2] == ["arena", "serve"] and words[-1] == "&":
            out.append(Command("serve", tuple(words[2:-1]), where))
        elif words[:2] == ["arena", "serve"]:
            raise ValueError(f"{where}: `arena serve` runs until stopped: end the line with & to start it in the "
                             "background, as the tests do")
        elif words[0] == "arena":
            out.append(Command("arena", tuple(words[1:]), where))
        elif words[0] == "export" and len(words) == 2 and "=" in words[1]:
            out.append(Command("export", tuple(words[1].split("=", 1)), where))
        elif words[:2] == ["source", ".venv/bin/activate"]:
            out.append(Command("source", (), where))
        else:
            raise ValueError(f"{where}: not a command the docs tests can run: {line!r} (mark the block "
                             f"<!-- not run: REASON --> if it is not meant to run)")
    return out


def command_blocks(page: Path) -> list[Block]:
    """The page's ```bash blocks that hold an `arena` command, marked or not."""
    return [b for b in blocks(page) if b.language == "bash" and re.search(r"^\s*arena ", b.text, re.M)]


def python_blocks(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.language == "python"]


class ServedModels:
    """The pages' `arena serve` servers, in-process on free ports (see the module docstring)."""

    def __init__(self) -> None:
        self.by_port: dict[str, PolicyServer] = {}
        self.started: list[PolicyServer] = []

    def start(self, args: tuple[str, ...], where: str) -> PolicyServer:
        """Start the server an `arena serve ARGS &` line starts, on a free port in place of its --port."""
        command = typer.main.get_command(app).commands["serve"]  # type: ignore[attr-defined]
        params = command.make_context("serve", list(args)).params
        server = PolicyServer(params["data"], params["policy"], host=params["host"], port=0,
                              latency=params["latency"], prompts=params["prompts"]).start()
        self.started.append(server)
        self.by_port.setdefault(str(params["port"]), server)
        return server

    def stop(self) -> None:
        for server in self.started:
            server.stop()
        self.started.clear()
        self.by_port.clear()

    def __enter__(self) -> "ServedModels":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def rewrite(self, args: tuple[str, ...] | list[str]) -> list[str]:
        """The arguments with each model address pointing at its served stand-in."""
        def served(match: re.Match[str]) -> str:
            server = self.by_port.get(match.group(1)) or (self.started[0] if self.started else None)
            if server is None:
                raise ValueError(f"a command names a model at {match.group(0)} before any `arena serve` line "
                                 "started one")
            return server.base_url
        return [_MODEL_URL.sub(served, arg) for arg in args]
