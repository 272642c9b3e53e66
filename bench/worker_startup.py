"""How long `--workers N` takes to get its worker processes ready (issue 29: ≤ 1 s).

For each N, a fresh interpreter (so that nothing is warm from an earlier measurement) imports the arena as the
CLI does, then runs a 1-task dataset with `--workers N` against a local stub server; printed: the time from the
start of `run()` to the moment the run starts playing (the runner's `on_start`, called once the backend is up),
minus the same with the asyncio backend (`N = 0`) measured in the same interpreter first: the start-up the
workers add. Repeated `--repeats` times per N, median and range printed.

    .venv/bin/python bench/worker_startup.py [--workers 1,2,4] [--repeats 3]

`ARENA_ROOT=/path/to/another/checkout` imports the arena from there (before/after figures with the same script).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
ROOT = Path(os.environ.get("ARENA_ROOT") or HERE).resolve()

CHILD = r"""
import sys, time, json
from pathlib import Path
sys.path.insert(0, {root!r})
sys.path.insert(1, {here!r})
from arena.runs.config import RunConfig
from arena.runs.runner import run
from tests.support.tiny_dataset import write_tiny_dataset

def main():
    data = write_tiny_dataset(Path({tmp!r}) / "data", n_items=1)
    out = {{}}
    for n in (0, {workers}):
        started = time.perf_counter()
        ready = []
        fields = {{"workers": n}} if n else {{}}
        run(RunConfig(data=str(data), agent="openai", judge="normalized", out={tmp!r} + "/logs", run_id=f"s{{n}}",
                      agent_options={{"model": "bench", "base_url": {url!r}}}, **fields),
            on_start=lambda *_: ready.append(time.perf_counter()))
        out[n] = ready[0] - started
    print(json.dumps(out))

if __name__ == "__main__":
    main()
"""


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
            added = []
            for _ in range(args.repeats):
                with tempfile.TemporaryDirectory() as tmp:
                    script = Path(tmp) / "child.py"
                    script.write_text(CHILD.format(root=str(ROOT), here=str(HERE), tmp=tmp, workers=n, url=url))
                    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp,
                                          timeout=600)
                    if done.returncode:
                        raise SystemExit(done.stderr)
                    times = json.loads(done.stdout.strip().splitlines()[-1])
                    added.append(times[str(n)] - times["0"])
            print(f"{n} worker(s): start-up added {statistics.median(added):.2f} s (median of {len(added)}; "
                  f"{min(added):.2f}-{max(added):.2f} s); load average {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
