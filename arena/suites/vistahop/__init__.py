"""VistaHop (VistaArena): the VistaArena loader, the vistahop-mini world generator and its check, and the oracle / direct / text-only policies that follow the world's gold paths."""

from arena.core.discovery import import_submodules

import_submodules(__name__)
