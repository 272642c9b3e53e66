"""The legibility rule for visual anchors: unreadable in the model's view, readable once cropped.

The model sees a task image smart-resized (factor 28, at most 1280*28*28 pixels);
the crop tool returns its box smart-resized (factor 32, 65,536 to 8,294,400
pixels). An anchor's text, `text_px` pixels tall in the scene, is
`text_px * scale` tall in each view. The rule: below `ILLEGIBLE_BELOW_PX` in the
model's view and at least `LEGIBLE_FROM_PX` in the crop of the anchor's box.
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from arena.core.images import MIN_PIXELS, smart_resize

MODEL_FACTOR = 28
MODEL_MAX_PIXELS = 1280 * 28 * 28
CROP_FACTOR = 32
CROP_MIN_PIXELS = 65_536
CROP_MAX_PIXELS = 8_294_400
CROP_MIN_SIDE = 28

ILLEGIBLE_BELOW_PX = 8.0
LEGIBLE_FROM_PX = 14.0


class AnchorRuleError(ValueError):
    """An anchor whose text is readable without cropping, or unreadable even after it."""


class Legibility(BaseModel):
    """Pixel heights of an anchor's text in the scene, in the model's view and in the crop of its box."""

    text_px: float
    model_px: float
    crop_px: float

    @property
    def ok(self) -> bool:
        return self.model_px < ILLEGIBLE_BELOW_PX and self.crop_px >= LEGIBLE_FROM_PX


def model_scale(width: int, height: int) -> float:
    """Vertical scale factor of the image the model sees."""
    h, _ = smart_resize(height, width, MODEL_FACTOR, MIN_PIXELS, MODEL_MAX_PIXELS)
    return h / height


def relative_box(box: tuple[int, int, int, int], width: int, height: int) -> list[int]:
    """The smallest 0-1000 relative box containing the pixel box (rounded outwards)."""
    x1, y1, x2, y2 = box
    return [math.floor(x1 * 1000 / width), math.floor(y1 * 1000 / height),
            min(1000, math.ceil(x2 * 1000 / width)), min(1000, math.ceil(y2 * 1000 / height))]


def crop_pixels(rel: list[int], width: int, height: int) -> tuple[int, int, int, int]:
    """The pixel box the crop tool takes for a relative 0-1000 box (floor/ceil, clamped)."""
    x1, y1, x2, y2 = rel
    return (min(max(math.floor(x1 * width / 1000), 0), width), min(max(math.floor(y1 * height / 1000), 0), height),
            min(max(math.ceil(x2 * width / 1000), 0), width), min(max(math.ceil(y2 * height / 1000), 0), height))


def crop_scale(crop_width: int, crop_height: int) -> float:
    """Vertical scale factor of a crop of this size once the crop tool has resized it."""
    width, height = crop_width, crop_height
    if min(width, height) < CROP_MIN_SIDE:
        up = CROP_MIN_SIDE / min(width, height)
        width, height = max(CROP_MIN_SIDE, math.ceil(width * up)), max(CROP_MIN_SIDE, math.ceil(height * up))
    h, _ = smart_resize(height, width, CROP_FACTOR, CROP_MIN_PIXELS, CROP_MAX_PIXELS)
    return h / crop_height


def measure(text_px: float, rel_box: list[int], width: int, height: int) -> Legibility:
    left, top, right, bottom = crop_pixels(rel_box, width, height)
    return Legibility(text_px=round(text_px, 2), model_px=round(text_px * model_scale(width, height), 2),
                      crop_px=round(text_px * crop_scale(right - left, bottom - top), 2))


def check(legibility: Legibility, where: str) -> Legibility:
    """Return the measurement, or raise AnchorRuleError naming the anchor and the height at fault."""
    if legibility.model_px >= ILLEGIBLE_BELOW_PX:
        raise AnchorRuleError(f"{where}: text is {legibility.model_px} px tall in the model's view "
                              f"(must be < {ILLEGIBLE_BELOW_PX} px to need a crop)")
    if legibility.crop_px < LEGIBLE_FROM_PX:
        raise AnchorRuleError(f"{where}: text is only {legibility.crop_px} px tall after cropping its box "
                              f"(must be >= {LEGIBLE_FROM_PX} px to be readable)")
    return legibility
