"""Which variant of a judge a run's protocol asks for.

A judge's published rule is its default (`--protocol original`); where the arena has its own, stricter or more
lenient choice, the judge's module registers it here as option values (`register_arena_variant`), and a run under
`--protocol arena` builds the judge with them. Options given explicitly (`--judge-option`) always win.
"""

from __future__ import annotations

from typing import Any

ARENA_VARIANTS: dict[str, dict[str, Any]] = {}


def register_arena_variant(judge_id: str, **options: Any) -> None:
    """Under `--protocol arena`, judge `judge_id` is built with `options` unless the run gives them."""
    ARENA_VARIANTS[judge_id] = dict(options)


def protocol_options(judge_id: str, protocol: str | None, options: dict[str, Any]) -> dict[str, Any]:
    """The options to build `judge_id` with under `protocol`."""
    if protocol == "arena":
        return {**ARENA_VARIANTS.get(judge_id, {}), **options}
    return dict(options)
