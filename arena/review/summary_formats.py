"""A run's summary for scripts and papers (`arena summary --format json|csv|markdown`).

json: the summary as recomputed from the store (`RunData.summary`) with the run's completeness
(`arena.judges.completeness`) under `completeness`; csv: one row per (agent, setting, max_rounds) group of the
figures the tables show, as plain numbers; markdown: the table the terminal shows (compact, or every column with
`wide`), the incomplete line above it when the run has one.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Literal

from arena.judges.completeness import Completeness

from .table import COMPACT_COLUMNS, WIDE_COLUMNS, group_cells, shown_pass1

SummaryFormat = Literal["table", "json", "csv", "markdown"]

CSV_FIELDS = ("agent", "setting", "max_rounds", "episodes", "pass1", "pass1_std", "pass1_ci_low", "pass1_ci_high",
              "pass1_shown", "errored", "judge_errors", "unjudged", "avg_tool_calls", "avg_rounds",
              "tool_utilisation", "invalid_calls", "avg_prompt_tokens", "avg_completion_tokens", "avg_seconds",
              "cost", "finish_reasons")
"""`pass1_shown`: the Pass@1 the table shows (under `--protocol original`, errored episodes counted as wrong)."""


def completeness_record(done: Completeness) -> dict[str, Any]:
    return {"planned": done.planned, "recorded": done.recorded, "errored": done.errored,
            "never_played": done.never_played if done.planned is not None else None, "complete": done.complete}


def summary_json(summary: dict[str, Any], done: Completeness) -> str:
    return json.dumps({**summary, "completeness": completeness_record(done)}, indent=2, sort_keys=True,
                      default=str) + "\n"


def summary_csv(summary: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for g in summary.get("groups", []):
        ci = g.get("pass1_ci") or [None, None]
        row = {name: g.get(name) for name in CSV_FIELDS}
        row.update({"max_rounds": g["max_rounds"], "pass1_ci_low": ci[0], "pass1_ci_high": ci[1],
                    "pass1_shown": shown_pass1(summary, g), "errored": g.get("errored", g.get("errors", 0)),
                    "finish_reasons": " ".join(f"{k}:{v}" for k, v in g.get("finish_reasons", {}).items())})
        writer.writerow(row)
    return out.getvalue()


def summary_markdown(summary: dict[str, Any], title: str, incomplete: str | None, wide: bool = False) -> str:
    columns = WIDE_COLUMNS if wide else COMPACT_COLUMNS
    lines = [f"**{title}**", ""]
    if incomplete:
        lines += [f"> {incomplete}", ""]
    lines.append("| " + " | ".join(columns) + " |")
    lines.append("|" + "|".join("---" if c in ("agent", "setting", "finish") else "---:" for c in columns) + "|")
    for g in summary.get("groups", []):
        cells = group_cells(summary, g)
        lines.append("| " + " | ".join(cells[c].replace("|", "\\|") for c in columns) + " |")
    return "\n".join(lines) + "\n"
