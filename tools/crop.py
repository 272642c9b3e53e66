"""`image_zoom_in_tool`: crop a region of an image in context and return it enlarged (VistaArena's crop).

Differences from the original, all documented: the box is validated (empty,
inverted or non-finite boxes are errors the model sees), `img_idx` is honoured
over every image in context (0 = the task image, then each image a tool
returned), and coordinates may be pixels instead of relative 0–1000.
"""

from __future__ import annotations

import asyncio
import math
from typing import Literal

from PIL import Image
from pydantic import BaseModel, Field

from arena.images import ImageError, smart_resize
from arena.tool import Tool, ToolArgumentError, ToolContext, ToolOptions, ToolResult, register_tool

MIN_SIDE = 28
FACTOR = 32
MIN_PIXELS = 65_536
MAX_PIXELS = 8_294_400


class CropArgs(BaseModel):
    bbox_2d: list[float] = Field(
        description="The region as [x1, y1, x2, y2]: top-left and bottom-right corners, in relative "
        "coordinates from 0 to 1000 of the chosen image's width and height."
    )
    label: str = Field("", description="A short name for what the region shows.")
    img_idx: int = Field(0, description="Which image in context to crop: 0 is the task image, then each "
                         "image returned by a tool, in order.")


def pixel_box(bbox: list[float], width: int, height: int, relative: bool) -> tuple[int, int, int, int]:
    """Validate a box and return it in integer pixels, clamped to the image."""
    if len(bbox) != 4:
        raise ToolArgumentError(f"bbox_2d must have 4 numbers [x1, y1, x2, y2], got {len(bbox)}")
    if not all(math.isfinite(v) for v in bbox):
        raise ToolArgumentError(f"bbox_2d has a non-finite number: {bbox}")
    x1, y1, x2, y2 = bbox
    if relative:
        x1, x2 = x1 * width / 1000.0, x2 * width / 1000.0
        y1, y2 = y1 * height / 1000.0, y2 * height / 1000.0
    left = min(max(math.floor(x1), 0), width)
    top = min(max(math.floor(y1), 0), height)
    right = min(max(math.ceil(x2), 0), width)
    bottom = min(max(math.ceil(y2), 0), height)
    if right <= left or bottom <= top:
        scale = "relative 0-1000" if relative else "pixel"
        raise ToolArgumentError(
            f"bbox_2d {bbox} is empty or inverted once clamped to the image ({width}x{height} px; "
            f"{scale} coordinates); it needs x1 < x2 and y1 < y2 inside the image"
        )
    return left, top, right, bottom


def zoom(image: Image.Image, box: tuple[int, int, int, int]) -> Image.Image:
    """Crop, upscale a side under 28 px to 28, then smart-resize (factor 32, 65,536–8,294,400 px)."""
    crop = image.crop(box)
    if min(crop.width, crop.height) < MIN_SIDE:
        scale = MIN_SIDE / min(crop.width, crop.height)
        crop = crop.resize((max(MIN_SIDE, math.ceil(crop.width * scale)),
                            max(MIN_SIDE, math.ceil(crop.height * scale))), Image.Resampling.BICUBIC)
    try:
        h, w = smart_resize(crop.height, crop.width, FACTOR, MIN_PIXELS, MAX_PIXELS)
    except ImageError as exc:
        raise ToolArgumentError(f"the region cannot be zoomed: {exc}") from None
    return crop.resize((w, h), Image.Resampling.BICUBIC)


class CropOptions(ToolOptions):
    """`bbox_coords`: `relative` (0-1000, Qwen-VL style, the default) or `pixel` boxes."""

    bbox_coords: Literal["relative", "pixel"] = "relative"


@register_tool
class CropTool(Tool):
    name = "image_zoom_in_tool"
    description = ("Zoom in on a region of an image by cropping it with a bounding box; returns the region "
                   "enlarged so that fine details such as small text become readable.")
    Args = CropArgs
    Options = CropOptions

    @property
    def relative(self) -> bool:
        return self.options.bbox_coords != "pixel"

    def schema(self) -> dict:
        schema = super().schema()
        if not self.relative:
            schema["function"]["parameters"]["properties"]["bbox_2d"]["description"] = (
                "The region as [x1, y1, x2, y2]: top-left and bottom-right corners, in pixels of the chosen image."
            )
        return schema

    async def run(self, args: CropArgs, ctx: ToolContext) -> ToolResult:
        if not 0 <= args.img_idx < len(ctx.images):
            raise ToolArgumentError(
                f"img_idx {args.img_idx} is out of range: {len(ctx.images)} image(s) in context "
                f"(valid: 0..{len(ctx.images) - 1})"
            )
        image = await ctx.images[args.img_idx].pil()
        box = pixel_box(args.bbox_2d, image.width, image.height, self.relative)
        zoomed = await asyncio.to_thread(zoom, image, box)
        what = f" ({args.label})" if args.label else ""
        text = f"Zoomed in on {list(box)} (pixels) of image {args.img_idx}{what}."
        return ToolResult(text=text, images=[zoomed],
                          data={"img_idx": args.img_idx, "pixel_box": list(box), "size": [zoomed.width, zoomed.height],
                                "source_size": [image.width, image.height]})
