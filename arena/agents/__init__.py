"""Agents: OpenAI-compatible, scripted, world policies; importing the package registers them all."""

from arena.core.discovery import import_submodules

import_submodules(__name__)
