"""CARV: the loader, the carv-mini world and the caption-parser / LLM judges (Table 2 cells).

The suite is the class `CARV` (`arena.suites.carv.suite`), registered once by its `arena` entry point;
importing the package registers nothing."""
