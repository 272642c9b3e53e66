"""Images in an episode's context: decoded at most once, encoded for a model at most once per size."""

from __future__ import annotations

import asyncio
from pathlib import Path

from PIL import Image

from .images import encode_png, fit_for_model, open_image, png_data_url


class ContextImage:
    """One image the agent has seen: a task image (from a file) or one a tool returned.

    `blob_id` is its content address in the run's blob store; `source` says where it
    came from (`task`, or the tool name). Decoding and model encoding run in a worker
    thread and are cached, so a 4K task image is decoded once per episode however
    often it is cropped.
    """

    def __init__(
        self,
        blob_id: str,
        *,
        source: str,
        image: Image.Image | None = None,
        path: Path | None = None,
    ):
        if image is None and path is None:
            raise ValueError("ContextImage needs an image or a path")
        self.blob_id = blob_id
        self.source = source
        self.path = path
        self._image = image
        self._lock = asyncio.Lock()
        self._urls: dict[tuple[int, int, int], str] = {}

    @property
    def size(self) -> tuple[int, int] | None:
        """(width, height) once decoded, else None."""
        return self._image.size if self._image is not None else None

    async def pil(self) -> Image.Image:
        if self._image is None:
            async with self._lock:
                if self._image is None:
                    self._image = await asyncio.to_thread(open_image, self.path)
        return self._image

    async def data_url(self, factor: int, min_pixels: int, max_pixels: int) -> str:
        """PNG data URL of the image smart-resized for the model; cached per size setting."""
        key = (factor, min_pixels, max_pixels)
        if key not in self._urls:
            image = await self.pil()

            def encode() -> str:
                return png_data_url(encode_png(fit_for_model(image, factor, min_pixels, max_pixels)))

            self._urls[key] = await asyncio.to_thread(encode)
        return self._urls[key]
