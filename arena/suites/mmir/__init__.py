"""MMIR: the loader, the mmir-mini world (pages rendered in Chromium with injected inconsistencies) and the 0 / 0.5 / 1 judge.

The suite is the class `MMIR` (`arena.suites.mmir.suite`), registered once by its `arena` entry point;
importing the package registers nothing."""
