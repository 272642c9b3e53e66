"""Human-agreement commands of the `arena` CLI: `annotate` (a labelling page) and `agreement` (labels vs judge)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from arena.review.agreement import agreement_report
from arena.review.annotate import write_annotation_page

from .common import console, fail, review_run, split_values

app = typer.Typer()


@app.command(rich_help_panel="Look at runs")
def annotate(run_dir: Path = typer.Argument(..., help="Run directory."),
             sample: int = typer.Option(210, help="Answers to sample (paper: 210)."),
             stratify: str = typer.Option("level,setting,agent", help="Fields to stratify by: level, setting, agent, "
                                          "category, suite, max_rounds."),
             seed: int = typer.Option(0, help="Seed of the sample."),
             judge: Optional[str] = typer.Option(None, help="Whose verdicts the labels will be compared with "
                                                 "(default: the judge the run was scored with)."),
             out: Optional[Path] = typer.Option(None, help="HTML file (default: RUN/annotate-SEED.html).")) -> None:
    """Write a self-contained HTML page where a person labels a stratified sample of the run's answers."""
    try:
        run = review_run(run_dir, judge)
        path, count = write_annotation_page(run, out or run_dir / f"annotate-{seed}.html", sample,
                                            [s for s in split_values([stratify]) if s], seed)
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    console.print(f"annotation page: {path} ({count} answers; judge {run.judge_label})", highlight=False)


@app.command("agreement", rich_help_panel="Look at runs")
def agreement_cmd(run_dir: Path = typer.Argument(..., help="Run directory."),
                  labels: list[Path] = typer.Argument(..., help="Label files saved from the annotation page."),
                  judge: Optional[str] = typer.Option(None, help="Whose verdicts the labels are compared with "
                                                      "(default: the judge the run was scored with).")) -> None:
    """Agreement of human labels with the judge (percent, Cohen's kappa) and across annotators (Fleiss' kappa)."""
    try:
        run = review_run(run_dir, judge)
        report = agreement_report(run, labels)
    except (ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    table = Table(title=f"human labels vs judge {run.judge_label}", title_justify="left")
    for name in ("annotator", "answers", "agree %", "Cohen's kappa", "too vague", "ambiguous"):
        table.add_column(name)
    rows = report.raters + ([report.majority] if report.majority is not None else [])
    for r in rows:
        table.add_row(r.name, str(r.items), "–" if r.percent is None else f"{r.percent:.1f}",
                      "–" if r.kappa is None else f"{r.kappa:.3f}", str(r.too_vague), str(r.ambiguous))
    console.print(table)
    if report.majority is not None:
        kappa = "–" if report.fleiss_kappa is None else f"{report.fleiss_kappa:.3f}"
        console.print(f"Fleiss' kappa across {len(report.raters)} annotators: {kappa} "
                      f"({report.fleiss_items} answers labelled by all)")
    for note in report.notes:
        console.print(f"[yellow]{note}[/yellow]")
