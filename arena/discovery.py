"""Import every module of a package so its tools, agents, judges, loaders and worlds register themselves."""

from __future__ import annotations

import importlib
import pkgutil


def import_submodules(package_name: str) -> None:
    package = importlib.import_module(package_name)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package_name}.{info.name}")
