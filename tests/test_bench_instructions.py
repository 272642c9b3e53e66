"""`bench/instructions.py` splits callgrind's instruction counts by shared object: each instruction counted once, in
the object it ran in (a call's inclusive cost, which callgrind writes after `calls=`, not again in the caller's)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.support.bench_scripts import bench_script


def _instructions():
    return bench_script("instructions")


def test_costs_go_to_the_object_they_ran_in_and_a_calls_inclusive_cost_is_not_counted_again(tmp_path):
    out = tmp_path / "callgrind.out"
    out.write_text("\n".join([
        "version: 1", "creator: callgrind-3.19.0", "positions: line", "events: Ir", "summary: 70",
        "ob=(1) /usr/lib/libpython3.11.so.1.0", "fl=(1) ceval.c", "fn=(1) eval",
        "10 40",
        "cob=(2) /usr/lib/x86_64-linux-gnu/libz.so.1", "cfi=(2) deflate.c", "cfn=(2) deflate",  # named where called
        "calls=1 5", "12 30",  # deflate's inclusive cost, seen from eval: counted where it ran, below
        "ob=(2)", "fl=(2)", "fn=(2)",  # the name given by `cob=` above
        "5 20", "+1 10",
        "", "totals: 70"]))
    instructions = _instructions()
    costs = instructions.by_object(out)
    assert costs == {"/usr/lib/libpython3.11.so.1.0": 40, "/usr/lib/x86_64-linux-gnu/libz.so.1": 30}
    grouped = instructions.grouped(costs)
    assert grouped["the interpreter (libpython)"] == 40
    assert grouped["image codecs (Pillow, zlib)"] == 30 and grouped["other"] == 0


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_the_split_of_a_real_profile_adds_up_to_callgrinds_total(tmp_path):
    out = tmp_path / "callgrind.out"
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-S", "-c",
                    "import zlib; zlib.compress(bytes(range(256)) * 4000)"], check=True, capture_output=True)
    total = next(int(line.split()[1]) for line in out.read_text().splitlines()
                 if line.startswith(("totals:", "summary:")))
    costs = _instructions().by_object(out)
    assert sum(costs.values()) == total
    assert any("libz" in name for name in costs) and any("python" in name for name in costs)
