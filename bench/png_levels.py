"""PNG encoding settings for the images the arena sends and stores: CPU time and bytes (all lossless).

    .venv/bin/python bench/png_levels.py

Images: a photo-like 3840x2160 PNG (noise over a drawn scene, as in bench/peers.py) smart-resized for the model
(1316x728) and a crop of it as the crop tool returns it; the tiny dataset's drawn scene resized for the model and a
crop of it; a smooth gradient. For each zlib level and strategy: the best of 3 process-CPU times and the size.
Also the 4K decode and the model resize, the other two codec steps of a task image. The last column is a candidate
outside Pillow (`numpy_sub_up_png`): each row filtered Sub or Up in numpy, whichever sums fewer absolute (signed)
bytes, then zlib level 1 Z_RLE; every PNG it writes is checked to decode to the same pixels.
"""

from __future__ import annotations

import io
import struct
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena.core.images import fit_for_model, load_image  # noqa: E402
from tests.support.tiny_dataset import scene  # noqa: E402
from arena.tools.crop import pixel_box, zoom  # noqa: E402

SETTINGS = [(6, -1, "level 6"), (3, -1, "level 3"), (1, -1, "level 1"), (0, -1, "level 0 (stored)"),
            (1, 2, "level 1, Z_HUFFMAN_ONLY"), (1, 3, "level 1, Z_RLE (chosen)")]


def numpy_sub_up_png(image: Image.Image) -> bytes:
    """PNG of an 8-bit grey or RGB image: per row the Sub or Up filter (the smaller sum of |signed bytes|, as
    libpng's heuristic scores rows), deflated at level 1 with Z_RLE; no metadata."""
    step = len(image.getbands())
    rows = np.asarray(image).reshape(image.height, image.width * step)
    sub, up = rows.copy(), rows.copy()
    sub[:, step:] -= rows[:, :-step]
    up[1:] -= rows[:-1]
    use_up = np.abs(up.view(np.int8), dtype=np.int16).sum(1) < np.abs(sub.view(np.int8), dtype=np.int16).sum(1)
    data = np.empty((image.height, rows.shape[1] + 1), np.uint8)
    data[:, 0], data[:, 1:] = np.where(use_up, 2, 1), np.where(use_up[:, None], up, sub)
    deflate = zlib.compressobj(1, zlib.DEFLATED, 15, 9, zlib.Z_RLE)
    chunks = [(b"IHDR", struct.pack(">2I5B", image.width, image.height, 8, 2 if step == 3 else 0, 0, 0, 0)),
              (b"IDAT", deflate.compress(data) + deflate.flush()), (b"IEND", b"")]
    return b"\x89PNG\r\n\x1a\n" + b"".join(struct.pack(">I", len(body)) + kind + body
                                        + struct.pack(">I", zlib.crc32(kind + body)) for kind, body in chunks)


def best_ms(fn, n: int = 3):
    best, value = float("inf"), None
    for _ in range(n):
        start = time.process_time()
        value = fn()
        best = min(best, time.process_time() - start)
    return best * 1000, value


def main() -> None:
    base = np.asarray(scene().resize((3840, 2160)), dtype=np.int16)
    noise = np.random.default_rng(0).integers(-12, 13, size=base.shape, dtype=np.int16)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "photo.png"
        Image.fromarray(np.clip(base + noise, 0, 255).astype(np.uint8)).save(path)
        ms, photo = best_ms(lambda: load_image(path))
        print(f"decode {path.stat().st_size / 1e6:.1f} MB 3840x2160 PNG: {ms:.0f} ms")
    ms, fitted = best_ms(lambda: fit_for_model(photo.image))
    print(f"smart-resize for the model to {fitted.size[0]}x{fitted.size[1]}: {ms:.0f} ms")
    y, x = np.mgrid[0:728, 0:1316]
    images = {
        "photo-like, for the model": fitted,
        "photo-like crop": zoom(photo.image, pixel_box([700, 80, 960, 220], 3840, 2160, True)),
        "drawn scene, for the model": fit_for_model(scene()),
        "drawn crop": zoom(scene(), pixel_box([500, 0, 1000, 500], 1600, 1000, True)),
        "smooth gradient": Image.fromarray(np.stack([x * 255 // 1316, y * 255 // 728, (x + y) * 127 // 2044],
                                                    -1).astype(np.uint8)),
    }
    print("\n| image | " + " | ".join(label for _, _, label in SETTINGS) + " | numpy Sub/Up rows, level 1, Z_RLE |")
    print("|---|" + "---|" * (len(SETTINGS) + 1))
    for name, image in images.items():
        cells = []
        for level, strategy, _ in SETTINGS:
            def encode() -> bytes:
                buf = io.BytesIO()
                image.save(buf, format="PNG", compress_level=level, compress_type=strategy)
                return buf.getvalue()
            ms, data = best_ms(encode)
            cells.append(f"{ms:.1f} ms, {len(data) / 1e3:,.1f} kB")
        ms, data = best_ms(lambda: numpy_sub_up_png(image))
        assert Image.open(io.BytesIO(data)).tobytes() == image.tobytes(), "the candidate must be lossless"
        cells.append(f"{ms:.1f} ms, {len(data) / 1e3:,.1f} kB")
        print(f"| {name} ({image.width}x{image.height}) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
