"""Every loader error names file, line and field; commands that read a run print one line, not a traceback."""

import json

import pytest
from typer.testing import CliRunner

from arena.core.dataset import DatasetError, load_datasets
from arena.cli.main import app

runner = CliRunner()
ITEM = {"id": "a", "prompt": [{"role": "user", "content": "<image>Which year?"}], "reward_model": {"ground_truth": "x"},
        "image": "img.png"}


def write_lines(path, *records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize("change, expected", [
    ({"level": 2}, "items.jsonl:2: field level: Input should be a valid string"),
    ({"image": "a\x00b.png"}, "items.jsonl:2: field images[0]: path 'a\\x00b.png' contains a NUL byte"),
    ({"image": "../../etc/passwd"}, "items.jsonl:2: field images[0]: path '../../etc/passwd' escapes"),
])
def test_a_bad_field_of_an_item_names_file_line_and_field(tmp_path, change, expected):
    path = write_lines(tmp_path / "items.jsonl", ITEM, {**ITEM, "id": "b", **change})
    with pytest.raises(DatasetError) as err:
        load_datasets(path)
    assert expected in str(err.value)


@pytest.mark.parametrize("entry, expected", [
    ({"annotation": "items.jsonl", "input_template": "SYS"}, "field input_template: must be an object, got str"),
    ({"annotation": "items.jsonl", "input_template": {"arguments": {"system_prompt": 3}}},
     "field input_template.arguments.system_prompt: must be a string, got int"),
    ({"annotation": "items.jsonl", "root": 5}, "field root: must be a path string, got 5"),
])
def test_a_bad_datasets_json_entry_names_its_field(tmp_path, entry, expected):
    write_lines(tmp_path / "items.jsonl", ITEM)
    (tmp_path / "datasets.json").write_text(json.dumps({"va": entry}))
    with pytest.raises(DatasetError) as err:
        load_datasets(tmp_path / "datasets.json")
    assert f"datasets.json: dataset 'va': {expected}" in str(err.value)


def test_a_nul_in_the_data_path_is_named(tmp_path):
    with pytest.raises(DatasetError, match="contains a NUL byte"):
        load_datasets(str(tmp_path / "a\x00b.jsonl"))


@pytest.fixture
def run_dir(tiny_data, tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text('"*":\n  - answer: "1874"\n')
    result = runner.invoke(app, ["run", "--data", str(tiny_data), "--agent", "scripted", "--script", str(script),
                                 "--out", str(tmp_path / "logs"), "--run-id", "r"])
    assert result.exit_code == 0, result.output
    return tmp_path / "logs" / "r"


EPISODE_ERROR = "episodes.jsonl: line 1: not an episode record ('key')"  # read through the episode index
RECORD_ERROR = "episodes.jsonl:1: not a valid Episode record: field key: Field required"  # whole records (replay)
RUN_JSON_ERROR = "run.json: not valid JSON (Expecting ':' delimiter: line 1 column 11)"


@pytest.mark.parametrize("command, damage, expected", [
    *((command, "episodes", EPISODE_ERROR) for command in ("summary", "view", "report", "resume")),
    ("replay", "episodes", RECORD_ERROR),
    *((command, "run.json", RUN_JSON_ERROR) for command in ("view", "report", "replay", "resume")),
])
def test_a_corrupt_store_is_one_error_line(run_dir, command, damage, expected):
    if damage == "episodes":
        lines = (run_dir / "episodes.jsonl").read_text().splitlines()
        record = json.loads(lines[0])
        del record["key"]
        (run_dir / "episodes.jsonl").write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    else:
        (run_dir / "run.json").write_text('{"run_id" "r"}')
    result = runner.invoke(app, [command, str(run_dir)])
    assert result.exit_code == 2, result.output
    assert expected in result.output and "Traceback" not in result.output
    assert result.output.strip().startswith("error:")
