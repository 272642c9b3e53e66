"""One package per benchmark (VistaHop, MM-CondChain, MMIR, CARV, UReason), each holding all of it: loaders,
world generator and its check, suite judges and metrics, suite policies and agents, declared by ONE `Suite` class
(`<package>.suite`) that the package's `arena` entry point names (pyproject.toml). Importing a package registers
nothing; `arena.runs.plugins.load_plugins` registers every suite installed, built in or not.
"""
