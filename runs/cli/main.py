"""The `arena` command: every command group of the CLI, registered explicitly in one place.

The CLI is the top layer (`cli -> runs -> suites -> agents, judges, tools -> arena`): command modules
under `runs/cli/` build typer groups; this module assembles them and loads the plugins.
"""

from __future__ import annotations

import typer

from . import cassette, info_commands, label_commands, run_commands, transcript_commands, world_commands

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Evaluate tool-using multimodal agents.")
app.add_typer(run_commands.app)
app.add_typer(info_commands.app)
app.add_typer(label_commands.app)
app.add_typer(transcript_commands.app)
app.add_typer(world_commands.app, name="world")
app.add_typer(cassette.app, name="cassette")


def main() -> None:
    """Console-script entry point."""
    app()
