"""The viewer's failure-analysis features, clicked in real Chromium (issue 16 item 8, issue 20 item 2): the run's
judge named, the gold tool path and evidence chain beside the steps with the first divergence marked, compare mode
naming both agents, budget variants linked, sortable columns, permalinks, click-to-zoom at full resolution,
per-step seconds and tokens, and each step's model input rebuilt from calls.jsonl."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from arena.core.world import WORLD_BUILDERS
from arena.store.calls import read_calls
from arena.runs.config import RunConfig
from arena.runs.plugins import load_plugins
from arena.review.rundata import load_run
from arena.runs.runner import run
from arena.review.viewer import write_viewer
from tests.support.openai_server import OpenAIStub, Reply
from tests.test_viewer import PAYLOAD, open_page

playwright_api = pytest.importorskip("playwright.async_api")

TASK = "vistahop-mini-0002"  # gold path: crop, image search, five text searches (8 rounds)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    load_plugins()
    return WORLD_BUILDERS["vistahop-mini"](tmp_path_factory.mktemp("vh-viewer") / "world", seed=5, size="tiny")


def test_gold_path_compare_variants_sort_permalink_zoom(world: Path, tmp_path: Path) -> None:
    common = dict(data=str(world), settings=["search+crop"], max_rounds=[4, 8], task_ids=[TASK], judge="normalized",
                  out=str(tmp_path / "logs"))
    oracle = run(RunConfig(agent="oracle", run_id="oracle", **common))
    wander = {"*": [{"tool": "text_search_tool", "arguments": {"query": f"harbour {PAYLOAD}"}}, {"answer": PAYLOAD}]}
    scripted = run(RunConfig(agent="scripted", agent_options={"script": wander}, run_id="wander", **common))
    page_path = write_viewer([load_run(oracle.run_dir), load_run(scripted.run_dir)], tmp_path / "compare.html")
    full = [p.name for p in (tmp_path / "compare-view").iterdir()]  # one file: only full-resolution images
    assert full and all(name.startswith("f-") and name.endswith(".js") for name in full)

    async def actions(page):
        seen = {"judges": await page.inner_text("#judges"),
                "heads": await page.locator("#head th").all_inner_texts()}
        await page.click("#head th[data-col='n']")
        seen["n_up"] = [await page.locator("tr.row td:nth-child(4)").all_inner_texts()]
        await page.click("#head th[data-col='n']")
        seen["n_down"] = await page.locator("tr.row td:nth-child(4)").all_inner_texts()
        seen["sorted"] = await page.get_attribute("#head th[data-col='n']", "data-sorted")
        await page.locator("tr.row").first.click()  # N = 8
        await page.wait_for_selector(".detail .col:nth-child(2) .gold")
        cols = page.locator(".detail .col")
        seen["agents"] = [await cols.nth(k).locator("p.agent").inner_text() for k in range(2)]
        seen["gold_a"] = await cols.nth(0).locator(".gold").inner_text()
        seen["gold_b"] = await cols.nth(1).locator(".gold").inner_text()
        seen["diverged_b"] = await cols.nth(1).locator(".step.diverge h4").all_inner_texts()
        seen["diverged_a"] = await cols.nth(0).locator(".step.diverge").count()
        seen["marked_rows"] = await cols.nth(1).locator(".gold tr.diverge").all_inner_texts()
        seen["timing"] = await cols.nth(0).locator(".step h4 .timing").first.inner_text()
        seen["permalink"] = await cols.nth(1).locator("a.permalink").get_attribute("href")
        # budget variant: the N = 4 row of the same task opens from the link
        await page.locator(".detail button.variant").first.click()
        await page.wait_for_selector("tr.row.focus")
        seen["variant_row"] = await page.locator("tr.row.focus td:nth-child(4)").inner_text()
        await page.wait_for_selector(".detail .col .gold")
        seen["variant_gold"] = await page.locator(".detail").last.inner_text()
        # click-to-zoom: the task image at full resolution
        await page.locator(".detail .gallery img.zoomable").first.click()
        await page.wait_for_selector("#zoom-img[data-full='1']")
        seen["zoom"] = await page.evaluate("[document.getElementById('zoom').hidden, "
                                           "document.getElementById('zoom-img').naturalWidth]")
        await page.keyboard.press("Escape")
        seen["closed"] = await page.evaluate("document.getElementById('zoom').hidden")
        seen["xss"] = await page.evaluate("window.__xss === undefined")
        return seen

    problems, seen = asyncio.run(open_page(page_path, actions))
    assert problems == []
    assert "oracle: judge normalized (the run's judge) · agent oracle" in seen["judges"]
    assert "wander: judge normalized (the run's judge) · agent scripted" in seen["judges"]
    assert "oracle (oracle)" in seen["heads"] and "wander (scripted)" in seen["heads"]
    assert seen["n_up"] == [["4", "8"]] and seen["n_down"] == ["8", "4"] and seen["sorted"] == "desc"
    assert seen["agents"][0].startswith("agent oracle · judge normalized") and seen["agents"][1].startswith("agent scripted")
    assert "Gold tool path" in seen["gold_a"] and "the agent followed it to the end" in seen["gold_a"]
    assert seen["diverged_a"] == 0
    assert "round 1 called text_search_tool where gold step 1 calls image_zoom_in_tool" in seen["gold_b"]
    assert [h.startswith("Round 1 · tool_call · text_search_tool") and "first divergence" in h
            for h in seen["diverged_b"]] == [True]
    assert seen["marked_rows"][0].startswith("1\timage_zoom_in_tool")
    assert "Gold evidence chain" in seen["gold_a"] and "never" not in seen["gold_a"].split("Gold evidence chain")[1]
    assert "model" in seen["timing"] and "tool" in seen["timing"] and "tokens" in seen["timing"]
    assert seen["variant_row"] == "4"
    assert "stopped before gold step" in seen["variant_gold"]  # N = 4 ends before the 7 gold calls
    assert seen["zoom"] == [False, 3840] and seen["closed"] is True and seen["xss"] is True

    # the permalink opens its episode on load, over file://
    episode_id = seen["permalink"].removeprefix("#ep=")
    assert episode_id in {e.id for e in scripted.episodes}

    errors, text = asyncio.run(open_at(page_path, seen["permalink"]))
    assert errors == [] and f"episode {episode_id}" in text


async def open_at(page_path: Path, fragment: str) -> tuple[list[str], str]:
    """Open the page at a permalink fragment over file://; the errors and the text of the row it opened."""
    from arena.tools.chromium import launch_chromium

    async with playwright_api.async_playwright() as p:
        browser = await launch_chromium(p)
        try:
            page = await browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            await page.goto(page_path.resolve().as_uri() + fragment)
            await page.wait_for_selector("body[data-ready='1']", timeout=15000)
            await page.wait_for_selector("tr.row.focus")
            await page.wait_for_selector(".detail .head")
            return errors, await page.inner_text(".detail")
        finally:
            await browser.close()


def test_compare_pairs_two_single_setting_runs_across_settings(tiny_data: Path, tmp_path: Path) -> None:
    """Runs of one setting each (here no-tool vs search) pair by (task, N, repeat) and name agent and setting."""
    common = dict(data=str(tiny_data), agent="scripted", out=str(tmp_path / "logs"))
    plain = run(RunConfig(settings=["no-tool"], agent_options={"script": {"*": [{"answer": "1874"}]}}, run_id="plain",
                          **common))
    searching = run(RunConfig(settings=["search"], run_id="searching", agent_options={"script": {"*": [
        {"tool": "text_search_tool", "arguments": {"query": "Orvanta lighthouse"}}, {"answer": "Mirelle Dastrow"}]}},
        **common))
    page_path = write_viewer([load_run(plain.run_dir), load_run(searching.run_dir)], tmp_path / "pair.html")

    async def actions(page):
        seen = {"rows": await page.locator("tr.row").all_inner_texts()}
        await page.locator("tr.row").first.click()
        await page.wait_for_selector(".detail .col:nth-child(2) p.agent")
        seen["heads"] = await page.locator(".detail p.agent").all_inner_texts()
        return seen

    problems, seen = asyncio.run(open_page(page_path, actions))
    assert problems == []
    assert len(seen["rows"]) == 2 and all("no-tool | search" in r for r in seen["rows"])
    assert [h.split(" · ")[0] for h in seen["heads"]] == ["agent scripted"] * 2
    assert [h.split(" · ")[2] for h in seen["heads"]] == ["no-tool", "search"]


def crop_then_answer(request):
    """A model that crops once (saying something hostile), then answers."""
    if sum(m["role"] == "assistant" for m in request["messages"]) == 0:
        call = {"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [700, 50, 1000, 250], "label": "sign"}}
        return Reply(content=f"<think>{PAYLOAD}</think>\n<tool_call>\n{json.dumps(call)}\n</tool_call>",
                     prompt_tokens=1234, completion_tokens=56)
    return Reply(content="<answer>1874</answer>", prompt_tokens=2345, completion_tokens=7)


@pytest.mark.parametrize("single", [True, False])
def test_model_input_toggle_shows_the_request_of_each_step(tiny_data: Path, tmp_path: Path, single: bool) -> None:
    with OpenAIStub(crop_then_answer) as server:
        result = run(RunConfig(data=str(tiny_data), agent="openai", out=str(tmp_path / "logs"), task_ids=["q2"],
                               agent_options={"model": "qwen", "base_url": server.base_url}, max_rounds=[4]))
    [episode] = result.episodes
    calls = read_calls(result.run_dir, episode.key)
    assert len(calls) == 2 == len(episode.steps)
    page_path = write_viewer([load_run(result.run_dir)], result.run_dir / "viewer.html", single=single,
                             shard_episodes=1)
    system = next(m["content"] for m in calls[0]["request"]["messages"] if m["role"] == "system")
    if not single:  # the requests live in the shards, never in the page's index
        assert system[:60] not in page_path.read_text()

    async def actions(page):
        await page.locator("tr.row").first.click()
        await page.wait_for_selector(".detail .step details.input")
        seen = {"timing": await page.locator(".step h4 .timing").all_inner_texts()}
        toggles = page.locator(".step details.input")
        seen["toggles"] = await toggles.count()
        out = []
        for k in range(seen["toggles"]):
            await toggles.nth(k).locator("summary").click()
            await page.wait_for_selector(f".step:nth-child({k + 1}) details.input .request")
            box = toggles.nth(k).locator(".request")
            out.append({"messages": await box.locator(".msg").count(), "text": await box.inner_text(),
                        "thumbs": [await t.get_attribute("src") for t in await box.locator("img.thumb").all()]})
        seen["inputs"] = out
        seen["xss"] = await page.evaluate("window.__xss === undefined")
        return seen

    problems, seen = asyncio.run(open_page(page_path, actions))
    assert problems == [] and seen["xss"] is True
    assert seen["toggles"] == 2
    assert "tokens 1234 in / 56 out" in seen["timing"][0] and "tokens 2345 in / 7 out" in seen["timing"][1]
    for shown, call in zip(seen["inputs"], calls):
        assert shown["messages"] == len(call["request"]["messages"])
        assert system[:60] in shown["text"] and "In which year was the lighthouse" in shown["text"]
        images = sum(1 for m in call["request"]["messages"] if isinstance(m.get("content"), list)
                     for p in m["content"] if p.get("type") == "image_url")
        assert len(shown["thumbs"]) == images >= 1 and all(s.startswith("data:image/jpeg;base64,") for s in shown["thumbs"])
    assert PAYLOAD in seen["inputs"][1]["text"]  # the model's own hostile text, sent back to it, shown as text
    assert len(seen["inputs"][1]["thumbs"]) == 2  # the task image and the crop
    errors, text = asyncio.run(open_at(page_path, f"#ep={episode.id}"))  # the permalink, in either layout
    assert errors == [] and f"episode {episode.id}" in text


def test_model_input_of_a_prefix_shared_episode_comes_from_its_source(tiny_data: Path, tmp_path: Path) -> None:
    """N = 1 reuses round 1 of N = 2 (prefix sharing) and makes only its final-answer call: its first step shows
    the source's request, its last its own."""
    with OpenAIStub(crop_then_answer) as server:
        result = run(RunConfig(data=str(tiny_data), agent="openai", out=str(tmp_path / "logs"), task_ids=["q2"],
                               agent_options={"model": "qwen", "base_url": server.base_url}, max_rounds=[1, 2],
                               protocol="arena"))  # the arena's protocol makes the final-answer turn
    short = next(e for e in result.episodes if e.budget.max_rounds == 1)
    source = next(e for e in result.episodes if e.budget.max_rounds == 2)
    assert short.meta.get("prefix_key") == source.key and [s.final_turn for s in short.steps] == [False, True]
    own, borrowed = read_calls(result.run_dir, short.key), read_calls(result.run_dir, source.key)
    assert len(own) == 1 and len(borrowed) == 2
    page_path = write_viewer([load_run(result.run_dir)], result.run_dir / "viewer.html")

    async def actions(page):
        await page.select_option("#f-n", "1")
        await page.locator("tr.row").first.click()
        await page.wait_for_selector(".detail .step details.input")
        toggles = page.locator(".step details.input")
        counts = []
        for k in range(await toggles.count()):
            await toggles.nth(k).locator("summary").click()
            await page.wait_for_selector(f".step:nth-child({k + 1}) details.input .request")
            counts.append(await toggles.nth(k).locator(".request .msg").count())
        return counts

    problems, counts = asyncio.run(open_page(page_path, actions))
    assert problems == []
    assert counts == [len(borrowed[0]["request"]["messages"]), len(own[0]["request"]["messages"])]
    assert counts[1] > counts[0]
