"""Every rule for reading runs written by older versions of the arena, in one place.

A run directory is never rewritten to a newer format: its files are read as they are, and the few fields whose
meaning was implicit before are given here. Format history (`arena.store.records.FORMAT_VERSION`):

- format 1: run.json `version` 1 (or none) and episode lines without `format`.
  - runs recorded before `--protocol` existed carry no `config.protocol`: they followed the arena's pipeline
    (`protocol_of`), resume continues them as such (`resume_fields`), and their fingerprint was computed without
    the field (`fingerprint_fields`, which keeps the fingerprint of an `arena`-protocol run unchanged);
  - runs recorded before run.json had its own `judge` name it in `config.judge`, and the oldest in neither: they
    are scored with "auto" (`judge_of`).
  - runs recorded before agent templates existed keep, in run.json `prompts.templates`, entries without a `kind`:
    they were judge templates (`arena.core.prompt_book.OLD_RECORD_KIND`, read there: the core cannot import this
    module).
  - runs recorded before the carv-llm judge's texts became a prompt template name its request layout in the
    option `prompt` ("paper": the ground-truth image attached; "arena": the text alone), now `reference_image`
    (`carv_reference_image`); their text was the one of its value, now the prompt book's.
- format 2: run.json `version` 2 and `format` 2 on every episode line written from then on (a resumed format-1
  run holds lines of both); nothing is read differently.
  - runs recorded before a dataset's file population was kept (run.json `datasets[].population`, written under
    `--protocol original` by the suites whose published evaluator divides by every question of the file, e.g.
    MMIR) have none: their suite figures are over the episodes played, as they were printed then
    (`populations_of`). Additive, so no format change.
"""

from __future__ import annotations

from typing import Any

DEFAULT_PROTOCOL = "arena"
"""The protocol of a run that names none (recorded before `--protocol`)."""

DEFAULT_JUDGE = "auto"


def protocol_of(info: dict[str, Any]) -> str:
    """The protocol a stored run (its run.json) followed; runs recorded before --protocol followed the arena's."""
    return str((info.get("config") or {}).get("protocol") or DEFAULT_PROTOCOL)


def judge_of(info: dict[str, Any]) -> str:
    """The judge a run was scored with: run.json's `judge`, else its config's (older runs), else "auto"."""
    return str(info.get("judge") or (info.get("config") or {}).get("judge") or DEFAULT_JUDGE)


def resume_fields(config: dict[str, Any]) -> dict[str, Any]:
    """The config fields a resume adds to a stored config so it runs as it was recorded: a run recorded before
    --protocol existed continues with the arena's pipeline."""
    return {} if "protocol" in config else {"protocol": DEFAULT_PROTOCOL}


def fingerprint_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """The config fields a grid fingerprint hashes, as older runs hashed them: the protocol is left out when it is
    the arena's (runs recorded before --protocol had no such field, and must keep their fingerprint)."""
    if fields.get("protocol") in (None, DEFAULT_PROTOCOL):
        fields = {k: v for k, v in fields.items() if k != "protocol"}
    return fields


def episode_format(record: dict[str, Any]) -> int:
    """The format an episode line was written in (lines without `format` predate versioning: 1)."""
    return int(record.get("format") or 1)


def populations_of(info: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Suite name -> the population records of a stored run's datasets (run.json `datasets[].population`: the
    questions of a dataset's file, counted as the suite's published evaluator counts them; each names its `suite`).
    A dataset entry without one (runs before it was kept, `--protocol arena` runs, generated worlds) adds nothing."""
    out: dict[str, list[dict[str, Any]]] = {}
    for entry in info.get("datasets") or []:
        population = entry.get("population") if isinstance(entry, dict) else None
        if isinstance(population, dict) and population.get("suite"):
            out.setdefault(str(population["suite"]), []).append(population)
    return out


CARV_PROMPT_VALUES = {"paper": True, "arena": False}
"""carv-llm's older `prompt` option values -> its `reference_image` option."""


def carv_reference_image(prompt: str) -> bool:
    """The carv-llm `reference_image` value of an older run's (or command line's) `prompt` option value."""
    if prompt not in CARV_PROMPT_VALUES:
        raise ValueError(f"carv-llm option prompt (now reference_image) must be one of "
                         f"{', '.join(CARV_PROMPT_VALUES)}, got {prompt!r}")
    return CARV_PROMPT_VALUES[prompt]
