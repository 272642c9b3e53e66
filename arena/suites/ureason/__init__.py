"""UReason: the loader, the ureason-mini world, the judges and the image-generation agent of the three settings."""

from arena.core.discovery import import_submodules

import_submodules(__name__)
