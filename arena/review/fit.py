"""Tables that never lose a cell on a narrow terminal.

A rich table narrower than its content wraps its cells at spaces; when even its longest words do not fit, rich
cuts cells to "…". `fitted` then lays the table out as one
block per row instead: the row's first cell, then "column: value" pairs, wrapped under it, so every value is
shown whole at any width.
"""

from __future__ import annotations

import io
from collections import Counter

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

def cells_of(table: Table) -> list[list[str]]:
    """The table's rows as plain strings, column by column."""
    columns = [[str(cell) for cell in column.cells] for column in table.columns]
    return [list(row) for row in zip(*columns)]


def fits(console: Console, table: Table, width: int | None = None) -> bool:
    """Whether `table` laid out in `width` (default: the console's) shows every cell whole: rendered there, it holds
    exactly the words it holds when nothing constrains it (a cell cut to "…", folded inside a word or a column
    dropped for want of room changes them; a cell wrapped at its spaces does not)."""
    return Counter(_rendered(table, width or console.width).split()) == Counter(_rendered(table, 10_000).split())


def _rendered(table: Table, width: int) -> str:
    probe = Console(width=width, file=io.StringIO(), color_system=None, legacy_windows=False)
    probe.print(table)
    return probe.file.getvalue()


def as_rows(table: Table) -> Group:
    """`table` as one block per row: its first cell, then the other columns as "header: value" (empty ones left
    out), under the table's title."""
    headers = [str(column.header) for column in table.columns]
    lines: list[RenderableType] = [Text(str(table.title), style="italic")] if table.title else []
    for row in cells_of(table):
        pairs = "; ".join(f"{h}: {v}" for h, v in zip(headers[1:], row[1:]) if v.strip())
        lines.append(Text(f"{headers[0]} {row[0]}" if row else "", style="bold"))
        lines.append(Padding(Text(pairs), (0, 0, 0, 4)))
    if table.caption:
        lines.append(Text(str(table.caption)))
    return Group(*lines)


def fitted(console: Console, table: Table) -> RenderableType:
    """`table` when it fits the console whole, else `as_rows(table)`."""
    return table if fits(console, table) else as_rows(table)
