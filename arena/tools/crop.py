"""`image_zoom_in_tool`: crop a region of an image in context and return it enlarged (VistaArena's crop).

Differences from the original, all documented: the box is validated (empty,
inverted, non-finite or huge (|v| > 1,000,000) boxes are errors the model sees), `img_idx` is honoured
over every image in context (0 = the task image, then each image a tool
returned), and coordinates may be pixels instead of relative 0–1000. Under the published layout (a task's
`task.layout.published_tool_results`, `--protocol original` on VistaArena data) the result carries
`data["layout"]`, the parts of the published crop message.

A zoom asked again (the same source content, decoded size and pixel box: pass@k repeats, round-budget sweeps of a
deterministic policy) is served from `ZOOMS`, keyed by the source's content address, never its path; it returns the
same image object, whose PNG is encoded with it, once (`arena.core.context_image.png_of`), so neither is done again, even
by episodes asking at the same moment. Returned images are shared: never modify one in place.
"""

from __future__ import annotations

import asyncio
import math
from typing import Literal

from PIL import Image
from pydantic import BaseModel, Field

from arena.core.content_ids import CONTENT_ID, content_id
from arena.core.context_image import png_of, single_flight
from arena.core.images import ImageError, smart_resize
from arena.core.lru import LRU
from arena.core.tool import Tool, ToolArgumentError, ToolContext, ToolOptions, ToolResult, register_tool

MIN_SIDE = 28
FACTOR = 32
MIN_PIXELS = 65_536
MAX_PIXELS = 8_294_400
MAX_COORDINATE = 1_000_000  # beyond this a box is a mistake, not an overshoot to clamp
# The published VistaArena script's crop result (ahang0712/vistahop evaluation/run_vistahop_eval.py @1d6a961,
# `evaluate_tool`): one user message of three parts, the text "<tool_response>" + a line break + its lead-in, the
# zoomed image, then a line break + "</tool_response>"; used when the task asks for the published layout
# (`--protocol original`, suites/vistahop/protocol.py). An integer is the position of a returned image.
PUBLISHED_LAYOUT = ("<tool_response>\nHere is the zoomed image:", 0, "\n</tool_response>")
# (source blob id, decoded size, full size, pixel box) -> the zoomed image
ZOOMS: LRU[tuple, Image.Image] = LRU(64, 128 << 20, lambda image: 4 * image.width * image.height)


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
    if not all(map(math.isfinite, bbox)):
        raise ToolArgumentError(f"bbox_2d has a non-finite number: {bbox}")
    if max(map(abs, bbox)) > MAX_COORDINATE:
        raise ToolArgumentError(f"bbox_2d has a number out of range: {bbox}; coordinates must lie within "
                                f"±{MAX_COORDINATE:,}")
    x1, y1, x2, y2 = bbox
    if relative:
        x1, x2 = x1 * width / 1000.0, x2 * width / 1000.0
        y1, y2 = y1 * height / 1000.0, y2 * height / 1000.0
    # clamp before rounding: a finite box can still scale past the float range (1e308 * width / 1000 = inf)
    left = math.floor(min(max(x1, 0.0), width))
    top = math.floor(min(max(y1, 0.0), height))
    right = math.ceil(min(max(x2, 0.0), width))
    bottom = math.ceil(min(max(y2, 0.0), height))
    if right <= left or bottom <= top:
        scale = "relative 0-1000" if relative else "pixel"
        raise ToolArgumentError(
            f"bbox_2d {bbox} is empty or inverted once clamped to the image ({width}x{height} px; "
            f"{scale} coordinates); it needs x1 < x2 and y1 < y2 inside the image"
        )
    return left, top, right, bottom


def zoom(image: Image.Image, box: tuple[int, int, int, int], full_size: tuple[int, int] | None = None) -> Image.Image:
    """Crop, upscale a side under 28 px to 28, then smart-resize (factor 32, 65,536–8,294,400 px); RGB.

    `box` is in pixels of the full image; when `image` was decoded reduced from `full_size`, the region is
    resampled from the reduced pixels straight to the size the full-resolution crop would get."""
    width, height = box[2] - box[0], box[3] - box[1]
    if min(width, height) < MIN_SIDE:
        scale = MIN_SIDE / min(width, height)
        width, height = max(MIN_SIDE, math.ceil(width * scale)), max(MIN_SIDE, math.ceil(height * scale))
    try:
        h, w = smart_resize(height, width, FACTOR, MIN_PIXELS, MAX_PIXELS)
    except ImageError as exc:
        raise ToolArgumentError(f"the region cannot be zoomed: {exc}") from None
    if full_size is not None and full_size != image.size:
        sx, sy = image.width / full_size[0], image.height / full_size[1]
        region = (box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy)
        out = image.resize((w, h), Image.Resampling.BICUBIC, box=region)
    else:
        crop = image.crop(box)
        if crop.size != (width, height):
            crop = crop.resize((width, height), Image.Resampling.BICUBIC)
        out = crop.resize((w, h), Image.Resampling.BICUBIC)
    return out if out.mode == "RGB" else out.convert("RGB")


def zoom_encoded(image: Image.Image, box: tuple[int, int, int, int],
                 full_size: tuple[int, int] | None) -> Image.Image:
    """`zoom`, its result's PNG encoded and that PNG's blob id computed at once (`png_of`, `content_id`), in the same
    thread: the episodes sharing the zoom, the first included, store it with no work of their own
    (`BlobStore.known_image`)."""
    zoomed = zoom(image, box, full_size)
    content_id(png_of(zoomed), "png")
    return zoomed


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
        source = ctx.images[args.img_idx]
        full_width, full_height = source.size or (await source.decoded()).full_size
        box = pixel_box(args.bbox_2d, full_width, full_height, self.relative)
        decoded = await source.decoded(rows=box[3])  # (a PNG's top rows, down to the box, may be all it decodes)
        # the pixels' own grid: the file's, or the smaller one they were reduced to (then zoomed from it)
        grid = decoded.image.size if decoded.rows is None else decoded.full_size
        scale_from = None if grid == decoded.full_size else decoded.full_size
        if CONTENT_ID.fullmatch(source.blob_id):  # computed once however many episodes ask at the same moment
            key = ("zoom", source.blob_id, grid, decoded.full_size, box)
            zoomed = await single_flight(key, ZOOMS, lambda: zoom_encoded(decoded.image, box, scale_from))
        else:
            zoomed = await asyncio.to_thread(zoom, decoded.image, box, scale_from)
        what = f" ({args.label})" if args.label else ""
        text = f"Zoomed in on {list(box)} (pixels) of image {args.img_idx}{what}."
        data = {"img_idx": args.img_idx, "pixel_box": list(box), "size": list(zoomed.size),
                "source_size": [full_width, full_height]}
        if ctx.task.layout.published_tool_results:
            data["layout"] = list(PUBLISHED_LAYOUT)
        return ToolResult(text=text, images=[zoomed], data=data)
