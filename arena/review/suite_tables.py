"""The suites' results in their papers' table layouts, from the figures each group of a run's summary holds
(`summary.json` → `groups[].suites`, computed by the suites' registered metrics). Nothing is recomputed here:
each cell is a number of the summary, or the mean of such numbers where said.

- CARV, Table 2 of "CARV: A Diagnostic Benchmark for Compositional Analogical Reasoning in Multimodal LLMs"
  (arXiv 2603.27958): one row per model (group), columns Single, Union SS/DS, Intersection SS/DS,
  Difference SS/DS (SS: same source, DS: different source), accuracy (%) over valid verdicts.
- UReason, Table 2 of "UReason: Benchmarking the Reasoning Paradox in Unified Multimodal Models": per model,
  rows 1 (direct), 2 (reasoning-guided), 3 (de-contextualised generation); per task family its accuracy (%) and
  Δ, the gain in points over the previous setting; then the mean over families (the paper's Avg.) and the
  pooled accuracy over all of the group's valid verdicts.
- MM-CondChain: per model, for each visual domain the True-path accuracy, False-path accuracy and Path F1
  (%), then the mean Path F1 over domains and the pooled figures over all domains.
"""

from __future__ import annotations

from typing import Any

from .report_table import Table
from .rundata import RunData
from .table import fmt

CARV_COLUMNS = ("Single", "Union SS", "Union DS", "Intersection SS", "Intersection DS", "Difference SS",
                "Difference DS")
UREASON_SETTINGS = (("1", "direct", None), ("2", "guided", "delta_1_2"), ("3", "decontext", "delta_2_3"))


def _groups(runs: list[RunData], suite: str) -> list[tuple[str, dict[str, Any]]]:
    """(label, suite figures) of every group of every run that has figures of `suite`."""
    several = len(runs) > 1
    out = []
    for run in runs:
        for g in run.summary["groups"]:
            figures = (g.get("suites") or {}).get(suite)
            if figures:
                label = f"{g['agent']} · {g['setting']} · N={g['max_rounds']}"
                out.append((f"{run.run_id}: {label}" if several else label, figures))
    return out


def _mean(values: list[Any]) -> float | None:
    numbers = [float(v) for v in values if isinstance(v, (int, float))]
    return sum(numbers) / len(numbers) if numbers else None


def _delta(value: Any) -> str:
    return "-" if not isinstance(value, (int, float)) else f"{value:+.2f}"


def carv_table(runs: list[RunData]) -> Table | None:
    groups = _groups(runs, "carv")
    if not groups:
        return None
    table = Table("CARV Table 2 layout: accuracy (%) per operation and source setting",
                  ["model", *CARV_COLUMNS, "all valid", "valid", "invalid"])
    for label, f in groups:
        cells = f.get("table2") or {}
        table.rows.append([label, *(fmt(cells.get(c)) for c in CARV_COLUMNS), fmt(f.get("accuracy")),
                           str(f.get("valid", 0)), str(f.get("invalid", 0))])
    return table


def ureason_table(runs: list[RunData]) -> Table | None:
    groups = _groups(runs, "ureason")
    if not groups:
        return None
    families = list(dict.fromkeys(fam for _, f in groups for per in (f.get("per_family") or {}).values()
                                  for fam in per))
    table = Table("UReason Table 2 layout: accuracy (%) and Δ (points over the previous setting)",
                  ["model", "setting", *(f"{fam} {x}" for fam in families for x in ("Acc", "Δ")), "Avg. Acc",
                   "Avg. Δ", "pooled Acc", "pooled Δ"])
    for label, f in groups:
        per_family, deltas = f.get("per_family") or {}, f.get("delta_per_family") or {}
        previous_avg = None
        for number, setting, delta_key in UREASON_SETTINGS:
            if setting not in per_family:
                previous_avg = None
                continue
            accs = per_family[setting]
            avg = _mean([accs.get(fam) for fam in families])
            cells = []
            for fam in families:
                cells += [fmt(accs.get(fam)), _delta((deltas.get(fam) or {}).get(delta_key) if delta_key else None)]
            avg_delta = avg - previous_avg if avg is not None and previous_avg is not None else None
            table.rows.append([label, f"{number} ({setting})", *cells, fmt(avg), _delta(avg_delta),
                               fmt((f.get("accuracy") or {}).get(setting)),
                               _delta(f.get(delta_key) if delta_key else None)])
            previous_avg = avg
    return table


def condchain_table(runs: list[RunData]) -> Table | None:
    groups = _groups(runs, "condchain")
    if not groups:
        return None
    domains = sorted({d for _, f in groups for d in (f.get("domains") or {})})
    table = Table("MM-CondChain per domain: True-path, False-path accuracy and Path F1 (%)",
                  ["model", *(f"{d} {x}" for d in domains for x in ("True", "False", "F1")), "mean F1 over domains",
                   "all True", "all False", "all F1"])
    for label, f in groups:
        per = f.get("domains") or {}
        cells = []
        for d in domains:
            fig = per.get(d) or {}
            cells += [fmt(fig.get("true_acc")), fmt(fig.get("false_acc")), fmt(fig.get("path_f1"))]
        overall = f.get("overall") or {}
        table.rows.append([label, *cells, fmt(_mean([(per.get(d) or {}).get("path_f1") for d in domains])),
                           fmt(overall.get("true_acc")), fmt(overall.get("false_acc")), fmt(overall.get("path_f1"))])
    return table


def suite_tables(runs: list[RunData]) -> list[Table]:
    """The paper-layout tables of the suites these runs hold."""
    return [t for t in (carv_table(runs), ureason_table(runs), condchain_table(runs)) if t is not None]
