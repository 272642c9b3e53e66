"""UReason, as one `Suite`: the loader, the ureason-mini world and its check, the judges, the image-generation
tool and agent of the three settings, and the paper's Table 2 layout."""

from __future__ import annotations

from typing import Any, Sequence

from arena.core.suite import PaperTable, Suite, SuiteFigures, cell

from .check import CHECK
from .image_gen import GenerateImageTool, image_gen
from .judge import ureason_metrics, ureason_reasoning, ureason_verify, ureason_vlm
from .loader import UREASON_LOADER
from .policies import ureason_oracle, ureason_random
from .world import build

TABLE_SETTINGS = (("1", "direct", None), ("2", "guided", "delta_1_2"), ("3", "decontext", "delta_2_3"))


def _mean(values: list[Any]) -> float | None:
    numbers = [float(v) for v in values if isinstance(v, (int, float))]
    return sum(numbers) / len(numbers) if numbers else None


def _delta(value: Any) -> str:
    return "-" if not isinstance(value, (int, float)) else f"{value:+.2f}"


class UReason(Suite):
    """Reasoning before generating an image: direct, reasoning-guided and de-contextualised generation."""

    name = "ureason"
    loaders = (UREASON_LOADER,)
    judges = {"ureason-vlm": ureason_vlm, "ureason-reasoning": ureason_reasoning, "ureason-verify": ureason_verify}
    agents = {"ureason-oracle": ureason_oracle, "ureason-random": ureason_random, "image_gen": image_gen}
    tools = (GenerateImageTool,)
    worlds = {"ureason-mini": build}
    world_checks = {"ureason-mini": CHECK}
    arena_variants = {"ureason-vlm": {"missing": "fail"}}  # --protocol arena (docs/protocols.md)
    metrics = ureason_metrics

    @classmethod
    def paper_tables(cls, groups: Sequence[SuiteFigures]) -> list[PaperTable]:
        """Table 2 of "UReason: Benchmarking the Reasoning Paradox in Unified Multimodal Models": per model, rows
        1 (direct), 2 (reasoning-guided), 3 (de-contextualised generation); per task family its accuracy (%) and
        Δ, the gain in points over the previous setting; then the mean over families (the paper's Avg.) and the
        pooled accuracy over all of the group's valid verdicts."""
        families = list(dict.fromkeys(fam for g in groups for per in (g.figures.get("per_family") or {}).values()
                                      for fam in per))
        table = PaperTable("UReason Table 2 layout: accuracy (%) and Δ (points over the previous setting)",
                           ["model", "setting", *(f"{fam} {x}" for fam in families for x in ("Acc", "Δ")),
                            "Avg. Acc", "Avg. Δ", "pooled Acc", "pooled Δ"])
        for g in groups:
            f = g.figures
            per_family, deltas = f.get("per_family") or {}, f.get("delta_per_family") or {}
            previous_avg = None
            for number, setting, delta_key in TABLE_SETTINGS:
                if setting not in per_family:
                    previous_avg = None
                    continue
                accs = per_family[setting]
                avg = _mean([accs.get(fam) for fam in families])
                cells = []
                for fam in families:
                    cells += [cell(accs.get(fam)),
                              _delta((deltas.get(fam) or {}).get(delta_key) if delta_key else None)]
                avg_delta = avg - previous_avg if avg is not None and previous_avg is not None else None
                table.rows.append([g.label, f"{number} ({setting})", *cells, cell(avg), _delta(avg_delta),
                                   cell((f.get("accuracy") or {}).get(setting)),
                                   _delta(f.get(delta_key) if delta_key else None)])
                previous_avg = avg
        return [table]
