"""How much time the arena itself takes per round.

Runs crop + search + answer episodes (3 model calls, 2 tool calls each) over a
tiny dataset against a local OpenAI-compatible server in a separate process:
1. zero-latency server, concurrency 1, 32 and 64: rounds per second of the arena and
   the harness's CPU time per round (process CPU of this process / rounds; the
   server runs in another process);
2. server sleeping 200 ms per call, concurrency 1: the arena's share of wall time
   = 1 - (model calls x 0.2 s) / wall time;
3. with `--scale`: wall time over ideal at high concurrency (issue 13): for each server delay (`--delays`,
   default 1 s and 200 ms), each concurrency C (`--ways`, default 64 and 256) and each number of worker
   processes (`--workers`, default 0 = the asyncio backend, and 2), W x C episodes of 3 calls each (`--waves` W,
   default 4); ideal = W episodes x 3 calls x delay per slot. Wall is timed from the moment the run starts
   playing (the runner's `on_start`, after worker processes are up) to the end of the run; the start-up before
   it is printed apart. Issue 29: `--spread` gives each reply a lognormal delay of the same mean (sigma per
   value, seeded; 0 = the fixed delay; its ideal is still taken at the mean delay, so its tail counts against
   the harness: compare such rows with each other, before/after), `--servers N` serves the stub from N processes sharing one port (so
   that it is not the bottleneck); `--ways` takes 1024 and 4096 (4096 is skipped below 8 cores, saying so). Each
   row also gives the driver's CPU per finished episode and the run's own figures (summary.json `harness`,
   where the checkout writes it), and a second line with where the time over ideal went (`where_over`: how late
   the replies of the first wave's round 1, which all come back at once, and of every later call were taken, and
   the time from the last episode recorded to the end of the run).

    .venv/bin/python bench/overhead.py [--tasks 64] [--photo [--fresh-crops]] [--two-crops] [--protocol P]
    .venv/bin/python bench/overhead.py --scale [--delays 1,0.2] [--ways 64,256,1024,4096] [--workers 0,2]
                                       [--spread 0,0.5] [--servers 4] [--waves 4]
    .venv/bin/python bench/overhead.py --crop-heavy [--workers 0,2] [--protocol P]

`ARENA_ROOT=/path/to/another/checkout` imports the arena from there, for before/after figures of the same script
against the same stub server, always this checkout's (a checkout without `--workers` takes only `--workers 0`).

`--photo` replaces the task image by a 3000x2000 photo-like (noisy) image, so each
request carries ~1 MB of base64 PNG data, as with real photographs. Every episode zooms the same box; with
`--fresh-crops` the crop tool's LRU of zooms keeps nothing, so each crop is cut and encoded again as in a run
without repeats (episodes zooming at the same moment still share one zoom; needs a checkout with `arena.tools.crop.ZOOMS`).
`--two-crops`: the model crops twice (two boxes) and answers, instead of crop, search, answer.
`--protocol original|arena`: the run's protocol (default: by the data, `original` for the tiny dataset's
VistaArena format, which sends a task image at its own size up to 16384 x 28 x 28 pixels: the 3000x2000 photo goes
as ~15 MB of base64 in every request; `arena` smart-resizes it to at most 1280 x 28 x 28 pixels, ~1.7 MB).

`--crop-heavy` is issue 13's crop-heavy workload as the issue states it: the 3000x2000 photo, two crops and an
answer per episode, 208 episodes at 64-way against a server that answers in 1 s (`over_ideal`, per `--workers`).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
ROOT = Path(os.environ.get("ARENA_ROOT") or HERE).resolve()
sys.path.insert(0, str(ROOT))

import arena.tools.crop as crop  # noqa: E402
from arena.runs.config import RunConfig  # noqa: E402
from arena.runs.runner import run  # noqa: E402
from tests.support.tiny_dataset import write_tiny_dataset  # noqa: E402


def dataset(path: Path, n_items: int, with_photo: bool = False) -> Path:
    """The tiny dataset with `n_items` tasks (the 3000x2000 photo as its image with `with_photo`), 2.1 s old when
    returned: a run remembers a task file's digest only once it has settled (`arena.store.file_digests.RACY_NS`), as the
    files of any dataset read by a run are, so a benchmark over files seconds old would hash them at every use."""
    data = write_tiny_dataset(path, n_items=n_items)
    if with_photo:
        photo(data.parent / "images" / "scene.png")
    time.sleep(2.1)
    return data


MANY_CORES = 8
"""Below this many cores the 4096-way row is skipped: 2 cores cannot show what it measures."""


STUB = HERE / "bench" / "tiny_stub.py"
"""The scripted model's server: the benchmarks' lean one (`bench/stub_server.py`), which shares the cores with the
harness it answers and so is made to cost as little as a server can."""


def serve(delay: float, two_crops: bool = False) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(STUB), "--delay", str(delay), *(["--two-crops"] if two_crops else [])],
                            cwd=HERE, stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def serve_many(delay: float, spread: float, processes: int) -> tuple[list[subprocess.Popen], str]:
    """The stub from `processes` processes sharing one port (SO_REUSEPORT), each drawing its delays from its own
    seeded generator; the first picks the port."""
    def start(port: int, seed: int) -> tuple[subprocess.Popen, str]:
        proc = subprocess.Popen([sys.executable, str(STUB), "--delay", str(delay), "--spread", str(spread),
                                 "--seed", str(seed), "--port", str(port), "--reuse-port"],
                                cwd=HERE, stdout=subprocess.PIPE, text=True)
        return proc, proc.stdout.readline().strip()
    first, url = start(0, 0)
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    return [first, *(start(port, seed)[0] for seed in range(1, processes))], url


def measure(data: Path, out: Path, base_url: str, concurrency: int, run_id: str,
            protocol: str | None = None) -> tuple[float, int, int, float]:
    config = RunConfig(data=str(data), agent="openai", judge="normalized", out=str(out), run_id=run_id,
                       concurrency=concurrency, agent_options={"model": "bench", "base_url": base_url},
                       **({"protocol": protocol} if protocol else {}))
    started, cpu = time.perf_counter(), time.process_time()
    result = run(config)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    rounds = sum(e.totals.rounds for e in result.episodes)
    assert all(e.finish_reason == "answered" for e in result.episodes), "benchmark episodes must succeed"
    return wall, rounds, len(result.episodes), cpu


def server_cpu(pid: int) -> float:
    """CPU seconds the stub server process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def over_ideal(data: Path, out: Path, base_url: str, delay: float, ways: int, workers: int, server: int | list[int],
               protocol: str | None = None, spread: float = 0.0) -> str:
    """One run of the dataset's episodes at concurrency `ways`: its wall time against the ideal, and the CPU
    of the driver, of the worker processes (reaped children) and of the stub server, per round."""
    fields: dict = {"workers": workers} if workers else {}
    if protocol:
        fields["protocol"] = protocol
    config = RunConfig(data=str(data), agent="openai", judge="normalized", out=str(out), run_id=f"w{ways}-{workers}",
                       concurrency=ways, agent_options={"model": "bench", "base_url": base_url}, **fields)
    began = time.perf_counter()
    playing: list[tuple[float, float, float]] = []
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    servers = server if isinstance(server, list) else [server]
    recorded: list[float] = []  # when the driver recorded each episode
    result = run(config, on_start=lambda *_: playing.append((time.perf_counter(), time.process_time(),
                                                             sum(map(server_cpu, servers)))),
                 progress=lambda *_: recorded.append(time.perf_counter()))
    ended, cpu = time.perf_counter(), time.process_time() - playing[0][1]
    served = sum(map(server_cpu, servers)) - playing[0][2]
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    harness = result.summary.get("harness") or {}
    # workers forked by a fork server are not this process's children: their CPU is what the run measured
    worker_cpu = (harness["worker_cpu_seconds"] if harness.get("worker_cpu_seconds") is not None
                  else after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime)
    episodes = result.episodes
    assert all(e.finish_reason == "answered" for e in episodes), "benchmark episodes must succeed"
    rounds = sum(e.totals.rounds for e in episodes)
    ideal = -(-len(episodes) // ways) * max(e.totals.rounds for e in episodes) * delay
    wall = ended - playing[0][0]
    own = (f"; the run's own figures: harness share {100 * harness['harness_share']:.1f} %, driver busy "
           f"{100 * harness['driver_load']:.0f} %" if harness.get("harness_share") is not None else "")
    if harness.get("driver_cpu_per_episode_ms") is not None:  # the playing phase only (not the summary after it)
        own += f", driver CPU per episode while playing {harness['driver_cpu_per_episode_ms']:.2f} ms"
    latency = f"{delay * 1000:.0f} ms server" + (f" (lognormal, sigma {spread:g})" if spread else "")
    return (f"{latency}, {ways}-way, {'asyncio' if not workers else f'{workers} workers'}: "
            f"{len(episodes)} episodes, {rounds} calls, wall {wall:.2f} s vs ideal {ideal:.2f} s = "
            f"{100 * (wall / ideal - 1):+.1f} % (start-up {playing[0][0] - began:.2f} s); CPU per round: "
            f"driver {cpu / rounds * 1000:.2f} ms, workers {worker_cpu / rounds * 1000:.2f} ms, "
            f"stub server {served / rounds * 1000:.1f} ms; driver CPU per finished episode "
            f"{cpu / len(episodes) * 1000:.2f} ms{own}; load average {os.getloadavg()[0]:.1f}\n  "
            + where_over(episodes, ways, delay if not spread else None, ended - recorded[-1]))


def where_over(episodes: list, ways: int, delay: float | None, after_last: float) -> str:
    """Where a run's time over ideal went, from its own records: how late each model call's reply was taken
    compared with the server's fixed `delay` (each step's `model_seconds` runs from the turn's start to its reply
    parsed: the request built and sent, the server's delay, the reply read while the event loop was busy with other
    episodes), for round 1 of the first wave (the first `ways` episodes of the dataset, which start together:
    every reply of that round comes back at once) apart from every later call; and the time from the last episode
    recorded to the end of the run (the summary read back from the store, the backend's shutdown). Without a fixed
    delay (`--spread`) only the latter."""
    tail = f"after the last episode recorded: {after_last * 1000:.0f} ms (summary, shutdown)"
    if delay is None or not episodes:
        return tail
    first, later = [], []
    for episode in episodes:
        wave = (int(episode.task.id.lstrip("q")) - 1) // ways
        for step in episode.steps:
            (first if wave == 0 and step.round == 1 else later).append(step.model_seconds - delay)
    first.sort()
    later.sort()

    def lateness(lags: list[float], high: float) -> str:  # (`lags` sorted) the median and the `high` quantile
        return (f"median {statistics.median(lags) * 1000:.0f} ms, {'max' if high == 1 else f'p{high * 100:g}'} "
                f"{lags[min(len(lags) - 1, int(high * len(lags)))] * 1000:.0f} ms") if lags else "none"
    return (f"replies taken late: round 1 of the first wave {lateness(first, 1)}; every later call "
            f"{lateness(later, 0.99)}; {tail}")


def scale(tmp_path: Path, delays: list[float], ways: list[int], workers: list[int], waves: int,
          spreads: list[float] = [0.0], servers: int = 1) -> None:
    cores = os.cpu_count() or 1
    for way in [w for w in ways if w >= 4096 and cores < MANY_CORES]:
        print(f"{way}-way: skipped, many-core only ({cores} cores here, {MANY_CORES} or more needed for the "
              "driver, its workers and the stub server not to share the cores they are measured on)", flush=True)
    ways = [w for w in ways if w < 4096 or cores >= MANY_CORES]
    for delay in delays:
        for spread in spreads:
            procs, url = serve_many(delay, spread, servers)
            try:
                for way in ways:
                    data = dataset(tmp_path / f"data{way}", waves * way)
                    for n in workers:
                        print(over_ideal(data, tmp_path / f"d{delay}-{spread}", url, delay, way, n,
                                         [p.pid for p in procs], spread=spread), flush=True)
            finally:
                for proc in procs:
                    proc.terminate()


def crop_heavy(tmp_path: Path, workers: list[int], protocol: str | None) -> None:
    """Issue 13's crop-heavy workload: 208 episodes of crop, crop, answer over the 3000x2000 photo, 64-way, 1 s."""
    data = dataset(tmp_path / "heavy", 208, with_photo=True)
    proc, url = serve(1.0, two_crops=True)
    try:
        for n in workers:
            print(over_ideal(data, tmp_path / f"heavy{n}", url, 1.0, 64, n, proc.pid, protocol), flush=True)
    finally:
        proc.terminate()


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
    parser.add_argument("--fresh-crops", action="store_true", help="keep no zoom for a later episode (no repeats)")
    parser.add_argument("--scale", action="store_true", help="only wall time over ideal at high concurrency")
    parser.add_argument("--delays", default="1,0.2", help="server delays in seconds (--scale)")
    parser.add_argument("--ways", default="64,256", help="concurrencies (--scale)")
    parser.add_argument("--workers", default="0,2", help="worker processes, 0 = asyncio backend (--scale)")
    parser.add_argument("--waves", type=int, default=4, help="episodes per concurrency slot (--scale)")
    parser.add_argument("--spread", default="0", help="lognormal sigmas of the server delay, 0 = fixed (--scale)")
    parser.add_argument("--servers", type=int, default=4, help="stub server processes on one port (--scale)")
    parser.add_argument("--two-crops", action="store_true", help="crop, crop, answer (else crop, search, answer)")
    parser.add_argument("--protocol", choices=["original", "arena"], help="the runs' protocol (default: by the data)")
    parser.add_argument("--crop-heavy", action="store_true", help="only issue 13's crop-heavy workload (1 s, 64-way)")
    args = parser.parse_args()
    if args.fresh_crops:
        crop.ZOOMS.maxsize = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        if args.scale:
            scale(tmp_path, [float(d) for d in args.delays.split(",")], [int(w) for w in args.ways.split(",")],
                  [int(n) for n in args.workers.split(",")], args.waves,
                  [float(s) for s in args.spread.split(",")], args.servers)
            return
        if args.crop_heavy:
            crop_heavy(tmp_path, [int(n) for n in args.workers.split(",")], args.protocol)
            return
        data = dataset(tmp_path / "data", args.tasks, with_photo=args.photo)
        proc, url = serve(0.0, args.two_crops)
        try:
            measure(data, tmp_path / "warm", url, 4, "warm", args.protocol)
            for concurrency in (1, 32, 64):
                wall, rounds, episodes, cpu = measure(data, tmp_path / f"c{concurrency}", url, concurrency, "run",
                                                      args.protocol)
                print(f"zero-latency server, concurrency {concurrency:>2}: {episodes} episodes, {rounds} rounds "
                      f"in {wall:.2f} s = {rounds / wall:.1f} rounds/s, harness CPU {cpu / rounds * 1000:.1f} ms "
                      "per round")
        finally:
            proc.terminate()
        proc, url = serve(0.2, args.two_crops)
        try:
            n = max(8, args.tasks // 8)
            small = dataset(tmp_path / "small", n)
            wall, rounds, episodes, _ = measure(small, tmp_path / "slow", url, 1, "run", args.protocol)
            model = rounds * 0.2
            print(f"200 ms server, concurrency 1: {episodes} episodes, {rounds} calls, wall {wall:.2f} s, "
                  f"arena share {100 * (1 - model / wall):.1f} % ({(wall - model) / rounds * 1000:.1f} ms per round)")
        finally:
            proc.terminate()


if __name__ == "__main__":
    main()
