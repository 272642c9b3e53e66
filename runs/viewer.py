"""`arena view`: a static HTML viewer of a run's episodes (or of two runs side by side), for any size.

The page opens over file:// with no server (or through `arena view --serve`) and
shows: the run summary and failure taxonomy; filters (verdict, level, finish reason,
tool used, failure label, setting, budget, free text; in comparisons, where the runs
differ) over a compact index of every episode; a paged table; and per episode the
full trajectory: the model's text, each tool call with its arguments, crop boxes
drawn on the image they were cut from, returned crops, search results with their
thumbnails, browser screenshots, the verdict and its reason.

One streaming pass over the run (trajectories parsed one at a time with orjson)
writes the index into the page and each group of episodes into a shard: for small
runs JSON blocks inside the page (one self-contained file), for large ones script
files in `<page>-view/` loaded when an episode is opened. Images are downscaled
JPEG data URLs, each stored once, in image shards loaded the same way.

Everything a model, a tool or a page wrote travels as JSON (in a
`<script type="application/json">` block, or a script file as a call's argument)
with `<`, `>` and `&` escaped, and is put in the page with `textContent` only, never
parsed as HTML. The page template's markers are replaced once, in the template, so
no text inside the data can be taken for one.
"""

from __future__ import annotations

import html
import io
import json
import math
import multiprocessing
import os
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from PIL import Image

from judges.metrics import judge_for_task

from .failures import LABELS, classify
from .report import SHORT_LABELS, Table, groups_table
from .run_index import Entry, scan_lines
from .rundata import RunData
from .scan import TaskJudge, reader_index
from .store import RunStoreError

CROP_TOOL = "image_zoom_in_tool"
MAX_TEXT = 20_000
SINGLE_FILE_EPISODES = 500
SHARD_EPISODES = 100
SHARD_IMAGES = 24


def image_side(count: int) -> int:
    """Longest side of embedded images: smaller when there are many, to keep the file small."""
    if count <= 200:
        return 1024
    if count <= 600:
        return 800
    if count <= 1500:
        return 560
    return 400


def data_url(raw: bytes, max_side: int, quality: int = 72) -> str:
    import base64

    image = Image.open(io.BytesIO(raw))
    image.load()
    image.thumbnail((max_side, max_side))
    if image.mode not in ("RGB", "L"):
        background = Image.new("RGB", image.size, (255, 255, 255))
        rgba = image.convert("RGBA")
        background.paste(rgba, mask=rgba.split()[-1])
        image = background
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=quality, optimize=True)
    return "data:image/jpeg;base64," + base64.b64encode(out.getvalue()).decode()


def clip(text: str | None, limit: int = MAX_TEXT) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters not shown]"


def compact_json(value: Any, limit: int = 4000) -> Any:
    """A JSON value for the page: the value itself when its JSON is short (the page lays it out), else its
    JSON text clipped to `limit` characters."""
    try:
        text = orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        text = json.dumps(value, ensure_ascii=False, default=str).encode()
    if len(text) <= limit:
        return value
    return clip(text.decode("utf-8", "replace"), limit) or ""


def step_view(step: dict[str, Any], context: list[str]) -> dict[str, Any]:
    """What the page shows of one step (a step record as parsed JSON); `context` collects the images so far."""
    obs = step.get("observation")
    arguments = step.get("arguments")
    view: dict[str, Any] = {
        "round": step.get("round"), "final": step.get("final_turn", False), "output": clip(step.get("output")),
        "reasoning": clip(step.get("reasoning")), "action": step.get("action"), "tool": step.get("tool"),
        "answer": step.get("answer"), "error": step.get("error"),
        "arguments": compact_json(arguments) if arguments is not None else None,
    }
    notes = []
    given = step.get("input") or {}
    elided_images, elided_texts = given.get("elided_images") or [], given.get("elided_texts") or []
    if elided_images or elided_texts:
        parts = ([f"img_idx {', '.join(map(str, elided_images))}"] if elided_images else []) + \
                ([f"tool output of round(s) {', '.join(map(str, elided_texts))}"] if elided_texts else [])
        notes.append(f"left out of the model's context: {'; '.join(parts)} ({given.get('elision_reason')})")
    if step.get("finish_reason") == "length":
        notes.append("the server cut this reply at its token limit (finish_reason length)")
    if step.get("answer_tagged") is False:
        notes.append("the answer was not inside <answer></answer>")
    if notes:
        view["note"] = " · ".join(notes)
    if obs is not None:
        data = {k: v for k, v in (obs.get("data") or {}).items() if k != "traceback"}
        images = list(obs.get("images") or [])
        view["obs"] = {"text": clip(obs.get("text", "")), "images": images, "error": obs.get("error", False),
                       "data": compact_json(data) if data else None}
        hits = data.get("hits")
        if isinstance(hits, list):
            view["hits"] = [{"title": str(h.get("title", "")), "url": str(h.get("url", ""))}
                            for h in hits if isinstance(h, dict)]
        box, size, index = data.get("pixel_box"), data.get("source_size"), data.get("img_idx")
        if (step.get("tool") == CROP_TOOL and isinstance(box, list) and len(box) == 4 and isinstance(size, list)
                and len(size) == 2 and isinstance(index, int) and 0 <= index < len(context) and size[0] and size[1]):
            w, h = float(size[0]), float(size[1])
            view["crop"] = {"src": context[index], "box": [round(100 * box[0] / w, 3), round(100 * box[1] / h, 3),
                                                           round(100 * (box[2] - box[0]) / w, 3),
                                                           round(100 * (box[3] - box[1]) / h, 3)]}
        context.extend(images)
    return view


def episode_view(run_index: int, episode: dict[str, Any], chosen: dict[str, Any] | None,
                 verdicts: list[dict[str, Any]], failures: list[str]) -> dict[str, Any]:
    """What the page shows of one episode; the episode and its verdicts are records as parsed JSON."""
    images = list(episode.get("images") or [])
    context = list(images)
    steps = [step_view(s, context) for s in episode.get("steps") or []]
    totals = episode.get("totals") or {}
    used = sorted(t for t, n in (totals.get("calls_per_tool") or {}).items() if n)
    meta = episode.get("meta")
    return {
        "run": run_index, "id": episode["id"], "key": episode["key"], "agent": episode["agent"],
        "setting": episode["setting"], "n": episode["budget"]["max_rounds"], "repeat": episode.get("repeat", 0),
        "finish": episode["finish_reason"], "answer": episode.get("answer"), "error": clip(episode.get("error"), 4000),
        "images": images,
        "correct": None if chosen is None or chosen.get("error") is not None else chosen["correct"],
        "score": None if chosen is None else chosen["score"],
        "verdict": None if chosen is None else {"judge": chosen["judge"], "rationale": chosen.get("rationale", ""),
                                                "extracted": chosen.get("extracted"), "error": chosen.get("error"),
                                                "supported": chosen.get("supported"),
                                                "support_reason": chosen.get("support_reason")},
        "verdicts": [{"judge": v["judge"], "correct": v["correct"], "rationale": v.get("rationale", ""),
                      "error": v.get("error")} for v in verdicts],
        "failures": failures, "tools_used": used, "calls": totals.get("tool_calls", 0),
        "rounds": totals.get("rounds", 0), "invalid": totals.get("invalid_calls", 0),
        "seconds": round(totals.get("seconds", 0.0), 2), "meta": compact_json(meta) if meta else None,
        "steps": steps,
    }


def script_json(value: Any) -> str:
    """JSON safe to embed in a <script> element or script file: no `<`, `>` or `&` survive as such."""
    try:
        text = orjson.dumps(value, default=str).decode()
    except TypeError:  # a lone surrogate in recorded text: escaped by the standard library instead
        text = json.dumps(value, default=str, separators=(",", ":"))
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


class Record:
    """Attribute access over a parsed JSON episode or verdict, for code written against the pydantic records
    (`episode_view`, `runs.failures.classify`) without building them: parsing 100,000 trajectories with
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


class Strings:
    """Repeated strings of the index (settings, agents, finish reasons, tools, labels) stored once."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self._ids: dict[str, int] = {}

    def __call__(self, value: str | None) -> int | None:
        if value is None:
            return None
        found = self._ids.get(value)
        if found is None:
            found = self._ids[value] = len(self.values)
            self.values.append(value)
        return found


@dataclass
class Sink:
    """Where shards go: script files next to the page (`dir`), or JSON blocks inside it (`dir` None)."""

    dir: Path | None
    inline: list[str] = field(default_factory=list)

    def shard(self, kind: str, number: int, value: Any) -> int:
        """Store one shard; returns the bytes written."""
        text = script_json(value)
        if self.dir is None:
            self.inline.append(f'<script type="application/json" id="shard-{kind}-{number}">{text}</script>\n')
            return len(text)
        payload = f'__arenaShard("{kind}",{number},{text});\n'.encode()
        (self.dir / f"{kind}-{number:05d}.js").write_bytes(payload)
        return len(payload)


@dataclass
class ViewerBuild:
    """What one streaming pass produced: the index the page loads first, the blobs shown, summary tables."""

    index: dict[str, Any]
    blobs: list[str]
    summary_html: str
    written: int = 0


def image_shard(blob_id: str, shards: int) -> int:
    """The image shard holding a blob: the first 8 hex digits of its hash modulo the number of shards (the page
    computes the same)."""
    digits = blob_id.partition(":")[2][:8]
    return int(digits, 16) % shards if re.fullmatch(r"[0-9a-f]{8}", digits) else 0


def _loads(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:  # orjson refuses lone surrogates that the standard library reads
        return json.loads(line)


def _verdicts_by_episode(run: RunData, wanted: set[str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    path = run.store.verdicts_path
    if not path.is_file():
        return out
    for lineno, (_, line) in enumerate(scan_lines(path), 1):
        if not line.strip():
            continue
        try:
            verdict = _loads(line)
            episode_id = verdict["episode_id"]
        except (ValueError, KeyError, TypeError) as exc:
            raise RunStoreError(f"{path}:{lineno}: not a valid Verdict record: {exc}") from None
        if episode_id in wanted:
            for unused in ("raw", "prompt_hash", "judge_model", "judge_version", "key"):
                verdict.pop(unused, None)
            out.setdefault(episode_id, []).append(verdict)
    return out


@dataclass
class _Job:
    """One episode shard to write: `entries` (offset, length) of run `run`, numbered from `first`."""

    run: int
    shard: int
    first: int
    entries: list[tuple[int, int]]


@dataclass
class _Context:
    """What every shard job reads (inherited by forked workers, never sent to them)."""

    runs: list[RunData]
    verdicts: list[dict[str, list[dict[str, Any]]]]
    tasks: list[dict[str, Any]]
    sink: Sink


_CONTEXT: _Context | None = None


def _run_job(job: _Job) -> tuple[list[tuple[Any, ...]], int]:
    """Views, failure labels and index fields of one shard's episodes; writes the shard."""
    ctx = _CONTEXT
    assert ctx is not None
    run = ctx.runs[job.run]
    verdicts, tasks = ctx.verdicts[job.run], ctx.tasks[job.run]
    views: dict[str, Any] = {}
    out: list[tuple[Any, ...]] = []
    path = run.store.episodes_path
    with path.open("rb") as fh:
        for k, (offset, length) in enumerate(job.entries):
            fh.seek(offset)
            try:
                record = _loads(fh.read(length))
                task = record["task"]
            except (ValueError, KeyError, TypeError) as exc:
                raise RunStoreError(f"{path}: byte {offset}: not an episode record: {exc}") from None
            mine = verdicts.get(record["id"], [])
            want = judge_for_task(TaskJudge(task.get("judge")), run.judge)
            chosen = next((v for v in reversed(mine) if v["judge"] == want), None)
            labels = classify(Record(record), None if chosen is None else Record(chosen), [Record(v) for v in mine],
                              tasks.get(task["id"]))
            view = episode_view(job.run, record, chosen, mine, labels)
            views[str(job.first + k)] = view
            shown = [*view["images"], *(b for st in view["steps"] for b in (st.get("obs") or {}).get("images", []))]
            out.append(((task["id"], clip(task.get("question", ""), 4000), list(task.get("answers") or []),
                         task.get("level"), task.get("category"), task.get("suite")),
                        record["setting"], view["n"], view["repeat"], record["agent"], view["correct"], view["finish"],
                        view["calls"], labels, view["tools_used"], clip(view["answer"], 300), shown,
                        (view["verdict"] or {}).get("supported")))
    written = ctx.sink.shard("e", job.shard, {"eps": views})
    return out, written


def _jobs(per_run: list[list[Entry]], shard_episodes: int) -> list[_Job]:
    jobs, number = [], 0
    for run_index, entries in enumerate(per_run):
        for start in range(0, len(entries), shard_episodes):
            chunk = entries[start:start + shard_episodes]
            jobs.append(_Job(run_index, number // shard_episodes, number, [(e.offset, e.length) for e in chunk]))
            number += shard_episodes
    return jobs


def _workers(jobs: int) -> int:
    return max(1, min(os.cpu_count() or 1, 8, jobs // 2))


def stream_viewer(runs: list[RunData], sink: Sink, shard_episodes: int = SHARD_EPISODES) -> ViewerBuild:
    """One pass over every run's current episodes (in forked workers when the run is large and the page has a
    shard directory): episode shards, failure labels and the page's index."""
    global _CONTEXT
    per_run = [list(reader_index(run.store).latest().values()) for run in runs]
    agents = [{e.agent for e in entries} for entries in per_run]
    with_agent = len(runs) == 1 or all(a == agents[0] for a in agents)
    ids = [{e.id for e in entries} for entries in per_run]
    jobs = _jobs(per_run, shard_episodes)
    _CONTEXT = _Context(runs, [_verdicts_by_episode(r, i) for r, i in zip(runs, ids)], [r.tasks for r in runs], sink)
    strings = Strings()
    tasks: list[list[Any]] = []
    task_ids: dict[str, int] = {}
    rows: dict[str, list[Any]] = {}
    eps: list[list[Any]] = []
    blobs: dict[str, None] = {}
    groups: list[dict[str, Counter]] = [{} for _ in runs]
    sizes: list[dict[str, list[int]]] = [{} for _ in runs]
    written = 0
    workers = _workers(len(jobs)) if sink.dir is not None else 1
    pool = multiprocessing.get_context("fork").Pool(workers) if workers > 1 else None
    try:
        results = pool.imap(_run_job, jobs) if pool is not None else map(_run_job, jobs)
        for job, (out, size) in zip(jobs, results):
            written += size
            for k, (task, setting, n, repeat, agent, correct, finish, calls, labels, used, answer, shown,
                    supported) in enumerate(out):
                number = job.first + k
                for blob_id in shown:
                    blobs.setdefault(blob_id, None)
                if task[0] not in task_ids:
                    task_ids[task[0]] = len(tasks)
                    tasks.append([task[0], task[1], task[2], strings(task[3]), strings(task[4]), strings(task[5])])
                while len(eps) < number:  # shard numbering leaves gaps between runs
                    eps.append(None)
                eps.append([correct, strings(finish), calls, [strings(x) for x in labels],
                            [strings(x) for x in used], answer, job.run, supported])
                group = f"{agent} | {setting} | N={n}"
                groups[job.run].setdefault(group, Counter()).update(labels)
                size_of = sizes[job.run].setdefault(group, [0, 0])
                size_of[0] += 1
                size_of[1] += int(correct is True)
                parts = [task[0], setting, str(n), str(repeat)]
                cell = "|".join(parts + ([agent] if with_agent else []))
                if cell in rows and rows[cell][5 + job.run] is not None:
                    cell = "|".join(parts + [agent])
                row = rows.setdefault(cell, [task_ids[task[0]], strings(setting), n, repeat, strings(agent),
                                             *([None] * len(runs))])
                row[5 + job.run] = number
    finally:
        _CONTEXT = None
        if pool is not None:
            pool.terminate()
            pool.join()
    failure_rows = []
    for run, run_groups, run_sizes in zip(runs, groups, sizes):
        for name, counts in sorted(run_groups.items()):
            label = f"{run.run_id}: {name}" if len(runs) > 1 else name
            episodes, correct = run_sizes[name]
            failure_rows.append([label.replace(" | ", " · "), str(episodes), str(correct),
                                 *(str(counts.get(k, 0)) for k in LABELS)])
    failures = Table("Failure taxonomy (episodes per label)",
                     ["group", "episodes", "correct", *(SHORT_LABELS[label] for label in LABELS)], failure_rows)
    notes = "".join(f"<p class=note>{html.escape(n)}</p>" for r in runs for n in r.notes)
    index = {"runs": [{"id": r.run_id, "judge": r.judge} for r in runs], "strings": strings.values,
             "tasks": tasks, "rows": list(rows.values()), "eps": eps, "shard": shard_episodes,
             "imageShards": max(1, math.ceil(len(blobs) / SHARD_IMAGES))}
    return ViewerBuild(index=index, blobs=list(blobs), written=written,
                       summary_html=groups_table(runs).html() + failures.html() + notes)


def write_images(runs: list[RunData], build: ViewerBuild, sink: Sink, max_side: int | None) -> int:
    """Image shards (blob id -> downscaled JPEG data URL, by `image_shard`); returns the bytes written."""
    side = max_side or image_side(len(build.blobs))
    stores = [r.store.blobs for r in runs]
    shards = build.index["imageShards"]

    def convert(blob_id: str) -> str | None:
        for store in stores:
            try:
                raw = store.get(blob_id)
            except (OSError, ValueError):
                continue
            try:
                return data_url(raw, side)
            except (OSError, ValueError, Image.DecompressionBombError):
                return None
        return None

    buckets: dict[int, list[str]] = {}
    for blob_id in build.blobs:
        buckets.setdefault(image_shard(blob_id, shards), []).append(blob_id)
    written = 0
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for number in range(shards):
            chunk = buckets.get(number, [])
            urls = {b: u for b, u in zip(chunk, pool.map(convert, chunk)) if u is not None}
            written += sink.shard("i", number, urls)
    return written


def viewer_data(runs: list[RunData]) -> tuple[dict[str, Any], list[str]]:
    """The page's index (runs, tasks, rows of comparable episodes, episode columns) and the blob ids it shows."""
    build = stream_viewer(runs, Sink(None))
    return build.index, build.blobs


def page(title: str, summary_html: str, index: dict[str, Any], shards: str = "") -> str:
    """The HTML page. Each marker of the template is replaced once, in the template only: model text inside
    the data can never be taken for a marker."""
    parts = {"TITLE": html.escape(title), "SUMMARY": summary_html, "INDEX": script_json(index), "SHARDS": shards,
             "CSS": CSS, "JS": JS}
    return re.sub(r"%(TITLE|SUMMARY|INDEX|SHARDS|CSS|JS)%", lambda m: parts[m.group(1)], TEMPLATE)


def _title(runs: list[RunData]) -> str:
    return ("Compare: " if len(runs) > 1 else "Run: ") + " vs ".join(r.run_id for r in runs)


def build_viewer(runs: list[RunData], *, max_side: int | None = None) -> str:
    """The viewer as one self-contained HTML string (every shard inline): for small runs."""
    sink = Sink(None)
    build = stream_viewer(runs, sink)
    write_images(runs, build, sink, max_side)
    build.index["dir"] = None
    return page(_title(runs), build.summary_html, build.index, "".join(sink.inline))


def shard_dir(out: Path) -> Path:
    return out.with_name(out.stem + "-view")


def write_viewer(runs: list[RunData], out: Path, *, max_side: int | None = None, single: bool | None = None,
                 shard_episodes: int = SHARD_EPISODES) -> Path:
    """Write the viewer of one run (or a comparison of two) to `out`.

    Runs of up to SINGLE_FILE_EPISODES episodes (or `single=True`) give one self-contained file; larger ones a
    page holding the compact index plus `<out stem>-view/` with episode shards (`e-NNNNN.js`, SHARD_EPISODES
    episodes each) and image shards (`i-NNNNN.js`) that the page loads when an episode is opened. Memory stays
    bounded by one shard plus the index, whatever the run's size."""
    out.parent.mkdir(parents=True, exist_ok=True)
    total = sum(len(reader_index(r.store).latest()) for r in runs)
    target = shard_dir(out)
    if target.is_dir():  # shards of an earlier viewer at this place
        for stale in [*target.glob("e-*.js"), *target.glob("i-*.js")]:
            stale.unlink()
    if single if single is not None else total <= SINGLE_FILE_EPISODES:
        if target.is_dir() and not any(target.iterdir()):
            target.rmdir()
        out.write_text(build_viewer(runs, max_side=max_side), encoding="utf-8")
        return out
    target.mkdir(exist_ok=True)
    sink = Sink(target)
    build = stream_viewer(runs, sink, shard_episodes)
    write_images(runs, build, sink, max_side)
    build.index["dir"] = target.name
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(page(_title(runs), build.summary_html, build.index), encoding="utf-8")
    os.replace(tmp, out)
    return out


TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline' 'self'">
<link rel="icon" href="data:,">
<title>%TITLE%</title><style>%CSS%</style></head>
<body>
<h1>%TITLE%</h1>
<details id="summary"><summary>Summary and failure taxonomy</summary>%SUMMARY%</details>
<div id="filters"></div>
<p id="count"></p>
<div id="pager"></div>
<table id="episodes"><thead id="head"></thead><tbody id="rows"></tbody></table>
<script type="application/json" id="index">%INDEX%</script>
%SHARDS%<script>%JS%</script>
</body></html>
"""

CSS = """
body{font:13px/1.4 system-ui,sans-serif;margin:16px;color:#1d1d1f;background:#fafafa}
h1{font-size:18px}table{border-collapse:collapse}th,td{border:1px solid #ddd;padding:3px 6px;vertical-align:top}
th{background:#f0f0f0;text-align:left}#summary table td{text-align:right}#summary h2{font-size:14px}
#filters{display:flex;flex-wrap:wrap;gap:8px;margin:10px 0}#filters label{display:flex;gap:4px;align-items:center}
tr.row{cursor:pointer}tr.row:hover{background:#eef4ff}.ok{color:#0a7a2f;font-weight:600}.bad{color:#b3261e;font-weight:600}
.na{color:#888}.q{max-width:520px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.detail>td{background:#fff}.cols{display:flex;gap:12px;align-items:flex-start}.col{flex:1;min-width:0}
.step{border:1px solid #ddd;border-radius:6px;margin:6px 0;padding:6px;background:#fcfcfc}
.step h4{margin:0 0 4px;font-size:13px}.err{color:#b3261e}pre{white-space:pre-wrap;word-break:break-word;margin:4px 0;
background:#f5f5f5;padding:4px;border-radius:4px;max-height:360px;overflow:auto}
.shot{position:relative;display:inline-block;max-width:100%}.shot img{display:block;max-width:100%;max-height:420px}
.box{position:absolute;border:2px solid #ff1f5a;box-shadow:0 0 0 1px #fff}.gallery{display:flex;flex-wrap:wrap;gap:6px}
.gallery figure{margin:0;max-width:260px}.gallery img{max-width:260px;max-height:260px;display:block}
figcaption{font-size:11px;color:#555}.tag{display:inline-block;background:#eee;border-radius:3px;padding:0 4px;margin:1px;
font-size:11px}.head{background:#f3f6fb;border-radius:6px;padding:6px}.note{color:#a60}
"""

JS = r"""
"use strict";
const IDX = JSON.parse(document.getElementById("index").textContent);
const S = IDX.strings;
const SINGLE = IDX.runs.length === 1;
const PAGE = 100;
const str = i => (i === null || i === undefined) ? null : S[i];
// index columns: task = [id, question, answers, level, category, suite]; row = [task, setting, n, repeat, agent,
// ep of run 0, ep of run 1?]; ep = [correct, finish, calls, failures[], tools[], answer, run]
const T = IDX.tasks.map(t => ({id: t[0], question: t[1], answers: t[2], level: str(t[3]), category: str(t[4])}));
const ROWS = IDX.rows.map(r => ({task: T[r[0]], setting: S[r[1]], n: r[2], repeat: r[3], agent: S[r[4]], eps: r.slice(5)}));
const EPS = IDX.eps.map(e => e === null ? null : {correct: e[0], finish: S[e[1]], calls: e[2], failures: e[3].map(i => S[i]),
                                tools_used: e[4].map(i => S[i]), answer: e[5], supported: e[7]});
const SHARDS = {e: {}, i: {}};
const LOADING = {};
const IMG = {};
window.__arenaShard = function (kind, n, data) { SHARDS[kind][n] = data; };
function load(kind, n) {
  const key = kind + n;
  if (SHARDS[kind][n]) return Promise.resolve(SHARDS[kind][n]);
  const inline = document.getElementById(`shard-${kind}-${n}`);
  if (inline) { SHARDS[kind][n] = JSON.parse(inline.textContent); return Promise.resolve(SHARDS[kind][n]); }
  if (!LOADING[key]) LOADING[key] = new Promise((resolve, reject) => {
    const s = document.createElement("script");
    s.src = `${IDX.dir}/${kind}-${String(n).padStart(5, "0")}.js`;
    s.onload = () => SHARDS[kind][n] ? resolve(SHARDS[kind][n]) : reject(new Error("empty shard " + s.src));
    s.onerror = () => { delete LOADING[key]; reject(new Error(`cannot load ${s.src}: keep the page next to its ${IDX.dir} directory`)); };
    document.head.append(s);
  });
  return LOADING[key];
}
async function episode(no) {
  const shard = await load("e", Math.floor(no / IDX.shard));
  const ep = shard.eps[String(no)];
  const ids = new Set(ep.images);
  for (const s of ep.steps) { for (const b of (s.obs ? s.obs.images : [])) ids.add(b); if (s.crop) ids.add(s.crop.src); }
  for (const n of new Set([...ids].map(imageShard))) Object.assign(IMG, await load("i", n));
  return ep;
}
function imageShard(id) {  // as runs.viewer.image_shard
  const digits = String(id).split(":").slice(1).join(":").slice(0, 8);
  return /^[0-9a-f]{8}$/.test(digits) ? parseInt(digits, 16) % IDX.imageShards : 0;
}
function imageUrl(id) { return Object.prototype.hasOwnProperty.call(IMG, id) ? IMG[id] : ""; }
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
function shown(v) {
  if (typeof v === "string") return v;
  const line = JSON.stringify(v);
  return line.length > 160 ? JSON.stringify(v, null, 1) : line;
}
function picture(id, caption) {
  const fig = el("figure");
  const url = imageUrl(id);
  if (url) { const im = el("img"); im.src = url; im.alt = caption || id; fig.append(im); }
  else fig.append(el("span", "na", "(image not stored)"));
  if (caption) fig.append(el("figcaption", null, caption));
  return fig;
}
const state = {verdict: "", level: "", finish: "", tool: "", failure: "", setting: "", n: "", compare: "", text: ""};
let page = 0;
let matching = [];
let HAY = null;

function mark(ep) {
  if (!ep) return el("span", "na", "–");
  if (ep.correct === true) return el("span", "ok", "✓");
  if (ep.correct === false) return el("span", "bad", "✗");
  return el("span", "na", "?");
}
function eps(row) { return row.eps.map(i => i === null ? null : EPS[i]); }
function haystack(i) {
  if (HAY === null) HAY = ROWS.map(row => [row.task.id, row.task.question, ...eps(row).filter(Boolean).map(e => e.answer || "")].join(" ").toLowerCase());
  return HAY[i];
}
function rowMatches(row, i) {
  const list = eps(row).filter(Boolean);
  const any = f => list.some(f);
  if (state.verdict === "correct" && !any(e => e.correct === true)) return false;
  if (state.verdict === "incorrect" && !any(e => e.correct === false)) return false;
  if (state.verdict === "unjudged" && !any(e => e.correct === null)) return false;
  if (state.verdict === "supported" && !any(e => e.correct === true && e.supported === "yes")) return false;
  if (state.verdict === "unsupported" && !any(e => e.correct === true && e.supported === "no")) return false;
  if (state.level && row.task.level !== state.level) return false;
  if (state.finish && !any(e => e.finish === state.finish)) return false;
  if (state.tool && !any(e => e.tools_used.includes(state.tool))) return false;
  if (state.failure && !any(e => e.failures.includes(state.failure))) return false;
  if (state.setting && row.setting !== state.setting) return false;
  if (state.n && String(row.n) !== state.n) return false;
  if (state.compare) {
    const [a, b] = eps(row);
    const ca = !!(a && a.correct), cb = !!(b && b.correct);
    if (state.compare === "differ" && ca === cb) return false;
    if (state.compare === "a" && !(ca && !cb)) return false;
    if (state.compare === "b" && !(cb && !ca)) return false;
  }
  if (state.text && !haystack(i).includes(state.text.toLowerCase())) return false;
  return true;
}
function values(f) {
  const s = new Set();
  for (const row of ROWS) for (const v of f(row)) if (v !== null && v !== undefined && v !== "") s.add(String(v));
  return [...s].sort((a, b) => a.localeCompare(b, undefined, {numeric: true}));
}
function select(name, label, options) {
  const wrap = el("label", null, label);
  const s = el("select"); s.id = "f-" + name;
  for (const [v, t] of options) { const o = el("option", null, t); o.value = v; s.append(o); }
  s.addEventListener("change", () => { state[name] = s.value; filter(); });
  wrap.append(s);
  return wrap;
}
function opts(list) { return [["", "all"], ...list.map(v => [v, v])]; }
function buildFilters() {
  const f = document.getElementById("filters");
  const all = (pick) => { const s = new Set(); for (const e of EPS) if (e) for (const v of pick(e)) if (v) s.add(v); return [...s].sort(); };
  f.append(select("verdict", "verdict", [["", "all"], ["correct", "correct"], ["supported", "correct and supported"], ["unsupported", "correct but unsupported"], ["incorrect", "incorrect"], ["unjudged", "unjudged"]]));
  f.append(select("level", "level", opts([...new Set(T.map(t => t.level).filter(Boolean))].sort())));
  f.append(select("finish", "finish", opts(all(e => [e.finish]))));
  f.append(select("tool", "tool used", opts(all(e => e.tools_used))));
  f.append(select("failure", "failure", opts(all(e => e.failures))));
  f.append(select("setting", "setting", opts(values(r => [r.setting]))));
  f.append(select("n", "max rounds", opts(values(r => [r.n]))));
  if (!SINGLE) f.append(select("compare", "compare", [["", "all"], ["differ", "runs differ"], ["a", "only " + IDX.runs[0].id + " correct"], ["b", "only " + IDX.runs[1].id + " correct"]]));
  const wrap = el("label", null, "search");
  const input = el("input"); input.id = "f-text"; input.type = "search";
  let timer = null;
  input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => { state.text = input.value; filter(); }, 120); });
  wrap.append(input); f.append(wrap);
}
function buildHead() {
  const tr = el("tr");
  for (const h of ["task", "level", "setting", "N", "rep", "agent", "question"]) tr.append(el("th", null, h));
  for (const r of IDX.runs) tr.append(el("th", null, SINGLE ? "verdict" : r.id));
  tr.append(el("th", null, SINGLE ? "finish · calls · failures" : "finish"));
  document.getElementById("head").append(tr);
}
function filter() {
  matching = [];
  for (let i = 0; i < ROWS.length; i++) if (rowMatches(ROWS[i], i)) matching.push(i);
  page = 0;
  render();
}
function pager() {
  const p = document.getElementById("pager");
  p.textContent = "";
  const pages = Math.max(1, Math.ceil(matching.length / PAGE));
  if (pages === 1) return;
  const button = (text, to, off) => { const b = el("button", null, text); b.disabled = off; b.addEventListener("click", () => { page = to; render(); }); return b; };
  p.append(button("« first", 0, page === 0), button("‹ previous", page - 1, page === 0),
           el("span", null, ` page ${page + 1} of ${pages} `), button("next ›", page + 1, page >= pages - 1),
           button("last »", pages - 1, page >= pages - 1));
}
const open = new Set();
function render() {
  const body = document.getElementById("rows");
  body.textContent = "";
  for (const i of matching.slice(page * PAGE, (page + 1) * PAGE)) {
    const row = ROWS[i];
    const tr = el("tr", "row"); tr.dataset.row = String(i);
    tr.append(el("td", null, row.task.id), el("td", null, row.task.level || ""), el("td", null, row.setting),
              el("td", null, row.n), el("td", null, row.repeat), el("td", null, row.agent));
    const q = el("td", "q", row.task.question); q.title = row.task.question; tr.append(q);
    for (const ep of eps(row)) { const td = el("td"); td.append(mark(ep)); tr.append(td); }
    const first = eps(row).filter(Boolean);
    tr.append(el("td", null, first.map(e => SINGLE ? `${e.finish} · ${e.calls} · ${e.failures.join(", ")}` : e.finish).join(" | ")));
    tr.addEventListener("click", () => { if (open.has(i)) open.delete(i); else open.add(i); render(); });
    body.append(tr);
    if (open.has(i)) body.append(detail(row));
  }
  const count = document.getElementById("count");
  count.textContent = `${matching.length} of ${ROWS.length} ${SINGLE ? "episodes" : "tasks"} shown`;
  count.dataset.query = state.text;
  pager();
}
function detail(row) {
  const tr = el("tr", "detail"); const td = el("td"); td.colSpan = 8 + IDX.runs.length;
  td.append(el("p", null, "Question: " + row.task.question));
  td.append(el("p", null, "Accepted answers: " + row.task.answers.join(" | ")));
  const cols = el("div", "cols");
  row.eps.forEach((no, k) => {
    const col = el("div", "col");
    col.append(el("h3", null, IDX.runs[k].id));
    if (no === null) col.append(el("p", "na", "no episode for this task in this run"));
    else {
      const wait = el("p", "na", "loading…"); col.append(wait);
      episode(no).then(ep => { wait.remove(); episodeView(col, ep); }, err => { wait.className = "err"; wait.textContent = String(err.message || err); });
    }
    cols.append(col);
  });
  td.append(cols); tr.append(td);
  return tr;
}
function episodeView(box, ep) {
  const head = el("div", "head");
  const v = el("p"); v.append(mark(ep), " answer: ", el("b", null, ep.answer === null ? "(none)" : ep.answer));
  head.append(v);
  if (ep.verdict) head.append(el("p", null, `judge ${ep.verdict.judge}: ${ep.verdict.rationale || ""}${ep.verdict.error ? " (error: " + ep.verdict.error + ")" : ""}`));
  if (ep.verdict && ep.verdict.supported) head.append(el("p", "support", `evidence: ${ep.correct ? (ep.verdict.supported === "yes" ? "correct and supported" : ep.verdict.supported === "no" ? "correct but unsupported" : "support undecided") : ep.verdict.supported} ${ep.verdict.support_reason ? "(" + ep.verdict.support_reason + ")" : ""}`));
  for (const o of ep.verdicts) if (!ep.verdict || o.judge !== ep.verdict.judge) head.append(el("p", null, `also judge ${o.judge}: ${o.correct ? "correct" : "incorrect"} ${o.rationale || ""}`));
  head.append(el("p", null, `finish: ${ep.finish} · rounds ${ep.rounds} · tool calls ${ep.calls} · invalid ${ep.invalid} · ${ep.seconds} s · episode ${ep.id}`));
  if (ep.failures.length) { const p = el("p", null, "failures: "); for (const f of ep.failures) p.append(el("span", "tag", f)); head.append(p); }
  if (ep.error) head.append(el("pre", "err", ep.error));
  if (ep.meta) { const d = el("details"); d.append(el("summary", null, "meta"), el("pre", null, shown(ep.meta))); head.append(d); }
  box.append(head);
  const g = el("div", "gallery");
  ep.images.forEach((id, i) => g.append(picture(id, `task image ${i}`)));
  box.append(g);
  for (const s of ep.steps) box.append(stepView(s));
}
function stepView(s) {
  const d = el("div", "step");
  d.append(el("h4", null, s.final ? "Final answer turn (tools off)" : `Round ${s.round} · ${s.action}${s.tool ? " · " + s.tool : ""}`));
  if (s.reasoning) { const r = el("details"); r.append(el("summary", null, "reasoning"), el("pre", null, s.reasoning)); d.append(r); }
  if (s.output) d.append(el("pre", null, s.output));
  if (s.arguments) { d.append(el("div", null, "arguments:")); d.append(el("pre", null, shown(s.arguments))); }
  if (s.crop) {
    const shot = el("div", "shot");
    const url = imageUrl(s.crop.src);
    if (url) {
      const im = el("img"); im.src = url; im.alt = "crop source";
      const b = el("div", "box");
      const [l, t, w, h] = s.crop.box;
      b.style.left = l + "%"; b.style.top = t + "%"; b.style.width = w + "%"; b.style.height = h + "%";
      shot.append(im, b);
      d.append(el("div", null, "crop box on its source image:"), shot);
    }
  }
  if (s.note) d.append(el("p", null, s.note));
  if (s.error) d.append(el("p", "err", "error: " + s.error));
  if (s.obs) {
    d.append(el("pre", s.obs.error ? "err" : null, s.obs.text));
    if (s.obs.images.length) {
      const g = el("div", "gallery");
      s.obs.images.forEach((id, i) => {
        const hit = s.hits && s.hits[i] ? s.hits[i].title + (s.hits[i].url ? " — " + s.hits[i].url : "") : (s.tool || "returned image");
        g.append(picture(id, hit));
      });
      d.append(g);
    }
    if (s.obs.data) { const r = el("details"); r.append(el("summary", null, "data"), el("pre", null, shown(s.obs.data))); d.append(r); }
  }
  if (s.answer !== null && s.answer !== undefined) d.append(el("p", null, "answer: " + s.answer));
  return d;
}
buildFilters();
buildHead();
filter();
document.body.dataset.ready = "1";
"""
