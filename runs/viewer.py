"""`arena view`: one self-contained static HTML file to browse a run's episodes (or compare two runs).

The file opens offline (a Content-Security-Policy forbids every network request) and
shows: the run summary and failure taxonomy; filters (verdict, level, finish reason,
tool used, failure label, setting, budget, free text; in comparisons, where the runs
differ); and per episode the full trajectory: the model's text, each tool call with
its arguments, crop boxes drawn on the image they were cut from, returned crops,
search results with their thumbnails, browser screenshots, the verdict and its reason.

Everything a model, a tool or a page wrote travels as JSON inside a
`<script type="application/json">` block (with `<`, `>`, `&` escaped) and is put in
the page with `textContent` only, never parsed as HTML. Images are deduplicated:
each blob is stored once, downscaled, as a data URL in one JSON map.
"""

from __future__ import annotations

import html
import io
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from PIL import Image

from arena.trajectory import Episode
from arena.verdict import Verdict

from .report import failure_table, groups_table
from .rundata import RunData

CROP_TOOL = "image_zoom_in_tool"
MAX_TEXT = 20_000


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


def compact_json(value: Any, limit: int = 4000) -> str:
    """One line when short, indented otherwise."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > 160:
        text = json.dumps(value, ensure_ascii=False, indent=1, default=str)
    return clip(text, limit) or ""


def step_view(step, context: list[str]) -> dict[str, Any]:
    obs = step.observation
    view: dict[str, Any] = {
        "round": step.round, "final": step.final_turn, "output": clip(step.output), "reasoning": clip(step.reasoning),
        "action": step.action, "tool": step.tool, "answer": step.answer, "error": step.error,
        "arguments": compact_json(step.arguments) if step.arguments is not None else None,
    }
    notes = []
    if step.input.elided_images or step.input.elided_texts:
        parts = ([f"img_idx {', '.join(map(str, step.input.elided_images))}"] if step.input.elided_images else []) + \
                ([f"tool output of round(s) {', '.join(map(str, step.input.elided_texts))}"]
                 if step.input.elided_texts else [])
        notes.append(f"left out of the model's context: {'; '.join(parts)} ({step.input.elision_reason})")
    if step.finish_reason == "length":
        notes.append("the server cut this reply at its token limit (finish_reason length)")
    if step.answer_tagged is False:
        notes.append("the answer was not inside <answer></answer>")
    if notes:
        view["note"] = " · ".join(notes)
    if obs is not None:
        data = {k: v for k, v in obs.data.items() if k != "traceback"}
        view["obs"] = {"text": clip(obs.text), "images": list(obs.images), "error": obs.error,
                       "data": compact_json(data) if data else None}
        hits = data.get("hits")
        if isinstance(hits, list):
            view["hits"] = [{"title": str(h.get("title", "")), "url": str(h.get("url", ""))}
                            for h in hits if isinstance(h, dict)]
        box, size, index = data.get("pixel_box"), data.get("source_size"), data.get("img_idx")
        if (step.tool == CROP_TOOL and isinstance(box, list) and len(box) == 4 and isinstance(size, list)
                and len(size) == 2 and isinstance(index, int) and 0 <= index < len(context) and size[0] and size[1]):
            w, h = float(size[0]), float(size[1])
            view["crop"] = {"src": context[index], "box": [round(100 * box[0] / w, 3), round(100 * box[1] / h, 3),
                                                           round(100 * (box[2] - box[0]) / w, 3),
                                                           round(100 * (box[3] - box[1]) / h, 3)]}
        context.extend(obs.images)
    return view


def episode_view(run_index: int, episode: Episode, chosen: Verdict | None, verdicts: list[Verdict],
                 failures: list[str]) -> dict[str, Any]:
    context = list(episode.images)
    steps = [step_view(s, context) for s in episode.steps]
    used = sorted(t for t, n in episode.totals.calls_per_tool.items() if n)
    return {
        "run": run_index, "id": episode.id, "key": episode.key, "agent": episode.agent, "setting": episode.setting,
        "n": episode.budget.max_rounds, "repeat": episode.repeat, "finish": episode.finish_reason,
        "answer": episode.answer, "error": clip(episode.error, 4000), "images": list(episode.images),
        "correct": None if chosen is None or chosen.error is not None else chosen.correct,
        "score": None if chosen is None else chosen.score,
        "verdict": None if chosen is None else {"judge": chosen.judge, "rationale": chosen.rationale,
                                                "extracted": chosen.extracted, "error": chosen.error,
                                                "supported": chosen.supported, "support_reason": chosen.support_reason},
        "verdicts": [{"judge": v.judge, "correct": v.correct, "rationale": v.rationale, "error": v.error}
                     for v in verdicts],
        "failures": failures, "tools_used": used, "calls": episode.totals.tool_calls,
        "rounds": episode.totals.rounds, "invalid": episode.totals.invalid_calls,
        "seconds": round(episode.totals.seconds, 2), "meta": compact_json(episode.meta) if episode.meta else None,
        "steps": steps,
    }


def cell_of(episode: Episode, with_agent: bool) -> str:
    parts = [episode.task.id, episode.setting, str(episode.budget.max_rounds), str(episode.repeat)]
    return "|".join(parts + ([episode.agent] if with_agent else []))


def viewer_data(runs: list[RunData]) -> tuple[dict[str, Any], list[str]]:
    """The page's JSON (runs, rows of comparable episodes, episodes) and the blob ids it shows."""
    agents = [{e.agent for e in r.episodes} for r in runs]
    with_agent = len(runs) == 1 or all(a == agents[0] for a in agents)
    episodes: list[dict[str, Any]] = []
    rows: dict[str, dict[str, Any]] = {}
    for index, run in enumerate(runs):
        labels = run.failures
        by_episode: dict[str, list[Verdict]] = {}
        for v in run.verdicts:
            by_episode.setdefault(v.episode_id, []).append(v)
        for episode in run.episodes:
            cell = cell_of(episode, with_agent)
            if cell in rows and rows[cell]["eps"][index] is not None:
                cell = cell_of(episode, True)
            row = rows.setdefault(cell, {"cell": cell, "task": {
                "id": episode.task.id, "question": clip(episode.task.question, 4000), "answers": episode.task.answers,
                "level": episode.task.level, "category": episode.task.category, "suite": episode.task.suite},
                "setting": episode.setting, "n": episode.budget.max_rounds, "repeat": episode.repeat,
                "agent": episode.agent, "eps": [None] * len(runs)})
            row["eps"][index] = len(episodes)
            episodes.append(episode_view(index, episode, run.chosen.get(episode.id), by_episode.get(episode.id, []),
                                         labels.get(episode.id, [])))
    blobs: list[str] = []
    seen: set[str] = set()
    for ep in episodes:
        ids = list(ep["images"]) + [b for s in ep["steps"] for b in (s.get("obs") or {}).get("images", [])]
        for blob_id in ids:
            if blob_id not in seen:
                seen.add(blob_id)
                blobs.append(blob_id)
    data = {"runs": [{"id": r.run_id, "judge": r.judge} for r in runs], "rows": list(rows.values()),
            "episodes": episodes}
    return data, blobs


def script_json(value: Any) -> str:
    """JSON safe to embed in a <script> element: no `<`, `>` or `&` survive as such."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def image_map(runs: list[RunData], blobs: list[str], max_side: int | None) -> dict[str, str]:
    """Blob id -> downscaled JPEG data URL, for every blob found in one of the runs' stores."""
    side = max_side or image_side(len(blobs))
    stores = [r.store.blobs for r in runs]

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

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        urls = list(pool.map(convert, blobs))
    return {b: u for b, u in zip(blobs, urls) if u is not None}


def build_viewer(runs: list[RunData], *, max_side: int | None = None) -> str:
    data, blobs = viewer_data(runs)
    images = image_map(runs, blobs, max_side)
    title = ("Compare: " if len(runs) > 1 else "Run: ") + " vs ".join(r.run_id for r in runs)
    summary = groups_table(runs).html() + failure_table(runs).html()
    notes = "".join(f"<p class=note>{html.escape(n)}</p>" for r in runs for n in r.notes)
    return (TEMPLATE.replace("%TITLE%", html.escape(title)).replace("%SUMMARY%", summary + notes)
            .replace("%DATA%", script_json(data)).replace("%IMAGES%", script_json(images))
            .replace("%CSS%", CSS).replace("%JS%", JS))


def write_viewer(runs: list[RunData], out: Path, *, max_side: int | None = None) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(build_viewer(runs, max_side=max_side), encoding="utf-8")
    return out


TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<link rel="icon" href="data:,">
<title>%TITLE%</title><style>%CSS%</style></head>
<body>
<h1>%TITLE%</h1>
<details id="summary"><summary>Summary and failure taxonomy</summary>%SUMMARY%</details>
<div id="filters"></div>
<p id="count"></p>
<table id="episodes"><thead id="head"></thead><tbody id="rows"></tbody></table>
<script type="application/json" id="data">%DATA%</script>
<script type="application/json" id="images">%IMAGES%</script>
<script>%JS%</script>
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
const D = JSON.parse(document.getElementById("data").textContent);
let IMG = null;
function imageUrl(id) {
  if (IMG === null) IMG = JSON.parse(document.getElementById("images").textContent);
  return Object.prototype.hasOwnProperty.call(IMG, id) ? IMG[id] : "";
}
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
function picture(id, caption) {
  const fig = el("figure");
  const url = imageUrl(id);
  if (url) { const im = el("img"); im.src = url; im.alt = caption || id; fig.append(im); }
  else fig.append(el("span", "na", "(image not stored)"));
  if (caption) fig.append(el("figcaption", null, caption));
  return fig;
}
const SINGLE = D.runs.length === 1;
const EP = D.episodes;
const state = {verdict: "", level: "", finish: "", tool: "", failure: "", setting: "", n: "", compare: "", text: ""};

function mark(ep) {
  if (!ep) return el("span", "na", "–");
  if (ep.correct === true) return el("span", "ok", "✓");
  if (ep.correct === false) return el("span", "bad", "✗");
  return el("span", "na", "?");
}
function eps(row) { return row.eps.map(i => i === null ? null : EP[i]); }
function rowMatches(row) {
  const list = eps(row).filter(Boolean);
  const any = f => list.some(f);
  if (state.verdict === "correct" && !any(e => e.correct === true)) return false;
  if (state.verdict === "incorrect" && !any(e => e.correct === false)) return false;
  if (state.verdict === "unjudged" && !any(e => e.correct === null)) return false;
  if (state.verdict === "supported" && !any(e => e.correct === true && e.verdict && e.verdict.supported === "yes")) return false;
  if (state.verdict === "unsupported" && !any(e => e.correct === true && e.verdict && e.verdict.supported === "no")) return false;
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
  if (state.text) {
    const t = state.text.toLowerCase();
    const hay = [row.task.id, row.task.question, ...list.map(e => e.answer || "")].join(" ").toLowerCase();
    if (!hay.includes(t)) return false;
  }
  return true;
}
function values(f) {
  const s = new Set();
  for (const row of D.rows) for (const v of f(row)) if (v !== null && v !== undefined && v !== "") s.add(String(v));
  return [...s].sort((a, b) => a.localeCompare(b, undefined, {numeric: true}));
}
function select(name, label, options) {
  const wrap = el("label", null, label);
  const s = el("select"); s.id = "f-" + name;
  for (const [v, t] of options) { const o = el("option", null, t); o.value = v; s.append(o); }
  s.addEventListener("change", () => { state[name] = s.value; render(); });
  wrap.append(s);
  return wrap;
}
function opts(list) { return [["", "all"], ...list.map(v => [v, v])]; }
function buildFilters() {
  const f = document.getElementById("filters");
  f.append(select("verdict", "verdict", [["", "all"], ["correct", "correct"], ["supported", "correct and supported"], ["unsupported", "correct but unsupported"], ["incorrect", "incorrect"], ["unjudged", "unjudged"]]));
  f.append(select("level", "level", opts(values(r => [r.task.level]))));
  f.append(select("finish", "finish", opts(values(r => eps(r).filter(Boolean).map(e => e.finish)))));
  f.append(select("tool", "tool used", opts(values(r => eps(r).filter(Boolean).flatMap(e => e.tools_used)))));
  f.append(select("failure", "failure", opts(values(r => eps(r).filter(Boolean).flatMap(e => e.failures)))));
  f.append(select("setting", "setting", opts(values(r => [r.setting]))));
  f.append(select("n", "max rounds", opts(values(r => [r.n]))));
  if (!SINGLE) f.append(select("compare", "compare", [["", "all"], ["differ", "runs differ"], ["a", "only " + D.runs[0].id + " correct"], ["b", "only " + D.runs[1].id + " correct"]]));
  const wrap = el("label", null, "search");
  const input = el("input"); input.id = "f-text"; input.type = "search";
  input.addEventListener("input", () => { state.text = input.value; render(); });
  wrap.append(input); f.append(wrap);
}
function buildHead() {
  const tr = el("tr");
  for (const h of ["task", "level", "setting", "N", "rep", "agent", "question"]) tr.append(el("th", null, h));
  for (const r of D.runs) tr.append(el("th", null, SINGLE ? "verdict" : r.id));
  tr.append(el("th", null, SINGLE ? "finish · calls · failures" : "finish"));
  document.getElementById("head").append(tr);
}
const open = new Set();
function render() {
  const body = document.getElementById("rows");
  body.textContent = "";
  let shown = 0;
  D.rows.forEach((row, i) => {
    if (!rowMatches(row)) return;
    shown++;
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
  });
  document.getElementById("count").textContent = `${shown} of ${D.rows.length} ${SINGLE ? "episodes" : "tasks"} shown`;
}
function detail(row) {
  const tr = el("tr", "detail"); const td = el("td"); td.colSpan = 8 + D.runs.length;
  td.append(el("p", null, "Question: " + row.task.question));
  td.append(el("p", null, "Accepted answers: " + row.task.answers.join(" | ")));
  const cols = el("div", "cols");
  eps(row).forEach((ep, k) => {
    const col = el("div", "col");
    col.append(el("h3", null, D.runs[k].id));
    if (!ep) col.append(el("p", "na", "no episode for this task in this run"));
    else episodeView(col, ep);
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
  if (ep.meta) { const d = el("details"); d.append(el("summary", null, "meta"), el("pre", null, ep.meta)); head.append(d); }
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
  if (s.arguments) { d.append(el("div", null, "arguments:")); d.append(el("pre", null, s.arguments)); }
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
    if (s.obs.data) { const r = el("details"); r.append(el("summary", null, "data"), el("pre", null, s.obs.data)); d.append(r); }
  }
  if (s.answer !== null && s.answer !== undefined) d.append(el("p", null, "answer: " + s.answer));
  return d;
}
buildFilters();
buildHead();
render();
document.body.dataset.ready = "1";
"""
