import json

from typer.testing import CliRunner

from arena.cli.main import app

runner = CliRunner()

SCRIPT = """\
q1:
  - tool: image_zoom_in_tool
    arguments: {bbox_2d: [740, 90, 950, 210]}
  - answer: Mirelle Dastrow
"*":
  - text: "<think>no idea</think><answer>1875</answer>"
"""


def test_run_with_a_yaml_script_then_summary(tiny_data, tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    out = tmp_path / "logs"
    result = runner.invoke(app, ["run", "--data", str(tiny_data), "--agent", "scripted", "--script", str(script),
                                 "--setting", "crop,no-tool", "--max-rounds", "3", "--out", str(out),
                                 "--run-id", "cli"])
    assert result.exit_code == 0, result.output
    assert "Pass@1" in result.output and "run directory" in result.output
    episodes = [json.loads(line) for line in (out / "cli" / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 4
    by_key = {e["key"]: e for e in episodes}
    assert by_key["q1|crop|3|0|scripted"]["totals"]["calls_per_tool"] == {"image_zoom_in_tool": 1}
    no_tool = by_key["q1|no-tool|3|0|scripted"]
    assert "unknown tool 'image_zoom_in_tool'" in no_tool["steps"][0]["error"]
    assert by_key["q2|crop|3|0|scripted"]["answer"] == "1875"
    summary = runner.invoke(app, ["summary", str(out / "cli")])
    assert summary.exit_code == 0 and "crop" in summary.output and "50.00" in summary.output


def test_clear_errors_for_bad_input(tiny_data, tmp_path):
    missing = runner.invoke(app, ["run", "--data", str(tmp_path / "nope.jsonl"), "--agent", "scripted",
                                  "--script", "x.yaml"])
    assert missing.exit_code == 2 and "no such file" in missing.output
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    bad_script = runner.invoke(app, ["run", "--data", str(tiny_data), "--agent", "scripted", "--script",
                                     str(tiny_data), "--out", str(tmp_path)])
    assert bad_script.exit_code == 2 and "cannot read the script" in bad_script.output
    bad_setting = runner.invoke(app, ["run", "--data", str(tiny_data), "--agent", "scripted", "--script",
                                      str(script), "--setting", "search+teleport", "--out", str(tmp_path)])
    assert bad_setting.exit_code == 2 and "teleport" in bad_setting.output
    unknown_agent = runner.invoke(app, ["run", "--data", str(tiny_data), "--agent", "psychic"])
    assert unknown_agent.exit_code == 2 and "unknown agent 'psychic'" in unknown_agent.output
    not_a_run = runner.invoke(app, ["summary", str(tmp_path)])
    assert not_a_run.exit_code == 2 and "not a run directory" in not_a_run.output
