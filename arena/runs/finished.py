"""A finished run, recognised without reading its records: the stamp summary.json carries when nothing was left.

The runner's last phase writes summary.json; when the run then had nothing left to play or judge (every cell of the
grid recorded, none ended in an error a resume plays again, every one judged by the run's judge, no stop) it adds
`finished`: the bytes of episodes.jsonl and verdicts.jsonl at that moment, the run's judge and a digest of the grid's
episode keys. Both .jsonl files are append-only, so while their sizes are those, the records are those; and while
the grid's keys hash the same, the plan is the same. `arena resume` of such a run then only confirms it ("nothing to
play, nothing to judge") instead of loading the episode index and summarising the run again.
"""

from __future__ import annotations

import hashlib
from typing import Any

from arena.judges.metrics import ERRORED
from arena.store.scan import RunScan

from .sweep import Family

NOTHING_LEFT = "nothing to play, nothing to judge"


def grid_digest(families: list[Family]) -> str:
    """A digest of the grid's episode keys (order-free)."""
    keys = sorted(cell.key for family in families for cell in family.cells)
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()


def left_over(scan: RunScan, families: list[Family], judge: str) -> int:
    """Cells a resume would still play or judge: unrecorded, ended in `error`, or not judged by `judge`."""
    recorded = set(scan.cols.get("key", ()))
    unrecorded = sum(1 for family in families for cell in family.cells if cell.key not in recorded)
    finishes = scan.cols.get("finish", [])
    chosen = scan.chosen(judge)
    errored = sum(1 for finish in finishes if finish == "error")
    unjudged = sum(1 for row, finish in enumerate(finishes) if finish not in ERRORED and row not in chosen)
    return unrecorded + errored + unjudged


def stamp(sizes: tuple[int, int], families: list[Family], judge: str) -> dict[str, Any]:
    """summary.json's `finished`: what a later resume compares (see the module docstring)."""
    return {"episodes_bytes": sizes[0], "verdicts_bytes": sizes[1], "judge": judge, "grid": grid_digest(families)}


def still_finished(recorded: dict[str, Any] | None, sizes: tuple[int, int], families: list[Family],
                   judge: str) -> bool:
    """Whether summary.json's `finished` stamp still holds: same record files, same judge, same grid."""
    return bool(recorded) and recorded == stamp(sizes, families, judge)
