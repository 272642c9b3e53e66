"""`arena view`: a static HTML viewer of a run's episodes (or of two runs side by side), for any size.

The page opens over file:// with no server (or through `arena view --serve`) and
shows: the run's judge and agents, the run summary and failure taxonomy; filters (verdict,
level, finish reason, tool used, failure label, setting, budget, free text; in comparisons,
where the runs differ) over a compact index of every episode; a sortable, paged table; and
per episode the full trajectory: the model's text, each tool call with its arguments, crop
boxes drawn on the image they were cut from, returned crops, search results with their
thumbnails, browser screenshots, per-step seconds and tokens, the request each step sent
(from calls.jsonl, `arena.review.model_input`), the gold path beside the steps with the first
divergence (`arena.review.gold_view`), the verdict and its reason, the task's budget variants, a
permalink; images zoom to full resolution.

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

import base64
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
from typing import Any, Iterable

import orjson
from PIL import Image

from arena.endpoints.client import parse_body
from arena.judges.metrics import judge_for_task
from arena.review.failures import LABELS, Record, classify
from arena.review.gold_view import gold_view
from arena.review.incomplete import incomplete_line
from arena.review.model_input import CallIndex, episode_inputs
from arena.review.report import SHORT_LABELS, Table, groups_table
from arena.review.rundata import RunData
from arena.store.run_index import Entry, scan_lines
from arena.store.scan import TaskJudge, reader_index
from arena.store.store import RunStoreError

from .assets import CSS, JS, TEMPLATE

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
        "model_s": round(step.get("model_seconds") or 0.0, 3), "tool_s": round(step.get("tool_seconds") or 0.0, 3),
        "usage": {k: v for k, v in (step.get("usage") or {}).items() if v is not None} or None,
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
    notes += [clip(str(n)) for n in step.get("notes") or []]  # what the agent or the episode loop noted
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
        "tokens": [totals.get("prompt_tokens"), totals.get("completion_tokens")],
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
    texts: list[str] = field(default_factory=list)
    written: int = 0


def image_shard(blob_id: str, shards: int) -> int:
    """The image shard holding a blob: the first 8 hex digits of its hash modulo the number of shards (the page
    computes the same)."""
    digits = blob_id.partition(":")[2][:8]
    return int(digits, 16) % shards if re.fullmatch(r"[0-9a-f]{8}", digits) else 0


def _verdicts_by_episode(run: RunData, wanted: set[str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    path = run.store.verdicts_path
    if not path.is_file():
        return out
    for lineno, (_, line) in enumerate(scan_lines(path), 1):
        if not line.strip():
            continue
        try:
            verdict = parse_body(line)
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
    calls: list[CallIndex]
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
                record = parse_body(fh.read(length))
                task = record["task"]
            except (ValueError, KeyError, TypeError) as exc:
                raise RunStoreError(f"{path}: byte {offset}: not an episode record: {exc}") from None
            mine = verdicts.get(record["id"], [])
            want = judge_for_task(TaskJudge(task.get("judge")), run.judge)
            chosen = next((v for v in reversed(mine) if v["judge"] == want), None)
            full_task = tasks.get(task["id"])
            labels = classify(Record(record), None if chosen is None else Record(chosen), [Record(v) for v in mine],
                              full_task)
            view = episode_view(job.run, record, chosen, mine, labels)
            view["gold"] = gold_view(full_task.metadata if full_task is not None else None,
                                     list(task.get("evidence") or []), record.get("steps") or [])
            calls, of_step, call_images, texts = episode_inputs(ctx.calls[job.run], record, MAX_TEXT)
            if calls:
                view["requests"] = calls
                for step, call in zip(view["steps"], of_step):
                    step["call"] = call
            views[str(job.first + k)] = view
            shown = [*view["images"], *(b for st in view["steps"] for b in (st.get("obs") or {}).get("images", [])),
                     *call_images]
            out.append(((task["id"], clip(task.get("question", ""), 4000), list(task.get("answers") or []),
                         task.get("level"), task.get("category"), task.get("suite")),
                        record["setting"], view["n"], view["repeat"], record["agent"], view["correct"], view["finish"],
                        view["calls"], labels, view["tools_used"], clip(view["answer"], 300), shown,
                        (view["verdict"] or {}).get("supported"), record["id"], texts))
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


def grouped(rows: Iterable[list[Any]], tasks: list[list[Any]], strings: list[str]) -> list[list[Any]]:
    """The table's rows, each task's together: by task id, then setting, N, repeat and agent (episodes are stored
    in the order they finished, which interleaves one task's budget variants with other tasks')."""
    return sorted(rows, key=lambda r: (str(tasks[r[0]][0]), strings[r[1]], r[2], r[3], strings[r[4]]))


def failure_table(runs: list[RunData], groups: list[dict[str, Counter]], sizes: list[dict[str, list[int]]]) -> Table:
    """The failure taxonomy per (agent, setting, N) group of each run: episodes, correct, and episodes per label."""
    rows = []
    for run, run_groups, run_sizes in zip(runs, groups, sizes):
        for name, counts in sorted(run_groups.items()):
            label = f"{run.run_id}: {name}" if len(runs) > 1 else name
            episodes, correct = run_sizes[name]
            rows.append([label.replace(" | ", " · "), str(episodes), str(correct),
                         *(str(counts.get(k, 0)) for k in LABELS)])
    return Table("Failure taxonomy (episodes per label)",
                 ["group", "episodes", "correct", *(SHORT_LABELS[label] for label in LABELS)], rows)


def stream_viewer(runs: list[RunData], sink: Sink, shard_episodes: int = SHARD_EPISODES) -> ViewerBuild:
    """One pass over every run's current episodes (in forked workers when the run is large and the page has a
    shard directory): episode shards, failure labels and the page's index."""
    global _CONTEXT
    per_run = [list(reader_index(run.store).latest().values()) for run in runs]
    agents = [{e.agent for e in entries} for entries in per_run]
    with_agent = len(runs) == 1 or all(a == agents[0] for a in agents)
    settings = [sorted({e.setting for e in entries}) for entries in per_run]
    # two runs of one setting each, different ones: pair their episodes by (task, N, repeat) across settings
    across = len(runs) > 1 and all(len(s) == 1 for s in settings) and len({s[0] for s in settings}) > 1
    shared_setting = " | ".join(s[0] for s in settings) if across else None
    ids = [{e.id for e in entries} for entries in per_run]
    jobs = _jobs(per_run, shard_episodes)
    _CONTEXT = _Context(runs, [_verdicts_by_episode(r, i) for r, i in zip(runs, ids)], [r.tasks for r in runs],
                        [CallIndex.of_run(r.store.dir) for r in runs], sink)
    strings = Strings()
    tasks: list[list[Any]] = []
    task_ids: dict[str, int] = {}
    rows: dict[str, list[Any]] = {}
    eps: list[list[Any]] = []
    blobs: dict[str, None] = {}
    texts: dict[str, None] = {}
    episode_ids: list[str | None] = []
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
                    supported, episode_id, json_ids) in enumerate(out):
                number = job.first + k
                for blob_id in shown:
                    blobs.setdefault(blob_id, None)
                for blob_id in json_ids:
                    texts.setdefault(blob_id, None)
                if task[0] not in task_ids:
                    task_ids[task[0]] = len(tasks)
                    tasks.append([task[0], task[1], task[2], strings(task[3]), strings(task[4]), strings(task[5])])
                while len(eps) < number:  # shard numbering leaves gaps between runs
                    eps.append(None)
                    episode_ids.append(None)
                eps.append([correct, strings(finish), calls, [strings(x) for x in labels],
                            [strings(x) for x in used], answer, job.run, supported])
                episode_ids.append(episode_id)
                group = f"{agent} | {setting} | N={n}"
                groups[job.run].setdefault(group, Counter()).update(labels)
                size_of = sizes[job.run].setdefault(group, [0, 0])
                size_of[0] += 1
                size_of[1] += int(correct is True)
                setting = shared_setting or setting
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
    written += sink.shard("p", 0, episode_ids)  # for permalinks: loaded only when the page is opened at #ep=<id>
    failures = failure_table(runs, groups, sizes)
    notes = "".join(f"<p class=note>{html.escape(n)}</p>" for r in runs for n in r.notes)
    index = {"runs": [{"id": r.run_id, "judge": r.judge, "judgeLabel": r.judge_label, "agents": sorted(a)}
                      for r, a in zip(runs, agents)],
             "strings": strings.values, "tasks": tasks, "rows": grouped(rows.values(), tasks, strings.values),
             "eps": eps,
             "shard": shard_episodes, "imageShards": max(1, math.ceil((len(blobs) + len(texts)) / SHARD_IMAGES))}
    return ViewerBuild(index=index, blobs=list(blobs), texts=list(texts), written=written,
                       summary_html=groups_table(runs).html() + failures.html() + notes)


FULL_MIME = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "webp": "image/webp", "gif": "image/gif"}


def full_name(blob_id: str) -> str:
    """File name of a blob's full-resolution script (the page computes the same from the id)."""
    return "f-" + blob_id.partition(":")[2].partition(".")[0] + ".js"


def write_images(runs: list[RunData], build: ViewerBuild, sink: Sink, max_side: int | None,
                 full_dir: Path | None = None) -> int:
    """Blob shards (by `image_shard`): image blob id -> downscaled JPEG data URL, JSON blob id (system prompts,
    tool schemas of recorded model calls) -> its text. With `full_dir`, also each image as sent, at full
    resolution, in its own script file (`full_name`), loaded when an image is zoomed. Returns the bytes
    written."""
    side = max_side or image_side(len(build.blobs))
    stores = [r.store.blobs for r in runs]
    shards = build.index["imageShards"]
    texts = set(build.texts)

    def raw_of(blob_id: str) -> bytes | None:
        for store in stores:
            try:
                return store.get(blob_id)
            except (OSError, ValueError):
                continue
        return None

    def convert(blob_id: str) -> tuple[str | None, int]:
        raw = raw_of(blob_id)
        if raw is None:
            return None, 0
        if blob_id in texts:
            return clip(raw.decode("utf-8", "replace")), 0
        try:
            small = data_url(raw, side)
        except (OSError, ValueError, Image.DecompressionBombError):
            return None, 0
        mime = FULL_MIME.get(blob_id.rpartition(".")[2].lower())
        if full_dir is None or mime is None:
            return small, 0
        target = full_dir / full_name(blob_id)
        if target.is_file():
            return small, 0
        payload = f'__arenaShard("f",{script_json(blob_id)},"data:{mime};base64,{base64.b64encode(raw).decode()}");\n'
        target.write_text(payload, encoding="ascii")
        return small, len(payload)

    buckets: dict[int, list[str]] = {}
    for blob_id in [*build.blobs, *build.texts]:
        buckets.setdefault(image_shard(blob_id, shards), []).append(blob_id)
    written = 0
    if full_dir is not None:
        full_dir.mkdir(parents=True, exist_ok=True)
        wanted = {full_name(b) for b in build.blobs}
        for stale in full_dir.glob("f-*.js"):
            if stale.name not in wanted:
                stale.unlink()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for number in range(shards):
            chunk = buckets.get(number, [])
            converted = list(pool.map(convert, chunk))
            written += sum(size for _, size in converted)
            urls = {b: u for b, (u, _) in zip(chunk, converted) if u is not None}
            written += sink.shard("i", number, urls)
    return written


def viewer_data(runs: list[RunData]) -> tuple[dict[str, Any], list[str]]:
    """The page's index (runs, tasks, rows of comparable episodes, episode columns) and the blob ids it shows."""
    build = stream_viewer(runs, Sink(None))
    return build.index, build.blobs


def page(title: str, summary_html: str, index: dict[str, Any], shards: str = "", banner: str = "") -> str:
    """The HTML page; `banner` (HTML) comes first under the title. Each marker of the template is replaced once, in
    the template only: model text inside the data can never be taken for a marker."""
    parts = {"TITLE": html.escape(title), "SUMMARY": summary_html, "INDEX": script_json(index), "SHARDS": shards,
             "CSS": CSS, "JS": JS, "BANNER": banner}
    return re.sub(r"%(TITLE|SUMMARY|INDEX|SHARDS|CSS|JS|BANNER)%", lambda m: parts[m.group(1)], TEMPLATE)


def _title(runs: list[RunData]) -> str:
    return ("Compare: " if len(runs) > 1 else "Run: ") + " vs ".join(r.run_id for r in runs)


def incomplete_banner(runs: list[RunData]) -> str:
    """One warning paragraph per incomplete run (`arena.review.incomplete`), for the top of the page."""
    lines = [(run.run_id, line) for run in runs if (line := incomplete_line(run)) is not None]
    return "".join(f'<p class="incomplete">{html.escape(run_id)}: {html.escape(line)}</p>' for run_id, line in lines)


def build_viewer(runs: list[RunData], *, max_side: int | None = None, full_dir: Path | None = None) -> str:
    """The viewer as one self-contained HTML string (every shard inline): for small runs. With `full_dir` (next to
    where the page will be), full-resolution images for zooming go there; without, zoom shows the embedded
    downscaled image."""
    sink = Sink(None)
    build = stream_viewer(runs, sink)
    write_images(runs, build, sink, max_side, full_dir)
    build.index["dir"] = None
    build.index["full"] = full_dir.name if full_dir is not None else None
    return page(_title(runs), build.summary_html, build.index, "".join(sink.inline), incomplete_banner(runs))


def shard_dir(out: Path) -> Path:
    return out.with_name(out.stem + "-view")


def write_viewer(runs: list[RunData], out: Path, *, max_side: int | None = None, single: bool | None = None,
                 shard_episodes: int = SHARD_EPISODES) -> Path:
    """Write the viewer of one run (or a comparison of two) to `out`.

    Runs of up to SINGLE_FILE_EPISODES episodes (or `single=True`) give one self-contained file; larger ones a
    page holding the compact index plus `<out stem>-view/` with episode shards (`e-NNNNN.js`, SHARD_EPISODES
    episodes each), image shards (`i-NNNNN.js`) that the page loads when an episode is opened, and the episode
    ids (`p-00000.js`) it loads only when opened at a permalink (`#ep=<id>`). Either way the
    images at full resolution (for zooming) go to `<out stem>-view/f-<sha256>.js`, loaded when one is zoomed.
    Memory stays bounded by one shard plus the index, whatever the run's size."""
    out.parent.mkdir(parents=True, exist_ok=True)
    total = sum(len(reader_index(r.store).latest()) for r in runs)
    target = shard_dir(out)
    if target.is_dir():  # shards of an earlier viewer at this place
        for stale in [*target.glob("e-*.js"), *target.glob("i-*.js"), *target.glob("p-*.js")]:
            stale.unlink()
    if single if single is not None else total <= SINGLE_FILE_EPISODES:
        out.write_text(build_viewer(runs, max_side=max_side, full_dir=target), encoding="utf-8")
        if target.is_dir() and not any(target.iterdir()):
            target.rmdir()
        return out
    target.mkdir(exist_ok=True)
    sink = Sink(target)
    build = stream_viewer(runs, sink, shard_episodes)
    write_images(runs, build, sink, max_side, target)
    build.index["dir"] = build.index["full"] = target.name
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(page(_title(runs), build.summary_html, build.index, banner=incomplete_banner(runs)),
                   encoding="utf-8")
    os.replace(tmp, out)
    return out
