"""MMIR, as one `Suite`: the loader, the mmir-mini world (pages rendered in Chromium with injected
inconsistencies) and its check, and the 0 / 0.5 / 1 judge with its per-source figures."""

from __future__ import annotations

from arena.core.suite import Suite

from .check import CHECK
from .judge import mmir, mmir_metrics
from .loader import MMIR_LOADER
from .policies import mmir_oracle, mmir_random
from .protocol import original_questions
from .world import build


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
