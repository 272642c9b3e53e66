"""MMIR, as one `Suite`: the loader, the mmir-mini world (pages rendered in Chromium with injected
inconsistencies) and its check, the 0 / 0.5 / 1 judge with its per-source figures, and Table 2's layout."""

from __future__ import annotations

from typing import Sequence

from arena.core.suite import PaperTable, Suite, SuiteFigures, cell

from .check import CHECK
from .judge import mmir, mmir_metrics
from .loader import MMIR_LOADER
from .policies import mmir_oracle, mmir_random
from .protocol import original_questions
from .world import build

SETTINGS = {"open": "open-ended", "mcq": "MCQ"}
SOURCES = ("web", "office", "poster")


def divided_by(figures: dict) -> str:
    """What a row's accuracies divide by: the file's questions (`denominator`, `--protocol original`) or the
    questions the run played."""
    return figures.get("denominator") or f"the {sum((figures.get('counts') or {}).values())} questions played"


class MMIR(Suite):
    """Finding the inconsistent element of a web page, office document or poster."""

    name = "mmir"
    loaders = (MMIR_LOADER,)
    judges = {"mmir": mmir}
    agents = {"mmir-oracle": mmir_oracle, "mmir-random": mmir_random}
    worlds = {"mmir-mini": build}
    world_checks = {"mmir-mini": CHECK}
    arena_variants = {"mmir": {"strict_ans": False, "request": "arena"}}  # --protocol arena (docs/protocols.md)
    original_dataset_rules = {MMIR_LOADER.name: original_questions}
    metrics = mmir_metrics

    @classmethod
    def paper_tables(cls, groups: Sequence[SuiteFigures]) -> list[PaperTable]:
        """Table 2 of "Multimodal Inconsistency Reasoning (MMIR)": per model and setting (open-ended, MCQ), the
        accuracy (%) per source and overall; the last column says what each row divides by (under `--protocol
        original` every question of the file, those not run counted as wrong, as the published `eval` does)."""
        table = PaperTable("MMIR Table 2 layout: accuracy (%) per source and overall",
                           ["model", "setting", "Web", "Office", "Poster", "Overall", "denominator"])
        for g in groups:
            for mode, figures in (g.figures.get("modes") or {}).items():
                sources = figures.get("sources") or {}
                table.rows.append([g.label, SETTINGS.get(mode, mode), *(cell(sources.get(s)) for s in SOURCES),
                                   cell(figures.get("accuracy")), divided_by(figures)])
        if any(g.figures.get("denominator") for g in groups):
            table.title += " · --protocol original: over every question in the file, those not run count as wrong"
        return [table]
