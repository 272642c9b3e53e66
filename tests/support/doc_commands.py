"""The commands of the README and of the docs/ pages, read as a user would paste them, for the tests that run them
(`tests/test_readme_tour.py`, `tests/test_docs_commands.py`).

A page's fenced ```bash blocks that hold at least one `arena` command are command blocks; a block of other commands
only (`make demo`) is not. A command block runs unless the last non-blank line before its fence is a marker
`<!-- not run: REASON -->`. In a command block, continuation lines (`\\` at the end) are joined and comments dropped;
each line is `arena ARGS` (run in-process through the CLI), `export NAME=VALUE` (set for the commands after it) or
`source .venv/bin/activate` (nothing to do in-process); any other line is an error naming page and line, so a page
cannot hold a command no test runs. ```python blocks are run as they stand.

The pages name model endpoints at http://127.0.0.1:8000/v1 (the agent's model), :8001 and :8002 (a judge or the web
summariser); `ModelStandIns` starts one local OpenAI-compatible server per address and rewrites the addresses in
the commands.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from tests.support.openai_server import OpenAIStub, Reply

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
AGENT_URL, HELPER_URLS = "http://127.0.0.1:8000/v1", ("http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1")

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
_NOT_RUN = re.compile(r"^<!--\s*not run:\s*(\S.*?)\s*-->$")


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: its language, text, first line (1-based) and, when marked, why it is not run."""
    page: Path
    line: int
    language: str
    text: str
    not_run: str | None

    @property
    def where(self) -> str:
        return f"{_shown(self.page)}:{self.line}"


@dataclass(frozen=True)
class Command:
    """One line of a command block: `arena` with its arguments, an `export`, or nothing to do (`source`)."""
    kind: str  # "arena" | "export" | "source"
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
        found.append(Block(page, line, match.group(1), match.group(2), marker.group(1) if marker else None))
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
        if words[0] == "arena":
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


def helper_model(request: dict) -> Reply:
    """The judge (a `<judge>` verdict, as the llm judge asks for) or the web summariser (a short summary)."""
    text = str(request.get("messages", ""))
    if "<judge>" in text:
        return Reply(content="<judge>No</judge><reason>the candidate names nobody</reason>", prompt_tokens=200,
                     completion_tokens=9)
    return Reply(content="Orvanta Lighthouse was built in 1874 by Mirelle Dastrow.", prompt_tokens=300,
                 completion_tokens=14)


def searching_agent(request: dict) -> Reply:
    """A Qwen-style text-protocol model: with tools offered and no tool result yet, one text search; then (or
    without tools) an answer."""
    messages = request.get("messages", [])
    played = any(m.get("role") == "assistant" for m in messages)
    if "text_search_tool" in str(messages[:1]) and not played:
        return Reply(content='<think>Search first.</think><tool_call>{"name": "text_search_tool", "arguments": '
                             '{"query": "Orvanta Lighthouse"}}</tool_call>', prompt_tokens=900, completion_tokens=20)
    return Reply(content="<think>I cannot tell.</think><answer>Nobody</answer>", prompt_tokens=900,
                 completion_tokens=12)


class ModelStandIns:
    """Local servers for the pages' model addresses; `rewrite` puts their addresses in a command's arguments."""

    def __init__(self, agent=searching_agent, helper=helper_model):
        self.agent = OpenAIStub(agent)
        self.helpers = [OpenAIStub(helper) for _ in HELPER_URLS]

    def __enter__(self) -> "ModelStandIns":
        for server in (self.agent, *self.helpers):
            server.start()
        return self

    def __exit__(self, *exc) -> None:
        for server in (self.agent, *self.helpers):
            server.stop()

    def rewrite(self, args: tuple[str, ...] | list[str]) -> list[str]:
        out = []
        for arg in args:
            arg = arg.replace(AGENT_URL, self.agent.base_url)
            for url, server in zip(HELPER_URLS, self.helpers):
                arg = arg.replace(url, server.base_url)
            out.append(arg)
        return out
