"""How `arena ... --help` lays out, on top of typer's rich help (issue 31: what a newcomer sees first).

- An option's name is never cut: typer gives an option's negative form (`--no-strict-answers`) a column of its own
  and lets rich shorten every column when the terminal is narrow, so at 80 columns 15 names of `arena run --help`
  ended in "…". Here the negative form goes under the name in the same cell, and the name column is not wrapped
  or shortened (its type and help wrap instead).
- A command's line in a command list is its docstring's first paragraph on one line (typer's rich mode kept the
  docstring's line breaks and wrapped between them).
- On/off flags show no `<bool>` type (typer 0.29 shows one).

`install(app)` applies the first two to typer's formatter and sets the short help of every command of `app` (and of
its sub-apps); `main.py` calls it once, where the app is assembled.
"""

from __future__ import annotations

import inspect
from typing import Any

import typer
from rich.columns import Columns
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


def _joined(first: Any, second: Any) -> Any:
    """`first`, with `second` on a line under it when there is one."""
    return Text.assemble(first, "\n", second) if str(second) else first


def names_kept(table: Table) -> Table:
    """typer's options table (columns: [required mark,] name, short name, negative name, negative short name,
    type, help) as [required mark,] name with its negative form under it, short name, type, help; the name
    columns never wrap, so a narrow terminal wraps the type and the help instead of cutting a name."""
    columns = [list(column.cells) for column in table.columns]
    marked = len(columns) == 7
    mark, (long, short, negative, negative_short, types, helps) = (columns[0] if marked else None), columns[-6:]
    out = Table(highlight=True, show_header=False, expand=True, box=table.box, show_lines=table.show_lines,
                leading=table.leading, border_style=table.border_style, row_styles=table.row_styles,
                pad_edge=table.pad_edge, padding=table.padding)
    if marked:
        out.add_column(no_wrap=True)
    out.add_column(no_wrap=True)
    out.add_column(no_wrap=True)
    out.add_column(overflow="fold")
    out.add_column(overflow="fold")
    for cell in (*types, *helps):  # a long word (a URL) is broken, not cut
        for text in (cell.renderables if isinstance(cell, Columns) else [cell]):
            if isinstance(text, Text):
                text.overflow = "fold"
    for i in range(len(long)):
        row = [_joined(long[i], negative[i]), _joined(short[i], negative_short[i]), types[i], helps[i]]
        out.add_row(*([mark[i]] if mark is not None else []), *row)
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


def install(app: typer.Typer) -> None:
    """Apply this module's layout to typer's help and to `app`'s commands (see the module docstring)."""
    TyperOption.display_type_rich = _flag_type  # type: ignore[method-assign]
    rich_utils._print_options_panel = _options_panel
    _short_helps(app)
