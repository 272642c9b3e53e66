"""Run store integrity: appends after a torn tail, the run-directory lock (two real `arena run` processes),
`arena doctor`, the episode index, the streaming summary, and resume of a moved run directory in place."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.core.dataset import load_datasets
from arena.core.jsonl import append_line
from arena.judges.llm import JudgeCache
from arena.judges.metrics import summarize
from arena.cli.interrupts import RunGuard
from arena.cli.main import app
from arena.runs.config import RunConfig
from arena.store.lock import RunLock, RunLockedError
from arena.store.run_index import INDEX_NAME, EpisodeIndex
from arena.runs.runner import run
from arena.judges.run_summary import summarize_store
from arena.store.store import RunStore
from arena.suites.mmir.world import build as build_mmir
from tests.support.openai_server import OpenAIStub, Reply
from tests.support.tiny_dataset import write_tiny_dataset

ARENA = str(Path(sys.executable).with_name("arena"))  # the console script, as a user runs it
SCRIPT = {"q1": [{"tool": "text_search_tool", "arguments": {"query": "Orvanta lighthouse"}},
                 {"answer": "Mirelle Dastrow"}],
          "*": [{"answer": "1874"}]}


def scripted_run(data: Path, out: Path, run_id: str, repeats: int = 2, script=SCRIPT):
    return run(RunConfig(data=str(data), agent="scripted", agent_options={"script": script}, repeats=repeats,
                         out=str(out), run_id=run_id))


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_append_after_a_torn_tail_starts_on_a_fresh_line(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    append_line(path, b'{"a": 1}\n')
    with path.open("ab") as fh:
        fh.write(b'{"a": 2, "cut')
    assert append_line(path, b'{"a": 3}\n') == len(b'{"a": 1}\n')
    assert path.read_bytes() == b'{"a": 1}\n{"a": 3}\n'


def test_torn_verdict_tail_then_arena_judge_leaves_a_valid_store(tmp_path: Path) -> None:
    data = write_tiny_dataset(tmp_path / "data")
    result = scripted_run(data, tmp_path / "logs", "torn")
    verdicts = result.run_dir / "verdicts.jsonl"
    with verdicts.open("ab") as fh:  # what a judge killed mid-write leaves
        fh.write(b'{"episode_id": "' + result.episodes[0].id.encode() + b'", "key": "q1|search+crop|10|0|scr')
    cli = CliRunner()
    judged = cli.invoke(app, ["judge", str(result.run_dir), "--judge", "normalized", "--as", "again"])
    assert judged.exit_code == 0, judged.output
    lines = records(verdicts)  # every line parses
    assert len(lines) == 8 and sum(v["judge"] == "again" for v in lines) == 4
    assert cli.invoke(app, ["summary", str(result.run_dir)]).exit_code == 0
    resumed = cli.invoke(app, ["resume", str(result.run_dir)])
    assert resumed.exit_code == 0, resumed.output
    doctor = cli.invoke(app, ["doctor", str(result.run_dir)])
    assert doctor.exit_code == 0 and doctor.output.rstrip().endswith("ok"), doctor.output


def test_judge_cache_append_repairs_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "judge_cache.jsonl"
    path.write_text('{"key": "a", "output": "yes"}\n{"key": "b", "outp')
    cache = JudgeCache(path)
    asyncio.run(cache.put("c", "no"))
    assert [json.loads(line)["key"] for line in path.read_text().splitlines()] == ["a", "c"]
    assert JudgeCache(path).get("c") == "no"


def slow_answer(request):
    return Reply(content="<answer>1874</answer>", delay=0.2)


def arena_run(server, data: Path, out: Path) -> list[str]:
    return [ARENA, "run", "--data", str(data), "--agent", "openai", "--model", "m",
            "--base-url", server.base_url, "--judge", "normalized", "--concurrency", "2", "--repeats", "2",
            "--out", str(out), "--run-id", "twice"]


def test_two_concurrent_runs_of_one_command_one_is_refused(tmp_path: Path) -> None:
    data = write_tiny_dataset(tmp_path / "data", n_items=8)
    out = tmp_path / "logs"
    with OpenAIStub(slow_answer) as server:
        procs = [subprocess.Popen(arena_run(server, data, out), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, env={**os.environ, "COLUMNS": "300"}) for _ in range(2)]
        outputs = [p.communicate(timeout=180)[0] for p in procs]
        served = len(server.requests)
    codes = [p.returncode for p in procs]
    assert sorted(codes) == [0, 2], outputs
    winner, loser = (procs[0], procs[1]) if codes[0] == 0 else (procs[1], procs[0])
    refused = " ".join(outputs[procs.index(loser)].split())
    assert f"in use by another process: pid {winner.pid} on host {socket.gethostname()}" in refused
    episodes = records(out / "twice" / "episodes.jsonl")
    assert len(episodes) == len({e["key"] for e in episodes}) == 16
    assert served == 16  # the refused process played nothing
    assert (out / "twice" / ".lock").read_text() == ""  # released by the winner


def test_a_refused_run_never_removes_the_directory_another_process_runs_in(tmp_path: Path) -> None:
    """The race CI hit: two runs of one command start together, both find no run directory and so both would own it
    if refused before recording anything. The one refused by the lock (or for any reason while the other holds
    it) keeps its hands off; once no process holds the lock, a directory it made and nothing recorded is removed."""
    run_dir = tmp_path / "logs" / "twice"
    mine, theirs = RunGuard(), RunGuard()
    mine.seen(run_dir)
    theirs.seen(run_dir)
    assert mine.created and theirs.created  # both saw no directory
    holder = RunLock(run_dir, "arena run").acquire()  # the other process won the lock and opened its run
    try:
        (run_dir / "run.json").write_text("{}")
        assert not mine.refused()
        assert (run_dir / "run.json").is_file() and (run_dir / ".lock").is_file()
    finally:
        holder.release()
    RunStore(run_dir).episodes_path.write_text('{"key": "e1"}\n')  # it recorded an episode, then ended
    assert not mine.refused() and run_dir.is_dir()
    RunStore(run_dir).episodes_path.write_text("")  # (had it recorded none, the directory goes)
    assert theirs.refused() and not run_dir.exists()


def test_refused_process_waits_for_a_holder_that_locked_but_has_not_written(tmp_path: Path) -> None:
    """The race CI once hit: the second process reads .lock between the holder's flock and its write."""
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    fd = os.open(run_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # locked, details not yet written
    late = threading.Timer(0.3, lambda: os.pwrite(fd, json.dumps({"pid": 4242, "host": "h1"}).encode(), 0))
    late.start()
    try:
        with pytest.raises(RunLockedError, match="pid 4242 on host h1"):
            RunLock(run_dir, "arena run").acquire()
    finally:
        late.join()
        os.close(fd)


def test_judge_on_a_locked_run_stops_naming_the_holder(tmp_path: Path) -> None:
    data = write_tiny_dataset(tmp_path / "data")
    result = scripted_run(data, tmp_path / "logs", "held", repeats=1)
    with RunLock(result.run_dir, "test holder"):
        started = time.perf_counter()
        out = CliRunner().invoke(app, ["judge", str(result.run_dir), "--judge", "normalized", "--redo"])
        assert time.perf_counter() - started < 5
    assert out.exit_code == 2
    assert f"pid {os.getpid()} on host {socket.gethostname()} (test holder" in " ".join(out.output.split())
    assert len(records(result.run_dir / "verdicts.jsonl")) == 2


def test_doctor_finds_and_repairs(tmp_path: Path) -> None:
    data = write_tiny_dataset(tmp_path / "data")
    result = scripted_run(data, tmp_path / "logs", "sick")
    run_dir = result.run_dir
    image = result.episodes[0].images[0]
    episodes = run_dir / "episodes.jsonl"
    lines = episodes.read_text().splitlines(keepends=True)
    # a corrupt middle line, an orphan verdict, a torn tail, a stale summary, a lost image, a stale index
    lines.insert(1, '{"id": "broken"\n')
    episodes.write_text("".join(lines) + '{"id": "e9", "ru')
    verdict = records(run_dir / "verdicts.jsonl")[0]
    with (run_dir / "verdicts.jsonl").open("a") as fh:
        fh.write(json.dumps({**verdict, "episode_id": "no-such-episode"}) + "\n")
    summary = json.loads((run_dir / "summary.json").read_text())
    true_pass1 = summary["groups"][0]["pass1"]
    summary["groups"][0]["pass1"] = 99.0
    (run_dir / "summary.json").write_text(json.dumps(summary))
    blob = RunStore(run_dir).blobs.path(image)
    moved = blob.read_bytes()
    blob.unlink()
    cli = CliRunner(env={"COLUMNS": "300"})

    checked = cli.invoke(app, ["doctor", str(run_dir)])
    assert checked.exit_code == 1
    text = checked.output
    for kind in ("corrupt_line", "torn_tail", "orphan_verdict", "missing_blob", "stale_index"):
        assert kind in text, text
    assert f"{episodes}:2: corrupt_line" in text

    repaired = cli.invoke(app, ["doctor", str(run_dir), "--repair"])
    assert repaired.exit_code == 1  # the lost image cannot be repaired
    assert "missing_blob" in repaired.output and "[cannot be repaired]" in repaired.output
    assert "summary_mismatch" in repaired.output
    assert (run_dir / "quarantine" / "episodes.jsonl").read_text() == '{"id": "broken"\n'
    assert "no-such-episode" in (run_dir / "quarantine" / "verdicts.jsonl").read_text()
    assert json.loads((run_dir / "summary.json").read_text())["groups"][0]["pass1"] == true_pass1
    blob.write_bytes(moved)
    again = cli.invoke(app, ["doctor", str(run_dir)])
    assert again.exit_code == 0, again.output
    assert cli.invoke(app, ["summary", str(run_dir)]).exit_code == 0


def test_index_is_kept_by_appends_caught_up_and_rebuilt(tmp_path: Path) -> None:
    data = write_tiny_dataset(tmp_path / "data")
    result = scripted_run(data, tmp_path / "logs", "indexed")
    store = RunStore(result.run_dir)
    index_path = result.run_dir / INDEX_NAME
    keys = [e.key for e in store.episodes()]

    def check() -> None:
        index = EpisodeIndex.load(store.episodes_path)
        assert list(index.latest()) == keys
        assert [store.read_episode(e).id for e in index.latest().values()] == [e.id for e in store.episodes()]

    full = index_path.read_bytes()
    assert len(full.splitlines()) == 4
    check()
    index_path.write_bytes(b"".join(full.splitlines(keepends=True)[:2]))  # a writer killed between two appends
    check()
    assert index_path.read_bytes() == full
    index_path.unlink()
    check()
    assert index_path.read_bytes() == full
    index_path.write_bytes(full[:-7])  # torn
    check()
    shutil.copy(store.episodes_path, tmp_path / "copy")
    store.episodes_path.write_bytes(b"".join(store.episodes_path.read_bytes().splitlines(keepends=True)[1:]))
    keys = keys[1:]
    check()  # episodes.jsonl rewritten: the index no longer matches and is rebuilt


def test_streaming_summary_equals_summarize(tmp_path: Path) -> None:
    data = write_tiny_dataset(tmp_path / "data", n_items=3)
    result = scripted_run(data, tmp_path / "logs", "same", repeats=3)
    store = RunStore(result.run_dir)
    first = store.episodes()[0]
    store.append_episode(first.model_copy(update={"id": "retry", "finish_reason": "error", "error": "boom"}))
    verdicts = store.verdicts()  # a failed judge call and an extracted answer, read from columns too
    store.append_verdict(verdicts[1].model_copy(update={"error": "HTTP 500 from the judge", "correct": False}))
    store.append_verdict(verdicts[2].model_copy(update={"extracted": "Something else"}))
    for judge in ("auto", "normalized", "llm"):
        assert summarize_store(store, judge) == summarize(store.episodes(), store.verdicts(), judge)
    group = summarize_store(store, "normalized")["groups"][0]
    assert group["judge_error_reasons"] == {"HTTP 500 from the judge": 1} and "majority_at_k" in group
    world = build_mmir(tmp_path / "mmir", seed=5, size="small", count=3)
    tasks = [t for t in load_datasets(world)[0].tasks if t.id.endswith(":mcq")]
    script = {t.id: [{"answer": f'<ans>"[{t.answers[0]}]"</ans>'}] for t in tasks[:2]}
    script["*"] = [{"answer": "<ans>\"[0]\"</ans>"}]
    mmir = run(RunConfig(data=str(world), agent="scripted", agent_options={"script": script}, settings=["no-tool"],
                         judge=None, task_ids=[t.id for t in tasks], out=str(tmp_path / "logs"), run_id="mmir"))
    store = RunStore(mmir.run_dir)
    streamed = summarize_store(store)
    assert "mmir" in streamed["groups"][0]["suites"]
    assert streamed == summarize(store.episodes(), store.verdicts())


def test_resume_continues_a_moved_run_in_place(tmp_path: Path) -> None:
    data = write_tiny_dataset(tmp_path / "data")
    logs = tmp_path / "logs"
    result = scripted_run(data, logs, "abc")
    episodes = result.run_dir / "episodes.jsonl"
    kept = episodes.read_text().splitlines(keepends=True)[:2]
    episodes.write_text("".join(kept))  # an interrupted run: two of four episodes recorded
    before = [json.loads(line)["id"] for line in kept]
    shutil.move(str(result.run_dir), str(logs / "baseline"))
    out = CliRunner().invoke(app, ["resume", str(logs / "baseline")])
    assert out.exit_code == 0, out.output
    assert sorted(p.name for p in logs.iterdir()) == ["baseline"]  # nothing new beside it
    after = records(logs / "baseline" / "episodes.jsonl")
    assert [e["id"] for e in after[:2]] == before and len(after) == 4  # only the two missing episodes ran
    assert len({e["key"] for e in after}) == 4
    assert json.loads((logs / "baseline" / "run.json").read_text())["run_id"] == "abc"
    again = CliRunner().invoke(app, ["resume", str(logs / "baseline")])
    assert again.exit_code == 0 and len(records(logs / "baseline" / "episodes.jsonl")) == 4


@pytest.mark.parametrize("make", ["missing", "empty", "file"])
def test_resume_refuses_what_is_not_a_run(tmp_path: Path, make: str) -> None:
    target = tmp_path / "target"
    if make == "empty":
        target.mkdir()
    elif make == "file":
        target.write_text("x")
    out = CliRunner(env={"COLUMNS": "300"}).invoke(app, ["resume", str(target)])
    assert out.exit_code == 2
    assert "not a run directory" in out.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if make == "missing" else ["target"])


def test_finished_episodes_are_judged_and_reported_while_the_run_goes_on(tmp_path: Path) -> None:
    """A verdict takes the next free slot before an episode not yet started: the progress moves from the first
    episodes on (a FIFO semaphore made every judging wait until the last episode had started)."""
    data = write_tiny_dataset(tmp_path / "data", n_items=12)
    served_at_first_report: list[int] = []
    with OpenAIStub(lambda request: Reply(content="<answer>1874</answer>", delay=0.1)) as server:
        result = run(RunConfig(data=str(data), agent="openai", judge="normalized", out=str(tmp_path / "o"),
                               run_id="r", concurrency=2, agent_options={"model": "m", "base_url": server.base_url}),
                     progress=lambda episode, verdict: served_at_first_report.append(len(server.requests)))
    assert len(result.episodes) == 12 and len(served_at_first_report) == 12
    assert served_at_first_report[0] <= 4, served_at_first_report


def test_files_held_open_by_the_writer_cut_a_torn_tail_when_opened_and_after_a_failed_write(tmp_path: Path) -> None:
    """The run writer holds the run's files open (`Appender`): the first append cuts a torn tail as `append_line`
    does; a write that fails forgets the file, so the next append opens it again and cuts what the failure left."""
    from arena.core.jsonl import Appender

    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2, "cut')
    files = Appender()
    assert files.append(path, b'{"a": 3}\n') == 9 and files.append(path, b'{"a": 4}\n') == 18
    held = files._open[path]

    class Torn:  # a write that leaves half a line behind, then fails (a full disk)
        def __init__(self, fh):
            self.fh = fh

        def write(self, data: bytes) -> None:
            self.fh.write(data[:4])
            self.fh.flush()
            raise OSError("No space left on device")

        def __getattr__(self, name):
            return getattr(self.fh, name)

    files._open[path] = Torn(held)
    with pytest.raises(OSError):
        files.append(path, b'{"a": 5}\n')
    assert path not in files._open and held.closed
    assert files.append(path, b'{"a": 6}\n') == 27
    files.close()
    assert path.read_bytes() == b'{"a": 1}\n{"a": 3}\n{"a": 4}\n{"a": 6}\n'


def test_a_held_open_file_is_appended_with_one_write_and_no_fstat(tmp_path: Path, monkeypatch) -> None:
    """After its first append (which opens the file and cuts a torn tail), an append to a held-open file is one
    write at the end the appender knows: no `fstat`, and the offsets it returns stay right (a write the kernel
    takes in part is finished)."""
    from arena.core.jsonl import Appender

    path, files = tmp_path / "x.jsonl", Appender()
    assert files.append(path, b'{"a": 1}\n') == 0
    stats: list[int] = []
    real = os.fstat
    monkeypatch.setattr(os, "fstat", lambda fd: stats.append(fd) or real(fd))
    held = files._open[path]

    class Short:  # a write the kernel takes in part
        def write(self, data) -> int:
            return held.write(bytes(data[:3]))

        def __getattr__(self, name):
            return getattr(held, name)
    assert files.append(path, b'{"a": 2}\n') == 9
    files._open[path] = Short()
    assert files.append(path, b'{"a": 3}\n') == 18 and files.append(path, b'{"a": 4}\n') == 27
    assert stats == []
    files.close()
    assert path.read_bytes() == b'{"a": 1}\n{"a": 2}\n{"a": 3}\n{"a": 4}\n'
