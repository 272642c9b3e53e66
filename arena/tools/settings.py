"""VistaHop's tool settings (paper Table 4: No-Tool, Search, Search+Crop), a crop-only setting, and the
short names that `+`-joined settings may use (`text+crop`, `image+crop`, ...)."""

from __future__ import annotations

from arena.core.settings import register_alias, register_setting

from .crop import CropTool
from .image_search import ImageSearchTool
from .text_search import TextSearchTool

TEXT, IMAGE, CROP = TextSearchTool.name, ImageSearchTool.name, CropTool.name

register_setting("search", [TEXT, IMAGE])
register_setting("search+crop", [TEXT, IMAGE, CROP])
register_setting("crop", [CROP])
register_alias("text", [TEXT])
register_alias("image", [IMAGE])
register_alias("search", [TEXT, IMAGE])
register_alias("crop", [CROP])
