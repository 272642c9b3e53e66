"""Judges and metric aggregators; importing the package registers them all."""

from arena.core.discovery import import_submodules

import_submodules(__name__)
