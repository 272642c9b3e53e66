"""Human agreement: `arena annotate` writes a labelling page, a person labels answers in Chromium, the page saves
labels, and `arena agreement` compares them with the judge (percent, Cohen's kappa, Fleiss' kappa)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.cli.main import app
from arena.review.annotate import allocate, sample_episodes
from arena.review.rundata import load_run
from tests.support.tiny_dataset import scene

playwright_api = pytest.importorskip("playwright.async_api")
runner = CliRunner()
PAYLOAD = "</script><script>window.__xss=1</script><img src=x onerror=\"window.__xss=2\">"


def make_run(tmp_path: Path) -> Path:
    """12 items over three levels, two settings; the scripted agent answers right on even items."""
    root = tmp_path / "data"
    (root / "images").mkdir(parents=True)
    scene().save(root / "images" / "scene.png")
    items, script = [], {}
    for i in range(12):
        items.append({"id": f"q{i}", "prompt": [{"role": "user", "content": f"<image>Question {i} {PAYLOAD if i == 0 else ''}"}],
                      "reward_model": {"ground_truth": [f"answer {i}"]}, "image": ["images/scene.png"],
                      "hops": [2, 6, 11][i % 3]})
        script[f"q{i}"] = [{"answer": f"answer {i}" if i % 2 == 0 else f"wrong {PAYLOAD}"}]
    (root / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    (tmp_path / "script.json").write_text(json.dumps(script))
    result = runner.invoke(app, ["run", "--data", str(root / "items.jsonl"), "--agent", "scripted", "--script",
                                 str(tmp_path / "script.json"), "--setting", "no-tool,crop", "--max-rounds", "2",
                                 "--judge", "normalized", "--out", str(tmp_path / "logs"), "--run-id", "ann"])
    assert result.exit_code == 0, result.output
    return tmp_path / "logs" / "ann"


def test_allocation_is_proportional_with_one_per_stratum():
    assert allocate({("a",): 10, ("b",): 30, ("c",): 1}, 8) == {("a",): 2, ("b",): 5, ("c",): 1}
    assert sum(allocate({("a",): 100, ("b",): 7}, 210).values()) == 107
    assert sum(allocate({(str(i),): 3 for i in range(50)}, 210).values()) == 150


def test_sample_is_stratified_and_seeded(tmp_path):
    run_dir = make_run(tmp_path)
    run = load_run(run_dir, "normalized")
    first = sample_episodes(run, 12, ["level", "setting"], seed=5)
    assert [e.id for e, _ in first] == [e.id for e, _ in sample_episodes(run, 12, ["level", "setting"], seed=5)]
    assert Counter((e.task.level, e.setting) for e, _ in first) == {(lv, s): 2 for lv in ("L1", "L2", "L3")
                                                                   for s in ("no-tool", "crop")}
    with pytest.raises(ValueError, match="unknown field"):
        sample_episodes(run, 5, ["colour"], seed=1)


def cohen(a, b):
    n = len(a)
    po = sum(x == y for x, y in zip(a, b)) / n
    pa, pb = sum(a) / n, sum(b) / n
    pe = pa * pb + (1 - pa) * (1 - pb)
    return (po - pe) / (1 - pe)


async def label_in_chromium(page_path: Path, name: str, decide, flag_first: bool, downloads: Path):
    from arena.tools.chromium import launch_chromium

    async with playwright_api.async_playwright() as p:
        browser = await launch_chromium(p)
        try:
            page = await browser.new_page(accept_downloads=True)
            problems: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            await page.goto(page_path.resolve().as_uri())
            await page.wait_for_selector("body[data-ready='1']", timeout=15000)
            data = json.loads(await page.text_content("#data"))
            await page.fill("#annotator", name)
            seen = []
            for i, item in enumerate(data["items"]):
                assert await page.text_content("#pos") == f"{i + 1} / {len(data['items'])}"
                assert await page.text_content("#progress-text") == f"{i} of {len(data['items'])} labelled"
                shown = await page.text_content("#answer")
                seen.append(shown)
                if flag_first and i == 0:
                    await page.check("#vague")
                await page.click("#correct" if decide(item) else "#incorrect")
            assert await page.text_content("#progress-text") == f"{len(data['items'])} of {len(data['items'])} labelled"
            await page.click("#prev")
            assert await page.get_attribute("#correct" if decide(data["items"][-1]) else "#incorrect", "class") \
                in ("on", "off on")
            async with page.expect_download() as info:
                await page.click("#save")
            download = await info.value
            target = downloads / download.suggested_filename
            await download.save_as(target)
            xss = await page.evaluate("window.__xss")
            return target, problems, xss, seen, data
        finally:
            await browser.close()


def test_annotate_page_in_chromium_then_agreement(tmp_path):
    run_dir = make_run(tmp_path)
    out = runner.invoke(app, ["annotate", str(run_dir), "--sample", "10", "--stratify", "level,setting,agent",
                              "--seed", "7", "--judge", "normalized"])
    assert out.exit_code == 0, out.output
    page_path = run_dir / "annotate-7.html"
    html = page_path.read_text()
    assert "</script><script>window.__xss" not in html and "default-src 'none'" in html
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    run = load_run(run_dir, "normalized")
    judge = {e.id: run.chosen[e.id].correct for e in run.episodes}
    # Annotator A agrees with the judge except on q2 items; B says "correct" whenever the answer starts with "a".
    a_says = lambda item: judge[item["episode_id"]] != item["key"].startswith("q2|")  # noqa: E731
    b_says = lambda item: item["answer"].startswith("answer")  # noqa: E731
    file_a, problems, xss, seen, data = asyncio.run(label_in_chromium(page_path, "Ann", a_says, True, downloads))
    assert problems == [] and xss is None and len(data["items"]) == 10
    assert all("judge" not in item and "correct" not in item for item in data["items"])
    file_b, problems, _, _, _ = asyncio.run(label_in_chromium(page_path, "Bo", b_says, False, downloads))
    assert problems == []
    saved_a = json.loads(file_a.read_text())
    assert saved_a["annotator"] == "Ann" and len(saved_a["labels"]) == 10
    assert sum(r["too_vague"] for r in saved_a["labels"]) == 1
    labels_a = {r["episode_id"]: r["label"] == "correct" for r in saved_a["labels"]}
    assert labels_a == {it["episode_id"]: a_says(it) for it in data["items"]}
    result = runner.invoke(app, ["agreement", str(run_dir), str(file_a), str(file_b), "--judge", "normalized"])
    assert result.exit_code == 0, result.output
    ids = [it["episode_id"] for it in data["items"]]
    a = [labels_a[i] for i in ids]
    b = [b_says(it) for it in data["items"]]
    j = [judge[i] for i in ids]
    agree_a = 100 * sum(x == y for x, y in zip(a, j)) / len(ids)
    row_a = next(line for line in result.output.splitlines() if "Ann" in line)
    assert f"{agree_a:.1f}" in row_a and f"{cohen(a, j):.3f}" in row_a
    p = (sum(a) + sum(b)) / (2 * len(ids))
    observed = sum(1.0 if x == y else 0.0 for x, y in zip(a, b)) / len(ids)
    expected = p * p + (1 - p) * (1 - p)
    assert f"{(observed - expected) / (1 - expected):.3f}" in result.output
    assert "Fleiss' kappa across 2 annotators" in result.output
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({**saved_a, "run_id": "other"}))
    bad = runner.invoke(app, ["agreement", str(run_dir), str(wrong)])
    assert bad.exit_code != 0 and "field run_id" in bad.output
