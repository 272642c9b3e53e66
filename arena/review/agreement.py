"""`arena agreement`: how human labels from `arena annotate` agree with the judge, and with each other.

Per annotator: the answers they labelled that the judge scored without error; percent of equal correct/incorrect
decisions and Cohen's kappa with the judge. When there are two or more annotators: Fleiss' kappa over the answers
every annotator labelled, and the majority label (ties left out) against the judge. Counts of "too vague" and
"ambiguous" flags are reported too. Every figure is recomputable from the run's verdicts and the label files.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from arena.judges.stats import cohen_kappa, fleiss_kappa

from .annotate import LABELS_FORMAT
from .rundata import RunData


@dataclass
class LabelSet:
    """One annotator's labels: episode id -> True (correct) / False (incorrect), and the flags."""

    annotator: str
    source: Path
    labels: dict[str, bool]
    too_vague: int = 0
    ambiguous: int = 0


@dataclass
class Rater:
    name: str
    items: int
    agree: int
    percent: float | None
    kappa: float | None
    too_vague: int
    ambiguous: int


@dataclass
class AgreementReport:
    judge: str
    raters: list[Rater]
    fleiss_items: int = 0
    fleiss_kappa: float | None = None
    majority: Rater | None = None
    notes: list[str] = field(default_factory=list)


def load_labels(path: Path, run: RunData) -> LabelSet:
    """Read a labels file written by the annotation page; errors name the file and the field."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read labels ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != LABELS_FORMAT:
        raise ValueError(f"{path}: field format: expected {LABELS_FORMAT!r} (a file saved by `arena annotate`)")
    if data.get("run_id") != run.run_id:
        raise ValueError(f"{path}: field run_id: labels are for run {data.get('run_id')!r}, not {run.run_id!r}")
    rows = data.get("labels")
    if not isinstance(rows, list):
        raise ValueError(f"{path}: field labels: must be a list")
    known = {e.id for e in run.episodes}
    labels: dict[str, bool] = {}
    flags: Counter[str] = Counter()
    for i, row in enumerate(rows):
        where = f"{path}: labels[{i}]"
        if not isinstance(row, dict) or row.get("label") not in ("correct", "incorrect"):
            raise ValueError(f"{where}: field label: must be 'correct' or 'incorrect'")
        episode_id = row.get("episode_id")
        if episode_id not in known:
            raise ValueError(f"{where}: field episode_id: {episode_id!r} is not an episode of run {run.run_id}")
        labels[episode_id] = row["label"] == "correct"
        flags["too_vague"] += bool(row.get("too_vague"))
        flags["ambiguous"] += bool(row.get("ambiguous"))
    name = str(data.get("annotator") or Path(path).stem)
    return LabelSet(name, Path(path), labels, flags["too_vague"], flags["ambiguous"])


def _rater(name: str, human: dict[str, bool], judge: dict[str, bool], vague: int = 0, ambiguous: int = 0) -> Rater:
    shared = sorted(set(human) & set(judge))
    a = [human[i] for i in shared]
    b = [judge[i] for i in shared]
    agree = sum(x == y for x, y in zip(a, b))
    return Rater(name, len(shared), agree, 100.0 * agree / len(shared) if shared else None,
                 cohen_kappa(a, b) if shared else None, vague, ambiguous)


def agreement_report(run: RunData, label_files: list[Path]) -> AgreementReport:
    sets = [load_labels(p, run) for p in label_files]
    names = Counter(s.annotator for s in sets)
    for s in sets:
        if names[s.annotator] > 1:
            s.annotator = f"{s.annotator} ({s.source.name})"
    judge = {eid: v.correct for eid, v in run.chosen.items() if v.error is None}
    report = AgreementReport(judge=run.judge, raters=[_rater(s.annotator, s.labels, judge, s.too_vague, s.ambiguous)
                                                      for s in sets])
    for s in sets:
        missing = len(set(s.labels) - set(judge))
        if missing:
            report.notes.append(f"{s.annotator}: {missing} labelled answer(s) have no usable judge verdict")
    if len(sets) >= 2:
        common = sorted(set.intersection(*(set(s.labels) for s in sets)))
        report.fleiss_items = len(common)
        report.fleiss_kappa = fleiss_kappa([[s.labels[i] for s in sets] for i in common]) if common else None
        majority: dict[str, bool] = {}
        for i in common:
            yes = sum(s.labels[i] for s in sets)
            if 2 * yes != len(sets):
                majority[i] = 2 * yes > len(sets)
        report.majority = _rater("majority of annotators", majority, judge)
    return report

