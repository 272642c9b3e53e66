"""`bench/peers.py` reuses a kept `--world` only when it was written for the same workload (tasks, images, size,
noise), so a measurement with another image weight never runs on the last one's images (issue 38)."""

from __future__ import annotations

from PIL import Image

from tests.support.bench_scripts import bench_script


def _peers():
    return bench_script("peers", "peers_world")


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
