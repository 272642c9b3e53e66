"""A real run repeated to 100,000 episodes: `arena view`, `summary` and `resume` at scale (issue 21).

1. Builds the vistahop-mini world (small, 42 tasks) and runs the `oracle` agent over it: 42 tasks x 5 budgets
   (6, 8, 10, 12, 14) = 210 real episodes with crops, searches, images and verdicts.
2. Repeats that run to >= 100,000 episodes in a new run directory: copy k of every episode and verdict gets
   repeat index `k * repeats + repeat`, a new key and id (so every record is distinct), and run.json records
   the enlarged grid (repeats x k), so the run is complete: `arena resume` must run nothing. The episode index
   that the store's appends keep is rebuilt once (its time is reported as `index_rebuild_s`), and summary.json
   is written as the runner writes it at the end of a run (the base run's judges, protocol and warnings; the
   figures recomputed from the enlarged run by `arena.store.scan`), so the run looks finished to `arena resume`.
3. Measures, each command in its own process (peak RSS from the kernel, `ru_maxrss` of the child):
   `arena view` (seconds, peak RSS, bytes written), `arena summary`, `arena resume`; then opens the viewer
   from file:// in Chromium: seconds until rows are drawn, until an episode opens (steps drawn), until a
   search narrows the table. The 1-minute load average when each step starts is printed beside (the machine may
   be shared).

4. With `--resume-new N` (default 100): copies the run without its last N episodes (a run killed before
   playing them) and measures `arena resume` of the copy, which plays them and writes the whole run's summary;
   then `arena report` of the run.

Targets: view <= 60 s and <= 1.5 GB; rows <= 2 s; episode <= 1 s; search <= 1 s; summary <= 15 s;
resume <= 15 s and runs nothing.

Run: .venv/bin/python bench/run_scale.py [--work DIR] [--episodes 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson

ARENA = [str(Path(sys.executable).with_name("arena"))]
TARGETS = {"view_s": 60, "view_rss_mb": 1536, "rows_s": 2, "episode_s": 1, "search_s": 1, "summary_s": 15,
           "resume_s": 15}


def base_run(work: Path) -> Path:
    """The real 210-episode run (built once; reused when present)."""
    from arena.core.world import WORLD_BUILDERS
    from arena.runs.config import RunConfig
    from arena.runs.plugins import load_plugins
    from arena.runs.runner import run

    run_dir = work / "logs" / "base"
    if (run_dir / "summary.json").is_file():
        return run_dir
    load_plugins()
    world = work / "world"
    if not (world / "world.json").is_file():
        WORLD_BUILDERS["vistahop-mini"](world, seed=0, size="small")
    run(RunConfig(data=str(world), agent="oracle", max_rounds=[6, 8, 10, 12, 14], out=str(work / "logs"),
                  run_id="base", concurrency=4))
    return run_dir


def with_repeat(key: str, repeat: int) -> str:
    task, setting, rounds, _, agent = key.rsplit("|", 4)
    return f"{task}|{setting}|{rounds}|{repeat}|{agent}"


def repeat_run(base: Path, target: Path, episodes: int) -> Path:
    """Copies of every record of `base` until `episodes` are reached, as one complete run in `target`."""
    from arena.runs.config import redacted
    from arena.store.records import RunInfo

    base_lines = (base / "episodes.jsonl").read_bytes().splitlines()
    copies = math.ceil(episodes / len(base_lines))
    info = json.loads((base / "run.json").read_text())
    recorded = RunInfo.model_validate(info).config
    repeats = recorded.grid.repeats
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    shutil.copytree(base / "blobs", target / "blobs")
    records = [orjson.loads(line) for line in base_lines]
    verdicts = [orjson.loads(line) for line in (base / "verdicts.jsonl").read_bytes().splitlines()]
    with (target / "episodes.jsonl").open("wb") as eps, (target / "verdicts.jsonl").open("wb") as vs:
        for k in range(copies):
            for record in records:
                repeat = k * repeats + int(record.get("repeat", 0))
                eps.write(orjson.dumps({**record, "id": f"{record['id']}-{k}", "repeat": repeat,
                                        "key": with_repeat(record["key"], repeat)}) + b"\n")
            for verdict in verdicts:
                _, _, _, repeat, _ = verdict["key"].rsplit("|", 4)
                new = k * repeats + int(repeat)
                vs.write(orjson.dumps({**verdict, "episode_id": f"{verdict['episode_id']}-{k}",
                                       "key": with_repeat(verdict["key"], new)}) + b"\n")
    config = recorded.updated(repeats=repeats * copies, run_id=target.name, out=str(target.parent))
    info.update({"run_id": target.name, "config": redacted(config).model_dump(mode="json"),
                 "fingerprint": config.grid_fingerprint()})
    (target / "run.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
    return target


def build_index(run_dir: Path) -> float:
    """Write the episode index a real run's appends would have written; returns the seconds a rebuild takes."""
    from arena.store.run_index import EpisodeIndex

    started = time.perf_counter()
    EpisodeIndex.rebuild(run_dir / "episodes.jsonl")
    return time.perf_counter() - started


def write_summary(run_dir: Path, base: Path) -> None:
    """summary.json of the enlarged run, as the runner's last step writes it (figures from `arena.store.scan`; the
    `finished` stamp when nothing is left, `arena.runs.finished`)."""
    from arena.judges.run_summary import summarize_scan
    from arena.runs.finished import left_over, stamp
    from arena.runs.sweep import plan
    from arena.runs.workbench import Workbench
    from arena.store.scan import model_call_counts_scan, scan_run
    from arena.store.store import RunStore

    store = RunStore(run_dir)
    previous = json.loads((base / "summary.json").read_text())
    scan = scan_run(store)
    summary = {k: v for k, v in previous.items() if k not in ("groups", "version")}
    summary.update(summarize_scan(scan, previous["judge"]))
    summary.update({"run_id": run_dir.name, "model_calls": model_call_counts_scan(scan)})
    families = plan(Workbench(store.info().config))
    if not left_over(scan, families, previous["judge"]):
        summary["finished"] = stamp(store.sizes(), families, previous["judge"])
    store.write_summary(summary)


def sizes(run_dir: Path) -> tuple[int, int]:
    return (run_dir / "episodes.jsonl").stat().st_size, (run_dir / "verdicts.jsonl").stat().st_size


def tree_rss_kb(pid: int) -> int:
    """Resident memory of a process and its descendants (from /proc; pages shared after fork count twice)."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            total += int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))
            for task in Path(f"/proc/{current}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, StopIteration, ValueError):
            continue
    return total


def child_peak(args: list[str], cwd: Path) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak RSS in MB of the process tree, output) of one CLI command."""
    started = time.perf_counter()
    before = os.times()
    proc = subprocess.Popen(ARENA + args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "COLUMNS": "200"})
    peak = 0
    while proc.poll() is None:
        peak = max(peak, tree_rss_kb(proc.pid))
        time.sleep(0.1)
    out = proc.stdout.read() if proc.stdout else ""
    seconds = time.perf_counter() - started
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    if proc.returncode != 0:
        raise SystemExit(f"arena {' '.join(args)} failed ({proc.returncode}):\n{out}")
    return seconds, cpu, peak / 1024, out


def cut_copy(big: Path, target: Path, drop: int) -> int:
    """A copy of the run `big` in `target` without its last `drop` episodes (and their index entries and
    verdicts), as a run killed before it played them leaves it; blobs are hard links. Returns the bytes of
    episodes.jsonl kept."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    subprocess.run(["cp", "-al", str(big / "blobs"), str(target / "blobs")], check=True)
    shutil.copy(big / "run.json", target / "run.json")
    index = (big / "episodes.idx").read_bytes().splitlines(keepends=True)
    keep, gone = index[:-drop], [orjson.loads(row)[3] for row in index[-drop:]]
    kept = orjson.loads(keep[-1])[0] + orjson.loads(keep[-1])[1]
    with (big / "episodes.jsonl").open("rb") as src, (target / "episodes.jsonl").open("wb") as dst:
        shutil.copyfileobj(src, dst)
        dst.truncate(kept)
    (target / "episodes.idx").write_bytes(b"".join(keep))
    removed = set(gone)
    with (big / "verdicts.jsonl").open("rb") as src, (target / "verdicts.jsonl").open("wb") as dst:
        dst.writelines(line for line in src if orjson.loads(line)["episode_id"] not in removed)
    return kept


def resume_new(big: Path, work: Path, drop: int) -> dict[str, object]:
    """`arena resume` of a copy of the finished run missing its last `drop` episodes: it plays them, judges
    them and writes the summary (costs, warnings) of the whole run."""
    target = work / "logs" / f"cut-{drop}"
    kept = cut_copy(big, target, drop)
    load = os.getloadavg()[0]
    seconds, cpu, rss, _ = child_peak(["resume", str(target)], work)
    played = sum(1 for _ in scan_from(target / "episodes.jsonl", kept))
    figures = {"resume_new_s": round(seconds, 1), "resume_new_cpu_s": round(cpu, 1),
               "resume_new_rss_mb": round(rss), "resume_new_played": played, "resume_new_load_avg": load}
    shutil.rmtree(target)
    return figures


def report(big: Path, work: Path) -> dict[str, object]:
    """`arena report` of the run (tables, failure taxonomy, judge agreement, the sweep plot) into work/report."""
    load = os.getloadavg()[0]
    seconds, cpu, rss, _ = child_peak(["report", str(big), "--out", str(work / "report")], work)
    return {"report_s": round(seconds, 1), "report_cpu_s": round(cpu, 1), "report_rss_mb": round(rss),
            "report_load_avg": load}


def scan_from(path: Path, start: int):
    with path.open("rb") as fh:
        fh.seek(start)
        yield from fh


async def browse(page_path: Path, query: str) -> dict[str, float]:
    """Seconds until rows show, an episode opens and a search narrows the table, in Chromium from file://."""
    from playwright.async_api import async_playwright

    from arena.tools.chromium import launch_chromium

    async with async_playwright() as p:
        browser = await launch_chromium(p)
        try:
            page = await browser.new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            started = time.perf_counter()
            await page.goto(page_path.resolve().as_uri())
            await page.wait_for_selector("tr.row", timeout=120000)
            rows = time.perf_counter() - started
            started = time.perf_counter()
            await page.locator("tr.row").nth(3).click()
            await page.wait_for_selector(".detail .step", timeout=60000)
            episode = time.perf_counter() - started
            started = time.perf_counter()
            await page.fill("#f-text", query)
            await page.wait_for_function("(q) => document.getElementById('count').dataset.query === q", arg=query,
                                         timeout=60000)
            search = time.perf_counter() - started
            count = await page.inner_text("#count")
            return {"rows_s": round(rows, 2), "episode_s": round(episode, 2), "search_s": round(search, 2),
                    "search_result": count, "console_errors": len(errors)}
        finally:
            await browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/arena-run-scale"))
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--skip-make", action="store_true", help="Reuse the repeated run in --work.")
    parser.add_argument("--resume-new", type=int, default=100, metavar="N",
                        help="Also resume a copy of the run missing its last N episodes (0: skip).")
    parser.add_argument("--only", choices=["resume-new", "report"],
                        help="Measure only that step (with --skip-make: on the run already made).")
    args = parser.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    big = work / "logs" / f"repeated-{args.episodes}"
    if not args.skip_make or not big.is_dir():
        started = time.perf_counter()
        base = base_run(work)
        print(f"base run: {base} ({time.perf_counter() - started:.0f} s)", flush=True)
        started = time.perf_counter()
        repeat_run(base, big, args.episodes)
        print(f"repeated: {big} ({time.perf_counter() - started:.0f} s)", flush=True)
    episodes_mb = (big / "episodes.jsonl").stat().st_size / 1e6
    lines = sum(1 for _ in (big / "episodes.jsonl").open("rb"))
    figures: dict[str, object] = {"episodes": lines, "episodes_jsonl_mb": round(episodes_mb, 1)}
    if not (big / "episodes.idx").is_file():
        figures["index_rebuild_s"] = round(build_index(big), 1)
    if not (big / "summary.json").is_file():
        write_summary(big, work / "logs" / "base")
    if args.only:
        step = resume_new(big, work, args.resume_new) if args.only == "resume-new" else report(big, work)
        print(json.dumps({**figures, **step}, indent=1))
        return
    (big / "viewer.html").unlink(missing_ok=True)
    shutil.rmtree(big / "viewer-view", ignore_errors=True)
    figures["load_avg_at"] = {"view": os.getloadavg()[0]}  # the 1-minute load average when each step starts
    seconds, cpu, rss, _ = child_peak(["view", str(big)], work)
    written = sum(p.stat().st_size for p in [big / "viewer.html", *(big / "viewer-view").rglob("*")] if p.is_file())
    figures.update({"view_s": round(seconds, 1), "view_cpu_s": round(cpu, 1), "view_rss_mb": round(rss),
                    "view_written_mb": round(written / 1e6, 1),
                    "page_mb": round((big / "viewer.html").stat().st_size / 1e6, 1)})
    print(json.dumps(figures), flush=True)
    figures["load_avg_at"]["summary"] = os.getloadavg()[0]
    seconds, cpu, rss, _ = child_peak(["summary", str(big)], work)
    figures.update({"summary_s": round(seconds, 1), "summary_cpu_s": round(cpu, 1), "summary_rss_mb": round(rss)})
    before = sizes(big)
    figures["load_avg_at"]["resume"] = os.getloadavg()[0]
    seconds, cpu, rss, out = child_peak(["resume", str(big)], work)
    figures.update({"resume_s": round(seconds, 1), "resume_cpu_s": round(cpu, 1), "resume_rss_mb": round(rss),
                    "resume_ran_nothing": sizes(big) == before})
    if args.resume_new:
        figures.update(resume_new(big, work, args.resume_new))
    figures.update(report(big, work))
    print(json.dumps(figures), flush=True)
    query = json.loads((work / "world" / "tasks.jsonl").open().readline())["id"]
    figures["load_avg_at"]["browser"] = os.getloadavg()[0]
    figures.update(asyncio.run(browse(big / "viewer.html", query)))
    figures["within_targets"] = {k: figures[k] <= v for k, v in TARGETS.items() if k in figures}
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
