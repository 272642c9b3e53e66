"""MMIR: the loader, the mmir-mini world (pages rendered in Chromium with injected inconsistencies) and the 0 / 0.5 / 1 judge."""

from arena.core.discovery import import_submodules

import_submodules(__name__)
