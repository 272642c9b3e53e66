"""Image helpers: Qwen-compatible `smart_resize`, safe decoding, PNG encoding, data URLs."""

from __future__ import annotations

import base64
import io
import math
from pathlib import Path

from PIL import Image, UnidentifiedImageError

# Defaults of qwen-vl-utils 0.0.14.
IMAGE_FACTOR = 28
MIN_PIXELS = 4 * 28 * 28
MAX_PIXELS = 16384 * 28 * 28
MAX_RATIO = 200

Image.MAX_IMAGE_PIXELS = 200_000_000


class ImageError(ValueError):
    """An image that cannot be used; the message names the file or the reason."""


def _round_by(n: float, factor: int) -> int:
    return round(n / factor) * factor


def _ceil_by(n: float, factor: int) -> int:
    return math.ceil(n / factor) * factor


def _floor_by(n: float, factor: int) -> int:
    return math.floor(n / factor) * factor


def smart_resize(
    height: int,
    width: int,
    factor: int = IMAGE_FACTOR,
    min_pixels: int = MIN_PIXELS,
    max_pixels: int = MAX_PIXELS,
) -> tuple[int, int]:
    """Return (height, width) divisible by `factor`, with the pixel count in
    [min_pixels, max_pixels] and the aspect ratio kept as closely as possible.

    Same results as `qwen_vl_utils.smart_resize` (0.0.14); raises ImageError when
    the aspect ratio exceeds 200.
    """
    if height <= 0 or width <= 0:
        raise ImageError(f"image size must be positive, got {height}x{width}")
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ImageError(
            f"absolute aspect ratio must be smaller than {MAX_RATIO}, got "
            f"{max(height, width) / min(height, width):.1f}"
        )
    h_bar = max(factor, _round_by(height, factor))
    w_bar = max(factor, _round_by(width, factor))
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, _floor_by(height / beta, factor))
        w_bar = max(factor, _floor_by(width / beta, factor))
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = _ceil_by(height * beta, factor)
        w_bar = _ceil_by(width * beta, factor)
    return h_bar, w_bar


def open_image(path: str | Path) -> Image.Image:
    """Decode an image file fully into RGB; ImageError names the file on failure."""
    try:
        with Image.open(path) as im:
            im.load()
            return im.convert("RGB")
    except FileNotFoundError as exc:
        raise ImageError(f"{path}: no such image file") from exc
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ImageError(f"{path}: cannot decode image ({exc})") from exc


def decode_image(data: bytes, name: str = "<bytes>") -> Image.Image:
    try:
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            return im.convert("RGB")
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ImageError(f"{name}: cannot decode image ({exc})") from exc


def encode_png(image: Image.Image, level: int = 6) -> bytes:
    """Deterministic PNG bytes (no metadata, fixed compression level)."""
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=level)
    return buf.getvalue()


def png_data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def fit_for_model(
    image: Image.Image,
    factor: int = IMAGE_FACTOR,
    min_pixels: int = MIN_PIXELS,
    max_pixels: int = 1280 * 28 * 28,
) -> Image.Image:
    """Resize an image the way a Qwen-VL processor would before the model sees it."""
    h, w = smart_resize(image.height, image.width, factor, min_pixels, max_pixels)
    if (h, w) == (image.height, image.width):
        return image
    return image.resize((w, h), Image.Resampling.BICUBIC, reducing_gap=3.0)
