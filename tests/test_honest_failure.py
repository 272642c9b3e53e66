"""Failures of the infrastructure are never scored as wrong answers (issue 30): an endpoint that cannot be reached
stops the run at once, naming its URL; errored episodes are not judged, left out of Pass@1 and counted apart, and the
command exits non-zero; a request field the server refuses is learned once per endpoint. Every server here is local
and answers with the real server's wording (tests/support/real_server.py, tests/support/fake_serper.py name them)."""

from __future__ import annotations

import json
import re
import socket
import time

import pytest

from typer.testing import CliRunner

from arena.cli.main import app
from arena.store.store import RunStore
from tests.support.fake_serper import FakeGoogleApis
from tests.support.openai_server import Reply
from tests.support.real_server import RealServer, Rules
from tests.support.tiny_dataset import write_tiny_dataset
from tests.test_readme_tour import tour_commands

cli = CliRunner()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_tour_model_step_with_nothing_listening_stops_within_30_s_naming_the_url(tmp_path, monkeypatch):
    """README tour, step 3, as written, with nothing at the model's and the judge's URL."""
    step = next(c for c in tour_commands() if c[0] == "run" and "openai" in c)
    model_port, judge_port = closed_port(), closed_port()
    data = write_tiny_dataset(tmp_path / "data", n_items=4)
    args = [str(data) if a == "worlds/vh" else
            a.replace("http://127.0.0.1:8000/v1", f"http://127.0.0.1:{model_port}/v1")
            .replace("http://127.0.0.1:8001/v1", f"http://127.0.0.1:{judge_port}/v1") for a in step]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MY_KEY", "sk-tour-secret")
    monkeypatch.setenv("ARENA_PROGRESS_EVERY", "0")
    started = time.monotonic()
    result = cli.invoke(app, args)
    took = time.monotonic() - started
    output = " ".join(result.output.split())
    assert result.exit_code == 1, output
    assert took < 30, f"took {took:.1f} s"
    url = f"http://127.0.0.1:{model_port}/v1"
    assert f"endpoint {url} cannot be reached (connection refused)" in output, output
    assert f"connection refused {url}" in output  # the progress line names the errors
    assert "sk-tour-secret" not in output
    store = RunStore(tmp_path / "logs" / "tour-qwen")
    episodes = store.episodes()
    assert episodes and len(episodes) < 4 * 3 * 5, "the run stopped instead of burning its grid"
    assert all(e.finish_reason == "error" for e in episodes)
    assert store.verdicts() == [], "an errored episode is not sent to the judge"
    # its summary says first how much of the grid was never played (issue 36), not only "errored"
    summary = " ".join(cli.invoke(app, ["summary", str(store.dir)]).output.split())
    assert summary.startswith(f"incomplete: {60 - len(episodes)} of 60 episodes never played, {len(episodes)} "
                              "errored (in Pass@1 as the published script scores a failed request); 0 played to the "
                              "end"), summary  # the tour's data is in a published format: protocol original
    print(f"\ntour step 3, nothing listening: exit {result.exit_code} after {took:.1f} s, "
          f"{len(episodes)} of 60 episodes recorded")


def test_spent_serper_keys_exit_non_zero_and_the_table_separates_the_errored_episode(tmp_path, monkeypatch):
    """Three episodes, credits for two searches (Serper's 400 "Not enough credits", tests/support/fake_serper.py)."""
    fake = FakeGoogleApis({"serper-key-with-two-credits": 2})
    monkeypatch.setenv("SERPER_API_KEY", "serper-key-with-two-credits")
    data = write_tiny_dataset(tmp_path / "data", n_items=3)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({f"q{i}": [{"tool": "text_search_tool", "arguments": {"query": f"Orvanta {i}"}},
                                            {"answer": "1874"}] for i in range(1, 4)}))
    args = ["run", "--data", str(data), "--agent", "scripted", "--script", str(script), "--setting",
            "text_search_tool", "--max-rounds", "4", "--judge", "normalized", "--web", "live", "--tool-option",
            "web_provider=serper", "--tool-option", f"web_endpoint={fake.base}", "--tool-option",
            "fetch_pages=false", "--tool-option", "web_min_interval=0", "--concurrency", "1",
            "--out", str(tmp_path / "logs"), "--run-id", "serper", "--protocol", "arena"]
    try:
        result = cli.invoke(app, args)
        allowed = cli.invoke(app, ["resume", str(tmp_path / "logs" / "serper"), "--max-error-share", "0.5"])
        fake.credits["serper-key-with-two-credits"] = 2
        original = cli.invoke(app, [a if a not in ("serper", "arena") else {"serper": "serper-original",
                                                                           "arena": "original"}[a] for a in args])
    finally:
        fake.stop()
    output = " ".join(result.output.split())
    assert result.exit_code == 1, output
    assert "errors: 1 (serper: all 1 API key(s) in $SERPER_API_KEY are spent" in output  # the progress line
    assert "1 of 3 episode(s) ended in an error (1 error)" in output and "arena resume" in output
    summary = json.loads((tmp_path / "logs" / "serper" / "summary.json").read_text())
    group = summary["groups"][0]
    assert (group["errored"], group["played"], group["episodes"]) == (1, 2, 3)
    store = RunStore(tmp_path / "logs" / "serper")
    verdicts = {v.episode_id: v for v in store.verdicts()}
    played = [e for e in store.episodes() if e.finish_reason != "error"]
    assert len(verdicts) == 2 and all(e.id in verdicts for e in played), "the errored episode was not judged"
    correct = sum(verdicts[e.id].correct for e in played)
    assert group["pass1"] == round(100 * correct / 2, 4), "Pass@1 over the episodes played to the end"
    assert group["pass1_all"] == round(100 * correct / 3, 4)
    assert "errored" in output and "left out and counted under 'errored'" in output
    # the same run, errors allowed up to half of the episodes (the key is still spent): exit 0
    assert allowed.exit_code == 0, allowed.output
    summary_output = cli.invoke(app, ["summary", str(tmp_path / "logs" / "serper")])
    assert "errored" in summary_output.output
    run_dir = str(tmp_path / "logs" / "serper")
    compared = " ".join(cli.invoke(app, ["compare", run_dir, run_dir]).output.split())
    row = compared.split("─ ", 1)[1]  # the table's row (on a narrow terminal its group wraps: "· N=4" under it)
    assert re.match(r"text_search_tool (· N=4 )?2 50\.00 50\.00 \+0\.00 \[\+0\.00, \+0\.00\] 1 1/1 ", row), row
    assert "left out of both sides" in compared
    assert f"warning: run A (serper) is incomplete: 1 of 3 episodes errored (left out of Pass@1)" in compared
    # under --protocol original the errored episode counts as wrong over all three, and the table says so
    said = " ".join(original.output.split())
    assert original.exit_code == 1, said
    group = json.loads((tmp_path / "logs" / "serper-original" / "summary.json").read_text())["groups"][0]
    assert group["errored"] == 1 and f"{group['pass1_all']:.2f}" in said
    assert "counts errored episodes (error, rejected, context overflow) as wrong over every episode" in said
    # that Pass@1 never stands without the line saying how many episodes errored, before the table
    line = ("incomplete: 1 of 3 episodes errored (in Pass@1 as the published script scores a failed request); 2 "
            "played to the end")
    assert line in said and said.index(line) < said.index(f"{group['pass1_all']:.2f}")
    resummed = " ".join(cli.invoke(app, ["summary", str(tmp_path / "logs" / "serper-original")]).output.split())
    assert resummed.startswith(line)


def refusing_policy(request):
    if "<judge>" in json.dumps(request["messages"]):  # the LLM judge's prompt asks for <judge>Yes|No</judge>
        return Reply(content="<judge>Yes</judge><reason>same year</reason>")
    return Reply(content="<answer>1875</answer>")  # not the exact answer: the judge is asked


def test_refused_fields_are_learned_once_for_the_agent_and_the_judge_whatever_the_model_name(tmp_path):
    """An OpenAI reasoning model behind a deployment name the arena does not know (400 unsupported_parameter for
    max_tokens, unsupported_value for temperature 0: OpenAI's reasoning-model guide; tests/support/real_server.py)."""
    data = write_tiny_dataset(tmp_path / "data", n_items=3)
    rules = Rules(flavour="openai", models={"team-deployment-7"}, reject_params={"max_tokens", "temperature"})
    args = ["run", "--data", str(data), "--agent", "openai", "--model", "team-deployment-7", "--setting", "no-tool",
            "--max-rounds", "2", "--max-tokens", "300", "--judge", "llm", "--judge-model", "team-deployment-7",
            "--out", str(tmp_path / "logs"), "--run-id", "p", "--concurrency", "1", "--protocol", "arena"]
    with RealServer(refusing_policy, rules) as server:
        result = cli.invoke(app, [*args, "--base-url", server.base_url, "--judge-base-url", server.base_url])
        refused = [body["error"]["param"] for _, body in server.refused]
        requests = list(server.requests)
    output = " ".join(result.output.split())
    assert result.exit_code == 0, output
    assert sorted(refused) == ["max_tokens", "temperature"], "each field refused once, then learned"
    sent = requests[-1]
    assert "temperature" not in sent and "max_tokens" not in sent
    agent_calls = [r for r in requests if "max_completion_tokens" in r and r["max_completion_tokens"] == 300]
    assert agent_calls, "max_tokens renamed to the field the server named"
    store = RunStore(tmp_path / "logs" / "p")
    assert {e.finish_reason for e in store.episodes()} == {"answered"}
    learned = store.info().learned_params
    where = next(iter(learned))
    assert "team-deployment-7 at" in where
    assert learned[where]["max_tokens"]["rename"] == "max_completion_tokens"
    assert learned[where]["temperature"]["rename"] is None and learned[where]["temperature"]["value"] == 0.0
    summary = json.loads((tmp_path / "logs" / "p" / "summary.json").read_text())
    assert any("ran at the server's default temperature: the server refused 0.0" in w for w in summary["warnings"])
    assert "ran at the server's default temperature" in output
    assert not any(v.error for v in store.verdicts())
    shown = " ".join(cli.invoke(app, ["summary", str(tmp_path / "logs" / "p")]).output.split())
    assert "sends max_completion_tokens instead of max_tokens" in shown and "default temperature" in shown


def test_a_prompt_count_stuck_at_ollamas_context_is_warned_about(tmp_path):
    """Ollama's /v1 truncates a prompt longer than num_ctx and answers 200 with `prompt_tokens` capped at it
    (tests/support/real_server.py, flavour ollama); here the count stops while the conversation keeps growing, and
    the count stays above 3/4 of the arena's estimate, so only the ceiling gives it away."""
    from tests.test_real_servers import arena_run, cropper
    data = write_tiny_dataset(tmp_path / "data", n_items=1)
    # num_ctx 3000 (Ollama's default is 2048 or 4096 by version): the tiny episode's last turns pass it
    with RealServer(cropper, Rules(flavour="ollama", max_context=3000)) as server:
        result = arena_run(data, tmp_path / "logs", server.base_url, "--max-rounds", "10")
    output = " ".join(result.output.split())
    assert result.exit_code == 0, output
    steps = RunStore(tmp_path / "logs" / "r").episodes()[0].steps
    capped = [s for s in steps if s.usage.prompt_tokens == 3000]
    assert len(capped) >= 2 and all(s.usage.prompt_tokens >= 0.75 * s.input.token_estimate for s in steps)
    assert "the server's prompt count stops at 3000 tokens" in output and "num_ctx" in output
    summary = json.loads((tmp_path / "logs" / "r" / "summary.json").read_text())
    assert any("stops at 3000 tokens" in w for w in summary["warnings"])
    # on the steps: every turn at the ceiling after the first whose estimate is past it, and no other turn
    noted = [s for s in steps if any("fixed context of 3000 tokens" in n for n in s.notes)]
    expected = [s for s in capped[1:] if s.input.token_estimate > 3000 * 1.05]
    assert noted and [s.round for s in noted] == [s.round for s in expected]
    info = json.loads((tmp_path / "logs" / "r" / "run.json").read_text())
    assert any("stops at 3000 tokens" in w for w in info["truncation"])


def test_a_crop_episode_behind_a_300_kb_proxy_limit_finishes(tmp_path):
    """vLLM behind nginx with client_max_body_size 300k (tests/support/body_limit_proxy.py quotes nginx's 413 page):
    each crop adds an image to the conversation; the request that first passes the limit is refused once, the
    budget is learned, and the oldest images are left out from then on."""
    from tests.support.body_limit_proxy import BodyLimitProxy
    from tests.test_real_servers import arena_run, cropper
    data = write_tiny_dataset(tmp_path / "data", n_items=2, grain=0.01)  # ~130 kB per image as sent
    with RealServer(cropper, Rules(flavour="vllm")) as server, BodyLimitProxy(server.base_url, 300_000) as proxy:
        result = arena_run(data, tmp_path / "logs", proxy.base_url, "--max-rounds", "10")
        refused, passed = list(proxy.refused), list(proxy.passed)
    output = " ".join(result.output.split())
    assert result.exit_code == 0, output
    store = RunStore(tmp_path / "logs" / "r")
    episodes = store.episodes()
    assert {e.finish_reason for e in episodes} <= {"answered", "budget"} and len(episodes) == 2
    assert all(e.totals.rounds == 10 for e in episodes)
    assert 1 <= len(refused) <= 2, "at most one refused request per episode (two in flight)"
    assert max(passed) <= 300_000
    budget = store.info().learned_limits["openai:qwen"]["max_request_bytes"]
    assert max(passed) < budget < min(refused)
    elided = [s for e in episodes for s in e.steps if s.input.elided_images]
    assert elided and all("request bytes" in (s.input.elision_reason or "") for s in elided)
    print(f"\n300 kB proxy: {len(refused)} refused request(s) of {refused}, budget learned {budget} bytes, "
          f"{len(passed)} requests passed (largest {max(passed)}), {len(elided)} steps with elided images")


def test_an_outage_in_the_middle_of_a_run_is_waited_out_for_a_bounded_time_then_stops_the_run(tmp_path, monkeypatch):
    """The server answers two episodes, then goes away (nothing listens: connection refused)."""
    monkeypatch.setenv("ARENA_OUTAGE_SECONDS", "3")
    monkeypatch.setenv("ARENA_PROGRESS_EVERY", "0")
    data = write_tiny_dataset(tmp_path / "data", n_items=8)
    with RealServer(refusing_policy, Rules(flavour="vllm", down_after=2)) as server:
        url = server.base_url
        started = time.monotonic()
        result = cli.invoke(app, ["run", "--data", str(data), "--agent", "openai", "--model", "qwen", "--base-url",
                                  url, "--setting", "no-tool", "--judge", "normalized", "--out", str(tmp_path / "logs"),
                                  "--run-id", "o", "--concurrency", "1", "--agent-option", "retry_initial=0.2"])
        took = time.monotonic() - started
    output = " ".join(result.output.split())
    assert result.exit_code == 1, output
    assert f"endpoint {url} cannot be reached (connection refused)" in output
    assert 3 <= took < 20, f"waited {took:.1f} s for a 3 s outage budget"
    episodes = RunStore(tmp_path / "logs" / "o").episodes()
    assert [e.finish_reason for e in episodes] == ["answered", "answered", "error"], "the rest was not burnt"
    assert "of 8 episode(s) have no record" in output
    print(f"\noutage: stopped after {took:.1f} s with an outage budget of 3 s; {len(episodes)} of 8 recorded")


def test_a_judge_endpoint_that_cannot_be_reached_stops_the_run_naming_it(tmp_path):
    """Nothing listens at the judge's URL: the first verdict fails after the judge's retries (~15 s) and the run
    stops there instead of asking the judge about every other episode."""
    data = write_tiny_dataset(tmp_path / "data", n_items=6)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"*": [{"answer": "not the answer"}]}))
    judge_url = f"http://127.0.0.1:{closed_port()}/v1"
    result = cli.invoke(app, ["run", "--data", str(data), "--agent", "scripted", "--script", str(script),
                              "--setting", "no-tool", "--judge", "llm", "--judge-model", "j", "--judge-base-url",
                              judge_url, "--concurrency", "1", "--out",
                              str(tmp_path / "logs"), "--run-id", "j"])
    output = " ".join(result.output.split())
    assert result.exit_code == 1, output
    assert f"the judge's endpoint {judge_url} cannot be reached (connection refused)" in output
    assert len(RunStore(tmp_path / "logs" / "j").verdicts()) == 1, "stopped at the first verdict"


def test_the_cut_turn_is_seen_at_once_from_the_endpoints_own_ratio():
    """Issue 39's episode: the server counted 1926 and 3338 for the arena's 1895 and 3280, then 4096 for 4666 (its
    first cut turn): noted on that turn. A server that counts as the arena estimates is never noted, even on 4096."""
    from arena.agents.truncation import CeilingWatch
    watch = CeilingWatch()
    notes = [watch.note(served, estimate) for served, estimate in ((1926, 1895), (3338, 3280), (4096, 4666))]
    assert notes[:2] == [None, None] and "fixed context of 4096 tokens" in notes[2]
    assert watch.cut_turns == 1 and watch.cut_example == (4096, 4666, pytest.approx(3338 / 3280))
    exact = CeilingWatch()
    assert not any(exact.note(n, n) for n in (1895, 3280, 4096, 4666, 8192))
    below_but_off_ceiling = CeilingWatch()  # a count well below the ratio that lands on no ceiling: not this rule
    assert [below_but_off_ceiling.note(s, e) for s, e in ((1926, 1895), (3338, 3280), (3900, 4666))] == [None] * 3


def ollama_cropper(request):
    """Crops the whole image twice (each crop about 1,600 image tokens), then answers: a 3-round episode."""
    n = sum(m["role"] == "assistant" for m in request["messages"])
    if n >= 2:
        return Reply(content="<answer>1874</answer>")
    return Reply(content='<tool_call>{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [0, 0, 1000, 1000]}}'
                         '</tool_call>')


@pytest.mark.parametrize("num_ctx", [4096, None])
def test_ollamas_first_cut_turn_is_noted_on_its_step_and_in_the_summary(tmp_path, num_ctx):
    """Ollama's /v1 with num_ctx 4096 (tests/support/real_server.py): the answer turn is the first and only one past
    it; it is noted on its step and in the summary. Without a cut (the same server, no num_ctx) nothing is noted."""
    data = write_tiny_dataset(tmp_path / "data", n_items=1)
    with RealServer(ollama_cropper, Rules(flavour="ollama", max_context=num_ctx)) as server:
        result = CliRunner().invoke(app, [
            "run", "--data", str(data), "--agent", "openai", "--model", "qwen", "--base-url", server.base_url,
            "--setting", "crop", "--max-rounds", "6", "--judge", "normalized", "--out", str(tmp_path / "logs"),
            "--run-id", "r", "--image-max-pixels", str(1600 * 28 * 28), "--protocol", "arena"])
    output = " ".join(result.output.split())
    assert result.exit_code == 0, output
    steps = RunStore(tmp_path / "logs" / "r").episodes()[0].steps
    counted = [s.usage.prompt_tokens for s in steps]
    summary = json.loads((tmp_path / "logs" / "r" / "summary.json").read_text())
    noted = [s.round for s in steps if any("fixed context" in n for n in s.notes)]
    if num_ctx is None:
        assert max(counted) > 4096 and not noted and not summary.get("warnings"), (counted, summary.get("warnings"))
        return
    assert counted.count(num_ctx) == 1 and counted[-1] == num_ctx, counted  # the last turn alone is cut
    assert noted == [steps[-1].round]
    assert any("fell to a fixed context (e.g. 4096 tokens" in w for w in summary["warnings"]), summary["warnings"]
    assert "fell to a fixed context" in output
