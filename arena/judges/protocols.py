"""What a run's protocol (`original` or `arena`) changes, as the suites declare it (`arena.core.suite.Suite`).

Under `original`: a suite's `original_turn_rule` (its published reading of raw text turns) and its
`original_dataset_rules` (its published loader's reading of the same file). Judges: a judge's published rule is
its default (`--protocol original`); where the arena has its own, stricter or more lenient choice, the suite
declares it as option values (`arena_variants`), and a run under `--protocol arena` builds the judge with them.
Options given explicitly (`--judge-option`) always win.
"""

from __future__ import annotations

from typing import Any, Callable, Literal

from arena.core.dataset import Dataset
from arena.core.protocol import TurnRule
from arena.core.suite import SUITES, suite_named

Protocol = Literal["original", "arena"]


def arena_variant(judge_id: str) -> dict[str, Any]:
    """The options judge `judge_id` is built with under `--protocol arena` (none when no suite declares any)."""
    for suite in SUITES.values():
        if judge_id in suite.arena_variants:
            return dict(suite.arena_variants[judge_id])
    return {}


def protocol_options(judge_id: str, protocol: str | None, options: dict[str, Any]) -> dict[str, Any]:
    """The options to build `judge_id` with under `protocol`."""
    if protocol == "arena":
        return {**arena_variant(judge_id), **options}
    return dict(options)


def original_turn_rule(suite: str) -> TurnRule | None:
    """Under `--protocol original`, how text turns of `suite`'s tasks are classified (raw output -> action) as the
    suite's published pipeline classifies them; None: by `arena.core.protocol.parse_response`."""
    declared = suite_named(suite)
    return declared.original_turn_rule if declared is not None else None


def original_dataset_rule(fmt: str) -> Callable[[Dataset], None] | None:
    """Under `--protocol original`, the rule every dataset loaded by the loader named `fmt` goes through: it adjusts
    the tasks (or raises DatasetError) as the published loader would have read the same file."""
    for suite in SUITES.values():
        if fmt in suite.original_dataset_rules:
            return suite.original_dataset_rules[fmt]
    return None


def default_protocol(published: list[bool]) -> Protocol:
    """`original` when any dataset is in a published format, `arena` for generated worlds and arena tasks."""
    return "original" if any(published) else "arena"
