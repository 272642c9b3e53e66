"""MM-CondChain: the loader, the condchain-mini worlds, the VPIR predicate evaluator and the judge (True-path / False-path accuracy, Path F1).

The suite is the class `CondChain` (`arena.suites.condchain.suite`), registered once by its `arena` entry point;
importing the package registers nothing."""
