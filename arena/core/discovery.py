"""Import every module of a package so its tools, agents, judges, loaders and worlds register themselves."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Callable


def import_submodules(package_name: str) -> None:
    package = importlib.import_module(package_name)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package_name}.{info.name}")


def claim(registry: dict[str, Any], name: str, entry: Any, kind: str) -> None:
    """Register `entry` under `name`; a second, different entry under the same name is an error
    (two plugins must not silently replace each other)."""
    if name in registry and registry[name] is not entry:
        raise ValueError(f"{kind} {name!r} registered twice: {_origin(registry[name])} and {_origin(entry)}")
    registry[name] = entry


def registering(registry: dict[str, Any], name: str, kind: str) -> Callable[[Any], Any]:
    """A decorator that `claim`s what it decorates under `name` and returns it unchanged."""
    return lambda entry: (claim(registry, name, entry, kind), entry)[1]


def _origin(entry: Any) -> str:
    return f"{getattr(entry, '__module__', '?')}.{getattr(entry, '__qualname__', type(entry).__name__)}"
