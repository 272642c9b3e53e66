"""The `arena` command line: the top layer, on top of `runs` (entry point `arena.cli.main:main`)."""
