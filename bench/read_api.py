"""`arena.store.open_run(path).frame()` on a 100,000-episode run directory (the read API at scale).

Makes the repeated run of `bench/run_scale.py` (a real 210-episode oracle run over vistahop-mini, repeated to
--episodes, its index rebuilt and summary written as the runner writes them), then, in a fresh process each time
(nothing cached in memory but the page cache), times `open_run(path)` and `.frame()`, reports the peak RSS, and
checks the frame against summary.json (rows = episodes; Pass@1 per group equal to the summary's).

Run: .venv/bin/python bench/read_api.py [--work DIR] [--episodes 100000] [--times 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_scale import base_run, build_index, repeat_run, write_summary  # noqa: E402

CHILD = """
import json, sys, time


def peak_mb():
    # VmHWM: this process's peak RSS since its exec (ru_maxrss would carry over the parent's peak across exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024)


started = time.perf_counter()
import arena.store
imported = time.perf_counter()
run = arena.store.open_run(sys.argv[1])
opened = time.perf_counter()
frame = run.frame()
done = time.perf_counter()
summary = json.load(open(sys.argv[1] + "/summary.json"))
worst = 0.0
for g in summary["groups"]:
    rows = frame[(frame.agent == g["agent"]) & (frame.setting == g["setting"]) & (frame.max_rounds == g["max_rounds"])]
    worst = max(worst, abs(rows["score"].mean() * 100 - g["pass1"]))
print(json.dumps({"import_s": round(imported - started, 2), "open_s": round(opened - imported, 2),
                  "frame_s": round(done - opened, 2), "rows": len(frame), "columns": len(frame.columns),
                  "summary_episodes": sum(g["episodes"] for g in summary["groups"]),
                  "max_pass1_diff": round(worst, 3),
                  "peak_rss_mb": peak_mb()}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/arena-read-api"))
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--times", type=int, default=3)
    args = parser.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    big = work / "logs" / f"repeated-{args.episodes}"
    if not (big / "summary.json").is_file():
        base = base_run(work)
        repeat_run(base, big, args.episodes)
        build_index(big)
        write_summary(big, work / "logs" / "base")
    figures = {"episodes_jsonl_mb": round((big / "episodes.jsonl").stat().st_size / 1e6, 1),
               "index_mb": round((big / "episodes.idx").stat().st_size / 1e6, 1), "runs": []}
    for _ in range(args.times):
        load = os.getloadavg()[0]
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", CHILD, str(big)], capture_output=True, text=True, check=True)
        figures["runs"].append({**json.loads(out.stdout), "process_s": round(time.perf_counter() - started, 2),
                                "load_avg": load})
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
