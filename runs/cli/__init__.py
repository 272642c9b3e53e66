"""The `arena` command line: the top layer, on top of `runs` (entry point `runs.cli.main:main`)."""
