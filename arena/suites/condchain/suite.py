"""MM-CondChain, as one `Suite`: the loader, the condchain-mini worlds and their check, the judge (True-path /
False-path accuracy, Path F1) and the per-domain table."""

from __future__ import annotations

from typing import Any, Sequence

from arena.core.suite import PaperTable, Suite, SuiteFigures, cell

from .check import CHECK
from .judge import condchain, condchain_metrics
from .loader import CONDCHAIN_LOADER
from .policies import condchain_oracle, condchain_random
from .protocol import PUBLISHED_REQUEST, original_frames
from .world import build, build_agentic


def _mean(values: list[Any]) -> float | None:
    numbers = [float(v) for v in values if isinstance(v, (int, float))]
    return sum(numbers) / len(numbers) if numbers else None


class CondChain(Suite):
    """Visual reasoning over chains of conditions; a False path must be rejected."""

    name = "condchain"
    loaders = (CONDCHAIN_LOADER,)
    judges = {"condchain": condchain}
    agents = {"condchain-oracle": condchain_oracle, "condchain-random": condchain_random}
    worlds = {"condchain-mini": build, "condchain-mini-agentic": build_agentic}
    world_checks = {"condchain-mini": CHECK, "condchain-mini-agentic": CHECK}
    arena_variants = {"condchain": {"no_answer": "wrong", "truth": "stripped"}}  # --protocol arena (docs/protocols.md)
    original_dataset_rules = {CONDCHAIN_LOADER.name: original_frames}
    original_scores_failures = True  # the published get_answer predicts "None" when the request fails
    published_request = PUBLISHED_REQUEST
    metrics = condchain_metrics

    @classmethod
    def paper_tables(cls, groups: Sequence[SuiteFigures]) -> list[PaperTable]:
        """Per model, for each visual domain the True-path accuracy, False-path accuracy and Path F1 (%), then
        the mean Path F1 over domains and the pooled figures over all domains."""
        domains = sorted({d for g in groups for d in (g.figures.get("domains") or {})})
        table = PaperTable("MM-CondChain per domain: True-path, False-path accuracy and Path F1 (%)",
                           ["model", *(f"{d} {x}" for d in domains for x in ("True", "False", "F1")),
                            "mean F1 over domains", "all True", "all False", "all F1"])
        for g in groups:
            per = g.figures.get("domains") or {}
            cells = []
            for d in domains:
                fig = per.get(d) or {}
                cells += [cell(fig.get("true_acc")), cell(fig.get("false_acc")), cell(fig.get("path_f1"))]
            overall = g.figures.get("overall") or {}
            table.rows.append([g.label, *cells, cell(_mean([(per.get(d) or {}).get("path_f1") for d in domains])),
                               cell(overall.get("true_acc")), cell(overall.get("false_acc")),
                               cell(overall.get("path_f1"))])
        return [table]
