import json

import pytest

from arena.core.dataset import DatasetError, load_datasets


def test_vistaarena_jsonl(tiny_data):
    [ds] = load_datasets(tiny_data)
    q1, q2 = ds.tasks
    assert q1.id == "q1" and q1.question == "Who built the lighthouse named on the white sign?"
    assert q1.answers == ["Mirelle Dastrow"] and q2.answers == ["1874"]
    assert q1.images == ["images/scene.png"]
    assert q1.metadata["image_search"] == [{"title": "Orvanta Lighthouse - Wiki", "thumbnail": "images/thumb0.png"}]
    assert q1.level == "L1" and q2.level == "L2"
    assert ds.corpus is not None and ds.corpus.name == "corpus"


def test_json_list_and_content_ids_are_stable(tmp_path, tiny_data):
    items = [json.loads(line) for line in tiny_data.read_text().splitlines()]
    for item in items:
        del item["id"]
    a = tiny_data.parent / "list.json"
    a.write_text(json.dumps(items))
    b = tiny_data.parent / "reversed.json"
    b.write_text(json.dumps(items[::-1]))
    ids_a = [t.id for t in load_datasets(a)[0].tasks]
    ids_b = [t.id for t in load_datasets(b)[0].tasks]
    assert ids_a == ids_b[::-1] and all(i.startswith("va-") for i in ids_a)


def test_datasets_json_with_templates_and_reward_fn(tiny_data):
    config = tiny_data.parent / "datasets.json"
    config.write_text(json.dumps({"vistahop_mcq": {
        "root": ".", "annotation": "annotations.jsonl", "reward_fn": ["em_score_mcq"],
        "input_template": {"arguments": {"system_prompt": "SYS {tools}", "format_instruction": "Answer A-D."}}}}))
    [ds] = load_datasets(config)
    assert ds.name == "vistahop_mcq" and ds.system_prompt == "SYS {tools}"
    assert ds.format_instruction == "Answer A-D."
    assert all(t.kind == "mcq" and t.judge == "mcq" for t in ds.tasks)


def test_path_escaping_the_root_is_an_error(tiny_data):
    item = {"id": "evil", "prompt": [{"role": "user", "content": "q"}], "reward_model": {"ground_truth": "x"},
            "image": ["../../etc/passwd"]}
    tiny_data.write_text(json.dumps(item) + "\n")
    with pytest.raises(DatasetError, match=r"annotations.jsonl:1: field images\[0\].*escapes the dataset root"):
        load_datasets(tiny_data)


def test_errors_name_file_line_and_field(tmp_path):
    bad = tmp_path / "tasks.jsonl"
    bad.write_text('{"question": "q", "answers": ["a"], "id": "1"}\n{"question": "q2", "answers": "nope", "id": "2"}\n')
    with pytest.raises(DatasetError, match=r"tasks.jsonl:2: field answers"):
        load_datasets(bad)
    bad.write_text('{"question": "q", "answers": ["a"]}\n{broken\n')
    with pytest.raises(DatasetError, match=r"tasks.jsonl:2: invalid JSON"):
        load_datasets(bad)
    missing = tmp_path / "va.jsonl"
    missing.write_text(json.dumps({"prompt": [{"role": "user", "content": "q"}], "reward_model": {}}) + "\n")
    with pytest.raises(DatasetError, match=r"va.jsonl:1: field reward_model.ground_truth"):
        load_datasets(missing)
    with pytest.raises(DatasetError, match="no loader recognises"):
        load_datasets(tmp_path)
