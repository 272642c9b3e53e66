"""A recorded run's completeness (`arena.judges.completeness`), for every screen that shows a run: the summary,
the report, the viewer and compare say first how much of the grid was never played or errored."""

from __future__ import annotations

import json
from typing import Any

from arena.judges.completeness import Completeness, completeness, planned_of

from .rundata import RunData
from .table import errors_counted_as_wrong


def written_summary(run: RunData) -> dict[str, Any]:
    """summary.json as the runner last wrote it (empty when there is none or it cannot be read)."""
    try:
        return json.loads(run.store.summary_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def run_completeness(run: RunData) -> Completeness:
    """The run's recorded and errored episodes against the grid the runner planned (run.json, else summary.json)."""
    planned = run.info.planned_episodes
    return completeness(run.summary, planned if planned is not None else planned_of(written_summary(run)))


def incomplete_line(run: RunData) -> str | None:
    """The run's "incomplete: …" line (None when complete), naming `arena resume` with its directory."""
    return run_completeness(run).line(run.store.dir, as_wrong=errors_counted_as_wrong(run.summary))
