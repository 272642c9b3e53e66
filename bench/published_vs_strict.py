"""Published vs strict scoring on the tricky outputs of tests/test_published_vistahop.py.

Builds two VistaArena-format datasets (open answers, MCQ letters) whose scripted agent writes each tricky output
as its final turn, runs them with the published judges (`normalized`, `mcq`), re-judges with the arena's strict
variants and prints the agreement tables (`arena judge` output).

    .venv/bin/python bench/published_vs_strict.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.tiny_dataset import scene  # noqa: E402
from tests.suites.vistahop.test_published import EM_OUTPUTS, MCQ_OUTPUTS  # noqa: E402

ARENA = [sys.executable, "-c", "from arena.cli.main import main; main()"]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        (root / "images").mkdir(parents=True)
        scene().save(root / "images" / "scene.png")
        script, open_items, mcq_items = {}, [], []
        for i, (output, truths) in enumerate(o for o in EM_OUTPUTS if o[0].strip()):
            open_items.append({"id": f"o{i}", "prompt": [{"role": "user", "content": "<image>Which city?"}],
                               "reward_model": {"ground_truth": truths}, "image": ["images/scene.png"]})
            script[f"o{i}"] = [{"text": output}]
        for i, output in enumerate(o for o in MCQ_OUTPUTS if o.strip()):
            mcq_items.append({"id": f"m{i}", "prompt": [{"role": "user", "content": "<image>Which option?"}],
                              "reward_model": {"ground_truth": ["ABCD"[i % 4]]}, "image": ["images/scene.png"]})
            script[f"m{i}"] = [{"text": output}]
        (root / "open.jsonl").write_text("".join(json.dumps(x) + "\n" for x in open_items))
        (root / "mcq.jsonl").write_text("".join(json.dumps(x) + "\n" for x in mcq_items))
        (Path(tmp) / "script.json").write_text(json.dumps(script))
        for name, judge in (("open", "normalized"), ("mcq", "mcq")):
            subprocess.run(ARENA + ["run", "--data", str(root / f"{name}.jsonl"), "--agent", "scripted", "--script",
                                    str(Path(tmp) / "script.json"), "--setting", "no-tool", "--max-rounds", "1",
                                    "--judge", judge, "--out", str(Path(tmp) / "logs"), "--run-id", name],
                           check=True, capture_output=True)
            out = subprocess.run(ARENA + ["judge", str(Path(tmp) / "logs" / name), "--judge", f"{judge}-strict"],
                                 check=True, capture_output=True, text=True).stdout
            print(out[out.index("judge agreement"):])


if __name__ == "__main__":
    main()
