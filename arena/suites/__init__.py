"""One package per benchmark (VistaHop, MM-CondChain, MMIR, CARV, UReason), each holding all of it: loaders,
world generator and its check, suite judges and metrics, suite policies and agents.

Importing this package registers every suite's loaders, worlds, judges and agents.
"""

from arena.core.discovery import import_submodules

import_submodules(__name__)
