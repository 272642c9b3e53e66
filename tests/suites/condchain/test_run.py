"""MM-CondChain end to end: scripted answers give known True/False-path accuracies and Path F1, and the
agentic GUI setting steps through the frames with the browser tool."""

from pathlib import Path

from arena.core.dataset import load_datasets
from arena.suites.condchain.world import build_agentic
from arena.runs.config import RunConfig
from arena.runs.runner import run


def test_scripted_run_reproduces_path_f1(tmp_path: Path):
    world = build_agentic(tmp_path / "world", seed=11, size="small", count=1)
    tasks = load_datasets(world)[0].tasks
    assert len(tasks) == 6
    script = {}
    for task in tasks:
        truth = task.answers[0]
        right = task.id.endswith(":true") or task.category == "natural"
        answer = f"Following the chain... \\boxed{{ {truth[0]} {truth[1:]} }}" if right else "\\boxed{Z9}"
        actions = [{"answer": answer}]
        if task.id == "gui_000:true":
            actions = [{"tool": "browser", "arguments": {"action": "next"}},
                       {"tool": "browser", "arguments": {"action": "frame", "index": 10}},
                       {"tool": "browser", "arguments": {"action": "prev"}}, *actions]
        script[task.id] = actions
    config = RunConfig(data=str(world), agent="scripted", agent_options={"script": script}, settings=["browser"],
                       judge=None, out=str(tmp_path / "logs"), concurrency=3)
    result = run(config)
    metrics = result.summary["groups"][0]["suites"]["condchain"]
    # true paths: 3/3 right; false paths: only natural right -> 1/3
    assert metrics["overall"] == {"true_acc": 100.0, "false_acc": 33.33, "path_f1": 50.0,
                                  "true_count": 3, "false_count": 3}
    assert metrics["domains"]["natural"]["path_f1"] == 100.0
    assert metrics["domains"]["chart"] == {"true_acc": 100.0, "false_acc": 0.0, "path_f1": 0.0,
                                           "true_count": 1, "false_count": 1}
    gui = next(e for e in result.episodes if e.task.id == "gui_000:true")
    assert [s.observation.text.splitlines()[0] for s in gui.steps[:3]] == [
        "Frame 1 of 10 (gui_000_1.png).", "Frame 10 of 10 (gui_000_10.png).", "Frame 9 of 10 (gui_000_9.png)."]
    assert all(len(s.observation.images) == 1 for s in gui.steps[:3])
    assert gui.images == [] and gui.totals.calls_per_tool == {"browser": 3}
    verdict = next(v for v in result.verdicts if v.key.startswith("gui_000:true|"))
    assert verdict.score == 1.0 and verdict.extracted == gui.task.answers[0]
