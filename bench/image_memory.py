"""Peak memory of a run whose task images are huge: eight 14100x14100 grey PNGs at concurrency 8.

Each PNG is a mostly white page with dark blocks (about 200 KB on disk, 199 Mpx,
just under the 200 Mpx decompression-bomb limit). The run is real: the
`openai` agent against the scripted local model server (crop, then search,
then answer), so every task image is decoded, encoded for the model and
cropped. The run executes in a child process, which reports its own peak RSS
(`ru_maxrss`); the images are generated beforehand in another child.

    .venv/bin/python bench/image_memory.py [--code DIR] [--keep DIR]

`--code` runs the arena code of another checkout (e.g. an older commit in a
`git worktree`) to compare; `--keep` keeps the generated images there for reuse.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIDE = 14100
N = 8

GENERATE = textwrap.dedent("""
    import sys
    from pathlib import Path
    from PIL import Image, ImageDraw
    Image.MAX_IMAGE_PIXELS = None
    out, side, n = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    for i in range(n):
        path = out / f"big{i}.png"
        if path.exists():
            continue
        image = Image.new("L", (side, side), 255)
        draw = ImageDraw.Draw(image)
        for k in range(40):
            x, y = (k * 977 + i * 131) % (side - 900), (k * 1543 + i * 71) % (side - 500)
            draw.rectangle([x, y, x + 800, y + 400], fill=(k * 37 + i * 11) % 200)
        image.save(path, optimize=True)
        del draw, image
""")

CHILD = textwrap.dedent("""
    import json, resource, sys, time
    from arena.runs.config import RunConfig
    from arena.runs.runner import run
    data, out, url = sys.argv[1:4]
    config = RunConfig(data=data, agent="openai", judge="normalized", out=out, run_id="mem", concurrency=8,
                       agent_options={"model": "bench", "base_url": url})
    started = time.perf_counter()
    result = run(config)
    print(json.dumps({"seconds": time.perf_counter() - started,
                      "finish": [e.finish_reason for e in result.episodes],
                      "errors": sorted({(e.error or "")[:200] for e in result.episodes if e.error}),
                      "crops": sum(e.totals.calls_per_tool.get("image_zoom_in_tool", 0) for e in result.episodes),
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
""")


def write_dataset(root: Path, images: Path) -> Path:
    sys.path.insert(0, str(ROOT))
    from tests.support.tiny_dataset import write_tiny_dataset

    path = write_tiny_dataset(root, n_items=1)
    item = json.loads(path.read_text().splitlines()[0])
    (root / "images").mkdir(exist_ok=True)
    items = []
    for i in range(N):
        link = root / "images" / f"big{i}.png"
        link.unlink(missing_ok=True)
        try:  # a hard link (a symlink would leave the dataset root, which the loader refuses)
            os.link(images / f"big{i}.png", link)
        except OSError:
            shutil.copy(images / f"big{i}.png", link)
        items.append({**item, "id": f"big{i}", "image": [f"images/big{i}.png"]})
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--code", type=Path, default=ROOT, help="checkout whose arena code runs")
    parser.add_argument("--keep", type=Path, help="directory for the generated images (kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        images = args.keep or tmp_path / "images"
        images.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-c", GENERATE, str(images), str(SIDE), str(N)], check=True)
        sizes = [(images / f"big{i}.png").stat().st_size for i in range(N)]
        data = write_dataset(tmp_path / "data", images)
        server = subprocess.Popen([sys.executable, "-m", "tests.support.openai_server"], cwd=ROOT,
                                  stdout=subprocess.PIPE, text=True)
        try:
            url = server.stdout.readline().strip()
            env = {**os.environ, "PYTHONPATH": str(args.code.resolve())}
            child = subprocess.run([sys.executable, "-c", CHILD, str(data), str(tmp_path / "logs"), url],
                                   cwd=args.code, env=env, capture_output=True, text=True)
        finally:
            server.terminate()
        if child.returncode != 0:
            sys.exit(f"the run failed (rc {child.returncode}):\n{child.stderr[-3000:]}")
        report = json.loads(child.stdout.strip().splitlines()[-1])
        print(f"{N} task images of {SIDE}x{SIDE} grey PNG ({min(sizes) // 1024}-{max(sizes) // 1024} KB each), "
              f"concurrency 8, code {args.code}:")
        print(f"  finish reasons {sorted(set(report['finish']))}, {report['crops']} crops, "
              f"{report['seconds']:.1f} s; peak RSS {report['peak_rss_mb']:.0f} MB")
        for error in report["errors"]:
            print(f"  error: {error}")


if __name__ == "__main__":
    main()
