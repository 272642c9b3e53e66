"""How long `--workers N` takes to get its worker processes ready (issue 29: ≤ 1 s).

For each N, a fresh interpreter (nothing warm, as for `arena run`) imports the arena, then runs a 1-task dataset
with `--workers N` against a local stub server; measured: the time from the interpreter's start to the moment the
run starts playing (the runner's `on_start`, called once the backend is up). Printed per N: the median over
`--repeats` fresh interpreters, and the start-up the workers add, against the same with the asyncio backend
(N = 0, measured the same way, alternately).

    .venv/bin/python bench/worker_startup.py [--workers 1,2,4] [--repeats 3]

`ARENA_ROOT=/path/to/another/checkout` imports the arena from there (before/after figures with the same script).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
ROOT = Path(os.environ.get("ARENA_ROOT") or HERE).resolve()

CHILD = r"""
import time
began = time.perf_counter()
import sys, json
from pathlib import Path
sys.path.insert(0, {root!r})
sys.path.insert(1, {here!r})
from arena.runs.config import RunConfig
from arena.runs.runner import run
from tests.support.tiny_dataset import write_tiny_dataset

def main():
    data = write_tiny_dataset(Path({tmp!r}) / "data", n_items=1)
    n = {workers}
    ready = []
    fields = {{"workers": n}} if n else {{}}
    run(RunConfig(data=str(data), agent="openai", judge="normalized", out={tmp!r} + "/logs", run_id=f"s{{n}}",
                  agent_options={{"model": "bench", "base_url": {url!r}}}, **fields),
        on_start=lambda *_: ready.append(time.perf_counter()))
    print(json.dumps(ready[0] - began))

if __name__ == "__main__":
    main()
"""


def time_to_play(workers: int, url: str) -> float:
    """Seconds from a fresh interpreter's start to the moment its run starts playing."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "child.py"
        script.write_text(CHILD.format(root=str(ROOT), here=str(HERE), tmp=tmp, workers=workers, url=url))
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp, timeout=600)
        if done.returncode:
            raise SystemExit(done.stderr)
        return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    server = subprocess.Popen([sys.executable, "-m", "tests.support.openai_server", "--delay", "0"], cwd=HERE,
                              stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().strip()
    try:
        for n in [int(w) for w in args.workers.split(",")]:
            alone, spread = [], []
            for _ in range(args.repeats):
                alone.append(time_to_play(0, url))
                spread.append(time_to_play(n, url))
            print(f"{n} worker(s): start to playing {statistics.median(spread):.2f} s (median of {len(spread)}; "
                  f"{min(spread):.2f}-{max(spread):.2f} s), asyncio {statistics.median(alone):.2f} s: the workers add "
                  f"{statistics.median(spread) - statistics.median(alone):.2f} s; load average "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
