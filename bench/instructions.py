"""Instructions the arena's process executes on issue 38's workload, counted by valgrind (callgrind's `Ir`): a measure
that does not move with the machine's load or clock speed, for telling a change's effect from the noise of a shared
machine, where CPU time moves by a quarter between repeats of identical work.

    PYTHONPATH=. .venv/bin/python bench/instructions.py [--world DIR] [--readme docs/benchmarks.md]

Three processes, each run under callgrind, import what `bench/peers.py --worker arena` imports and then play 0, 1 and
2 runs of the workload of `bench/peers.py --tasks 64 --images 1 --size 1316x728 --noise 1` (64 tasks at
concurrency 1: crop, search, answer; the stub server runs in its own process, not counted). The differences of their
counts are a fresh process's first run and a run after it (the task image's check, decode, crop and encodings then
kept), per run and per round, split by the shared object the instructions ran in. Not counted: the kernel's work
(the loopback copy of each request: the floor's part, the same whatever the arena's code does), and waiting.
PYTHONHASHSEED=0 and OPENBLAS_NUM_THREADS=1 for the three: string hashes (and so the order of sets) alike in every
repeat, and no OpenBLAS threads, whose idle spinning after numpy's import valgrind, running one thread at a time,
would count into whatever ran beside it. What still moves between repeats (a few million) follows the clock: the run
writer gathers the commits that arrive within its window.

With `--readme` the table between `<!-- instructions:begin -->` and `<!-- instructions:end -->` is rewritten. Needs
`valgrind` (Debian: `apt-get install valgrind`); ~3 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import peers  # noqa: E402

GROUPS = (("the interpreter (libpython)", ("libpython",)), ("image codecs (Pillow, zlib)", ("_imaging", "libz.")),
          ("pydantic-core", ("_pydantic_core",)), ("orjson", ("orjson",)), ("libc", ("libc.",)),
          ("hashing (libcrypto)", ("libcrypto",)))
CHILD = """
import importlib, logging, shutil, sys
from pathlib import Path
sys.path[:0] = [{root!r}, {bench!r}]
import peers
logging.disable(logging.WARNING)
for module in peers.IMPORTS["arena"]:
    importlib.import_module(module)
from arena.runs.plugins import load_plugins
load_plugins()
for i in range({runs}):
    out = Path({out!r}) / str(i)
    peers.run_arena(Path({data!r}), {url!r}, 1, out)
    shutil.rmtree(out, ignore_errors=True)
"""


def by_object(path: Path) -> Counter[str]:
    """Self instructions per shared object of a callgrind output file (its `ob=` blocks; a call's inclusive cost,
    the line after `calls=`, is not counted twice)."""
    names: dict[str, str] = {}
    costs: Counter[str] = Counter()
    current, skip = "?", False
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith(("ob=", "cob=")):  # (one namespace of compressed names for both)
            match = re.match(r"c?ob=\((\d+)\)(?: (.*))?", line)
            if match and match.group(2):
                names[match.group(1)] = match.group(2)
            if line.startswith("ob="):
                current = names.get(match.group(1), "?") if match else line[3:]
        elif line.startswith("calls="):
            skip = True
        elif line[:1].isdigit() or (line[:1] and line[:1] in "+-*"):  # a cost line (an empty one is not)
            if skip:
                skip = False
                continue
            fields = line.split()
            if len(fields) >= 2:
                costs[current] += int(fields[1])
    return costs


def counted(data: Path, url: str, runs: int, work: Path) -> Counter[str]:
    """Instructions by shared object of a process that imports the arena and plays `runs` runs."""
    out = work / f"callgrind.{runs}"
    child = CHILD.format(root=str(ROOT), bench=str(ROOT / "bench"), runs=runs, out=str(work / f"runs{runs}"),
                         data=str(data), url=url)
    done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-c", child],
                          capture_output=True, text=True,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0"})
    if done.returncode != 0:
        raise SystemExit(f"the process playing {runs} run(s) under valgrind failed:\n{done.stderr[-3000:]}")
    return by_object(out)


def grouped(costs: Counter[str]) -> dict[str, int]:
    out = {name: sum(v for ob, v in costs.items() if any(k in Path(ob).name for k in keys)) for name, keys in GROUPS}
    out["other"] = sum(costs.values()) - sum(out.values())
    return out


def table(first: dict[str, int], warm: dict[str, int], rounds: int) -> str:
    total_first, total_warm = sum(first.values()) / 1e6, sum(warm.values()) / 1e6
    lines = ["| millions of instructions (user space) | first run of a process | a run after it |",
             "|---|---|---|",
             f"| per run ({rounds} rounds) | **{total_first:.0f}** | **{total_warm:.0f}** |",
             f"| per round | {total_first / rounds:.2f} | {total_warm / rounds:.2f} |"]
    for name in [*dict(GROUPS), "other"]:
        lines.append(f"| of which {name} | {first[name] / 1e6:.0f} | {warm[name] / 1e6:.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=Path, default=None, help="where the generated workload is kept")
    parser.add_argument("--readme", type=Path, default=None)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:  # (`make bench` goes on without this table)
        print("bench/instructions.py: not measured, valgrind is not installed (Debian: apt-get install valgrind)")
        return
    wanted = peers.workload(64, 1, (1316, 728), 1)
    with tempfile.TemporaryDirectory(prefix="arena-instructions-") as tmp:
        world = args.world or Path(tmp) / "world"
        data = peers.kept_world(world, wanted) or peers.write_world(world, 64, 1, (1316, 728), 1)
        proc, url = peers._server(0.0)
        try:
            counts = [grouped(counted(data, url, runs, Path(tmp))) for runs in (0, 1, 2)]
        finally:
            proc.terminate()
    first = {k: counts[1][k] - counts[0][k] for k in counts[0]}
    warm = {k: counts[2][k] - counts[1][k] for k in counts[0]}
    text = table(first, warm, peers.ROUNDS * 64)
    print(text)
    if args.readme:
        peers.rewrite(args.readme, "instructions", text)


if __name__ == "__main__":
    main()
