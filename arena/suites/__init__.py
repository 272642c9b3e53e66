"""Benchmark loaders, one module per format; importing the package registers them all."""

from arena.discovery import import_submodules

import_submodules(__name__)
