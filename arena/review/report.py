"""`arena report`: summary tables of one or more runs, the sweep plot, and a static HTML page of both.

Tables: every (agent, setting, N) group (VistaHop Table 4 layout); for each (agent,
setting) swept over budgets, the Table 5 layout (rows N = ..., Pass@1 ± std over
repeats, L1/L2/L3, average tool calls and rounds, tool utilisation); Pass@1 per
category; the suites' tables in their papers' layouts (`arena.review.suite_tables`: CARV Table 2, UReason per
setting with Δ, MM-CondChain per domain) and every suite figure flat; failure
taxonomy; judge agreement; model calls made and saved by prefix sharing; what the harness cost (summary.json's
`harness`, measured while the run played: it cannot be recomputed after the fact).
"""

from __future__ import annotations

import base64
import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.judges.agreement import agreements
from arena.core.prompt_book import protocol_label
from arena.store.records import HarnessCost
from arena.store.scan import model_call_counts_scan

from .compare import COLUMNS, DETAIL_COLUMNS, compare_runs
from .failures import LABELS, Record, failure_groups, verdict_records
from .incomplete import incomplete_line
from .plot import sweep_png
from .report_table import Table
from .rundata import RunData
from .suite_tables import suite_tables
from .table import ci_text, flatten, fmt


def pass1_cell(group: dict[str, Any]) -> str:
    text = fmt(group["pass1"])
    if group.get("repeats", 1) > 1:
        text += f" ± {fmt(group.get('pass1_std'))}"
    return text


def group_label(run: RunData, group: dict[str, Any], several: bool) -> str:
    label = f"{group['agent']} · {group['setting']} · N={group['max_rounds']}"
    return f"{run.run_id}: {label}" if several else label


def groups_table(runs: list[RunData]) -> Table:
    several = len(runs) > 1
    title = "Results per agent, setting and budget"
    if any(g.get("errored") for run in runs for g in run.summary["groups"]):
        title += (" (Pass@1 over the episodes played to the end; errored episodes — error, rejected, context "
                  "overflow — are left out and counted under 'errored')")
    table = Table(title,
                  (["run"] if several else []) + ["agent", "setting", "N", "episodes", "Pass@1 (%)", "95% CI",
                                                  "L1 (%)", "L2 (%)", "L3 (%)", "Avg. tool calls", "Avg. rounds",
                                                  "Tool util. (%)", "invalid", "errored", "judge errors",
                                                  "unjudged", "Avg. tokens", "Avg. s"])
    for run in runs:
        for g in run.summary["groups"]:
            levels = g.get("levels", {})
            tokens = (g.get("avg_prompt_tokens") or 0) + (g.get("avg_completion_tokens") or 0)
            table.rows.append(([run.run_id] if several else []) + [
                g["agent"], g["setting"], str(g["max_rounds"]), str(g["episodes"]), pass1_cell(g), ci_text(g),
                fmt(levels.get("L1")), fmt(levels.get("L2")), fmt(levels.get("L3")), fmt(g["avg_tool_calls"]),
                fmt(g["avg_rounds"]), fmt(g["tool_utilisation"], 1), str(g["invalid_calls"]),
                str(g.get("errored", g["errors"])),
                str(g.get("judge_errors", 0)), str(g.get("unjudged", 0)), fmt(float(tokens), 0),
                fmt(g.get("avg_seconds"))])
    return table


def evidence_table(runs: list[RunData]) -> Table | None:
    """Correct answers split by the evidence verdict (paper §4), for groups where it was assessed."""
    several = len(runs) > 1
    table = Table("Correct answers and their evidence",
                  (["run"] if several else []) + ["agent", "setting", "N", "correct", "supported", "unsupported",
                                                  "undecided"])
    for run in runs:
        for g in run.summary["groups"]:
            if "correct_supported" in g:
                table.rows.append(([run.run_id] if several else []) + [
                    g["agent"], g["setting"], str(g["max_rounds"]), str(g["correct"]), str(g["correct_supported"]),
                    str(g["correct_unsupported"]), str(g["correct_support_unknown"])])
    return table if table.rows else None


def repeats_table(runs: list[RunData]) -> Table | None:
    """pass@k and majority@k over repeats, for the groups with several repeats per task."""
    ks = sorted({int(k) for r in runs for g in r.summary["groups"] for k in g.get("pass_at_k", {})})
    if not ks:
        return None
    several = len(runs) > 1
    table = Table("Over repeats: pass@k and majority@k (%)",
                  ["group", *(f"pass@{k}" for k in ks), *(f"maj@{k}" for k in ks)])
    for run in runs:
        for g in run.summary["groups"]:
            if g.get("pass_at_k"):
                table.rows.append([group_label(run, g, several),
                                   *(fmt(g["pass_at_k"].get(str(k))) for k in ks),
                                   *(fmt(g.get("majority_at_k", {}).get(str(k))) for k in ks)])
    return table


def compare_tables(runs: list[RunData]) -> list[Table]:
    """With two runs or more: each run paired with the first on the tasks they share (`arena.review.compare`)."""
    tables = []
    for other in runs[1:]:
        try:
            pairs = compare_runs(runs[0], other)
        except ValueError:
            continue
        table = Table(f"Paired comparison: A = {runs[0].run_id}, B = {other.run_id}", COLUMNS + DETAIL_COLUMNS)
        table.rows.extend(c.row() + c.detail_cells() for c in pairs)
        tables.append(table)
    return tables


def sweep_tables(runs: list[RunData]) -> list[Table]:
    """VistaHop Table 5: one table per (run, agent, setting) with several budgets, rows N = ..."""
    tables = []
    for run in runs:
        by_line: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for g in run.summary["groups"]:
            by_line.setdefault((g["agent"], g["setting"]), []).append(g)
        for (agent, setting), groups in sorted(by_line.items()):
            if len(groups) < 2:
                continue
            title = f"Max rounds sweep: {agent} · {setting}" + (f" ({run.run_id})" if len(runs) > 1 else "")
            table = Table(title, ["Max Rounds", "Pass@1 (%)", "L1 (%)", "L2 (%)", "L3 (%)", "Avg. Tool Calls",
                                  "Avg. Rounds", "Tool Util. (%)"])
            for g in sorted(groups, key=lambda g: g["max_rounds"]):
                levels = g.get("levels", {})
                table.rows.append([f"N={g['max_rounds']}", pass1_cell(g), fmt(levels.get("L1")),
                                   fmt(levels.get("L2")), fmt(levels.get("L3")), fmt(g["avg_tool_calls"]),
                                   fmt(g["avg_rounds"]), fmt(g["tool_utilisation"], 1)])
            tables.append(table)
    return tables


def breakdown_tables(runs: list[RunData]) -> list[Table]:
    """Pass@1 per category, and each suite's own figures, with one column per group."""
    several = len(runs) > 1
    columns = [(run, g) for run in runs for g in run.summary["groups"]]
    labels = [group_label(run, g, several) for run, g in columns]
    tables = []
    categories = sorted({c for _, g in columns for c in g.get("categories", {})})
    if categories:
        table = Table("Pass@1 (%) per category", ["category", *labels])
        for category in categories:
            table.rows.append([category, *(fmt(g.get("categories", {}).get(category)) for _, g in columns)])
        tables.append(table)
    suite_keys = sorted({(suite, key) for _, g in columns for suite, figures in g.get("suites", {}).items()
                         for key in flatten(figures)})
    if suite_keys:
        table = Table("Suite figures (per source, domain, ...)", ["suite · figure", *labels])
        for suite, key in suite_keys:
            table.rows.append([f"{suite} · {key}",
                               *(fmt(flatten(g.get("suites", {}).get(suite, {})).get(key)) for _, g in columns)])
        tables.append(table)
    return tables


SHORT_LABELS = {"error": "error", "budget_exhausted": "budget out", "no_answer": "no answer",
                "invalid_tool_calls": "invalid calls", "never_cropped": "never cropped",
                "never_searched": "never searched", "gold_anchor_never_cropped": "anchor not cropped",
                "evidence_found_wrong_answer": "evidence seen, wrong", "wrong_entity": "wrong entity",
                "judge_disagreement": "judges differ"}


def failure_table(runs: list[RunData]) -> Table:
    """Episodes per failure label (columns) for each group (rows); see `arena.review.failures`. One streaming pass
    over each run's episode records (`failure_groups`): no Episode objects."""
    several = len(runs) > 1
    table = Table("Failure taxonomy (episodes per label)",
                  ["group", "episodes", "correct", *(SHORT_LABELS[label] for label in LABELS)])
    for run in runs:
        groups = failure_groups(run.scan, run.judge, run.tasks, verdict_records(run.scan))
        for (agent, setting, rounds), (episodes, correct, c) in sorted(groups.items()):
            name = f"{agent} · {setting} · N={rounds}"
            label = f"{run.run_id}: {name}" if several else name
            table.rows.append([label, str(episodes), str(correct), *(str(c.get(k, 0)) for k in LABELS)])
    return table


def agreement_table(runs: list[RunData]) -> Table | None:
    table = Table("Judge agreement", ["run", "judge A", "judge B", "episodes", "agree (%)", "Cohen's kappa"])
    for run in runs:
        current = [Record({"id": i}) for i in run.scan.cols["id"]]
        for a in agreements(current, verdict_records(run.scan)):  # type: ignore[arg-type]
            table.rows.append([run.run_id, a.judge_a, a.judge_b, str(a.episodes), fmt(a.percent), fmt(a.kappa, 3)])
    return table if table.rows else None


def calls_table(runs: list[RunData]) -> Table:
    table = Table("Model calls", ["run", "made", "separate runs would make", "saved by prefix sharing"])
    for run in runs:
        c = model_call_counts_scan(run.scan)
        table.rows.append([run.run_id, str(c["made"]), str(c["separate_runs"]), str(c["saved"])])
    return table


def harness_of(run: RunData) -> HarnessCost | None:
    """summary.json's `harness` group (what the last session that played measured), None when absent."""
    try:
        written = json.loads(run.store.summary_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    harness = written.get("harness") if isinstance(written, dict) else None
    return HarnessCost.model_validate(harness) if harness else None


def harness_table(runs: list[RunData]) -> Table | None:
    table = Table("Harness cost (the last session that played)",
                  ["run", "backend", "episodes", "rounds", "driver CPU / round (ms)", "driver CPU / episode (ms)",
                   "worker CPU / round (ms)", "driver busy (%)", "harness share of episode time (%)", "hint"])
    for run in runs:
        h = harness_of(run)
        if h is None or not h.episodes:
            continue
        table.rows.append([run.run_id, h.backend + (f" ×{h.workers}" if h.workers else ""), str(h.episodes),
                           str(h.rounds), fmt(h.driver_cpu_per_round_ms, 3), fmt(h.driver_cpu_per_episode_ms, 3),
                           fmt(h.worker_cpu_per_round_ms, 3), fmt(100 * h.driver_load, 1),
                           fmt(None if h.harness_share is None else 100 * h.harness_share, 1), h.hint or ""])
    return table if table.rows else None


@dataclass
class Report:
    runs: list[RunData]
    tables: list[Table]
    png: bytes

    def write(self, out_dir: Path) -> tuple[Path, Path]:
        out_dir.mkdir(parents=True, exist_ok=True)
        png_path = out_dir / "sweep.png"
        png_path.write_bytes(self.png)
        html_path = out_dir / "report.html"
        html_path.write_text(self.html(), encoding="utf-8")
        return html_path, png_path

    def html(self) -> str:
        title = "Report: " + ", ".join(r.run_id for r in self.runs)
        image = base64.b64encode(self.png).decode()
        notes = "".join(f"<p class=incomplete>{html.escape(r.run_id)}: {html.escape(line)}</p>"
                        for r in self.runs if (line := incomplete_line(r)) is not None)  # first: what is missing
        notes += "".join(f"<p>{html.escape(r.run_id)}: judge {html.escape(r.judge_label)}</p>" for r in self.runs)
        notes += "".join(f"<p class=note>{html.escape(n)}</p>" for r in self.runs for n in r.notes)
        return (f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
                f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>{notes}"
                f"<h2>Sweep</h2><img alt='Pass@1 and tool utilisation against max rounds' "
                f"src='data:image/png;base64,{image}'>"
                + "".join(t.html() for t in self.tables) + "</body></html>")


CSS = """body{font:14px system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:8px 0 20px}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}th:first-child,td:first-child{text-align:left}
th{background:#f3f3f3}img{max-width:100%}.note{color:#a60}
.incomplete{background:#fff4e0;border:1px solid #d08a00;border-radius:6px;padding:6px;font-weight:600}"""


def build_report(runs: list[RunData]) -> Report:
    tables = [groups_table(runs), *sweep_tables(runs), *suite_tables(runs), *breakdown_tables(runs),
              failure_table(runs)]
    repeats = repeats_table(runs)
    if repeats is not None:
        tables.insert(1, repeats)
    tables[1:1] = compare_tables(runs)
    evidence = evidence_table(runs)
    if evidence is not None:
        tables.insert(1, evidence)
    agree = agreement_table(runs)
    if agree is not None:
        tables.append(agree)
    tables.append(calls_table(runs))
    harness = harness_table(runs)
    if harness is not None:
        tables.append(harness)
    protocols = sorted({protocol_label(r.info.protocol, r.info.prompts) for r in runs})
    for table in tables:
        table.protocol = ", ".join(protocols)
    png = sweep_png([(r.run_id, r.summary) for r in runs],
                    title="Pass@1 and tool utilisation against max rounds")
    return Report(runs=runs, tables=tables, png=png)
