"""The sweep plot: Pass@1 and tool utilisation against max rounds, one line per (run, agent, setting)."""

from __future__ import annotations

import io
from collections import defaultdict
from typing import Any


def sweep_lines(summaries: list[tuple[str, dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Line label -> its summary groups sorted by max rounds; the run id is in the label only for several runs."""
    lines: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run_id, summary in summaries:
        for group in summary.get("groups", []):
            label = f"{group['agent']} · {group['setting']}"
            if len(summaries) > 1:
                label = f"{run_id}: {label}"
            lines[label].append(group)
    return {k: sorted(v, key=lambda g: g["max_rounds"]) for k, v in sorted(lines.items())}


def sweep_png(summaries: list[tuple[str, dict[str, Any]]], title: str = "Budget sweep") -> bytes:
    """A PNG with two panels (Pass@1 %, tool utilisation %) against max rounds N."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines = sweep_lines(summaries)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=110)
    palette = plt.get_cmap("tab10").colors
    try:
        for index, (label, groups) in enumerate(lines.items()):
            style = {"color": palette[index % len(palette)], "linestyle": ("-", "--", ":", "-.")[index // 10 % 4],
                     "label": label}
            xs = [g["max_rounds"] for g in groups]
            pass1 = [g["pass1"] or 0.0 for g in groups]
            errors = [g.get("pass1_std") or 0.0 for g in groups]
            if any(errors):
                left.errorbar(xs, pass1, yerr=errors, marker="o", capsize=3, **style)
            else:
                left.plot(xs, pass1, marker="o", **style)
            util = [g["tool_utilisation"] for g in groups]
            if any(u is not None for u in util):
                right.plot(xs, [u if u is not None else float("nan") for u in util], marker="s", **style)
        all_x = sorted({g["max_rounds"] for groups in lines.values() for g in groups})
        for axis, name in ((left, "Pass@1 (%)"), (right, "Tool utilisation (%)")):
            axis.set_xlabel("max rounds N")
            axis.set_ylabel(name)
            axis.set_xticks(all_x)
            axis.grid(True, alpha=0.3)
        left.set_ylim(bottom=0)
        right.set_ylim(0, 105)
        handles, labels = left.get_legend_handles_labels()
        if handles:
            fig.legend(handles, labels, loc="lower center", ncol=min(3, len(labels)), fontsize=8, frameon=False)
        fig.suptitle(title)
        fig.tight_layout(rect=(0, 0.08 + 0.04 * ((len(labels) - 1) // 3), 1, 1))
        out = io.BytesIO()
        fig.savefig(out, format="png")
        return out.getvalue()
    finally:
        plt.close(fig)
