"""What the worker processes' fork server imports once, before it forks any worker (`--workers`).

Imported by the fork server only (`multiprocessing.set_forkserver_preload`): the worker entry point and every
built-in tool, agent, judge, loader and suite module, so that a worker forked from the server starts with them
loaded (and the built-ins registered) instead of importing them in a fresh interpreter. Installed plug-ins are not
imported here: each worker loads the entry points installed when it starts (`arena.runs.plugins.load_plugins`).
A module that fails to import here is left out; the worker imports it again itself, and reports the error then.
"""

from __future__ import annotations

import importlib

from arena.runs.plugins import built_in_modules

for _name in ["arena.runs.backends.worker_backend", *built_in_modules()]:
    try:
        importlib.import_module(_name)
    except Exception:  # the worker imports it again and reports why it cannot
        continue
