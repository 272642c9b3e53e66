"""Image helpers: Qwen-compatible `smart_resize`, safe decoding, PNG encoding, data URLs."""

from __future__ import annotations

import base64
import contextlib
import io
import math
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

# with the codecs that PIL would otherwise import on the first open or save (`Image.preinit`): in a run's first episode
from PIL import (BmpImagePlugin, GifImagePlugin, Image, JpegImagePlugin, PngImagePlugin,  # noqa: F401
                 PpmImagePlugin, UnidentifiedImageError)

# Defaults of qwen-vl-utils 0.0.14.
IMAGE_FACTOR = 28
MIN_PIXELS = 4 * 28 * 28
MAX_PIXELS = 16384 * 28 * 28
MAX_RATIO = 200

Image.MAX_IMAGE_PIXELS = 200_000_000
warnings.filterwarnings("ignore", category=Image.DecompressionBombWarning)  # load_image raises its own error
MAX_SOURCE_PIXELS = 50_000_000  # larger images are decoded reduced (a 14100x14100 scan keeps 7050x7050)
GATED_PIXELS = 16_000_000  # images larger than this decode at most two at a time, process-wide (transient RAM)
_DECODING = threading.BoundedSemaphore(2)


class ImageError(ValueError):
    """An image that cannot be used; the message names the file or the reason."""


def smart_resize(height: int, width: int, factor: int = IMAGE_FACTOR, min_pixels: int = MIN_PIXELS,
                 max_pixels: int = MAX_PIXELS) -> tuple[int, int]:
    """Return (height, width) divisible by `factor`, with the pixel count in [min_pixels, max_pixels] and the
    aspect ratio kept as closely as possible. Same results as `qwen_vl_utils.smart_resize` (0.0.14); raises
    ImageError when the aspect ratio exceeds 200."""
    if height <= 0 or width <= 0:
        raise ImageError(f"image size must be positive, got {height}x{width}")
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ImageError(f"absolute aspect ratio must be smaller than {MAX_RATIO}, got "
                         f"{max(height, width) / min(height, width):.1f}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


@dataclass(frozen=True)
class Decoded:
    """A decoded image in mode "L" (grey) or "RGB", maybe reduced on load; `full_size` is the file's (width, height).
    `rows`: None for the whole image; else `image` holds only the file's top `rows` rows, full width, not reduced
    (`load_image(rows=...)`, all a crop above that line needs)."""

    image: Image.Image
    full_size: tuple[int, int]
    rows: int | None = None

    @property
    def nbytes(self) -> int:
        return self.image.width * self.image.height * len(self.image.getbands())


def _check_limits(name: str, width: int, height: int, max_ratio: float | None) -> None:
    if width * height > Image.MAX_IMAGE_PIXELS:  # PIL itself only warns below twice its limit
        raise ImageError(f"{name}: {width}x{height} = {width * height:,} pixels is over the limit of "
                         f"{Image.MAX_IMAGE_PIXELS:,} pixels per image (decompression-bomb guard)")
    if max_ratio is not None and max(width, height) > max_ratio * max(1, min(width, height)):
        raise ImageError(f"{name}: {width}x{height} has an aspect ratio of "
                         f"{max(width, height) / max(1, min(width, height)):.0f}:1, over the limit of "
                         f"{max_ratio:g}:1 (Qwen-VL smart_resize)")


@contextlib.contextmanager
def _reading(name: str) -> Iterator[None]:
    """Turn what opening, checking or decoding an image raises into an ImageError that names it (`name`)."""
    try:
        yield
    except FileNotFoundError as exc:
        raise ImageError(f"{name}: no such image file") from exc
    except Image.DecompressionBombError as exc:
        raise ImageError(f"{name}: over the limit of {Image.MAX_IMAGE_PIXELS:,} pixels per image ({exc})") from exc
    except ImageError:
        raise
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ImageError(f"{name}: cannot decode image ({exc})") from exc


def load_image(source: str | Path | bytes, name: str | None = None, max_pixels: int | None = None,
               max_ratio: float | None = None, rows: int | None = None) -> Decoded:
    """Decode a file or bytes into "L" or "RGB", reduced on load to at most `max_pixels` (JPEG decodes
    downscaled with `draft`; other formats by an integer `reduce` right after decoding). ImageError names
    the file and the limit hit: over `Image.MAX_IMAGE_PIXELS`, aspect ratio over `max_ratio`, unreadable.

    `rows`: only the top `rows` rows are needed. A PNG that is neither interlaced nor animated and needs no
    reducing is then decoded down to that row and no further (`Decoded.rows`; the pixels are the whole image's
    top rows exactly); any other image is decoded whole."""
    name = name or ("<bytes>" if isinstance(source, bytes) else str(source))
    max_pixels = max_pixels or MAX_SOURCE_PIXELS
    with _reading(name), Image.open(io.BytesIO(source) if isinstance(source, bytes) else source) as im:
        full = im.size
        _check_limits(name, *full, max_ratio)
        mode = "L" if im.mode in ("1", "L") else "RGB"
        top = rows is not None and 0 < rows < full[1] and full[0] * full[1] <= max_pixels and _top_only(im, rows)
        if full[0] * full[1] > max_pixels and im.format == "JPEG":
            factor = math.sqrt(full[0] * full[1] / max_pixels)
            im.draft(mode, (math.ceil(full[0] / factor), math.ceil(full[1] / factor)))
        with _DECODING if full[0] * full[1] > GATED_PIXELS else contextlib.nullcontext():
            im.load()
            out: Image.Image = im
            if out.width * out.height > max_pixels:
                factor = math.ceil(math.sqrt(out.width * out.height / max_pixels))
                out = (out if out.mode in ("L", "RGB", "RGBA", "LA") else out.convert(mode)).reduce(factor)
        if out.mode != mode:
            out = out.convert(mode)
    return Decoded(out, full, rows if top else None)


def _top_only(im: Image.Image, rows: int) -> bool:
    """Make an opened, not yet loaded PNG decode only its top `rows` rows: its one tile and its size cut at that
    row, so that the zlib stream is inflated and unfiltered down to it and no further. False (nothing changed) for
    anything else: another format, an interlaced or animated PNG, a layout this Pillow does not have."""
    if im.format != "PNG" or im.info.get("interlace") or getattr(im, "is_animated", False) or len(im.tile) != 1:
        return False
    tile = im.tile[0]
    if tile[0] != "zip" or tuple(tile[1]) != (0, 0, *im.size) or not hasattr(im, "_size"):
        return False
    im.tile = [tile._replace(extents=(0, 0, im.width, rows)) if hasattr(tile, "_replace")
               else (tile[0], (0, 0, im.width, rows), *tile[2:])]
    im._size = (im.width, rows)
    return True


def check_image(path: Path, max_ratio: float | None = None) -> tuple[int, int] | None:
    """The (width, height) of a PNG file checked without decoding its pixels: within the limits (as `load_image`),
    and every chunk whole with a good CRC, down to IEND (a truncated or damaged file fails here; PNG checksums
    every chunk, so this is what can be known without inflating the pixels). None for a file of another format:
    decoding it is the only check (`load_image`). ImageError as `load_image`'s."""
    name = str(path)
    with _reading(name), Image.open(path) as im:
        if im.format != "PNG":
            return None
        _check_limits(name, *im.size, max_ratio)
        size = im.size
        im.verify()
    return size


def decode_image(data: bytes | str | Path, name: str | None = None) -> Image.Image:
    """Decode image bytes (or a file) into RGB (reduced to at most MAX_SOURCE_PIXELS); ImageError names `name`."""
    image = load_image(data, name).image
    return image if image.mode == "RGB" else image.convert("RGB")


def encode_png(image: Image.Image, level: int = 6, rle: bool = False) -> bytes:
    """Deterministic PNG bytes (no metadata, fixed compression level); `rle`: zlib's Z_RLE strategy, which on
    photos is ~2x faster than level 3 and smaller (docs/benchmarks.md, "Image codec work"); lossless either way."""
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=level, compress_type=3 if rle else -1)
    return buf.getvalue()


def png_data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def fit_for_model(image: Image.Image, factor: int = IMAGE_FACTOR, min_pixels: int = MIN_PIXELS,
                  max_pixels: int = 1280 * 28 * 28, full_size: tuple[int, int] | None = None) -> Image.Image:
    """Resize an image the way a Qwen-VL processor would before the model sees it; the size is computed
    from `full_size` (width, height) when the image was decoded reduced. Always RGB."""
    width, height = full_size or image.size
    h, w = smart_resize(height, width, factor, min_pixels, max_pixels)
    if (w, h) != image.size:
        image = image.resize((w, h), Image.Resampling.BICUBIC, reducing_gap=3.0)
    return image.convert("RGB") if image.mode != "RGB" else image
