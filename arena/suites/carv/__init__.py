"""CARV: the loader, the carv-mini world and the caption-parser / LLM judges (Table 2 cells)."""

from arena.core.discovery import import_submodules

import_submodules(__name__)
