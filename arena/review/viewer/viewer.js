
"use strict";
const IDX = JSON.parse(document.getElementById("index").textContent);
const S = IDX.strings;
const SINGLE = IDX.runs.length === 1;
const PAGE = 100;
const str = i => (i === null || i === undefined) ? null : S[i];
// index columns: task = [id, question, answers, level, category, suite]; row = [task, setting, n, repeat, agent,
// ep of run 0, ep of run 1?]; ep = [correct, finish, calls, failures[], tools[], answer, run, supported]
const T = IDX.tasks.map(t => ({id: t[0], question: t[1], answers: t[2], level: str(t[3]), category: str(t[4])}));
const ROWS = IDX.rows.map(r => ({taskNo: r[0], task: T[r[0]], setting: S[r[1]], n: r[2], repeat: r[3], agent: S[r[4]], eps: r.slice(5)}));
const EPS = IDX.eps.map(e => e === null ? null : {correct: e[0], finish: S[e[1]], calls: e[2], failures: e[3].map(i => S[i]),
                                tools_used: e[4].map(i => S[i]), answer: e[5], supported: e[7]});
const SHARDS = {e: {}, i: {}, f: {}, p: {}};
const LOADING = {};
const IMG = {};
window.__arenaShard = function (kind, n, data) { SHARDS[kind][n] = data; };
function script(src, key, done) {
  if (!LOADING[key]) LOADING[key] = new Promise((resolve, reject) => {
    const s = document.createElement("script");
    s.src = src;
    s.onload = () => done() ? resolve(done()) : reject(new Error("empty shard " + s.src));
    s.onerror = () => { delete LOADING[key]; reject(new Error(`cannot load ${s.src}: keep the page next to its ${IDX.dir || IDX.full} directory`)); };
    document.head.append(s);
  });
  return LOADING[key];
}
function load(kind, n) {
  if (SHARDS[kind][n]) return Promise.resolve(SHARDS[kind][n]);
  const inline = document.getElementById(`shard-${kind}-${n}`);
  if (inline) { SHARDS[kind][n] = JSON.parse(inline.textContent); return Promise.resolve(SHARDS[kind][n]); }
  return script(`${IDX.dir}/${kind}-${String(n).padStart(5, "0")}.js`, kind + n, () => SHARDS[kind][n]);
}
function fullImage(id) {  // the image as stored, at full resolution (arena.review.viewer.full_name)
  const hex = String(id).split(":").slice(1).join(":").split(".")[0];
  if (!IDX.full || !/^[0-9a-f]{64}$/.test(hex)) return Promise.reject(new Error("no full-resolution copy next to this page"));
  return script(`${IDX.full}/f-${hex}.js`, "f" + hex, () => SHARDS.f[id]);
}
function callBlobs(ep) {
  const ids = [];
  for (const c of ep.requests || []) {
    if (c.tools) ids.push(c.tools);
    for (const m of c.add) { if (m.ref) ids.push(m.ref); for (const [kind, v] of m.parts || []) if (kind === "image") ids.push(v); }
  }
  return ids;
}
async function episode(no) {
  const shard = await load("e", Math.floor(no / IDX.shard));
  const ep = shard.eps[String(no)];
  const ids = new Set([...ep.images, ...callBlobs(ep)]);
  for (const s of ep.steps) { for (const b of (s.obs ? s.obs.images : [])) ids.add(b); if (s.crop) ids.add(s.crop.src); }
  for (const n of new Set([...ids].map(imageShard))) Object.assign(IMG, await load("i", n));
  return ep;
}
function imageShard(id) {  // as arena.review.viewer.image_shard
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
function zoomable(im, id) {
  im.classList.add("zoomable"); im.dataset.blob = id; im.title = "click to zoom (full resolution)";
  im.addEventListener("click", ev => { ev.stopPropagation(); zoom(id); });
  return im;
}
function zoom(id) {
  const box = document.getElementById("zoom"), img = document.getElementById("zoom-img"), note = document.getElementById("zoom-note");
  img.src = imageUrl(id); img.dataset.blob = id; img.dataset.full = "0";
  note.textContent = "loading the full-resolution image…"; box.hidden = false;
  fullImage(id).then(url => { if (img.dataset.blob === id) { img.src = url; img.dataset.full = "1"; note.textContent = "full resolution · " + id + " · click or Esc to close"; } },
                     err => { if (img.dataset.blob === id) note.textContent = "downscaled copy shown: " + (err.message || err); });
}
function closeZoom() { const box = document.getElementById("zoom"); box.hidden = true; document.getElementById("zoom-img").removeAttribute("src"); }
function picture(id, caption) {
  const fig = el("figure");
  const url = imageUrl(id);
  if (url) { const im = el("img"); im.src = url; im.alt = caption || id; fig.append(zoomable(im, id)); }
  else fig.append(el("span", "na", "(image not stored)"));
  if (caption) fig.append(el("figcaption", null, caption));
  return fig;
}
const state = {verdict: "", level: "", finish: "", tool: "", failure: "", setting: "", n: "", compare: "", text: ""};
const sort = {col: "", dir: 1};
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
function agentsOf(k) { return IDX.runs[k].agents.join(", "); }
function buildFilters() {
  const j = document.getElementById("judges");
  for (const r of IDX.runs) j.append(el("p", "judge", `${r.id}: judge ${r.judgeLabel} · agent ${r.agents.join(", ")}`));
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
// sortable columns: [key, header, value of a row]; verdicts sort correct > incorrect > unjudged > no episode
const verdictRank = e => !e ? -1 : e.correct === true ? 2 : e.correct === false ? 1 : 0;
function columns() {
  const cols = [["task", "task", r => r.task.id], ["level", "level", r => r.task.level || ""], ["setting", "setting", r => r.setting],
                ["n", "N", r => r.n], ["repeat", "rep", r => r.repeat], ["agent", "agent", r => r.agent], ["question", "question", r => r.task.question]];
  IDX.runs.forEach((r, k) => cols.push(["v" + k, SINGLE ? "verdict" : `${r.id} (${agentsOf(k)})`, row => verdictRank(eps(row)[k])]));
  cols.push(["finish", SINGLE ? "finish · calls · failures" : "finish", row => { const e = eps(row).find(Boolean); return e ? e.finish : ""; }]);
  return cols;
}
const COLUMNS = columns();
function buildHead() {
  const tr = el("tr");
  for (const [key, label] of COLUMNS) {
    const th = el("th", "sortable", label); th.dataset.col = key; th.title = "sort by " + label;
    th.addEventListener("click", () => { sort.dir = sort.col === key ? -sort.dir : 1; sort.col = key; filter(); });
    tr.append(th);
  }
  document.getElementById("head").append(tr);
}
function sortMatching() {
  const col = COLUMNS.find(c => c[0] === sort.col);
  for (const th of document.querySelectorAll("th.sortable")) th.dataset.sorted = th.dataset.col === sort.col ? (sort.dir > 0 ? "asc" : "desc") : "";
  for (const th of document.querySelectorAll("th.sortable")) th.textContent = COLUMNS.find(c => c[0] === th.dataset.col)[1] + (th.dataset.sorted === "asc" ? " ▲" : th.dataset.sorted === "desc" ? " ▼" : "");
  if (!col) return;
  const key = col[2];
  const keys = new Map(matching.map(i => [i, key(ROWS[i])]));
  matching.sort((a, b) => { const x = keys.get(a), y = keys.get(b); return (x < y ? -1 : x > y ? 1 : 0) * sort.dir || a - b; });
}
function filter() {
  matching = [];
  for (let i = 0; i < ROWS.length; i++) if (rowMatches(ROWS[i], i)) matching.push(i);
  sortMatching();
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
let focused = null;
function render() {
  const body = document.getElementById("rows");
  body.textContent = "";
  for (const i of matching.slice(page * PAGE, (page + 1) * PAGE)) {
    const row = ROWS[i];
    const tr = el("tr", "row" + (i === focused ? " focus" : "")); tr.dataset.row = String(i);
    tr.append(el("td", null, row.task.id), el("td", null, row.task.level || ""), el("td", null, row.setting),
              el("td", null, row.n), el("td", null, row.repeat), el("td", null, row.agent));
    const q = el("td", "q", row.task.question); q.title = row.task.question; tr.append(q);
    for (const ep of eps(row)) { const td = el("td"); td.append(mark(ep)); tr.append(td); }
    const first = eps(row).filter(Boolean);
    tr.append(el("td", null, first.map(e => SINGLE ? [e.finish, e.calls, e.failures.join(", ")].filter(x => x !== "").join(" · ") : e.finish).join(" | ")));
    tr.addEventListener("click", () => { if (open.has(i)) open.delete(i); else open.add(i); render(); });
    body.append(tr);
    if (open.has(i)) body.append(detail(row, i));
  }
  const count = document.getElementById("count");
  count.textContent = `${matching.length} of ${ROWS.length} ${SINGLE ? "episodes" : "tasks"} shown`;
  count.dataset.query = state.text;
  pager();
}
function reveal(i) {  // open row i wherever it is: filters cleared when they hide it, its page shown
  if (!matching.includes(i)) {
    for (const k of Object.keys(state)) state[k] = "";
    for (const s of document.querySelectorAll("#filters select, #filters input")) s.value = "";
    matching = [];
    for (let r = 0; r < ROWS.length; r++) matching.push(r);
    sortMatching();
  }
  page = Math.floor(matching.indexOf(i) / PAGE);
  open.add(i); focused = i;
  render();
  return scrollToRow(i);
}
async function scrollToRow(i) {  // row i at the top, again once its episodes are drawn: until then the page may
  const tr = () => document.querySelector(`tr.row[data-row="${i}"]`);  // be too short to bring it there
  if (tr() && tr().scrollIntoView) tr().scrollIntoView({block: "start"});
  await Promise.all(ROWS[i].eps.filter(no => no !== null).map(no => episode(no).catch(() => null)));
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  const shown = tr() && tr().nextElementSibling;
  if (shown) await Promise.all([...shown.querySelectorAll("img")].map(im => im.decode ? im.decode().catch(() => null) : null));
  if (focused === i && tr() && tr().scrollIntoView) tr().scrollIntoView({block: "start"});
}
let TASKROWS = null;
function variants(i) {  // rows of the same task: other budgets, settings, repeats, agents
  if (TASKROWS === null) { TASKROWS = new Map(); ROWS.forEach((r, k) => { if (!TASKROWS.has(r.taskNo)) TASKROWS.set(r.taskNo, []); TASKROWS.get(r.taskNo).push(k); }); }
  return TASKROWS.get(ROWS[i].taskNo).filter(k => k !== i);
}
function detail(row, i) {
  const tr = el("tr", "detail"); const td = el("td"); td.colSpan = 8 + IDX.runs.length;
  td.append(el("p", null, "Question: " + row.task.question));
  td.append(el("p", null, "Accepted answers: " + row.task.answers.join(" | ")));
  const others = variants(i);
  if (others.length) {
    const p = el("p", "variants", "Same task, other budget / setting / repeat: ");
    for (const k of others) {
      const r = ROWS[k];
      const b = el("button", "variant", `${r.setting} · N=${r.n} · rep ${r.repeat}${r.agent !== row.agent ? " · " + r.agent : ""} `);
      for (const e of eps(r)) b.append(mark(e));
      b.dataset.row = String(k);
      b.addEventListener("click", ev => { ev.stopPropagation(); reveal(k); });
      p.append(b);
    }
    td.append(p);
  }
  const cols = el("div", "cols");
  row.eps.forEach((no, k) => {
    const col = el("div", "col");
    col.append(el("h3", null, IDX.runs[k].id));
    if (no === null) col.append(el("p", "na", "no episode for this task in this run"));
    else {
      const wait = el("p", "na", "loading…"); col.append(wait);
      episode(no).then(ep => { wait.remove(); episodeView(col, ep, k); }, err => { wait.className = "err"; wait.textContent = String(err.message || err); });
    }
    cols.append(col);
  });
  td.append(cols); tr.append(td);
  return tr;
}
function episodeView(box, ep, k) {
  const head = el("div", "head");
  if (!SINGLE) head.append(el("p", "agent", `agent ${ep.agent} · judge ${IDX.runs[k].judgeLabel} · ${ep.setting} · N=${ep.n} · rep ${ep.repeat}`));
  const v = el("p"); v.append(mark(ep), " answer: ", el("b", null, ep.answer === null ? "(none)" : ep.answer));
  head.append(v);
  if (ep.verdict) head.append(el("p", null, `judge ${ep.verdict.judge}: ${ep.verdict.rationale || ""}${ep.verdict.error ? " (error: " + ep.verdict.error + ")" : ""}`));
  if (ep.verdict && ep.verdict.supported) head.append(el("p", "support", `evidence: ${ep.correct ? (ep.verdict.supported === "yes" ? "correct and supported" : ep.verdict.supported === "no" ? "correct but unsupported" : "support undecided") : ep.verdict.supported} ${ep.verdict.support_reason ? "(" + ep.verdict.support_reason + ")" : ""}`));
  for (const o of ep.verdicts) if (!ep.verdict || o.judge !== ep.verdict.judge) head.append(el("p", null, `also judge ${o.judge}: ${o.correct ? "correct" : "incorrect"} ${o.rationale || ""}`));
  const tokens = ep.tokens && (ep.tokens[0] != null || ep.tokens[1] != null) ? ` · tokens ${ep.tokens[0] ?? "?"} in / ${ep.tokens[1] ?? "?"} out` : "";  // no usage reported (scripted): nothing
  head.append(el("p", null, `finish: ${ep.finish} · rounds ${ep.rounds} · tool calls ${ep.calls} · invalid ${ep.invalid} · ${ep.seconds} s${tokens} · episode ${ep.id}`));
  const link = el("a", "permalink", "permalink"); link.href = "#ep=" + encodeURIComponent(ep.id); head.append(link);
  if (ep.failures.length) { const p = el("p", null, "failures: "); for (const f of ep.failures) p.append(el("span", "tag", f)); head.append(p); }
  if (ep.error) head.append(el("pre", "err", ep.error));
  if (ep.meta) { const d = el("details"); d.append(el("summary", null, "meta"), el("pre", null, shown(ep.meta))); head.append(d); }
  box.append(head);
  const g = el("div", "gallery");
  ep.images.forEach((id, i) => g.append(picture(id, `task image ${i}`)));
  box.append(g);
  const trace = el("div", "trace"), steps = el("div", "steps");
  const diverge = new Set();
  for (const part of ep.gold ? [ep.gold.path, ep.gold.chain] : []) if (part && part.divergence && part.divergence.round !== null) diverge.add(part.divergence.round);
  for (const s of ep.steps) steps.append(stepView(s, ep, diverge.has(s.round) && !s.final));
  trace.append(steps);
  if (ep.gold) trace.append(goldView(ep.gold));
  box.append(trace);
}
function goldView(gold) {
  const box = el("div", "gold");
  const table = (title, head, rows, part) => {
    box.append(el("h4", null, title));
    if (part.divergence) box.append(el("p", "diverge-why", "first divergence: " + part.divergence.why));
    else box.append(el("p", "ok", "the agent followed it to the end"));
    const t = el("table"); const h = el("tr"); for (const c of head) h.append(el("th", null, c)); t.append(h);
    rows.forEach((cells, i) => { const tr = el("tr", part.divergence && part.divergence.gold === i + 1 ? "diverge" : null); for (const c of cells) tr.append(el("td", null, c)); t.append(tr); });
    box.append(t);
  };
  if (gold.path) table("Gold tool path", ["#", "tool", "arguments", "agent round"],
    gold.path.steps.map((g, i) => [i + 1, g.tool, shown(g.arguments), g.round === null ? "–" : g.round]), gold.path);
  if (gold.chain) table("Gold evidence chain", ["hop", "entity", "first seen in round"],
    gold.chain.steps.map((g, i) => [i + 1, g.target, g.round === null ? "never" : g.round]), gold.chain);
  return box;
}
function stepView(s, ep, diverged) {
  const d = el("div", "step" + (diverged ? " diverge" : ""));
  const h = el("h4", null, s.final ? "Final answer turn (tools off)" : `Round ${s.round} · ${s.action}${s.tool ? " · " + s.tool : ""}`);
  const u = s.usage || {};
  const tok = (u.prompt_tokens ?? null) !== null || (u.completion_tokens ?? null) !== null
    ? ` · tokens ${u.prompt_tokens ?? "?"} in / ${u.completion_tokens ?? "?"} out${u.reasoning_tokens ? " (" + u.reasoning_tokens + " reasoning)" : ""}${u.cached_tokens ? " · " + u.cached_tokens + " cached" : ""}` : " · tokens not reported";
  h.append(el("span", "timing", `model ${s.model_s ?? 0} s · tool ${s.tool_s ?? 0} s${tok}`));
  if (diverged) h.append(el("span", "badge", "first divergence from the gold"));
  d.append(h);
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
      shot.append(zoomable(im, s.crop.src), b);
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
  if (ep.requests) {
    const m = el("details", "input");
    m.append(el("summary", null, s.call === null || s.call === undefined ? "model input (not recorded for this step)" : "model input"));
    if (s.call !== null && s.call !== undefined) m.addEventListener("toggle", () => { if (m.open && m.children.length === 1) m.append(inputView(ep, s.call)); });
    d.append(m);
  }
  return d;
}
function messagesOf(ep, n) {  // the full message list of call n, rebuilt from the stored deltas
  const prev = {};
  let messages = [];
  for (let i = 0; i <= n; i++) {
    const c = ep.requests[i];
    messages = (prev[c.sid] || []).slice(0, c.keep).concat(c.add);
    prev[c.sid] = messages;
  }
  return messages;
}
function blobText(id) { return Object.prototype.hasOwnProperty.call(IMG, id) ? IMG[id] : null; }
function inputView(ep, n) {
  const c = ep.requests[n];
  const box = el("div", "request");
  const messages = messagesOf(ep, n);
  box.append(el("p", null, `request of model call ${n + 1} of ${ep.requests.length}: ${messages.length} messages (${c.add.length} new) · finish ${c.finish ?? "?"}`));
  for (const m of messages) {
    const div = el("div", "msg");
    if (m.ref) {
      const text = blobText(m.ref);
      let msg = null;
      try { msg = text === null ? null : JSON.parse(text); } catch (e) { msg = null; }
      div.append(el("div", "role", msg && msg.role ? msg.role : "message"));
      const content = msg && typeof msg.content === "string" ? msg.content : (text === null ? "(not stored)" : text);
      div.append(el("pre", null, content));
    } else {
      div.append(el("div", "role", m.role));
      for (const [kind, v] of m.parts) {
        if (kind === "image") {
          const url = imageUrl(v);
          if (url) { const im = el("img", "thumb"); im.src = url; im.alt = "image sent: " + v; div.append(zoomable(im, v)); }
          else div.append(el("span", "na", "(image not stored)"));
        } else if (kind === "url") div.append(el("p", null, "image URL: " + v));
        else div.append(el("pre", null, v));
      }
      if (m.extra) div.append(el("pre", null, m.extra));
    }
    box.append(div);
  }
  const p = el("details"); p.append(el("summary", null, "parameters"), el("pre", null, c.params)); box.append(p);
  if (c.tools) { const t = el("details"); t.append(el("summary", null, "tools"), el("pre", null, blobText(c.tools) ?? c.tools)); box.append(t); }
  if (c.usage) box.append(el("p", null, "usage reported: " + JSON.stringify(c.usage)));
  return box;
}
async function openHash() {
  const m = /^#ep=(.+)$/.exec(location.hash);
  if (!m) return;
  const id = decodeURIComponent(m[1]);
  const note = document.getElementById("count");
  const no = (await load("p", 0)).indexOf(id);  // episode ids by episode number, kept out of the index
  const row = no < 0 ? -1 : ROWS.findIndex(r => r.eps.includes(no));
  if (row < 0) { note.textContent = `episode ${id} is not in this viewer`; return; }
  await reveal(row);
}
document.getElementById("zoom").addEventListener("click", closeZoom);
document.addEventListener("keydown", ev => { if (ev.key === "Escape") closeZoom(); });
window.addEventListener("hashchange", () => { openHash(); });
buildFilters();
buildHead();
filter();
openHash().catch(err => { document.getElementById("count").textContent = String(err.message || err); })
          .finally(() => { document.body.dataset.ready = "1"; });
