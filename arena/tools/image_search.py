"""`image_search_tool`: reverse image search.

Modes (tool option `image_search`):
- `stored`: VistaArena's behaviour, replaying the item's stored results
  (`metadata.image_search`: up to 5 {title, thumbnail}) for the task image; a thumbnail
  is a file under the dataset root or an image inside the data file (`Dataset.embedded`); under the published
  layout (`task.layout.published_tool_results`, `--protocol original` on VistaArena data) the result is laid out as
  the published script's message (`data["layout"]`) and each thumbnail kept at its size for the agent's resize;
- `index`: a true reverse search of any image in context (the task image or a
  crop) over the world's image index;
- `auto` (default): `index` when the dataset's world has an image index, else `stored`;
- `web`: a text-to-image lookup on the live web (`arena.tools.web_search`; the tool then
  takes `query` instead of `img_idx`);
- `live`: a true reverse search of any image in context (crops included) on Google
  Lens through Serper or SerpAPI, the image published by an image host (`arena.tools.lens`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Literal

from PIL import Image
from pydantic import BaseModel, Field

from arena.core.images import ImageError, decode_image
from arena.core.tool import RunResources, Tool, ToolArgumentError, ToolContext, ToolError, ToolResult, register_tool
from arena.tools.image_index import ReverseImageIndex
from arena.tools.lens import LiveImageSearch, check_live_options, lens_of
from arena.tools.search_results import MAX_IMAGE_RESULTS, THUMBNAIL_SIDE
from arena.tools.web_search import WEB_IMAGE_DESCRIPTION, RunWeb, WebImageSearchArgs, WebOptions, check_web_options

MAX_RESULTS = MAX_IMAGE_RESULTS
# The published VistaArena script's stored-results message (ahang0712/vistahop evaluation/run_vistahop_eval.py
# @1d6a961, `evaluate_tool`): these text parts, each result's thumbnail after its own part.
PUBLISHED_LEAD_IN = "<tool_response>\nReverse Image Search Results:"
PUBLISHED_RESULT = "\n\nTitle {i}: {title}\nThumbnail {i}: "
PUBLISHED_CLOSE = "\n</tool_response>"


class ImageSearchArgs(BaseModel):
    img_idx: int = Field(0, description="Which image in context to search for: 0 is the task image, then each "
                         "image returned by a tool (e.g. a zoomed-in crop), in order.")


def _thumbnail(path: Path) -> Image.Image:
    image = decode_image(path)
    image.thumbnail((THUMBNAIL_SIDE, THUMBNAIL_SIDE))
    return image


def _index_for(world: Path | None):
    if world is None:
        return None
    return ReverseImageIndex.for_world(world)


class ImageSearchOptions(WebOptions):
    """`image_search`: `auto`, `stored`, `index`, `web` or `live` (see the module docstring)."""

    image_search: Literal["auto", "stored", "index", "web", "live"] = "auto"
    lens_provider: str = "serper"
    lens_endpoint: str | None = None
    lens_api_key_env: str | None = None
    lens_timeout: float = 30.0
    image_host: str | None = None
    image_host_dir: str | None = None
    image_host_expires: int = 3600


@register_tool
class ImageSearchTool(Tool):
    name = "image_search_tool"
    description = ("Reverse image search: find web pages whose images match an image in context. Returns up to "
                   "five results, each with a title and a thumbnail.")
    Args = ImageSearchArgs
    Options = ImageSearchOptions

    def __init__(self, options=None):
        super().__init__(options)
        if self.options.image_search == "web":
            if self.options.web == "offline":
                raise ValueError("image_search=web needs the live web: --web live|record|replay|refresh")
            check_web_options(self.options)
        elif self.options.image_search == "live":
            check_web_options(self.options)
            check_live_options(self.options)
        self.web = RunWeb(self.name)
        self.lens: LiveImageSearch | None = None
        self._lens_problem = "image_search_tool was not opened for a run (Tool.open)"

    def arguments_model(self) -> type[BaseModel]:
        """In mode `web` the tool takes words (`query`), not an image in context."""
        return WebImageSearchArgs if self.options.image_search == "web" else ImageSearchArgs

    def describe(self) -> str:
        return WEB_IMAGE_DESCRIPTION if self.options.image_search == "web" else self.description

    async def open(self, run: RunResources) -> None:
        if self.options.image_search in ("web", "live"):
            self.web.open(run)
        if self.options.image_search == "live":
            try:
                self.lens = lens_of(run, self.options)
            except ToolError as exc:
                self._lens_problem = str(exc)  # each call reports it

    async def run(self, args: ImageSearchArgs, ctx: ToolContext) -> ToolResult:
        if self.options.image_search == "web":
            return await self.web.get().image_search(args.query)
        mode = self.options.image_search
        index = _index_for(ctx.dataset.world) if mode in ("auto", "index") else None
        if mode == "index" and index is None:
            raise ToolError("no reverse-image index is available for this dataset")
        if mode != "live" and index is None:
            return await self._stored(args, ctx)
        if not 0 <= args.img_idx < len(ctx.images):
            raise ToolArgumentError(f"img_idx {args.img_idx} is out of range: {len(ctx.images)} image(s) in context")
        if mode == "live":
            if self.lens is None:
                raise ToolError(self._lens_problem)
            return await self.lens.search(ctx.images[args.img_idx], ctx.blobs)
        return await self._search_index(index, args, ctx)

    async def _search_index(self, index, args: ImageSearchArgs, ctx: ToolContext) -> ToolResult:
        query = await ctx.images[args.img_idx].pil()
        hits = await asyncio.to_thread(index.search, query, MAX_RESULTS)
        if not hits:
            raise ToolError("no matching images found")
        thumbs = await asyncio.to_thread(lambda: [_thumbnail(Path(h.thumbnail)) for h in hits])
        lines = [f"[{i}] {h.title}\nURL: {h.url}" for i, h in enumerate(hits, 1)]
        return ToolResult(text="\n".join(lines), images=thumbs,
                          data={"mode": "index", "hits": [{"title": h.title, "url": h.url, "score": float(h.score)}
                                                          for h in hits]})

    async def _stored(self, args: ImageSearchArgs, ctx: ToolContext) -> ToolResult:
        published = ctx.task.layout.published_tool_results
        if args.img_idx != 0 and not published:  # the published script reads no argument: its results always
            raise ToolArgumentError("only the task image (img_idx 0) has stored reverse-search results here")
        stored = ctx.task.metadata.get("image_search") or []
        if published and not any(item.get("thumbnail") for item in stored):
            stored = []  # the published script shows results only when both stored lists are non-empty
        if not stored:
            raise ToolError("no reverse-image results are stored for this image")
        lines: list[str] = []
        paths: list[Path | str] = []  # files under the dataset root, or references to images inside the data file
        embedded = ctx.dataset.embedded
        for i, item in enumerate(stored[:MAX_RESULTS], 1):
            lines.append(f"Title {i}: {item.get('title', '')}")
            ref = item.get("thumbnail")
            if ref and embedded is not None and embedded.owns(ref):
                paths.append(ref)
            elif ref:
                paths.append(ctx.dataset.resolve(ref, where=f"task {ctx.task.id} image_search"))

        def read(path: Path | str) -> Image.Image | None:
            """The thumbnail, shrunk to the arena's thumbnail size (published layout: as stored, the agent resizes it
            as it resizes every image); None when missing or unreadable (skipped)."""
            try:
                if isinstance(path, str) and embedded is not None:
                    image = decode_image(embedded.read(path)[0], path)
                elif isinstance(path, Path) and published and not path.is_file():
                    return None
                else:
                    image = decode_image(path)
            except ImageError:
                return None
            if not published:
                image.thumbnail((THUMBNAIL_SIDE, THUMBNAIL_SIDE))
            return image

        if not published:
            thumbs = [t for t in await asyncio.to_thread(lambda: [read(p) for p in paths]) if t is not None]
            return ToolResult(text="\n".join(lines), images=thumbs, data={"mode": "stored", "results": len(lines)})
        return await asyncio.to_thread(self._published_stored, stored[:MAX_RESULTS], ctx, read)

    @staticmethod
    def _published_stored(stored: list[dict], ctx: ToolContext, read) -> ToolResult:
        """The stored results laid out as the published script lays them out (`evaluate_tool`, ahang0712/vistahop
        evaluation/run_vistahop_eval.py @1d6a961): a lead-in part, then per result "Title i: ..." and
        "Thumbnail i: " in one text part followed by the thumbnail when its file exists, then the closing tag."""
        layout: list[str | int] = [PUBLISHED_LEAD_IN]
        images: list[Image.Image] = []
        embedded = ctx.dataset.embedded
        for i, item in enumerate(stored, 1):
            layout.append(PUBLISHED_RESULT.format(i=i, title=item.get("title", "")))
            ref = item.get("thumbnail")
            if not ref:
                continue
            path = ref if embedded is not None and embedded.owns(ref) else \
                ctx.dataset.resolve(ref, where=f"task {ctx.task.id} image_search")
            image = read(path)
            if image is not None:
                layout.append(len(images))
                images.append(image)
        layout.append(PUBLISHED_CLOSE)
        text = "\n".join(f"Title {i}: {item.get('title', '')}" for i, item in enumerate(stored, 1))
        return ToolResult(text=text, images=images, data={"mode": "stored", "results": len(stored), "layout": layout})

    async def aclose(self) -> None:
        self.web.close()
        self.lens = None
