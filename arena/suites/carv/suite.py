"""CARV, as one `Suite`: the loader, the carv-mini world and its check, the caption-parser and LLM judges, and
the paper's Table 2 layout."""

from __future__ import annotations

from typing import Sequence

from arena.core.suite import PaperTable, Suite, SuiteFigures, cell

from .check import CHECK
from .judge import carv_llm, carv_metrics, carv_parse
from .loader import CARV_LOADER
from .policies import carv_copy, carv_oracle
from .protocol import original_judges
from .world import build

TABLE2_COLUMNS = ("Single", "Union SS", "Union DS", "Intersection SS", "Intersection DS", "Difference SS",
                  "Difference DS")


class CARV(Suite):
    """Compositional analogical reasoning: apply the transformation shown by example images to a new one."""

    name = "carv"
    loaders = (CARV_LOADER,)
    judges = {"carv-parse": carv_parse, "carv-llm": carv_llm}
    agents = {"carv-oracle": carv_oracle, "carv-copy": carv_copy}
    worlds = {"carv-mini": build}
    world_checks = {"carv-mini": CHECK}
    arena_variants = {"carv-llm": {"reference_image": False, "identical": "skip"}}  # --protocol arena (docs/protocols.md)
    original_dataset_rules = {CARV_LOADER.name: original_judges}
    metrics = carv_metrics

    @classmethod
    def paper_tables(cls, groups: Sequence[SuiteFigures]) -> list[PaperTable]:
        """Table 2 of "CARV: A Diagnostic Benchmark for Compositional Analogical Reasoning in Multimodal LLMs"
        (arXiv 2603.27958): one row per model (group), columns Single, Union SS/DS, Intersection SS/DS,
        Difference SS/DS (SS: same source, DS: different source), accuracy (%) over valid verdicts."""
        table = PaperTable("CARV Table 2 layout: accuracy (%) per operation and source setting",
                           ["model", *TABLE2_COLUMNS, "all valid", "valid", "invalid"])
        for g in groups:
            cells = g.figures.get("table2") or {}
            table.rows.append([g.label, *(cell(cells.get(c)) for c in TABLE2_COLUMNS), cell(g.figures.get("accuracy")),
                               str(g.figures.get("valid", 0)), str(g.figures.get("invalid", 0))])
        return [table]
