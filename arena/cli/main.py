"""The `arena` command: every command group of the CLI, registered explicitly in one place.

The CLI is the top layer (`cli -> runs, review -> suites -> agents, judges, tools -> endpoints, store -> core`):
one module per command group under `arena/cli/` builds a typer group (run_commands: run, sweep, resume, judge,
fork, doctor; serve_commands: serve; review_commands: report, compare, export, view, replay; info_commands,
label_commands, transcript_commands, world_commands, cassette); this module assembles them. Commands load the plug-ins they need
(`arena.cli.common.review_run` for the reviewing ones) before calling into `arena.runs` or `arena.review`.
"""

from __future__ import annotations

from importlib import metadata
from typing import Optional

import typer

from . import (cassette, help_layout, info_commands, label_commands, review_commands, run_commands,
               serve_commands, transcript_commands, world_commands)

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Evaluate tool-using multimodal agents.",
                  context_settings={"help_option_names": ["-h", "--help"]})


def _version(value: bool) -> None:
    if value:
        try:
            version = metadata.version("arena")
        except metadata.PackageNotFoundError:
            version = "unknown"
        typer.echo(f"arena {version}")
        raise typer.Exit()


@app.callback()
def _main(version: Optional[bool] = typer.Option(None, "--version", callback=_version, is_eager=True,
                                                 help="Print the arena version and exit.")) -> None:
    """Evaluate tool-using multimodal agents."""
app.add_typer(run_commands.app)
app.add_typer(serve_commands.app)
app.add_typer(review_commands.app)
app.add_typer(info_commands.app)
app.add_typer(label_commands.app)
app.add_typer(transcript_commands.app)
app.add_typer(world_commands.app, name="world", rich_help_panel="Worlds and plugins")
app.add_typer(cassette.app, name="cassette", rich_help_panel="Look at runs")
help_layout.install(app)


def main() -> None:
    """Console-script entry point."""
    app()
