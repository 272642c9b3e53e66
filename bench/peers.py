"""The arena, inspect_ai and smolagents side by side on one scripted workload (issue 13 item 4).

    .venv/bin/python bench/peers.py [--tasks 64] [--harness arena inspect smolagents] [--levels 1 32 64 slow]
                                    [--world DIR] [--results FILE] [--readme docs/benchmarks.md] [--images K] [--size WxH]
                                    [--noise A]

Workload: N tasks, each with its own 3840x2160 photo-like PNG (noise of amplitude +-A, default 12, over a drawn
scene, so PNG cannot shrink it much, like a photograph; `--noise 1` makes a 1316x728 PNG of 0.93 MB instead of 1.94,
near the ~1.3 MB rounds of issue 38's kit; `--images K`: K PNGs that the tasks take in turn; `--size`: another
size; a `--world` kept from other settings is rewritten when its task count, images, size or noise differ); the model, a local OpenAI-compatible stub in another process, answers with native tool
calls: crop (`image_zoom_in_tool`, a box around the sign), then search (`text_search_tool`), then the answer.
The crop returns an image the model sees in the next request; the search returns text.

Harnesses, each run in its own process (peak RSS is that process's), each as its users would write it:
- arena: `arena.runs.runner.run` with the `openai` agent in `tool_mode: native` (runs store, blobs, judge included);
- inspect_ai: a `Task` with `use_tools(crop, search)` + `generate()` on its `openai-api` provider (eval log
  written, as always); the crop tool returns a `ContentImage`;
- smolagents: `ToolCallingAgent` + `OpenAIServerModel` per task in a thread pool (as its benchmark scripts run
  it), the task image passed as `images=`, the crop shown to the model through a step callback that sets
  `observations_images` (smolagents' documented way to show a tool's image), answer by `final_answer`.
The peers' crop tool decodes the task file, cuts the same region and resizes it as the arena's crop does
(`arena.tools.crop.zoom`), and encodes it as PNG (Pillow's default level); the search tool returns a fixed short text.

Reported per harness: CPU ms per round (user + system CPU of the harness process during the run / model calls the
server saw), rounds/s at zero latency at concurrency 1, 32, 64; share of wall time over ideal with a 200 ms server
at 64-way (ideal = 3 calls x 0.2 s per wave of 64 tasks); peak RSS; request bytes per round (server side).
With `--readme` the table between `<!-- peers:begin -->` and `<!-- peers:end -->` is rewritten (once every
harness has all four levels, counting rows kept in `--results` from earlier invocations).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

BOX = [700, 80, 960, 220]  # relative 0-1000: the sign of the tiny dataset's scene
QUESTION = "In which year was the lighthouse on the sign built?"
SEARCH_TEXT = ("1. Orvanta Lighthouse (https://wiki.local/Orvanta): Orvanta Lighthouse is a stone tower on the "
               "Keltic coast. It was built in 1874 by the engineer Mirelle Dastrow.")
HARNESSES = ("arena", "inspect", "smolagents", "floor")
ASSISTANT = re.compile(rb'"role"\s*:\s*"assistant"')


# --- the scripted model server (its own process) -------------------------------------------------------------

ROUNDS = int(os.environ.get("ARENA_BENCH_ROUNDS", "3"))
"""Model calls per task (`--rounds`): crop and search in turn, then the answer (3: crop, search, answer)."""


def _reply(body: bytes) -> dict[str, Any]:
    """Crop, search (in turn, `ROUNDS` - 1 calls), answer by the number of assistant messages; smolagents answers
    through `final_answer`. (The reference: `serve` answers the same bodies from replies encoded beforehand.)"""
    from tests.support.openai_server import Reply, completion_body

    n = len(ASSISTANT.findall(body))
    calls = [[{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": BOX, "label": "sign"}}],
             [{"name": "text_search_tool", "arguments": {"query": "Orvanta Lighthouse"}}]]
    if n < ROUNDS - 1:
        return completion_body(Reply(content="", tool_calls=calls[n % 2]), "bench")
    if b'"final_answer"' in body:
        return completion_body(Reply(content="", tool_calls=[{"name": "final_answer",
                                                              "arguments": {"answer": "1874"}}]), "bench")
    return completion_body(Reply(content="<answer>1874</answer>"), "bench")


def answer_chooser() -> Callable[[bytearray, int], bytes]:
    """`_reply`'s answers as whole HTTP responses encoded once (the JSON bytes `json.dumps` gives), chosen per body
    by a substring count of its assistant messages and, from the last round on, whether it names final_answer."""
    from stub_server import assistant_messages, names, response

    def encoded(marker: bytes) -> bytes:
        return response(json.dumps(_reply(marker)).encode())
    turns = [encoded(b'"role":"assistant"' * n) for n in range(ROUNDS - 1)]
    last = encoded(b'"role":"assistant"' * (ROUNDS - 1))
    final = encoded(b'"role":"assistant"' * (ROUNDS - 1) + b'"final_answer"')

    def choose(body: bytearray, length: int) -> bytes:
        n = assistant_messages(body, length)
        if n < ROUNDS - 1:
            return turns[n]
        return final if names(body, length, b'"final_answer"') else last
    return choose


def serve(delay: float) -> None:
    """Serve chat completions on 127.0.0.1 (port printed); GET /stats gives requests and request bytes so far.
    The server (`bench/stub_server.py`) costs as little as a server can: it shares the cores with the harness."""
    import stub_server

    stub_server.serve(delay, answer_chooser())


# --- the workload ---------------------------------------------------------------------------------------------

def workload(tasks: int, images: int, size: tuple[int, int], noise: int) -> dict[str, Any]:
    """What a generated world is made of (kept as `workload.json` in it: a kept world is reused only if it matches)."""
    return {"tasks": tasks, "images": images, "size": list(size), "noise": noise}


def kept_world(world: Path, wanted: dict[str, Any]) -> Path | None:
    """The annotations of the world kept at `world` if it was written for the `wanted` workload, else None."""
    stamp = world / "workload.json"
    if stamp.exists() and json.loads(stamp.read_text()) == wanted and (world / "annotations.jsonl").exists():
        return world / "annotations.jsonl"
    return None


def write_world(final: Path, tasks: int, images: int = 0, size: tuple[int, int] = (3840, 2160),
                noise: int = 12) -> Path:
    """The tiny dataset's corpus with one noisy PNG of `size` per task (with `images`, that many PNGs that the
    tasks take in turn; each pixel moved by up to +-`noise`); returns annotations.jsonl. Written beside `final` and
    renamed into place, so a run reading a world never sees one half written."""
    import shutil

    import numpy as np
    from PIL import Image

    from tests.support.tiny_dataset import scene, write_tiny_dataset

    root = final.with_name(final.name + ".partial")
    shutil.rmtree(root, ignore_errors=True)
    data = write_tiny_dataset(root, n_items=1)
    base = np.asarray(scene().resize(size), dtype=np.int16)
    items = []
    for i in range(images or tasks):
        moved = np.random.default_rng(i).integers(-noise, noise + 1, size=base.shape, dtype=np.int16)
        Image.fromarray(np.clip(base + moved, 0, 255).astype(np.uint8)).save(root / "images" / f"task{i}.png")
    for i in range(tasks):
        items.append({"id": f"t{i}", "prompt": [{"role": "user", "content": f"<image>{QUESTION}"}],
                      "reward_model": {"ground_truth": "1874"}, "image": [f"images/task{i % (images or tasks)}.png"]})
    data.write_text("".join(json.dumps(item) + "\n" for item in items))
    (root / "workload.json").write_text(json.dumps(workload(tasks, images, size, noise)))
    shutil.rmtree(final, ignore_errors=True)
    root.rename(final)
    return final / data.name


def _crop_png(path: str, bbox: list[float]) -> "Any":
    """The peers' crop: decode the file, cut and resize the region as the arena's crop does; a PIL image."""
    from PIL import Image

    from arena.tools.crop import pixel_box, zoom

    with Image.open(path) as im:
        image = im.convert("RGB")
    return zoom(image, pixel_box(bbox, image.width, image.height, relative=True))


def _png_data_uri(image: Any) -> str:
    import base64
    import io

    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def run_arena(data: Path, url: str, concurrency: int, out: Path) -> Callable[[], int]:
    from arena.runs.config import RunConfig
    from arena.runs.runner import run

    # protocol "arena": images sized as a Qwen-VL processor would (up to 1280x28x28 pixels); under "original"
    # (the default for this format) the published evaluator's sizes would send each 4K file as it is (21.5 MB)
    config = RunConfig(data=str(data), agent="openai", judge="normalized", out=str(out), run_id="peers",
                       concurrency=concurrency, max_rounds=[max(5, ROUNDS)], protocol="arena",
                       agent_options={"model": "bench", "base_url": url, "tool_mode": "native"})
    result = run(config)
    return lambda: sum(e.finish_reason == "answered" and e.answer == "1874" for e in result.episodes)


def run_inspect(data: Path, url: str, concurrency: int, out: Path) -> Callable[[], int]:
    from inspect_ai import Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatMessageUser, ContentImage, ContentText
    from inspect_ai.scorer import includes
    from inspect_ai.solver import Generate, TaskState, generate, solver, use_tools
    from inspect_ai.tool import tool
    from inspect_ai.util import store

    @tool
    def image_zoom_in_tool():
        async def execute(bbox_2d: list[float], label: str = "", img_idx: int = 0):
            """Zoom in on a region of an image by cropping it with a bounding box.

            Args:
                bbox_2d: The region as [x1, y1, x2, y2] in relative coordinates from 0 to 1000.
                label: A short name for what the region shows.
                img_idx: Which image in context to crop.
            """
            import asyncio

            image = await asyncio.to_thread(_crop_png, store().get("image"), bbox_2d)
            return [ContentText(text=f"Zoomed in on {bbox_2d}."), ContentImage(image=_png_data_uri(image))]
        return execute

    @tool
    def text_search_tool():
        async def execute(query: str):
            """Search the text corpus.

            Args:
                query: The search query.
            """
            return SEARCH_TEXT
        return execute

    @solver
    def remember_image():
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            store().set("image", state.metadata["image"])
            return state
        return solve

    root = data.parent
    samples = []
    for line in data.read_text().splitlines():
        item = json.loads(line)
        image = str(root / item["image"][0])
        samples.append(Sample(id=item["id"], target="1874", metadata={"image": image}, input=[
            ChatMessageUser(content=[ContentImage(image=image), ContentText(text=QUESTION)])]))
    task = Task(dataset=samples, solver=[remember_image(), use_tools(image_zoom_in_tool(), text_search_tool()),
                                         generate()], scorer=includes())
    os.environ["STUB_API_KEY"] = "x"
    logs = inspect_eval(task, model="openai-api/stub/bench", model_base_url=url, max_connections=concurrency,
                        max_samples=concurrency, log_dir=str(out), display="none", max_retries=0)
    correct = sum(1 for s in logs[0].samples or [] if s.scores and next(iter(s.scores.values())).value == "C")
    return lambda: correct


def run_smolagents(data: Path, url: str, concurrency: int, out: Path) -> Callable[[], int]:
    from concurrent.futures import ThreadPoolExecutor

    from PIL import Image
    from smolagents import ActionStep, OpenAIServerModel, Tool, ToolCallingAgent

    class Crop(Tool):
        name = "image_zoom_in_tool"
        description = "Zoom in on a region of an image by cropping it with a bounding box."
        inputs = {"bbox_2d": {"type": "array", "description": "[x1, y1, x2, y2], relative 0-1000"},
                  "label": {"type": "string", "description": "What the region shows.", "nullable": True},
                  "img_idx": {"type": "integer", "description": "Which image to crop.", "nullable": True}}
        output_type = "image"

        def __init__(self, path: str):
            super().__init__()
            self.path = path

        def forward(self, bbox_2d: list, label: str | None = None, img_idx: int | None = None):
            return _crop_png(self.path, bbox_2d)

    class Search(Tool):
        name = "text_search_tool"
        description = "Search the text corpus."
        inputs = {"query": {"type": "string", "description": "The search query."}}
        output_type = "string"

        def forward(self, query: str) -> str:
            return SEARCH_TEXT

    def show_crops(step: Any, agent: Any) -> None:  # the crop the tool returned goes to the model
        image = agent.state.pop("image.png", None)
        if isinstance(step, ActionStep) and image is not None:
            step.observations_images = [image.to_raw() if hasattr(image, "to_raw") else image]

    def one(item: dict) -> bool:
        path = str(data.parent / item["image"][0])
        model = OpenAIServerModel(model_id="bench", api_base=url, api_key="x")
        agent = ToolCallingAgent(tools=[Crop(path), Search()], model=model, max_steps=max(5, ROUNDS), verbosity_level=0,
                                 step_callbacks=[show_crops])
        answer = agent.run(QUESTION, images=[Image.open(path)])
        return str(answer) == "1874"

    items = [json.loads(line) for line in data.read_text().splitlines()]
    with ThreadPoolExecutor(concurrency) as pool:
        correct = sum(pool.map(one, items))
    return lambda: correct


RUNNERS = {"arena": run_arena, "inspect": run_inspect, "smolagents": run_smolagents}
"""Each plays the workload once and returns its tally: how many tasks were answered 1874, counted when called (after
the clock stops: the arena reads its answers back from the run store)."""
IMPORTS: dict[str, list[str]] = {"floor": [], "arena": ["arena.runs.runner", "arena.agents.openai_agent"],
           "inspect": ["inspect_ai", "inspect_ai.model._providers.openai_compatible", "inspect_ai.solver"],
           "smolagents": ["smolagents", "openai"]}


def worker(harness: str, data: Path, url: str, concurrency: int, out: Path) -> None:
    """Run one harness once in this process; print wall, CPU, peak RSS and the number of correct answers. The
    floor (`bench/floor.py`) sends the requests recorded in the arena run `out` instead, one after the other."""
    import logging

    if harness == "floor":
        import floor

        episodes = floor.recorded_episodes(out)  # read before the clock starts
        epoch = time.time()
        result = floor.measure_episodes(episodes, url, concurrency)
        result = {k: v for k, v in result.items() if k != "each"}
        print(json.dumps({**result, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "codec": 0.0,
                          "started": epoch}))
        return

    logging.disable(logging.WARNING)
    for module in IMPORTS[harness]:  # start-up imports are not part of the run
        importlib.import_module(module)
    if harness == "arena":
        from arena.runs.plugins import load_plugins

        load_plugins()
    codec = _time_codecs() if harness == "arena" else [0.0]
    before, started, epoch = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter(), time.time()
    tally = RUNNERS[harness](data, url, concurrency, out)
    wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF)
    correct = tally()  # (reading the answers back is the benchmark's check, not the harness's run)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    print(json.dumps({"wall": wall, "cpu": cpu, "rss_mb": after.ru_maxrss / 1024, "correct": correct,
                      "codec": codec[0], "started": epoch}))


def _time_codecs() -> list[float]:
    """Sum the thread CPU time of the arena's image codec work (check, decode, model resize + encode, crop, blob
    PNG)."""
    import arena.core.blobs
    import arena.core.context_image
    import arena.tools.crop

    total = [0.0]
    lock = threading.Lock()

    def timed(fn):
        def wrapper(*args, **kwargs):
            start = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                with lock:
                    total[0] += time.thread_time() - start
        return wrapper

    for module, name in ((arena.core.context_image, "load_image"), (arena.core.context_image, "check_image"),
                         (arena.core.context_image, "model_png"),
                         (arena.tools.crop, "zoom"), (arena.tools.crop, "png_of"), (arena.core.blobs, "png_of")):
        setattr(module, name, timed(getattr(module, name)))
    return total


# --- the driver ------------------------------------------------------------------------------------------------

def _stats(url: str) -> dict[str, int]:
    with urllib.request.urlopen(url.rsplit("/v1", 1)[0] + "/stats") as response:
        return json.loads(response.read())


def _server(delay: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve", str(delay)],
                            stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def measure(harness: str, data: Path, url: str, concurrency: int, out: Path, tasks: int) -> dict[str, float]:
    before = _stats(url)
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", harness, "--data", str(data),
                           "--url", url, "--concurrency", str(concurrency), "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "bench")])})
    if done.returncode != 0:
        raise SystemExit(f"{harness} at concurrency {concurrency} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    after = _stats(url)
    rounds = after["requests"] - before["requests"]
    if result["correct"] != tasks or rounds != ROUNDS * tasks:
        raise SystemExit(f"{harness}: {result['correct']}/{tasks} answered correctly in {rounds} model calls "
                         f"(expected {ROUNDS * tasks}); the workload did not run as scripted")
    return {**result, "rounds": rounds, "bytes": (after["bytes"] - before["bytes"]) / rounds, "tasks": tasks,
            "server_cpu": after["cpu"] - before["cpu"]}


def table(rows: dict[str, dict[Any, Any]]) -> str:
    lines = ["| harness | CPU ms per round (c=1 / 32 / 64) | of which image codecs | rounds/s (c=1 / 32 / 64) | "
             "over ideal, 200 ms server, 64-way | peak RSS (64-way) | request bytes per round |",
             "|---|---|---|---|---|---|---|"]
    for harness, row in rows.items():
        cpu = " / ".join(f"{row[c]['cpu'] / row[c]['rounds'] * 1000:.1f}" for c in (1, 32, 64))
        codec = " / ".join(f"{row[c].get('codec', 0) / row[c]['rounds'] * 1000:.1f}" for c in (1, 32, 64)) \
            if row[1].get("codec") else "not measured"
        rate = " / ".join(f"{row[c]['rounds'] / row[c]['wall']:.1f}" for c in (1, 32, 64))
        tasks = row["slow"]["tasks"]
        ideal = ROUNDS * 0.2 * -(-tasks // 64)
        over = 100 * (row["slow"]["wall"] / ideal - 1)
        lines.append(f"| {harness} ({tasks} tasks) | {cpu} | {codec} | {rate} | {over:+.0f} % | "
                     f"{row[64]['rss_mb']:,.0f} MB | {row[64]['bytes'] / 1e6:.2f} MB |")
    return "\n".join(lines)


def floor_table(rows: dict[str, dict[Any, Any]], runs: dict[str, dict[Any, list]]) -> str:
    """Issue 38's table: CPU per round of each harness and of the floor, each as a multiple of the floor, the
    floor's ops, and wall over ideal at 64-way with a 200 ms server (medians of the repeats, range beside)."""
    floor = rows.get("floor", {}).get(1)
    names = [h for h in rows if h != "floor"] + (["floor"] if floor else [])
    cpu = {h: [rows[h][c]["cpu"] / rows[h][c]["rounds"] * 1000 if c in rows[h] else None for c in (1, 32, 64)]
           for h in names}
    def spread(h: str, level: Any, key: str = "cpu") -> str:
        values = sorted(m[key] / m["rounds"] * 1000 for m in runs.get(h, {}).get(level, []))
        return f" ({values[0]:.2f}–{values[-1]:.2f})" if len(values) > 1 else ""
    lines = ["| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    lines.append("| CPU ms per round, c = 1 / 32 / 64 (median; range over repeats at c = 1) | " + " | ".join(
        " / ".join("–" if v is None else f"{v:.2f}" for v in cpu[h]) + spread(h, 1) for h in names) + " |")
    if floor:
        bases = [m["cpu"] / m["rounds"] for m in runs["floor"][1]]  # the floor of a round, one after the other

        def times(h: str, level: int) -> str:  # each repeat against the floor measured beside it, then the median
            ratios = [m["cpu"] / m["rounds"] / base for m, base in zip(runs[h].get(level, []), bases)]
            return f"{statistics.median(ratios):.1f}×" if ratios else "–"
        lines.append("| × the floor at c = 1 (median of each repeat's ratio), c = 1 / 32 / 64 | " + " | ".join(
            " / ".join(times(h, c) for c in (1, 32, 64)) for h in names) + " |")
        ops = " + ".join(f"{floor[k] / floor['rounds'] * 1000:.2f}" for k in ("encode", "push", "parse"))
        lines.append("| floor's ops: orjson encode + loopback push + reply parse, ms | " +
                     " | ".join(ops if h == "floor" else "" for h in names) + " |")
    walls = []
    for h in names:
        slow = runs.get(h, {}).get("slow", [])
        over = sorted(m["wall"] / (ROUNDS * 0.2 * -(-m["tasks"] // 64)) for m in slow)
        walls.append(f"{statistics.median(over):.2f}× ({over[0]:.2f}–{over[-1]:.2f})" if over else "–")
    lines.append("| wall / ideal, 64-way, 200 ms server (median, range) | " + " | ".join(walls) + " |")
    lines.append("| request bytes per round (server side) | " + " | ".join(
        f"{rows[h][1]['bytes'] / 1e6:.2f} MB" if 1 in rows[h] else "–" for h in names) + " |")
    return "\n".join(lines)


def rewrite(path: Path, marker: str, text: str) -> None:
    """Put `text` between `<!-- MARKER:begin -->` and `<!-- MARKER:end -->` in `path`."""
    readme = path.read_text()
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    if begin not in readme or end not in readme:
        raise SystemExit(f"{path}: no {begin} ... {end} markers to put the table between")
    head, _, rest = readme.partition(begin)
    path.write_text(f"{head}{begin}\n{text}\n{end}{rest.partition(end)[2]}")


def medians(runs: dict[str, dict[Any, list[dict[str, float]]]]) -> dict[str, dict[Any, dict[str, float]]]:
    """Per harness and level, the repeat whose CPU per round is the median (lower median for an even count)."""
    return {h: {level: sorted(ms, key=lambda m: m["cpu"] / m["rounds"])[(len(ms) - 1) // 2]
                for level, ms in levels.items()} for h, levels in runs.items()}


def measure_all(args: argparse.Namespace, data: Path, tmp: Path) -> dict[str, dict[Any, list[dict[str, float]]]]:
    """Every harness at every level, `args.repeats` times, interleaved (repeat, then level, then harness), each in a
    fresh process. The floor replays the requests of an arena run made first (not measured) and must send the
    very bytes the arena sent."""
    runs: dict[str, dict[Any, list[dict[str, float]]]] = {h: {} for h in args.harness}
    zero = [int(level) for level in args.levels if level != "slow"]
    for delay, levels in ((0.0, zero), (0.2, ["slow"] if "slow" in args.levels else [])):
        if not levels:
            continue
        proc, url = _server(delay)
        try:
            source = tmp / f"floor-source-{delay}"
            if "floor" in args.harness:  # the requests the floor sends: an arena run's, recorded (not measured)
                measure("arena", data, url, 1 if delay == 0.0 else 64, source, args.tasks)
            for repeat in range(args.repeats):
                for level in levels:
                    for harness in args.harness:
                        concurrency = 64 if level == "slow" else level
                        out = source / "peers" if harness == "floor" else tmp / f"{harness}-{level}-{repeat}"
                        row = measure(harness, data, url, concurrency, out, args.tasks)
                        runs[harness].setdefault(level, []).append(row)
                        print(f"{harness:10s} {'200 ms' if level == 'slow' else 'zero-latency'} server, "
                              f"concurrency {concurrency:>2}: {row['rounds']} rounds in {row['wall']:.2f} s, "
                              f"CPU {row['cpu'] / row['rounds'] * 1000:.2f} ms per round, peak RSS "
                              f"{row['rss_mb']:.0f} MB, {row['bytes'] / 1e6:.2f} MB per request, server CPU "
                              f"{row['server_cpu'] / row['rounds'] * 1000:.2f} ms per round"
                              + (f", codecs {row['codec'] / row['rounds'] * 1000:.1f} ms per round" if row["codec"]
                                 else "") + f", load average {os.getloadavg()[0]:.1f}", flush=True)
        finally:
            proc.terminate()
    if "floor" in runs and "arena" in runs and 1 in runs["arena"]:
        sent, replayed = runs["arena"][1][0]["bytes"], runs["floor"][1][0]["bytes"]
        if sent != replayed:
            raise SystemExit(f"the requests read back from the arena's calls.jsonl are {replayed:.0f} bytes per "
                             f"round, the arena sent {sent:.0f}: the transcript is not exact")
    return runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=64)
    parser.add_argument("--harness", nargs="+", choices=HARNESSES, default=list(HARNESSES[:3]))
    parser.add_argument("--levels", nargs="+", choices=["1", "32", "64", "slow"], default=["1", "32", "64", "slow"],
                        help="zero-latency concurrencies to run, and `slow` (200 ms server, 64-way)")
    parser.add_argument("--repeats", type=int, default=1, help="measurements per harness and level, interleaved")
    parser.add_argument("--rounds", type=int, default=ROUNDS,
                        help="model calls per task: crops and searches in turn, then the answer (default 3)")
    parser.add_argument("--concurrency", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--readme", type=Path, help="rewrite the table between the peers markers in this file")
    parser.add_argument("--floor-readme", type=Path,
                        help="rewrite issue 38's table (harnesses against the floor) between the floor markers")
    parser.add_argument("--images", type=int, default=0, help="distinct task images (0: one per task)")
    parser.add_argument("--size", default="3840x2160", help="task image size, WxH")
    parser.add_argument("--noise", type=int, default=12,
                        help="amplitude of the noise over the task images (default 12; 1: ~0.93 MB at 1316x728)")
    parser.add_argument("--world", type=Path, help="keep the generated task images here and reuse them")
    parser.add_argument("--results", type=Path, help="a JSON file of rows: this run's harnesses replace theirs")
    parser.add_argument("--serve", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--worker", choices=HARNESSES, help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rounds != ROUNDS:  # the server and the workers read it from the environment
        os.environ["ARENA_BENCH_ROUNDS"] = str(args.rounds)
        os.execv(sys.executable, [sys.executable, *sys.argv])
    if args.serve is not None:
        return serve(args.serve)
    if args.worker:
        return worker(args.worker, args.data, args.url, args.concurrency, args.out)
    with tempfile.TemporaryDirectory() as tmp:
        world = args.world or Path(tmp) / "world"
        size = tuple(map(int, args.size.split("x")))
        data = kept_world(world, workload(args.tasks, args.images, size, args.noise))
        if data is None:
            data = write_world(world, args.tasks, args.images, size, args.noise)
            time.sleep(2.1)  # settled, as any dataset's files are: the arena remembers their digests (file_digests)
        runs = measure_all(args, data, Path(tmp))
    rows = medians(runs)
    if "floor" in rows:
        text = floor_table(rows, runs)
        print(text)
        if args.floor_readme:
            rewrite(args.floor_readme, "floor", text)
    rows = {h: row for h, row in rows.items() if h != "floor"}
    if args.results:  # rows of harnesses measured in earlier invocations are kept
        saved = json.loads(args.results.read_text()) if args.results.exists() else {}
        saved.update({h: {str(k): v for k, v in row.items()} for h, row in rows.items()})
        args.results.write_text(json.dumps(saved, indent=1))
        rows = {h: {int(k) if k.isdigit() else k: v for k, v in row.items()} for h, row in saved.items()}
    if rows and all({1, 32, 64, "slow"} <= set(row) for row in rows.values()):
        text = table(rows)
        print(text)
        if args.readme:
            rewrite(args.readme, "peers", text)


if __name__ == "__main__":
    main()
