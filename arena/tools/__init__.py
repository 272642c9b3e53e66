"""The arena's tools, one module each; importing the package registers them all."""

from arena.core.discovery import import_submodules

import_submodules(__name__)
