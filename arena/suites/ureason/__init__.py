"""UReason: the loader, the ureason-mini world, the judges and the image-generation agent of the three settings.

The suite is the class `UReason` (`arena.suites.ureason.suite`), registered once by its `arena` entry point;
importing the package registers nothing."""
