"""`bench/peers.py` reuses a kept `--world` only when it was written for the same workload (tasks, images, size,
noise), so a measurement with another image weight never runs on the last one's images (issue 38)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]


def _peers():
    sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("peers_world", ROOT / "bench" / "peers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_kept_world_is_reused_only_for_its_own_workload(tmp_path):
    peers = _peers()
    world = tmp_path / "world"
    wanted = peers.workload(3, 1, (96, 48), 1)
    assert peers.kept_world(world, wanted) is None
    data = peers.write_world(world, 3, 1, (96, 48), noise=1)
    assert peers.kept_world(world, wanted) == data
    assert len(data.read_text().splitlines()) == 3
    with Image.open(world / "images" / "task0.png") as image:
        assert image.size == (96, 48)
    for other in (peers.workload(3, 1, (96, 48), 12), peers.workload(4, 1, (96, 48), 1),
                  peers.workload(3, 0, (96, 48), 1), peers.workload(3, 1, (48, 96), 1)):
        assert peers.kept_world(world, other) is None


def test_more_noise_makes_a_heavier_png(tmp_path):
    peers = _peers()
    light = peers.write_world(tmp_path / "light", 1, 1, (320, 180), noise=1).parent / "images" / "task0.png"
    heavy = peers.write_world(tmp_path / "heavy", 1, 1, (320, 180), noise=12).parent / "images" / "task0.png"
    assert heavy.stat().st_size > 1.5 * light.stat().st_size
