"""Failure taxonomy: why an episode went wrong, computed from its record (and its task's gold metadata).

Labels (an episode may carry several; a correct episode carries only process labels):

- `error`: the episode itself failed (endpoint down, unreadable data);
- `budget_exhausted`: the rounds (or token/time limits) ran out;
- `no_answer`: no answer was extracted;
- `invalid_tool_calls`: at least one malformed or rejected tool call;
- `never_cropped` / `never_searched`: the setting offered the crop tool / a search tool
  and the agent never called it;
- `gold_anchor_never_cropped`: the task's metadata has visual anchors (`anchors[].box`,
  pixels of image 0) and no crop of image 0 covered at least half of any of them;
- `evidence_found_wrong_answer`: wrong, though an accepted answer appeared (after
  normalisation) in some observation the agent received;
- `wrong_entity`: wrong, and the answer names another entity: an entity of the gold
  chain other than its end (the anchor or an intermediate hop), or a title the tools
  returned;
- `judge_disagreement`: judges with verdicts on the episode disagree.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Any, Iterable

from arena.core.task import Task
from arena.core.trajectory import Episode
from arena.core.verdict import Verdict
from arena.judges.normalized import normalize_answer
from arena.store.scan import RunScan

CROP_TOOL = "image_zoom_in_tool"
SEARCH_TOOLS = ("text_search_tool", "image_search_tool")
LABELS = ("error", "budget_exhausted", "no_answer", "invalid_tool_calls", "never_cropped", "never_searched",
          "gold_anchor_never_cropped", "evidence_found_wrong_answer", "wrong_entity", "judge_disagreement")
ANCHOR_COVERAGE = 0.5
# Tool observations repeat across the budgets and repeats of a sweep (same searches, same pages): their
# normalised form is computed once.
_normalized = lru_cache(maxsize=16384)(normalize_answer)


class Record:
    """Attribute access over a parsed JSON episode or verdict, for code written against the pydantic records
    (`episode_view`, `arena.review.failures.classify`) without building them: parsing 100,000 trajectories with
    pydantic costs ~3x what orjson does. Nested records (task, budget, totals, steps, observation) are
    wrapped; free-form fields (arguments, data, meta, calls_per_tool) stay plain dicts."""

    __slots__ = ("_d",)
    NESTED = frozenset({"task", "budget", "totals", "steps", "observation", "input", "usage"})

    def __init__(self, data: dict[str, Any]):
        self._d = data

    def __getattr__(self, name: str) -> Any:
        try:
            value = self._d[name]
        except KeyError:
            raise AttributeError(name) from None
        if name in Record.NESTED:
            if isinstance(value, dict):
                return Record(value)
            if isinstance(value, list):
                return [Record(v) if isinstance(v, dict) else v for v in value]
        return value


def anchor_boxes(task: Task | None) -> list[list[float]]:
    if task is None:
        return []
    boxes = []
    for anchor in task.metadata.get("anchors") or []:
        box = anchor.get("box") if isinstance(anchor, dict) else None
        if isinstance(box, list) and len(box) == 4:
            boxes.append([float(v) for v in box])
    return boxes


def coverage(crop: list[float], anchor: list[float]) -> float:
    """Share of the anchor's area inside the crop."""
    w = max(0.0, min(crop[2], anchor[2]) - max(crop[0], anchor[0]))
    h = max(0.0, min(crop[3], anchor[3]) - max(crop[1], anchor[1]))
    area = (anchor[2] - anchor[0]) * (anchor[3] - anchor[1])
    return (w * h) / area if area > 0 else 0.0


def crops_of_task_image(episode: Episode) -> list[list[float]]:
    out = []
    for step in episode.steps:
        data = step.observation.data if step.observation else {}
        if step.tool == CROP_TOOL and data.get("img_idx") == 0 and isinstance(data.get("pixel_box"), list):
            out.append([float(v) for v in data["pixel_box"]])
    return out


def chain_entities(task: Task | None) -> set[str]:
    """Normalised names of the gold chain's entities other than its end (anchor seeds and intermediate hops)."""
    if task is None:
        return set()
    names: set[str] = set()
    for chain in task.metadata.get("gold_chain") or []:
        if not isinstance(chain, dict):
            continue
        if chain.get("seed"):
            names.add(normalize_answer(str(chain["seed"])))
        hops = chain.get("hops") or []
        for hop in hops[:-1]:
            if isinstance(hop, dict) and hop.get("target"):
                names.add(normalize_answer(str(hop["target"])))
    return names - {""}


def returned_titles(episode: Episode) -> set[str]:
    titles: set[str] = set()
    for step in episode.steps:
        data = step.observation.data if step.observation else {}
        for hit in data.get("hits") or []:
            if isinstance(hit, dict) and hit.get("title"):
                titles.add(_normalized(str(hit["title"])))
    return titles - {""}


def observation_text(episode: Episode) -> str:
    return " ".join(_normalized(s.observation.text) for s in episode.steps if s.observation)


def classify(episode: Episode, verdict: Verdict | None, all_verdicts: Iterable[Verdict] = (),
             task: Task | None = None) -> list[str]:
    """The failure labels of one episode (see the module doc)."""
    labels: list[str] = []
    correct = bool(verdict is not None and verdict.error is None and verdict.correct)
    if episode.finish_reason == "error":
        labels.append("error")
    if episode.finish_reason == "budget":
        labels.append("budget_exhausted")
    if not (episode.answer or "").strip():
        labels.append("no_answer")
    if episode.totals.invalid_calls:
        labels.append("invalid_tool_calls")
    used = episode.totals.calls_per_tool
    if CROP_TOOL in episode.tools and not used.get(CROP_TOOL):
        labels.append("never_cropped")
    if any(t in episode.tools for t in SEARCH_TOOLS) and not any(used.get(t) for t in SEARCH_TOOLS):
        labels.append("never_searched")
    anchors = anchor_boxes(task)
    if anchors and CROP_TOOL in episode.tools:
        crops = crops_of_task_image(episode)
        if not any(coverage(c, a) >= ANCHOR_COVERAGE for c in crops for a in anchors):
            labels.append("gold_anchor_never_cropped")
    answer = normalize_answer(episode.answer or "")
    if not correct and episode.finish_reason != "error":
        seen = f" {observation_text(episode)} "
        if any(t and f" {t} " in seen for t in (normalize_answer(a) for a in episode.task.answers)):
            labels.append("evidence_found_wrong_answer")
        if answer and (answer in chain_entities(task) or answer in returned_titles(episode)):
            labels.append("wrong_entity")
    decisions = {}
    for v in all_verdicts:
        if v.episode_id == episode.id and v.error is None:
            decisions[v.judge] = v.correct
    if len(set(decisions.values())) > 1:
        labels.append("judge_disagreement")
    return labels


def taxonomy(episodes: list[Episode], chosen: dict[str, Verdict], verdicts: list[Verdict],
             tasks: dict[str, Task] | None = None) -> dict[str, list[str]]:
    """Episode id -> its failure labels."""
    by_episode: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_episode.setdefault(v.episode_id, []).append(v)
    tasks = tasks or {}
    return {e.id: classify(e, chosen.get(e.id), by_episode.get(e.id, []), tasks.get(e.task.id)) for e in episodes}


def failure_counts(episodes: list[Episode], labels: dict[str, list[str]]) -> dict[str, Any]:
    """Counts of each label over the run and per (agent, setting, max_rounds) group."""
    total = Counter(label for e in episodes for label in labels.get(e.id, []))
    groups: dict[tuple[str, str, int], Counter] = {}
    for e in episodes:
        groups.setdefault((e.agent, e.setting, e.budget.max_rounds), Counter()).update(labels.get(e.id, []))
    return {"episodes": len(episodes), "total": {k: total.get(k, 0) for k in LABELS},
            "groups": {f"{a} | {s} | N={n}": {k: c.get(k, 0) for k in LABELS}
                       for (a, s, n), c in sorted(groups.items())}}


def verdict_records(scan: RunScan) -> list[Record]:
    """Every verdict record of a scanned run (file order) as what `classify` and `arena.runs.rejudge.agreements`
    read of a Verdict: episode id, judge, correct, error."""
    return [Record({"episode_id": episode_id, "judge": judge, "correct": correct, "error": error})
            for episode_id, judge, _, correct, error, *_ in scan.verdict_rows]


def failure_groups(scan: RunScan, judge: str, tasks: dict[str, Task],
                   verdicts: list[Record]) -> dict[tuple[str, str, int], tuple[int, int, Counter]]:
    """One streaming pass over the run's current episodes (one orjson record at a time, none kept): per
    (agent, setting, max_rounds) group, its episodes, the correct ones (by the verdict that counts for
    `judge`) and the count of each failure label (`classify`)."""
    chosen = scan.chosen(judge)
    mine: dict[str, list[Record]] = {}
    for v in verdicts:
        mine.setdefault(v.episode_id, []).append(v)
    cols = scan.cols
    out: dict[tuple[str, str, int], tuple[int, int, Counter]] = {}
    for row, record in enumerate(scan.records_of()):
        pick = chosen.get(row)
        correct = bool(pick is not None and pick[2] is None and pick[1])
        verdict = None if pick is None else Record({"correct": pick[1], "error": pick[2]})
        labels = classify(Record(record), verdict, mine.get(cols["id"][row], []), tasks.get(cols["task_id"][row]))
        group = (cols["agent"][row], cols["setting"][row], cols["max_rounds"][row])
        episodes, right, counts = out.get(group, (0, 0, Counter()))
        counts.update(labels)
        out[group] = (episodes + 1, right + int(correct), counts)
    return out
