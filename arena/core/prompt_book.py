"""Named prompt templates: the arena's own wording, or a user's file holding other text (e.g. a paper's published
judge prompt or agent instructions, which the project does not copy) (`arena run --prompts FILE`).

A template is registered by the module that sends it (`register_template`): its name (a suite's
`<suite>.<who>.<part>`, e.g. `<suite>.judge.user`; the agents' `agent.<message>.<part>`), the placeholders it is
formatted with, the arena's text and its request kind (`judge` or `agent`). A prompts file is YAML, one mapping
from template names to texts:

    agent.system.intro: |-
      ...
    agent.user.final_round: |-
      No rounds left of {max_rounds}; ...

Placeholders are `{name}` (literal braces doubled, as in Python's `str.format`); each text must use exactly the
template's placeholders. `PromptBook.load` checks the whole file before a run starts: an unknown template name, a
placeholder the template does not have, a missing one or a text that is not a string is refused with the file,
the line and the name. `PromptBook.text(name)` is the file's text when it has one, else the arena's;
`PromptBook.run_record(names)` says, per template a run's requests use, its kind and which wording is used (what
`run.json` keeps under `prompts`); `prompts_note` turns that into what table titles say.
"""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ARENA_WORDING = "arena"
FILE_WORDING = "file"
KINDS = ("judge", "agent")  # in the order a table title names them
OLD_RECORD_KIND = "judge"  # a template entry recorded before agent templates existed (no `kind`) was a judge's


@dataclass(frozen=True)
class Template:
    """A prompt the arena sends: its name, the placeholders it is formatted with, the arena's text, and the
    request kind it belongs to (`judge` or `agent`)."""

    name: str
    placeholders: frozenset[str]
    arena_text: str
    kind: str = "judge"


TEMPLATES: dict[str, Template] = {}


class PromptFileError(ValueError):
    """A prompts file that cannot be used; the message names the file, the line and the template."""


def register_template(name: str, arena_text: str, placeholders: tuple[str, ...] = (), kind: str = "judge") -> None:
    """Declare template `name` of request kind `kind`: formatted with `placeholders`, the arena's wording
    `arena_text`."""
    if kind not in KINDS:
        raise ValueError(f"template {name}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    found = placeholders_of(arena_text)
    if found != set(placeholders):
        raise ValueError(f"template {name}: the arena's text has placeholders {sorted(found)}, declared "
                         f"{sorted(placeholders)}")
    TEMPLATES[name] = Template(name, frozenset(placeholders), arena_text, kind)


def placeholders_of(text: str) -> set[str]:
    """The `{name}` fields of a format string (ValueError for unbalanced braces)."""
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


@dataclass
class PromptBook:
    """The texts of a run's prompts: the user's file (`path`, its `sha256`) over the arena's wording."""

    path: Path | None = None
    sha256: str | None = None
    texts: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path | None) -> "PromptBook":
        """The book of `path` (None: the arena's wording only), checked entry by entry against the templates."""
        if path is None:
            return cls()
        path = Path(path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise PromptFileError(f"{path}: cannot read the prompts file ({exc.strerror or exc})") from None
        try:
            root = yaml.compose(raw.decode("utf-8"))
        except (UnicodeDecodeError, yaml.YAMLError) as exc:
            raise PromptFileError(f"{path}: not a YAML file ({exc})") from None
        if root is None:
            raise PromptFileError(f"{path}:1: the prompts file is empty; it maps template names to texts")
        if not isinstance(root, yaml.MappingNode):
            raise PromptFileError(f"{path}:{root.start_mark.line + 1}: the prompts file must map template names to "
                                  "texts")
        texts: dict[str, str] = {}
        for key, value in root.value:
            line = key.start_mark.line + 1
            name = key.value if isinstance(key, yaml.ScalarNode) else str(key.value)
            where = f"{path}:{line}: template {name!r}"
            template = TEMPLATES.get(name)
            if template is None:
                raise PromptFileError(f"{where}: unknown template name (known: {', '.join(sorted(TEMPLATES))})")
            if name in texts:
                raise PromptFileError(f"{where}: given twice")
            if not isinstance(value, yaml.ScalarNode) or value.tag != "tag:yaml.org,2002:str":
                raise PromptFileError(f"{where}: the text must be a string")
            text = value.value
            try:
                found = placeholders_of(text)
            except ValueError as exc:
                raise PromptFileError(f"{where}: {exc} (write literal braces as {{{{ and }}}})") from None
            unknown, missing = found - template.placeholders, template.placeholders - found
            if unknown:
                raise PromptFileError(f"{where}: unknown placeholder(s) {', '.join('{%s}' % p for p in sorted(unknown))} "
                                      f"(this template has: {_listed(template.placeholders)})")
            if missing:
                raise PromptFileError(f"{where}: missing placeholder(s) {', '.join('{%s}' % p for p in sorted(missing))}")
            texts[name] = text
        return cls(path=path, sha256=hashlib.sha256(raw).hexdigest(), texts=texts)

    def text(self, name: str) -> str:
        """The text of template `name`: the file's, else the arena's."""
        return self.texts[name] if name in self.texts else TEMPLATES[name].arena_text

    def format(self, name: str, **values: Any) -> str:
        """The text of template `name` formatted with `values` (doubled braces become literal ones)."""
        return self.text(name).format(**values)

    def wording(self, name: str) -> dict[str, Any]:
        """Template `name`'s kind and which wording it uses: the arena's, or the user's file with its sha256."""
        kind = {"kind": TEMPLATES[name].kind}
        if name in self.texts:
            return {**kind, "wording": FILE_WORDING, "file": str(self.path), "sha256": self.sha256}
        return {**kind, "wording": ARENA_WORDING}

    def record(self, names: list[str]) -> dict[str, Any]:
        """Per template of `names` (those the run's requests use), its kind and the wording used."""
        return {name: self.wording(name) for name in sorted(set(names))}

    def run_record(self, names: list[str]) -> dict[str, Any]:
        """What `run.json` keeps under `prompts`: the file (None: the arena's wording only), its sha256, and per
        template of `names` its kind and wording."""
        return {"file": str(self.path) if self.path else None, "sha256": self.sha256, "templates": self.record(names)}


def _listed(names: frozenset[str]) -> str:
    return ", ".join("{%s}" % p for p in sorted(names)) or "no placeholders"


def prompts_note(record: dict[str, Any] | None) -> str | None:
    """What a table title says about a run's prompts (`run.json` `prompts`): which request kinds used the arena's
    wording for some template (`judge and agent prompts: arena wording (not the published text)`), else None."""
    templates = (record or {}).get("templates") or {}
    kinds = {entry.get("kind") or OLD_RECORD_KIND for entry in templates.values()
             if entry.get("wording") == ARENA_WORDING}
    named = [kind for kind in KINDS if kind in kinds]
    return f"{' and '.join(named)} prompts: arena wording (not the published text)" if named else None


def protocol_label(protocol: str, record: dict[str, Any] | None) -> str:
    """The protocol as table titles show it: with the prompts note when a run under `original` used the arena's
    wording for some template (`original · judge prompts: arena wording (not the published text)`)."""
    note = prompts_note(record) if protocol == "original" else None
    return f"{protocol} · {note}" if note else protocol
