"""Filling the registries: the built-in packages and every installed `arena` entry point.

Loaded in the CLI process and in every worker (Ray or local processes), so a third-party tool, agent,
judge, loader, world or suite installed with an `arena` entry point works everywhere the built-ins do.
An entry point may name a `Suite` class (registered: how every suite, the built-in ones included, is
installed), a module (imported for its registrations) or another callable (called once).

Also the one place that calls registered factories with user options.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import sys
from importlib.metadata import entry_points
from typing import Any, Callable

from arena.core.discovery import import_submodules
from arena.core.suite import Suite, register_suite

BUILT_IN = ("arena.tools", "arena.agents", "arena.judges")
ENTRY_POINT_GROUP = "arena"
_loaded: set[str] = set()
_scanned: tuple[tuple[tuple[str, int], ...], Any] | None = None
_built_ins_imported = False
_plugins_loaded_from: Any = None  # the entry-point scan the last complete `load_plugins` loaded


class PluginError(RuntimeError):
    """An installed plugin failed to load; names the entry point and what it raised."""


def load_entry_points(group: str = ENTRY_POINT_GROUP, found: Any = None) -> list[str]:
    """Import (or call) each entry point of `group` once per process (`found`: the group's entry points, when the
    caller has scanned the installed packages for them already); returns their names."""
    names = []
    for ep in sorted(entry_points(group=group) if found is None else found, key=lambda e: e.name):
        names.append(ep.name)
        if ep.value in _loaded:
            continue
        try:
            target = ep.load()
        except Exception as exc:
            raise PluginError(f"plugin {ep.name!r} ({ep.value}) failed to load: {type(exc).__name__}: {exc}") from exc
        if isinstance(target, type) and issubclass(target, Suite):
            try:
                register_suite(target)
            except (TypeError, ValueError) as exc:
                raise PluginError(f"suite {ep.name!r} ({ep.value}) cannot be registered: {exc}") from exc
        elif callable(target) and not inspect.ismodule(target):
            target()
        _loaded.add(ep.value)
    return names


def built_in_modules() -> list[str]:
    """The modules `load_plugins` imports for the built-in packages (their names; the packages are imported)."""
    names = []
    for package in BUILT_IN:
        path = importlib.import_module(package).__path__
        names += [f"{package}.{m.name}" for m in sorted(pkgutil.iter_modules(path), key=lambda m: m.name)
                  if not m.name.startswith("_")]
    return names


def installed_entry_points() -> Any:
    """The `arena` entry points installed: one scan of the packages' metadata, repeated only when an import path
    changed (a directory of `sys.path` added, removed or written to: installing or removing a distribution
    creates or deletes its `*.dist-info` there). A run loads the plug-ins twice (~4 ms a scan)."""
    global _scanned
    state = tuple((path, _mtime(path)) for path in sys.path)
    if _scanned is None or _scanned[0] != state:
        _scanned = (state, entry_points(group=ENTRY_POINT_GROUP))
    return _scanned[1]


def _mtime(path: str) -> int:
    try:
        return os.stat(path or ".").st_mtime_ns
    except OSError:
        return -1


def load_plugins() -> None:
    """Register every tool, agent, judge and suite (with its loaders, worlds, ...), built in or installed.

    The built-in packages' modules are imported once per process; the entry points are loaded again only when
    the scan of the installed packages is a new one (`installed_entry_points`: an import path changed), so a
    second call in the same process (a run loads the plug-ins twice) costs a stat per import path."""
    global _built_ins_imported, _plugins_loaded_from
    if not _built_ins_imported:
        for package in BUILT_IN:
            import_submodules(package)
        _built_ins_imported = True
    found = installed_entry_points()
    if found is _plugins_loaded_from:
        return
    names = load_entry_points(found=found)
    if not any(ep.value.startswith("arena.suites.") for ep in found):
        raise PluginError(f"the built-in suites are not installed (no `{ENTRY_POINT_GROUP}` entry point names "
                          "arena.suites.*; entry points found: " + (", ".join(names) or "none") + "): the arena's "
                          "install predates its pyproject.toml; re-run `pip install -e .` in the checkout")
    _plugins_loaded_from = found


def accepted_options(factory: Callable[..., Any], options: dict[str, Any]) -> dict[str, Any]:
    """The options a registered factory takes (all of them when it takes **kwargs)."""
    params = inspect.signature(factory).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return dict(options)
    return {k: v for k, v in options.items() if k in params}


def call_with_options(factory: Callable[..., Any], options: dict[str, Any], what: str) -> Any:
    """Call a registered factory; unknown options are an error that lists the accepted ones."""
    accepted = accepted_options(factory, options)
    unknown = [k for k in options if k not in accepted]
    if unknown:
        params = inspect.signature(factory).parameters
        raise ValueError(f"{what} does not take option(s) {', '.join(unknown)}; it takes: {', '.join(params)}")
    try:
        return factory(**options)
    except TypeError as exc:
        raise ValueError(f"{what}: {exc}") from None
