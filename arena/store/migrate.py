"""Every rule for reading runs written by older versions of the arena, in one place, applied on read.

A run directory is never rewritten to a newer format: its files are read as they are, and the records read them
into the current fields. `upgrade_run_info` runs before `RunInfo` validates run.json, `config_sections` before
`RunConfig` validates a config (pydantic before-validators): no reader calls them, or reads run.json as a dict.
Format history (`arena.store.records.FORMAT_VERSION`):

- format 1: run.json `version` 1 (or none) and episode lines without `format` (`episode_format`).
  - runs recorded before `--protocol` existed carry no `config.protocol`: they followed the arena's pipeline, and
    are read so (`upgrade_run_info`); their fingerprint was computed without the field, which is why an
    `arena`-protocol run's fingerprint leaves it out (`fingerprint_layout`);
  - runs recorded before run.json had its own `judge` name it in `config.judge`, and the oldest in neither: they
    are scored with "auto";
  - runs recorded before agent templates existed keep, in run.json `prompts.templates`, entries without a `kind`:
    they were judge templates (`OLD_TEMPLATE_KIND`).
  - a suite's own older option names are read by the suite itself (the store names no suite).
- format 2: `format` 2 on every episode line written from then on (a resumed format-1 run holds lines of both).
  - runs recorded before a dataset's file population was kept (run.json `datasets[].population`) have none:
    their suite figures are over the episodes played (`RunInfo.populations`). Additive, so no format change.
- format 3: run.json's `config` in sections (`arena.store.run_config`); a flat config of formats 1 and 2 is read
  into them (`config_sections`, by `FLAT_FIELDS`), and the fingerprint is hashed in the flat layout it always was
  (`fingerprint_layout`), so every run keeps its run id.
"""

from __future__ import annotations

from typing import Any

DEFAULT_PROTOCOL = "arena"
"""The protocol of a run that names none (recorded before `--protocol`)."""

DEFAULT_JUDGE = "auto"

OLD_TEMPLATE_KIND = "judge"
"""The kind of a prompt template entry recorded before agent templates existed (no `kind`)."""

FLAT_FIELDS: dict[str, tuple[str, str | None]] = {
    "data": ("data", "path"), "root": ("data", "root"), "fmt": ("data", "fmt"), "corpus": ("data", "corpus"),
    "limit": ("data", "limit"), "task_ids": ("data", "task_ids"), "levels": ("data", "levels"),
    "categories": ("data", "categories"), "suites": ("data", "suites"),
    "agent": ("agents", "agent"), "agent_options": ("agents", "options"), "agents": ("agents", "sweep"),
    "settings": ("grid", "settings"), "max_rounds": ("grid", "max_rounds"), "repeats": ("grid", "repeats"),
    "seed": ("grid", "seed"), "show_budget": ("grid", "show_budget"), "prefix_sharing": ("grid", "prefix_sharing"),
    "protocol": ("grid", "protocol"), "fork": ("grid", "fork"),
    "tool_options": ("tools", None), "budget": ("limits", None),
    "judge": ("judge", "name"), "judge_options": ("judge", "options"), "prompts": ("judge", "prompts"),
    "concurrency": ("schedule", "concurrency"), "backend": ("schedule", "backend"),
    "ray_address": ("schedule", "ray_address"), "ray_workers": ("schedule", "ray_workers"),
    "ray_shared_dir": ("schedule", "ray_shared_dir"), "workers": ("schedule", "workers"),
    "endpoint_limits": ("schedule", "endpoint_limits"),
    "fail_fast": ("stops", "fail_fast"), "price": ("stops", "price"), "max_cost": ("stops", "max_cost"),
    "run_id": ("output", "run_id"), "out": ("output", "out"), "transcript": ("output", "transcript"),
    "retry_errors": ("output", "retry_errors"),
}
"""A flat config field (formats 1 and 2) -> its section and name there (None: the whole section)."""

SECTIONS = ("data", "agents", "grid", "tools", "limits", "judge", "schedule", "stops", "output")

FINGERPRINT_ADDED: dict[str, tuple[Any, ...]] = {
    "agents": (None, []), "prefix_sharing": (None,), "fork": (None,), "levels": (None,), "categories": (None,),
    "suites": (None,), "protocol": (None, DEFAULT_PROTOCOL)}
"""Grid fields added after the first fingerprints -> the values at which the fingerprint leaves them out (the value
every run recorded before the field had), so those runs keep their run id."""


def _is_section(name: str, value: Any) -> bool:
    """Whether `value` under `name` is a section, not the flat field of the same name (`data`, `agents`, `judge`:
    a string, a list, a string or None)."""
    if name not in SECTIONS:
        return False
    return name not in ("data", "agents", "judge") or isinstance(value, dict) or hasattr(value, "model_dump")


def config_sections(data: Any) -> Any:
    """A config read into its sections (before `RunConfig` validates it): flat fields (formats 1 and 2, or keyword
    arguments by those names) go to their section by `FLAT_FIELDS`; section values are kept."""
    if not isinstance(data, dict):
        return data
    out: dict[str, Any] = {}
    flat: list[tuple[str, Any]] = []
    for name, value in data.items():
        if _is_section(name, value):
            out[name] = value  # a dict or a section record, kept (its fields set stay as given)
        elif name in FLAT_FIELDS:
            flat.append((name, value))
        else:
            out[name] = value  # unknown: left for validation to name
    for name, value in flat:
        section, field = FLAT_FIELDS[name]
        if field is None:
            out[section] = value
        else:
            given = out.get(section, {})
            given = given.model_dump(exclude_unset=True) if hasattr(given, "model_dump") else given
            out[section] = {**given, field: value}
    return out


def fingerprint_layout(sections: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The grid sections' fields as fingerprints have hashed them since the first run: by their flat names, a field
    added later left out at the value older runs had (`FINGERPRINT_ADDED`)."""
    keep: dict[str, Any] = {}
    for name, (section, field) in FLAT_FIELDS.items():
        if section in sections:
            keep[name] = sections[section] if field is None else sections[section][field]
    return {name: value for name, value in keep.items()
            if not (name in FINGERPRINT_ADDED and value in FINGERPRINT_ADDED[name])}


def _upgrade_config(config: Any) -> Any:
    if not config:
        return None
    if isinstance(config, dict) and "grid" not in config and "protocol" not in config:
        config = {**config, "protocol": DEFAULT_PROTOCOL}  # recorded before --protocol: the arena's pipeline
    return config


def _judge_named(config: Any) -> str | None:
    if not isinstance(config, dict):
        return None
    judge = config.get("judge")
    return judge.get("name") if isinstance(judge, dict) else judge


def upgrade_run_info(data: Any) -> Any:
    """run.json of any format read into the current fields (before `RunInfo` validates it): the config's protocol
    and the run's judge made explicit, template kinds given, null maps emptied (see the module docstring)."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    data["config"] = _upgrade_config(data.get("config"))
    if not data.get("judge"):
        data["judge"] = _judge_named(data["config"]) or DEFAULT_JUDGE
    for name in ("learned_limits", "learned_params"):
        if data.get(name) is None:
            data.pop(name, None)
    prompts = data.get("prompts")
    if isinstance(prompts, dict) and isinstance(prompts.get("templates"), dict):
        templates = {name: {"kind": OLD_TEMPLATE_KIND, **entry} if isinstance(entry, dict) else entry
                     for name, entry in prompts["templates"].items()}
        data["prompts"] = {**prompts, "templates": templates}
    return data


def episode_format(record: dict[str, Any]) -> int:
    """The format an episode line was written in (lines without `format` predate versioning: 1)."""
    return int(record.get("format") or 1)
