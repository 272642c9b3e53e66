"""Parquet / HF-datasets files: column detection, embedded image bytes into the run's blobs, datasets.json."""

from __future__ import annotations

import hashlib
import io
import json
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image
from typer.testing import CliRunner

from arena.cli.main import app
from arena.core.dataset import DatasetError, load_datasets
from arena.suites.vistahop.parquet import ParquetImages

runner = CliRunner()


def png(color: tuple[int, int, int], size=(40, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format="PNG")
    return out.getvalue()


def jpeg(color: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (32, 32), color).save(out, format="JPEG")
    return out.getvalue()


def write_hf_style(path, n=5, row_group_size=2):
    """Rows like the released VistaHop subset: chat prompt, reward_model struct, image struct{bytes, path}."""
    images = [png((40 * i, 10, 200)) for i in range(n)]
    table = pa.table({
        "prompt": [[{"role": "user", "content": f"<image>Which city is in picture {i}?"}] for i in range(n)],
        "reward_model": [{"ground_truth": ["Lyon", "Lugdunum"] if i % 2 == 0 else ["Nice"], "style": "rule"}
                         for i in range(n)],
        "image": [[{"bytes": images[i], "path": f"img{i}.png"}] for i in range(n)],
        "extra_info": [{"hops": 2 + 3 * i, "index": i} for i in range(n)],
        "image_search_title_list": [[f"Result {i}a", f"Result {i}b"] for i in range(n)],
        "image_search_thumbnail_list": [[{"bytes": png((250, 250, 10 * i), (64, 48)), "path": "a.png"},
                                         {"bytes": png((5, 5, 10 * i), (64, 48)), "path": "b.png"}] for i in range(n)],
        "id": [f"vh-{i}" for i in range(n)],
    })
    pq.write_table(table, path, row_group_size=row_group_size)
    return images


def test_detects_columns_and_reads_one_embedded_row(tmp_path):
    path = tmp_path / "subset.parquet"
    images = write_hf_style(path)
    [dataset] = load_datasets(path)
    assert [t.id for t in dataset.tasks] == [f"vh-{i}" for i in range(5)]
    first = dataset.tasks[0]
    assert first.question == "Which city is in picture 0?" and first.answers == ["Lyon", "Lugdunum"]
    assert first.hops == 2 and first.level == "L1" and dataset.tasks[3].level == "L3"
    assert first.images == ["parquet:image#0"]
    assert first.metadata["image_search"] == [
        {"title": "Result 0a", "thumbnail": "parquet:image_search_thumbnail_list#0.0"},
        {"title": "Result 0b", "thumbnail": "parquet:image_search_thumbnail_list#0.1"}]
    reader = dataset.embedded
    assert isinstance(reader, ParquetImages) and reader.owns("parquet:image#3")
    assert reader.read("parquet:image#3") == (images[3], "png")
    assert reader.read("parquet:image_search_thumbnail_list#4.1") == (png((5, 5, 40), (64, 48)), "png")


def test_bytes_and_path_columns_and_mapping(tmp_path):
    (tmp_path / "pics").mkdir()
    Image.new("RGB", (20, 20), (1, 2, 3)).save(tmp_path / "pics" / "a.png")
    table = pa.table({"query": ["Q1", "Q2"], "gt": ["A", "B"], "img": [jpeg((9, 9, 9)), None],
                      "picture": ["pics/a.png", "pics/a.png"], "difficulty": ["easy", "hard"], "uid": [7, 8]})
    path = tmp_path / "t.parquet"
    pq.write_table(table, path)
    [dataset] = load_datasets(path)
    assert [(t.id, t.question, t.answers, t.images, t.level) for t in dataset.tasks] == [
        ("7", "Q1", ["A"], ["parquet:img#0"], "easy"), ("8", "Q2", ["B"], [], "hard")]
    assert dataset.embedded.read("parquet:img#0")[1] == "jpg"
    named = tmp_path / "datasets.json"
    named.write_text(json.dumps({"mine": {"annotation": "t.parquet", "reward_fn": ["em_score_mcq"],
                                          "columns": {"image": "picture"}}}))
    [mine] = load_datasets(named)
    assert mine.name == "mine" and mine.tasks[0].images == ["pics/a.png"] and mine.tasks[0].judge == "mcq"


def test_clear_errors_name_the_column(tmp_path):
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"text": ["x"], "answer": ["y"]}), path)
    with pytest.raises(DatasetError, match=r"no question column .*columns: text, answer.*columns.question"):
        load_datasets(path)
    named = tmp_path / "datasets.json"
    named.write_text(json.dumps({"d": {"annotation": "bad.parquet", "columns": {"question": "txt"}}}))
    with pytest.raises(DatasetError, match=r"column 'txt' \(mapped to question\) not found"):
        load_datasets(named)
    escape = tmp_path / "escape.parquet"
    pq.write_table(pa.table({"question": ["x"], "answer": ["y"], "image": ["../../etc/passwd"]}), escape)
    with pytest.raises(Exception, match="escape|outside|leaves"):
        load_datasets(escape)


def test_parquet_with_embedded_images_runs_end_to_end(tmp_path):
    path = tmp_path / "data" / "subset1.parquet"
    path.parent.mkdir()
    images = write_hf_style(path, n=4)
    named = tmp_path / "data" / "datasets.json"
    named.write_text(json.dumps({"vistahop_subset": {"annotation": "subset1.parquet", "reward_fn": ["llm_score"]}}))
    script = tmp_path / "script.yaml"
    script.write_text('"*":\n  - tool: image_zoom_in_tool\n    arguments: {bbox_2d: [0, 0, 500, 500]}\n'
                      '  - tool: image_search_tool\n'
                      '  - text: "<think>hmm</think><answer>lyon</answer>"\n')
    out = tmp_path / "logs"
    result = runner.invoke(app, ["run", "--data", str(named), "--agent", "scripted", "--script", str(script),
                                 "--setting", "search+crop", "--max-rounds", "3", "--judge", "normalized",
                                 "--out", str(out), "--run-id", "pq"])
    assert result.exit_code == 0, result.output
    episodes = {json.loads(line)["task"]["id"]: json.loads(line)
                for line in (out / "pq" / "episodes.jsonl").read_text().splitlines()}
    assert len(episodes) == 4
    for i in range(4):
        episode = episodes[f"vh-{i}"]
        assert episode["finish_reason"] == "answered", episode["error"]
        blob = episode["images"][0]
        assert blob == f"sha256:{hashlib.sha256(images[i]).hexdigest()}.png"
        stored = out / "pq" / "blobs" / "sha256" / blob[7:9] / blob[9:]
        assert stored.read_bytes() == images[i]
        assert episode["steps"][0]["observation"]["images"], "the crop of the embedded image came back"
        search = episode["steps"][1]["observation"]
        assert "Title 1: Result" in search["text"] and len(search["images"]) == 2, search
        thumb = search["images"][1]
        pixel = Image.open(out / "pq" / "blobs" / "sha256" / thumb[7:9] / thumb[9:]).convert("RGB").getpixel((5, 5))
        assert pixel == (5, 5, 10 * i)
    verdicts = [json.loads(line) for line in (out / "pq" / "verdicts.jsonl").read_text().splitlines()]
    correct = {v["episode_id"]: v["correct"] for v in verdicts}
    assert [correct[episodes[f"vh-{i}"]["id"]] for i in range(4)] == [True, False, True, False]


def test_embedded_images_are_read_safely_from_many_threads(tmp_path):
    """Episodes read embedded images from worker threads at once; one shared ParquetFile read concurrently fails
    with pyarrow's "ReadRangeCache did not find matching cache entry" (seen in a full test run)."""
    path = tmp_path / "subset.parquet"
    images = write_hf_style(path, n=40, row_group_size=3)
    reader = ParquetImages(path)
    refs = [f"parquet:image#{i % 40}" for i in range(800)]
    with ThreadPoolExecutor(16) as pool:
        got = list(pool.map(reader.read, refs))
    assert got == [(images[i % 40], "png") for i in range(800)]
