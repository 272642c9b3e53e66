"""MM-CondChain: the loader, the condchain-mini worlds, the VPIR predicate evaluator and the judge (True-path / False-path accuracy, Path F1)."""

from arena.core.discovery import import_submodules

import_submodules(__name__)
