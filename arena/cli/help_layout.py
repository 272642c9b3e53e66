"""How `arena ... --help` lays out, on top of typer's rich help (issue 31: what a newcomer sees first).

- An option's name is never cut, and its help reads at 80 columns: typer gives names, negative forms
  (`--no-strict-answers`), types and help a column each, so at 80 columns names ended in "…" (issue 31) and the
  help was wrapped at ~24 characters, a URL split in two (issue 36). Here an option is its names and type on one
  line, and its help under them, indented, over the whole width of the panel.
- A command's line in a command list is its docstring's first paragraph on one line (typer's rich mode kept the
  docstring's line breaks and wrapped between them).
- On/off flags show no `<bool>` type (typer 0.29 shows one).
- A usage error is one line, "arena run: error: ... (arena run -h for help)", not typer's five-line box.

`install(app)` applies the first two to typer's formatter and sets the short help of every command of `app` (and of
its sub-apps); `main.py` calls it once, where the app is assembled.
"""

from __future__ import annotations

import inspect
from typing import Any

import click
import typer
from rich.console import Group
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from typer import rich_utils
from typer.core import TyperOption

_typer_options_panel = rich_utils._print_options_panel
_display_type = TyperOption.display_type_rich


def _flag_type(self: TyperOption, ctx: Any) -> str | None:
    """No `<bool>` type column for on/off flags; other options unchanged."""
    return None if self.is_flag else _display_type(self, ctx)


class _Collect:
    """Stands in for the console typer prints an options panel on; keeps what it was given."""

    def __init__(self) -> None:
        self.printed: list[Any] = []

    def print(self, renderable: Any, *args: Any, **kwargs: Any) -> None:
        self.printed.append(renderable)


def _name_line(*parts: Any) -> Text:
    """The parts that are given (long name, short name, negative forms, type), two spaces apart, on one line."""
    return Text("  ").join(part if isinstance(part, Text) else Text(str(part)) for part in parts if str(part))


def names_kept(table: Table) -> Table:
    """typer's options table (columns: [required mark,] name, short name, negative name, negative short name,
    type, help) as [required mark,] one cell per option: its names and type on one line, never wrapped or cut,
    and its help under them, indented, wrapped to the whole width of the panel (a URL is never split)."""
    columns = [list(column.cells) for column in table.columns]
    marked = len(columns) == 7
    mark, (long, short, negative, negative_short, types, helps) = (columns[0] if marked else None), columns[-6:]
    out = Table(highlight=True, show_header=False, expand=True, box=table.box, show_lines=table.show_lines,
                leading=table.leading, border_style=table.border_style, row_styles=table.row_styles,
                pad_edge=table.pad_edge, padding=table.padding)
    if marked:
        out.add_column(no_wrap=True)
    out.add_column(overflow="fold")
    for i in range(len(long)):
        names = _name_line(long[i], short[i], negative[i], negative_short[i], types[i])
        names.no_wrap, names.overflow = True, "ignore"
        cell = Group(names, Padding(helps[i], (0, 0, 0, 4))) if str(helps[i]).strip() else names
        out.add_row(*([mark[i]] if mark is not None else []), cell)
    return out


def _options_panel(**kwargs: Any) -> None:
    """typer's options panel, printed with `names_kept` applied to its table."""
    console, collect = kwargs["console"], _Collect()
    _typer_options_panel(**{**kwargs, "console": collect})
    for item in collect.printed:
        if isinstance(item, Panel) and isinstance(item.renderable, Table) and len(item.renderable.columns) in (6, 7):
            item.renderable = names_kept(item.renderable)
        console.print(item)


def one_line(doc: str | None) -> str | None:
    """A docstring's first paragraph as one line."""
    if not doc:
        return None
    return " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())


def _short_helps(app: typer.Typer) -> None:
    for command in app.registered_commands:
        if command.short_help is None and command.callback is not None:
            command.short_help = one_line(command.help or command.callback.__doc__)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            _short_helps(group.typer_instance)


def one_line_error(error: click.ClickException) -> None:
    """A usage error as one line on stderr: "arena run: error: <message> (arena run -h for help)"."""
    if error.__class__.__name__ == "NoArgsIsHelpError":  # the help was printed instead
        return
    ctx: click.Context | None = getattr(error, "ctx", None)
    where = ctx.command_path if ctx is not None else "arena"
    helps = ctx is not None and ctx.command.get_help_option(ctx) is not None
    hint = f" ({ctx.command_path} {ctx.help_option_names[0]} for help)" if ctx is not None and helps else ""
    click.echo(f"{where}: error: {' '.join(error.format_message().split())}{hint}", err=True)


def install(app: typer.Typer) -> None:
    """Apply this module's layout to typer's help and to `app`'s commands (see the module docstring)."""
    TyperOption.display_type_rich = _flag_type  # type: ignore[method-assign]
    rich_utils._print_options_panel = _options_panel
    rich_utils.rich_format_error = one_line_error
    _short_helps(app)
