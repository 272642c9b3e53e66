"""`arena annotate`: a stratified sample of a run's answers as one self-contained HTML page for human labels.

The sample (paper §4: 210 outputs, three annotators) is drawn with a seeded generator: episodes are grouped by
the stratification fields (`level`, `setting`, `agent`, `category`, `suite`, `max_rounds`), each group gets a
share of the sample proportional to its size (largest remainders; every group at least one when the sample is
large enough), and episodes are drawn without replacement inside each group. Only episodes with a judge verdict
(no judge error) are sampled, so every label can be compared with the judge.

The page is built like the viewer (`runs/viewer.py`): offline (a Content-Security-Policy forbids every network
request), data in a `<script type="application/json">` block with `<`, `>`, `&` escaped, text put in the page
with `textContent` only. The annotator does not see the judge's decision. Per answer they choose Correct or
Incorrect and may flag "too vague" or "ambiguous"; the page shows progress and saves a labels JSON file
(download) that `arena agreement` reads:
`{"format": "arena-labels/1", "run_id", "judge", "seed", "annotator", "labels": [{"episode_id", "key",
"label": "correct"|"incorrect", "too_vague", "ambiguous"}]}`.
"""

from __future__ import annotations

import html
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from arena.core.trajectory import Episode
from arena.core.verdict import Verdict

from .rundata import RunData
from .viewer import clip, data_url, script_json

LABELS_FORMAT = "arena-labels/1"
STRATA = {
    "level": lambda e: e.task.level or "-",
    "setting": lambda e: e.setting,
    "agent": lambda e: e.agent,
    "category": lambda e: e.task.category or "-",
    "suite": lambda e: e.task.suite,
    "max_rounds": lambda e: str(e.budget.max_rounds),
}


def allocate(sizes: dict[tuple[str, ...], int], total: int) -> dict[tuple[str, ...], int]:
    """Sample size per stratum: proportional, largest remainders, at least one each when `total` allows."""
    population = sum(sizes.values())
    if total >= population:
        return dict(sizes)
    keys = sorted(sizes)
    floor_one = total >= len(keys)
    shares = {k: total * sizes[k] / population for k in keys}
    out = {k: min(sizes[k], max(1 if floor_one else 0, int(shares[k]))) for k in keys}
    remaining = total - sum(out.values())
    order = sorted(keys, key=lambda k: (-(shares[k] - int(shares[k])), k))
    while remaining > 0:
        progressed = False
        for k in order:
            if remaining > 0 and out[k] < sizes[k]:
                out[k] += 1
                remaining -= 1
                progressed = True
        if not progressed:
            break
    while remaining < 0:  # the floor of one overshot: take back from the largest allocations
        k = max((k for k in keys if out[k] > 1), key=lambda k: (out[k] - shares[k], k))
        out[k] -= 1
        remaining += 1
    return out


def sample_episodes(run: RunData, size: int, stratify: list[str], seed: int) -> list[tuple[Episode, Verdict]]:
    """A stratified, seeded sample of the run's judged episodes (see the module docstring)."""
    unknown = [s for s in stratify if s not in STRATA]
    if unknown:
        raise ValueError(f"--stratify: unknown field(s) {', '.join(unknown)}; known: {', '.join(STRATA)}")
    if size < 1:
        raise ValueError("--sample must be at least 1")
    chosen = run.chosen
    judged = [(e, chosen[e.id]) for e in sorted(run.episodes, key=lambda e: e.key)
              if e.id in chosen and chosen[e.id].error is None]
    if not judged:
        raise ValueError(f"{run.store.dir}: no episode has a verdict of judge {run.judge!r} to compare labels with")
    groups: dict[tuple[str, ...], list[tuple[Episode, Verdict]]] = defaultdict(list)
    for row in judged:
        groups[tuple(STRATA[s](row[0]) for s in stratify)].append(row)
    quota = allocate({k: len(v) for k, v in groups.items()}, size)
    rng = random.Random(seed)
    picked = []
    for key in sorted(groups):
        picked.extend(rng.sample(groups[key], quota[key]))
    rng.shuffle(picked)
    return picked


def item_view(episode: Episode, verdict: Verdict, images: dict[str, str]) -> dict[str, Any]:
    """What the annotator sees of one answer (never the judge's decision)."""
    last = episode.steps[-1].output if episode.steps else None
    return {
        "episode_id": episode.id, "key": episode.key, "question": clip(episode.task.question, 4000),
        "answers": episode.task.answers, "options": episode.task.options, "answer": episode.answer,
        "extracted": verdict.extracted, "final_output": clip(last, 6000), "level": episode.task.level,
        "setting": episode.setting, "agent": episode.agent,
        "image": images.get(episode.images[0]) if episode.images else None,
    }


def build_annotation_page(run: RunData, sample: list[tuple[Episode, Verdict]], seed: int,
                          stratify: list[str], max_side: int = 768) -> str:
    images: dict[str, str] = {}
    for episode, _ in sample:
        if episode.images and episode.images[0] not in images:
            try:
                images[episode.images[0]] = data_url(run.store.blobs.get(episode.images[0]), max_side)
            except (OSError, ValueError):
                pass
    data = {"format": LABELS_FORMAT, "run_id": run.run_id, "judge": run.judge, "seed": seed, "stratify": stratify,
            "items": [item_view(e, v, images) for e, v in sample]}
    title = f"Annotate: {run.run_id} ({len(sample)} answers)"
    return (PAGE.replace("%TITLE%", html.escape(title)).replace("%DATA%", script_json(data))
            .replace("%CSS%", CSS).replace("%JS%", JS))


def write_annotation_page(run: RunData, out: Path, size: int, stratify: list[str], seed: int) -> tuple[Path, int]:
    sample = sample_episodes(run, size, stratify, seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(build_annotation_page(run, sample, seed, stratify), encoding="utf-8")
    return out, len(sample)


CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:0;background:#f6f6f4;color:#222}
header{position:sticky;top:0;background:#fff;border-bottom:1px solid #ccc;padding:8px 16px;display:flex;gap:16px;
align-items:center;flex-wrap:wrap}
main{max-width:960px;margin:16px auto;padding:0 16px}
.card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:16px}
.card img{max-width:100%;max-height:420px;display:block;margin:8px 0}
.label{font-weight:600;color:#555;margin-top:10px}
pre{white-space:pre-wrap;word-break:break-word;background:#f2f2f2;padding:8px;border-radius:4px;max-height:260px;
overflow:auto}
.choices{display:flex;gap:12px;margin-top:14px;align-items:center;flex-wrap:wrap}
button{font:inherit;padding:6px 14px;border-radius:4px;border:1px solid #888;background:#fff;cursor:pointer}
button.on{background:#2a6;color:#fff;border-color:#2a6}
button.off.on{background:#c33;border-color:#c33}
progress{width:200px}
"""

JS = r"""
const D = JSON.parse(document.getElementById('data').textContent);
const store = 'arena-labels:' + D.run_id + ':' + D.seed;
let labels = {};
try { labels = JSON.parse(localStorage.getItem(store) || '{}'); } catch (e) { labels = {}; }
let at = 0;
const $ = (id) => document.getElementById(id);
function text(el, value) { el.textContent = value == null ? '' : String(value); }
function done() { return D.items.filter(it => labels[it.episode_id] && labels[it.episode_id].label).length; }
function persist() { try { localStorage.setItem(store, JSON.stringify(labels)); } catch (e) {} }
function show() {
  const it = D.items[at];
  text($('pos'), (at + 1) + ' / ' + D.items.length);
  text($('progress-text'), done() + ' of ' + D.items.length + ' labelled');
  $('progress').max = D.items.length; $('progress').value = done();
  text($('question'), it.question);
  text($('truths'), it.answers.join('  |  '));
  text($('options'), (it.options || []).join('  |  '));
  $('options-row').hidden = !(it.options && it.options.length);
  text($('answer'), it.extracted != null && it.extracted !== '' ? it.extracted : (it.answer == null ? '(no answer)' : it.answer));
  text($('output'), it.final_output);
  text($('meta'), [it.level, it.setting, it.agent].filter(Boolean).join(' · '));
  const img = $('image');
  if (it.image) { img.src = it.image; img.hidden = false; } else { img.removeAttribute('src'); img.hidden = true; }
  const l = labels[it.episode_id] || {};
  $('correct').classList.toggle('on', l.label === 'correct');
  $('incorrect').classList.toggle('on', l.label === 'incorrect');
  $('vague').checked = !!l.too_vague; $('ambiguous').checked = !!l.ambiguous;
}
function setLabel(value) {
  const it = D.items[at];
  labels[it.episode_id] = Object.assign(labels[it.episode_id] || {}, {label: value});
  persist();
  if (at < D.items.length - 1) at += 1;
  show();
}
function setFlag(name, value) {
  const it = D.items[at];
  labels[it.episode_id] = Object.assign(labels[it.episode_id] || {}, {[name]: value});
  persist(); show();
}
function save() {
  const out = {format: D.format, run_id: D.run_id, judge: D.judge, seed: D.seed, stratify: D.stratify,
    annotator: $('annotator').value.trim() || 'anonymous', saved_at: new Date().toISOString(),
    labels: D.items.filter(it => labels[it.episode_id] && labels[it.episode_id].label).map(it => ({
      episode_id: it.episode_id, key: it.key, label: labels[it.episode_id].label,
      too_vague: !!labels[it.episode_id].too_vague, ambiguous: !!labels[it.episode_id].ambiguous}))};
  const blob = new Blob([JSON.stringify(out, null, 1)], {type: 'application/json'});
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = 'labels-' + (out.annotator.replace(/[^A-Za-z0-9_-]+/g, '_') || 'anonymous') + '.json';
  document.body.appendChild(a); a.click(); a.remove();
  text($('saved'), 'saved ' + out.labels.length + ' label(s)');
}
$('correct').onclick = () => setLabel('correct');
$('incorrect').onclick = () => setLabel('incorrect');
$('vague').onchange = (e) => setFlag('too_vague', e.target.checked);
$('ambiguous').onchange = (e) => setFlag('ambiguous', e.target.checked);
$('prev').onclick = () => { if (at > 0) { at -= 1; show(); } };
$('next').onclick = () => { if (at < D.items.length - 1) { at += 1; show(); } };
$('save').onclick = save;
document.addEventListener('keydown', (e) => {
  if (e.target.tagName === 'INPUT' && e.target.type === 'text') return;
  if (e.key === 'c') setLabel('correct');
  else if (e.key === 'x') setLabel('incorrect');
  else if (e.key === 'ArrowRight') $('next').click();
  else if (e.key === 'ArrowLeft') $('prev').click();
});
show();
document.body.dataset.ready = "1";
"""

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>%TITLE%</title><style>%CSS%</style></head><body>
<header><strong>%TITLE%</strong>
<label>Annotator <input id="annotator" type="text" size="12" placeholder="your name"></label>
<progress id="progress"></progress><span id="progress-text"></span>
<button id="save">Save labels</button><span id="saved"></span></header>
<main><div class="card">
<div><button id="prev">&larr; previous</button> <span id="pos"></span> <button id="next">next &rarr;</button>
<span id="meta" style="color:#777;margin-left:12px"></span></div>
<div class="label">Question</div><pre id="question"></pre>
<img id="image" alt="task image">
<div class="label">Accepted answer(s)</div><pre id="truths"></pre>
<div id="options-row"><div class="label">Options</div><pre id="options"></pre></div>
<div class="label">Model's answer</div><pre id="answer"></pre>
<details><summary>Model's final output</summary><pre id="output"></pre></details>
<div class="choices">
<button id="correct">Correct (c)</button><button id="incorrect" class="off">Incorrect (x)</button>
<label><input id="vague" type="checkbox"> too vague</label>
<label><input id="ambiguous" type="checkbox"> ambiguous</label>
</div></div></main>
<script type="application/json" id="data">%DATA%</script>
<script>%JS%</script>
</body></html>
"""
