"""Generated-world builders, one module per world; importing the package registers them all."""

from arena.discovery import import_submodules

import_submodules(__name__)
