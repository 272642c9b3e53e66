"""arena: a simulator for evaluating tool-using multimodal agents (VistaArena-style), under one namespace.

The first level holds the design's packages: `arena.core` (records, interfaces, the episode loop),
`arena.endpoints`, `arena.tools`, `arena.agents`, `arena.judges`, `arena.suites`, `arena.runs` and the command
line. The core's public names are re-exported here, so `from arena import Task, Episode` reads as before.
"""

from .core import *  # noqa: F401,F403  (the core's public names, its __all__)
from .core import __all__  # noqa: F401
