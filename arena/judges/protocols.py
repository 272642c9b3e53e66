"""What a run's protocol (`original` or `arena`) changes, as the suites declare it (`arena.core.suite.Suite`).

Under `original`: a suite's `original_turn_rule` (its published reading of raw text turns), its
`original_dataset_rules` (its published loader's reading of the same file, which also fills the tasks' published
request layout) and its `published_request` (the fields its published script sends with every model request, with
their source; `sampling_differences` says where a run's explicit options depart from them). Judges: a judge's
published rule is its default (`--protocol original`); where the arena has its own, stricter or more lenient
choice, the suite declares it as option values (`arena_variants`), or, for a generic judge no suite owns, the
judge's module registers it here (`register_arena_variant`; `register_original_variant` for what the arena's
default adds that the published pipeline does not do). A run builds the judge with them; options given explicitly
(`--judge-option`) always win.
"""

from __future__ import annotations

from typing import Any, Callable, Literal

from arena.core.dataset import Dataset
from arena.core.protocol import TurnRule
from arena.core.suite import SUITES, PublishedRequest, suite_named

from .metrics import ERRORED

Protocol = Literal["original", "arena"]

_ARENA_VARIANTS: dict[str, dict[str, Any]] = {}  # generic judges' own (a suite declares its judges' in its class)
_ORIGINAL_VARIANTS: dict[str, dict[str, Any]] = {}


def register_arena_variant(judge_id: str, **options: Any) -> None:
    """Under `--protocol arena`, the generic judge `judge_id` is built with `options` unless the run gives them."""
    _ARENA_VARIANTS[judge_id] = dict(options)


def register_original_variant(judge_id: str, **options: Any) -> None:
    """Under `--protocol original` (given or decided by the data), the generic judge `judge_id` is built with
    `options` unless the run gives them: where the arena's default adds something the published pipeline does not
    do (e.g. the `llm` judge's evidence call)."""
    _ORIGINAL_VARIANTS[judge_id] = dict(options)


def arena_variant(judge_id: str) -> dict[str, Any]:
    """The options judge `judge_id` is built with under `--protocol arena` (none when nothing declares any)."""
    for suite in SUITES.values():
        if judge_id in suite.arena_variants:
            return dict(suite.arena_variants[judge_id])
    return dict(_ARENA_VARIANTS.get(judge_id, {}))


def protocol_options(judge_id: str, protocol: str | None, options: dict[str, Any]) -> dict[str, Any]:
    """The options to build `judge_id` with under `protocol`."""
    if protocol == "arena":
        return {**arena_variant(judge_id), **options}
    if protocol == "original":
        return {**_ORIGINAL_VARIANTS.get(judge_id, {}), **options}
    return dict(options)


def published_request(suite: str) -> PublishedRequest | None:
    """What `suite`'s published script sends with every agent request, when the suite declares it."""
    declared = suite_named(suite)
    return declared.published_request if declared is not None else None


def sampling_differences(published: dict[str, Any], explicit: dict[str, Any]) -> list[dict[str, Any]]:
    """Where a run's explicit request fields depart from the published request: [{field, published, sent}], the
    published fields first (in their order), then fields the published script does not send (`published` None).
    A field given with the published value is no difference."""
    replaced = [{"field": name, "published": value, "sent": explicit[name]} for name, value in published.items()
                if name in explicit and explicit[name] != value]
    added = [{"field": name, "published": None, "sent": value} for name, value in explicit.items()
             if name not in published]
    return replaced + added


def original_turn_rule(suite: str) -> TurnRule | None:
    """Under `--protocol original`, how text turns of `suite`'s tasks are classified (raw output -> action) as the
    suite's published pipeline classifies them; None: by `arena.core.protocol.parse_response`."""
    declared = suite_named(suite)
    return declared.original_turn_rule if declared is not None else None


def judged(finish: str, suite: str, protocol: str | None) -> bool:
    """Whether an episode that finished with `finish` is sent to a judge: every episode played to the end; one that
    ended in an error (`ERRORED`: a failed request) only under `--protocol original` for a suite whose published
    evaluator scores a failed request (`Suite.original_scores_failures`). The figures drawn from scores leave errored
    episodes out all the same (`metrics.played_rows`); their verdicts count in `pass1_all` and the suites' figures."""
    if finish not in ERRORED:
        return True
    declared = suite_named(suite) if protocol == "original" else None
    return declared is not None and declared.original_scores_failures


def original_dataset_rule(fmt: str) -> Callable[[Dataset], None] | None:
    """Under `--protocol original`, the rule every dataset loaded by the loader named `fmt` goes through: it adjusts
    the tasks (or raises DatasetError) as the published loader would have read the same file."""
    for suite in SUITES.values():
        if fmt in suite.original_dataset_rules:
            return suite.original_dataset_rules[fmt]
    return None


def apply_original_dataset_rules(datasets: list[Dataset]) -> None:
    """Read each dataset as its published loader would (`original_dataset_rule`), as a run under `--protocol
    original` does; also when reading such a run back (replay, reports), so its tasks are the run's."""
    for dataset in datasets:
        rule = original_dataset_rule(str(dataset.meta.get("format")))
        if rule is not None:
            rule(dataset)


def default_protocol(published: list[bool]) -> Protocol:
    """`original` when any dataset is in a published format, `arena` for generated worlds and arena tasks."""
    return "original" if any(published) else "arena"
