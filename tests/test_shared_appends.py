"""Several processes appending to one run (issue 29: workers append their own records): lines never interleave, the
index stays in file order with no gap and points at its own lines, and a process killed in the middle of an append
(SIGKILL, at any moment) leaves nothing that loses or corrupts another process's records."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import signal
import time
from pathlib import Path

import orjson

from arena.core.budget import Budget
from arena.core.task import TaskRef
from arena.core.trajectory import Episode
from arena.store import shared_appends
from arena.store.run_index import EpisodeIndex, entry_of
from arena.store.shared_appends import SharedAppends
from arena.store.store import RunStore, episode_line

PAD = 200_000  # bytes of answer per episode: a write large enough to be cut by a kill now and then


def line_of(writer: str, i: int, pad: int = 0) -> bytes:
    task = TaskRef(id="t", suite="s", question="q", answers=["a"])
    episode = Episode(id=f"{writer}-{i}", run_id="r", key=f"{writer}|{i}", task=task, agent="a", setting="s",
                      budget=Budget(), finish_reason="answered", answer="x" * pad)
    return episode_line(episode)


def append_many(run_dir: str, writer: str, count: int, pad: int, started=None, go=None) -> None:
    appends = SharedAppends(run_dir)
    if go is not None:
        go.wait(60)
    for i in range(count):
        line = line_of(writer, i, pad)
        appends.append_episode(line, entry_of(line, 0))
        appends.append(Path(run_dir) / "verdicts.jsonl", orjson.dumps({"episode_id": f"{writer}-{i}"}) + b"\n")
        if started is not None and i == 0:
            started.set()
    appends.close()


def check_run(run_dir: Path) -> list[bytes]:
    """Every line of episodes.jsonl whole and parsed; the index file, as written, equal to one rebuilt from
    episodes.jsonl (same entries, file order, no gap); returns the episode lines."""
    data = (run_dir / "episodes.jsonl").read_bytes()
    lines = data.splitlines(keepends=True)
    assert all(line.endswith(b"\n") for line in lines)
    for line in lines:
        Episode.model_validate_json(line)
    written = [tuple(orjson.loads(row)) for row in (run_dir / "episodes.idx").read_bytes().splitlines()]
    rebuilt = EpisodeIndex.rebuild(run_dir / "episodes.jsonl", persist=False).entries
    assert [(e[0], e[1], e[3]) for e in written] == [(e.offset, e.length, e.id) for e in rebuilt]
    verdicts = run_dir / "verdicts.jsonl"
    for line in verdicts.read_bytes().splitlines(keepends=True) if verdicts.exists() else []:
        assert line.endswith(b"\n") and orjson.loads(line)["episode_id"]
    return lines


def test_processes_appending_at_once_keep_whole_lines_and_an_index_that_points_at_them(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    go = context.Event()  # all start appending at the same moment
    procs = [context.Process(target=append_many, args=(str(tmp_path), f"w{n}", 400, 3000, None, go))
             for n in range(3)]
    for proc in procs:
        proc.start()
    time.sleep(1.0)
    go.set()
    append_many(str(tmp_path), "driver", 400, 3000)
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    lines = check_run(tmp_path)
    assert len(lines) == 1600
    assert RunStore(tmp_path).index(persist=False).entries == EpisodeIndex.rebuild(tmp_path / "episodes.jsonl",
                                                                                     persist=False).entries


def test_a_torn_tail_and_a_missing_index_entry_left_by_a_killed_process_are_mended_by_the_next_append(
        tmp_path: Path) -> None:
    appends = SharedAppends(tmp_path)
    first = line_of("a", 0)
    appends.append_episode(first, entry_of(first, 0))
    orphan = line_of("b", 0)  # a process killed between its episode line and its index entry
    with (tmp_path / "episodes.jsonl").open("ab") as fh:
        fh.write(orphan)
        fh.write(line_of("c", 0)[:40])  # and another killed in the middle of its line
    with (tmp_path / "verdicts.jsonl").open("ab") as fh:
        fh.write(b'{"episode_id": "c-')
    last = line_of("d", 0)
    offset = appends.append_episode(last, entry_of(last, 0))
    appends.append(tmp_path / "verdicts.jsonl", b'{"episode_id": "d-0"}\n')
    assert offset == len(first) + len(orphan)
    lines = check_run(tmp_path)
    assert lines == [first, orphan, last]
    assert [e.id for e in RunStore(tmp_path).episodes()] == ["a-0", "b-0", "d-0"]


def test_sigkill_of_an_appender_at_any_moment_loses_and_corrupts_nothing_of_another(tmp_path: Path) -> None:
    """One process appends large records and is killed with SIGKILL at several moments (a kill can cut a write
    short, or fall between a line and its index entry); another appends all the while: all of its records are
    there, whole and indexed, and so is every record of the killed one that was written whole."""
    context = multiprocessing.get_context("spawn")
    survivor = context.Process(target=append_many, args=(str(tmp_path), "survivor", 150, PAD))
    survivor.start()
    for round_ in range(4):
        started = context.Event()
        victim = context.Process(target=append_many, args=(str(tmp_path), f"victim{round_}", 10**6, PAD, started))
        victim.start()
        assert started.wait(60)
        time.sleep(0.05 + 0.03 * round_)
        os.kill(victim.pid, signal.SIGKILL)
        victim.join(10)
    survivor.join(120)
    assert survivor.exitcode == 0
    tail = SharedAppends(tmp_path)  # the next append mends whatever the last kill left
    line = line_of("after", 0)
    tail.append_episode(line, entry_of(line, 0))
    tail.append(tmp_path / "verdicts.jsonl", b'{"episode_id": "after-0"}\n')
    lines = check_run(tmp_path)
    ids = [orjson.loads(line)["id"] for line in lines]
    assert [i for i in ids if i.startswith("survivor-")] == [f"survivor-{i}" for i in range(150)]
    assert ids[-1] == "after-0" and len(ids) == len(set(ids))
    assert sum(1 for i in ids if i.startswith("victim")) >= 4


def test_an_index_replaced_meanwhile_gets_the_next_entry(tmp_path: Path) -> None:
    """A file replaced while an appender holds it open (the index rebuilt by `EpisodeIndex.rebuild`, a file rewritten
    by `arena doctor --repair`) is opened again: the next entry goes into the run's index, not the replaced one."""
    appends = SharedAppends(tmp_path)
    first = line_of("a", 0)
    appends.append_episode(first, entry_of(first, 0))
    EpisodeIndex.rebuild(tmp_path / "episodes.jsonl", persist=True)  # a new file under the index's name
    second = line_of("b", 0)
    appends.append_episode(second, entry_of(second, 0))
    assert check_run(tmp_path) == [first, second]


def test_a_hold_takes_the_lock_once_and_checks_each_file_once_and_the_next_hold_sees_what_others_left(
        tmp_path: Path, monkeypatch) -> None:
    """A run writer's batch (`held`): one flock for many appends, each file stat'ed and its tail read once; between
    holds another process may append (a torn tail, an unindexed line), which the next hold looks at again."""
    locks: list[int] = []
    real_flock, real_stat = fcntl.flock, os.stat
    stats: list[str] = []
    monkeypatch.setattr(shared_appends.fcntl, "flock", lambda fd, op: (locks.append(op), real_flock(fd, op))[1])
    monkeypatch.setattr(shared_appends.os, "stat", lambda path, *a, **k: (stats.append(Path(path).name),
                                                                          real_stat(path, *a, **k))[1])
    appends = SharedAppends(tmp_path)
    verdicts = tmp_path / "verdicts.jsonl"
    first = [line_of("a", i) for i in range(3)]
    appends.append_episode(first[0], entry_of(first[0], 0))  # (opens the files)
    locks.clear()
    stats.clear()
    with appends.held():
        for line in first[1:]:
            appends.append_finished(line, entry_of(line, 0), verdicts, [b'{"episode_id": "a"}\n'])
        appends.append(tmp_path / "calls.jsonl", b'{"round": 1}\n')
    assert locks == [fcntl.LOCK_EX, fcntl.LOCK_UN]
    assert sorted(stats) == ["episodes.idx", "episodes.jsonl"]  # held open: stat'ed once; the others opened here
    orphan = line_of("b", 0)  # another process, between two holds: a line without its entry, then a torn one
    with (tmp_path / "episodes.jsonl").open("ab") as fh:
        fh.write(orphan + line_of("c", 0)[:40])
    with verdicts.open("ab") as fh:
        fh.write(b'{"episode_id": "c-')
    last = line_of("d", 0)
    with appends.held():
        offset = appends.append_finished(last, entry_of(last, 0), verdicts, [b'{"episode_id": "d-0"}\n'])[0]
    assert offset == sum(map(len, first)) + len(orphan)
    assert check_run(tmp_path) == [*first, orphan, last]
    assert verdicts.read_bytes().splitlines()[-1] == b'{"episode_id": "d-0"}'
