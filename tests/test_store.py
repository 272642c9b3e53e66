import json

import pytest

from arena.core.budget import Budget
from arena.core.task import TaskRef
from arena.core.trajectory import Episode
from arena.store.store import RunStore, RunStoreError, repair_torn_tail


def make_episode(i, key, reason="answered"):
    task = TaskRef(id="t", suite="s", question="q", answers=["a"])
    return Episode(id=f"e{i}", run_id="r", key=key, task=task, agent="a", setting="s", budget=Budget(),
                   finish_reason=reason)


def test_torn_tail_is_dropped_and_appends_continue(tmp_path):
    store = RunStore(tmp_path / "run")
    store.open({"fingerprint": "f"})
    store.append_episode(make_episode(1, "k1"))
    with store.episodes_path.open("a") as fh:
        fh.write('{"id": "e2", "run_id": "r", "key": "k2", "tas')
    store.open({"fingerprint": "f"})
    store.append_episode(make_episode(3, "k3"))
    assert [e.id for e in store.episodes()] == ["e1", "e3"]
    assert json.loads(store.run_json.read_text())["resumed"] == 1


def test_latest_record_of_a_key_wins(tmp_path):
    store = RunStore(tmp_path / "run")
    store.open({"fingerprint": "f"})
    store.append_episode(make_episode(1, "k", "error"))
    store.append_episode(make_episode(2, "k"))
    assert [(e.id, e.finish_reason) for e in store.episodes()] == [("e2", "answered")]
    assert len(store.all_episodes()) == 2


def test_changed_config_is_refused_unless_forced(tmp_path):
    store = RunStore(tmp_path / "run")
    store.open({"fingerprint": "one"})
    with pytest.raises(RunStoreError, match="different configuration"):
        store.open({"fingerprint": "two"})
    store.open({"fingerprint": "two"}, force=True)


def test_corrupt_middle_line_names_file_and_line(tmp_path):
    store = RunStore(tmp_path / "run")
    store.open({"fingerprint": "f"})
    store.append_episode(make_episode(1, "k1"))
    with store.episodes_path.open("a") as fh:
        fh.write('{"nonsense": true}\n')
    with pytest.raises(RunStoreError, match=r"episodes.jsonl:2"):
        store.episodes()


def test_repair_of_file_without_any_newline(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"partial"')
    assert repair_torn_tail(path) == 10 and path.read_text() == ""


def test_an_episode_line_made_elsewhere_is_appended_as_append_episode_writes_it(tmp_path):
    """Issue 29: a worker makes the episode's line and index entry (`episode_line`, `entry_of` at offset 0); the
    driver appends them unparsed (`append_episode_line`): the same bytes and the same index as `append_episode`."""
    from arena.store.run_index import entry_of
    from arena.store.store import episode_line

    direct, shipped = RunStore(tmp_path / "direct"), RunStore(tmp_path / "shipped")
    for store in (direct, shipped):
        store.open({"fingerprint": "f"})
    for i, key in enumerate(["k1", "k2", "k1"]):
        direct.append_episode(make_episode(i, key))
        line = episode_line(make_episode(i, key))
        shipped.append_episode_line(line, entry_of(line, 0))
    assert shipped.episodes_path.read_bytes() == direct.episodes_path.read_bytes()
    assert shipped.index().entries == direct.index().entries
    assert RunStore(shipped.dir).index(persist=False).entries == direct.index().entries  # the index file agrees
    assert [e.id for e in shipped.episodes()] == ["e2", "e1"]
