"""Where a harness's wall goes at 64-way with a 200 ms server: when each wave of requests reached the server.

    PYTHONPATH=. .venv/bin/python bench/wall_timeline.py [--harness floor arena] [--repeats 3] [--world DIR]

The workload of `bench/peers.py` (64 tasks, crop, search, answer; `--noise 1` sized: one shared 1316x728 PNG,
1.29 MB per request). The server (`bench/stub_server.py`) keeps when each request's head was whole and when its body
was read; the harness process (`peers.py --worker`) notes when its clock started. Per run this prints the wall over
its ideal (3 waves x 0.2 s), and per wave (wave k: the k-th request of every connection; at 64-way with 64 tasks
each connection carries one episode) the first, median and last head to arrive and the last body read, in ms since
the harness's clock started; then what follows the last wave's answers (the wall less the last body's time and the
server's 200 ms). The floor replays the requests of an arena run made first, as in `bench/peers.py`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import peers  # noqa: E402

DELAY = 0.2
TASKS = 64


def timeline(url: str) -> list[tuple[int, float, float]]:
    """Every request the server has seen: (connection number, head whole, body read), epoch seconds."""
    with urllib.request.urlopen(url.rsplit("/v1", 1)[0] + "/timeline") as response:
        return [tuple(entry) for entry in json.loads(response.read())]


def waves(arrivals: list[tuple[int, float, float]], started: float) -> list[list[tuple[float, float]]]:
    """The requests since `started`, as (head, body) ms since then, grouped by their index on their connection."""
    per_connection: dict[int, list[tuple[float, float]]] = {}
    for number, head, body in sorted(arrivals, key=lambda a: a[1]):
        if head >= started:
            per_connection.setdefault(number, []).append((1000 * (head - started), 1000 * (body - started)))
    count = max((len(seen) for seen in per_connection.values()), default=0)
    return [[seen[k] for seen in per_connection.values() if len(seen) > k] for k in range(count)]


def report(harness: str, row: dict, arrivals: list[tuple[int, float, float]]) -> str:
    ideal = peers.ROUNDS * DELAY
    lines = [f"{harness:6s} wall {1000 * row['wall']:.0f} ms = {row['wall'] / ideal:.2f}x ideal"]
    last_body = 0.0
    for k, wave in enumerate(waves(arrivals, row["started"])):
        heads = sorted(head for head, _ in wave)
        last_body = max(body for _, body in wave)
        lines.append(f"  wave {k}: {len(wave)} requests, heads {heads[0]:.0f} .. {statistics.median(heads):.0f} .. "
                     f"{heads[-1]:.0f} ms, last body read {last_body:.0f} ms")
    lines.append(f"  after the last answer: {1000 * row['wall'] - last_body - 1000 * DELAY:.0f} ms")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--harness", nargs="+", choices=["arena", "floor"], default=["floor", "arena"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--world", type=Path, help="keep the generated task images here and reuse them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wall-timeline-") as tmp_name:
        tmp = Path(tmp_name)
        world = args.world or tmp / "world"
        wanted = peers.workload(TASKS, 1, (1316, 728), 1)
        data = peers.kept_world(world, wanted) or peers.write_world(world, TASKS, 1, (1316, 728), 1)
        proc, url = peers._server(DELAY)
        try:
            source = tmp / "floor-source"
            if "floor" in args.harness:  # the requests the floor sends: an arena run's, recorded (not measured)
                peers.measure("arena", data, url, 64, source, TASKS)
            for repeat in range(args.repeats):
                for harness in args.harness:
                    out = source / "peers" if harness == "floor" else tmp / f"arena-{repeat}"
                    row = peers.measure(harness, data, url, 64, out, TASKS)
                    print(report(harness, row, timeline(url)), flush=True)
        finally:
            proc.terminate()


if __name__ == "__main__":
    main()
