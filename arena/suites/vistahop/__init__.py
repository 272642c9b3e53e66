"""VistaHop (VistaArena): the VistaArena loader, the vistahop-mini world generator and its check, and the oracle / direct / text-only policies that follow the world's gold paths.

The suite is the class `VistaHop` (`arena.suites.vistahop.suite`), registered once by its `arena` entry point;
importing the package registers nothing."""
