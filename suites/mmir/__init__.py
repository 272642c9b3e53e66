"""MMIR: the loader, the mmir-mini world (pages rendered in Chromium with injected inconsistencies) and the 0 / 0.5 / 1 judge."""

from arena.discovery import import_submodules

import_submodules(__name__)
