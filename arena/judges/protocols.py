"""What a run's protocol (`original` or `arena`) changes, registered by the suites.

Under `original`: `register_original_turn_rule` (a suite's published reading of raw text turns),
`register_original_dataset_rule` (its published loader's reading of the same file) and
`register_published_request` (the sampling fields its published script sends with every model request, with
their source; `sampling_differences` says where a run's explicit options depart from them). Judges: a judge's published rule is its default (`--protocol original`); where the arena has its own, stricter or more
lenient choice, the judge's module registers it here as option values (`register_arena_variant`), and a run under
`--protocol arena` builds the judge with them. Options given explicitly (`--judge-option`) always win.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from arena.core.protocol import TurnRule

Protocol = Literal["original", "arena"]
ORIGINAL_TURN_RULES: dict[str, TurnRule] = {}
ORIGINAL_DATASET_RULES: dict[str, Callable[[Any], None]] = {}
ARENA_VARIANTS: dict[str, dict[str, Any]] = {}
ORIGINAL_VARIANTS: dict[str, dict[str, Any]] = {}


@dataclass(frozen=True)
class PublishedRequest:
    """What a suite's published script sends with every agent request besides `model` and `messages`: `fields`
    (top-level JSON fields, e.g. sampling parameters; empty when it sends none), and where that is read (`source`:
    repository, file, commit and flags)."""

    suite: str
    fields: dict[str, Any] = field(default_factory=dict)
    source: str = ""


PUBLISHED_REQUESTS: dict[str, PublishedRequest] = {}


def register_published_request(suite: str, fields: dict[str, Any], source: str) -> None:
    """Under `--protocol original`, every agent request of `suite`'s tasks carries `fields` (unless the run gives a
    field explicitly, e.g. `--agent-option temperature=0.3`); `source` names where the values were read."""
    PUBLISHED_REQUESTS[suite] = PublishedRequest(suite, dict(fields), source)


def sampling_differences(published: dict[str, Any], explicit: dict[str, Any]) -> list[dict[str, Any]]:
    """Where a run's explicit request fields depart from the published request: [{field, published, sent}], the
    published fields first (in their order), then fields the published script does not send (`published` None).
    A field given with the published value is no difference."""
    replaced = [{"field": name, "published": value, "sent": explicit[name]} for name, value in published.items()
                if name in explicit and explicit[name] != value]
    added = [{"field": name, "published": None, "sent": value} for name, value in explicit.items()
             if name not in published]
    return replaced + added


def register_original_variant(judge_id: str, **options: Any) -> None:
    """Under `--protocol original` (given or decided by the data), judge `judge_id` is built with `options` unless
    the run gives them: where the arena's default adds something the published pipeline does not do (e.g. the
    `llm` judge's evidence call)."""
    ORIGINAL_VARIANTS[judge_id] = dict(options)


def register_arena_variant(judge_id: str, **options: Any) -> None:
    """Under `--protocol arena`, judge `judge_id` is built with `options` unless the run gives them."""
    ARENA_VARIANTS[judge_id] = dict(options)


def protocol_options(judge_id: str, protocol: str | None, options: dict[str, Any]) -> dict[str, Any]:
    """The options to build `judge_id` with under `protocol`."""
    if protocol == "arena":
        return {**ARENA_VARIANTS.get(judge_id, {}), **options}
    if protocol == "original":
        return {**ORIGINAL_VARIANTS.get(judge_id, {}), **options}
    return dict(options)


def register_original_turn_rule(suite: str, rule: TurnRule) -> None:
    """Under `--protocol original`, text turns of `suite`'s tasks are classified by `rule` (raw output ->
    action) as the suite's published pipeline classifies them, instead of by `arena.core.protocol.parse_response`."""
    ORIGINAL_TURN_RULES[suite] = rule


def register_original_dataset_rule(fmt: str, rule: Callable[[Any], None]) -> None:
    """Under `--protocol original`, every dataset loaded by the loader named `fmt` goes through `rule`, which
    adjusts its tasks (or raises DatasetError) as the published loader would have read the same file."""
    ORIGINAL_DATASET_RULES[fmt] = rule


def apply_original_dataset_rules(datasets: list[Any]) -> None:
    """Read each dataset as its published loader would (`register_original_dataset_rule`), as a run under
    `--protocol original` does; also when reading such a run back (replay, reports), so its tasks are the run's."""
    for dataset in datasets:
        rule = ORIGINAL_DATASET_RULES.get(str(dataset.meta.get("format")))
        if rule is not None:
            rule(dataset)


def default_protocol(published: list[bool]) -> Protocol:
    """`original` when any dataset is in a published format, `arena` for generated worlds and arena tasks."""
    return "original" if any(published) else "arena"
