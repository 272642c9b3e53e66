"""VistaHop (VistaArena), as one `Suite`: the VistaArena loaders, the vistahop-mini world and its check, the
oracle / direct / text-only policies, the tool settings of the paper's Table 4, and the published pipeline's
reading of turns and data under `--protocol original`. Its answers are scored by the arena's own judges
(`normalized`, `mcq`, `llm`: the published reward functions)."""

from __future__ import annotations

from arena.core.suite import Suite
from arena.tools.crop import CropTool
from arena.tools.image_search import ImageSearchTool
from arena.tools.text_search import TextSearchTool

from .check import VISTAHOP_CHECK
from .loader import VISTAARENA_DATASETS_LOADER, VISTAARENA_LOADER
from .parquet import PARQUET_LOADER
from .policies import direct, oracle, text_only
from .protocol import PUBLISHED_REQUEST, original_datasets_json, original_items, original_turn
from .world import WORLD_NAME, build

TEXT, IMAGE, CROP = TextSearchTool.name, ImageSearchTool.name, CropTool.name


class VistaHop(Suite):
    """Multi-hop visual search with text search, reverse image search and crop/zoom (VistaArena)."""

    name = "vistahop"
    loaders = (VISTAARENA_LOADER, VISTAARENA_DATASETS_LOADER, PARQUET_LOADER)
    agents = {"oracle": oracle, "direct": direct, "text-only": text_only}
    # the paper's Table 4 settings (No-Tool is the core's `no-tool`), a crop-only setting, and the short names
    # `+`-joined settings may use (`text+crop`, `image+crop`, ...)
    settings = {"search": [TEXT, IMAGE], "search+crop": [TEXT, IMAGE, CROP], "crop": [CROP]}
    setting_aliases = {"text": [TEXT], "image": [IMAGE], "search": [TEXT, IMAGE], "crop": [CROP]}
    worlds = {WORLD_NAME: build}
    world_checks = {WORLD_NAME: VISTAHOP_CHECK}
    original_dataset_rules = {VISTAARENA_LOADER.name: original_items,
                              VISTAARENA_DATASETS_LOADER.name: original_datasets_json}
    original_turn_rule = original_turn
    published_request = PUBLISHED_REQUEST
