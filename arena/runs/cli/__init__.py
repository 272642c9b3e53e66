"""The `arena` command line: the top layer, on top of `runs` (entry point `arena.runs.cli.main:main`)."""
