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


def test_run_json_and_summary_json_are_written_as_the_standard_librarys_indented_json_byte_for_byte() -> None:
    """`json_document` (orjson where its compact form is the standard library's) gives the very bytes of
    `json.dumps(data, indent=2, sort_keys=True, default=str) + "\\n"`, on random documents holding what orjson writes
    otherwise: small and huge floats, non-ASCII and control characters, DEL, NaN, infinities, integers past 64 bits,
    empty containers, objects only `str` writes."""
    import json
    import random
    from pathlib import PurePosixPath

    from arena.store.store import json_document

    rng = random.Random(5)
    scalars = [lambda: rng.random(), lambda: rng.uniform(-1e6, 1e6), lambda: 10 ** rng.uniform(-12, 25),
               lambda: rng.randint(-10**6, 10**6), lambda: 2**70, lambda: float("nan"), lambda: float("inf"),
               lambda: None, lambda: rng.random() < 0.5, lambda: "plain", lambda: "é 漢 😀",
               lambda: "tab\t\x7f\x01", lambda: "quote\" back\\slash/", lambda: PurePosixPath("/a/b"),
               lambda: round(rng.random(), 6), lambda: 0.0, lambda: -0.0, lambda: 1e16, lambda: 1e-4]

    def document(depth: int):
        kind = rng.random()
        if depth > 3 or kind < 0.4:
            return rng.choice(scalars)()
        if kind < 0.7:
            return [document(depth + 1) for _ in range(rng.randint(0, 4))]
        return {rng.choice(["a", "b", "key", "ä", "z1", "Z", "_x"]) + str(rng.randint(0, 9)): document(depth + 1)
                for _ in range(rng.randint(0, 5))}
    for _ in range(3000):
        data = {"top": document(0), "n": rng.randint(0, 5)}
        assert json_document(data) == (json.dumps(data, indent=2, sort_keys=True, default=str) + "\n").encode()


def test_an_episodes_index_entry_made_from_it_is_the_one_its_line_reads_back_as():
    """`episode_line_entry` makes the entry from the episode (no parse of the line just made): the same `Entry` as
    `entry_of` of its line, defaults, counts, tools, tokens, `meta.model_calls` and a reduced line (read from it)
    included."""
    from arena.core.trajectory import Step, Totals
    from arena.store.run_index import entry_of
    from arena.store.store import episode_line_entry

    plain = make_episode(0, "k0")
    full = make_episode(1, "k1", reason="budget")
    full.task = TaskRef(id="t9", suite="s2", question="q", answers=["a"], level="hard", category="c", judge="em")
    full.tools, full.repeat, full.answer = ["search", "crop"], 2, "1874"
    full.budget = Budget(max_rounds=3, max_calls_per_round=2)
    full.steps = [Step(round=1, action="tool_call", tool="crop"), Step(round=2, action="answer", answer="1874")]
    full.totals = Totals(rounds=2, tool_calls=1, calls_per_tool={"crop": 1, "search": 0}, invalid_calls=1,
                         ignored_calls=3, prompt_tokens=None, completion_tokens=7, seconds=0.1 + 0.2)
    full.meta = {"model_calls": 1, "cost": 0.5}
    flagged = make_episode(2, "k2")
    flagged.steps, flagged.meta = [Step(round=1, action="answer")], {"model_calls": True}  # not a count: the steps
    reduced = make_episode(3, "k3")
    reduced.answer = "\ud800" + "x" * 9000  # not writable as it is: the line is reduced, its answer cut
    for episode in (plain, full, flagged, reduced):
        line, entry = episode_line_entry(episode)
        assert entry == entry_of(line, 0) and entry.row() == entry_of(line, 0).row()
    assert b'"reduced"' in episode_line_entry(reduced)[0]
