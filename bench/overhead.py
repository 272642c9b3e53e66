"""How much time the arena itself takes per round.

Runs crop + search + answer episodes (3 model calls, 2 tool calls each) over a
tiny dataset against a local OpenAI-compatible server in a separate process:
1. zero-latency server, concurrency 1, 32 and 64: rounds per second of the arena and
   the harness's CPU time per round (process CPU of this process / rounds; the
   server runs in another process);
2. server sleeping 200 ms per call, concurrency 1: the arena's share of wall time
   = 1 - (model calls x 0.2 s) / wall time.

    .venv/bin/python bench/overhead.py [--tasks 64] [--photo]

`--photo` replaces the task image by a 3000x2000 photo-like (noisy) image, so each
request carries ~1 MB of base64 PNG data, as with real photographs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runs.config import RunConfig  # noqa: E402
from runs.runner import run  # noqa: E402
from tests.support.tiny_dataset import write_tiny_dataset  # noqa: E402


def serve(delay: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.openai_server", "--delay", str(delay)],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def measure(data: Path, out: Path, base_url: str, concurrency: int, run_id: str) -> tuple[float, int, int, float]:
    config = RunConfig(data=str(data), agent="openai", judge="normalized", out=str(out), run_id=run_id,
                       concurrency=concurrency, agent_options={"model": "bench", "base_url": base_url})
    started, cpu = time.perf_counter(), time.process_time()
    result = run(config)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    rounds = sum(e.totals.rounds for e in result.episodes)
    assert all(e.finish_reason == "answered" for e in result.episodes), "benchmark episodes must succeed"
    return wall, rounds, len(result.episodes), cpu


def photo(path: Path) -> None:
    """A 3000x2000 image with sensor-like noise over the tiny dataset's scene (keeps the sign where crops go)."""
    import numpy as np
    from PIL import Image

    from tests.support.tiny_dataset import scene

    base = np.asarray(scene().resize((3000, 2000)), dtype=np.int16)
    noise = np.random.default_rng(0).integers(-12, 13, size=base.shape, dtype=np.int16)
    Image.fromarray(np.clip(base + noise, 0, 255).astype(np.uint8)).save(path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=64)
    parser.add_argument("--photo", action="store_true", help="a 3000x2000 noisy task image")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        data = write_tiny_dataset(tmp_path / "data", n_items=args.tasks)
        if args.photo:
            photo(data.parent / "images" / "scene.png")
        proc, url = serve(0.0)
        try:
            measure(data, tmp_path / "warm", url, 4, "warm")
            for concurrency in (1, 32, 64):
                wall, rounds, episodes, cpu = measure(data, tmp_path / f"c{concurrency}", url, concurrency, "run")
                print(f"zero-latency server, concurrency {concurrency:>2}: {episodes} episodes, {rounds} rounds "
                      f"in {wall:.2f} s = {rounds / wall:.1f} rounds/s, harness CPU {cpu / rounds * 1000:.1f} ms "
                      "per round")
        finally:
            proc.terminate()
        proc, url = serve(0.2)
        try:
            n = max(8, args.tasks // 8)
            small = write_tiny_dataset(tmp_path / "small", n_items=n)
            wall, rounds, episodes, _ = measure(small, tmp_path / "slow", url, 1, "run")
            model = rounds * 0.2
            print(f"200 ms server, concurrency 1: {episodes} episodes, {rounds} calls, wall {wall:.2f} s, "
                  f"arena share {100 * (1 - model / wall):.1f} % ({(wall - model) / rounds * 1000:.1f} ms per round)")
        finally:
            proc.terminate()


if __name__ == "__main__":
    main()
