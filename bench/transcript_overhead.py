"""What recording every model call (`<run>/calls.jsonl`, issue 20) costs: harness CPU per round and bytes per
episode, with recording on and off over the same episodes (bench/overhead.py's crop + search + answer episodes,
zero-latency server in another process, concurrency 32). "Off" replaces `arena.endpoints.transcript.record` and
`record_params` by no-ops for this measurement only; runs alternate on/off to share the machine's noise. The
on/off difference is noisy on a shared machine, so the CPU spent inside the two recording functions is also
measured directly (thread CPU time around each call, in the "on" runs).

    .venv/bin/python bench/transcript_overhead.py [--tasks 64] [--repeats 3] [--photo]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from overhead import measure, photo, serve  # noqa: E402

from arena.endpoints import transcript  # noqa: E402
from tests.support.tiny_dataset import write_tiny_dataset  # noqa: E402


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--photo", action="store_true", help="a 3000x2000 noisy task image")
    args = parser.parse_args()
    record, record_params = transcript.record, transcript.record_params
    inside: list[float] = []

    def timed(function):
        def call(*args):
            started = time.thread_time()
            function(*args)
            inside.append(time.thread_time() - started)
        return call

    cpu: dict[bool, list[float]] = {True: [], False: []}
    size: dict[bool, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        data = write_tiny_dataset(tmp_path / "data", n_items=args.tasks)
        if args.photo:
            photo(data.parent / "images" / "scene.png")
        proc, url = serve(0.0)
        try:
            measure(data, tmp_path / "warm", url, 4, "warm")
            for i in range(args.repeats):
                for on in (True, False):
                    transcript.record = timed(record) if on else (lambda *args: None)
                    transcript.record_params = timed(record_params) if on else (lambda *args: None)
                    out = tmp_path / f"{'on' if on else 'off'}{i}"
                    _, rounds, episodes, seconds = measure(data, out, url, 32, "run")
                    cpu[on].append(seconds / rounds * 1000)
                    size[on] = dir_bytes(out / "run")
        finally:
            transcript.record, transcript.record_params = record, record_params
            proc.terminate()
    on, off = statistics.median(cpu[True]), statistics.median(cpu[False])
    print(f"{episodes} episodes, {rounds} rounds, concurrency 32, median of {args.repeats}: harness CPU "
          f"{on:.2f} ms/round recording, {off:.2f} ms/round not recording, extra {on - off:+.2f} ms/round")
    print(f"CPU inside recording: {sum(inside) / len(inside) * 1000:.2f} ms per call over {len(inside)} calls "
          f"(median {statistics.median(inside) * 1000:.2f} ms)")
    print(f"run directory: {size[True] / episodes / 1000:.1f} kB/episode recording, "
          f"{size[False] / episodes / 1000:.1f} kB/episode not recording, "
          f"extra {(size[True] - size[False]) / episodes / 1000:.1f} kB/episode")


if __name__ == "__main__":
    main()
