"""A titled table of strings, shown in the console (rich) and in HTML pages (escaped)."""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from rich import box
from rich.table import Table as RichTable


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    protocol: str = ""

    @property
    def shown_title(self) -> str:
        """The title with the protocol(s) of the runs it shows."""
        return f"{self.title} · protocol: {self.protocol}" if self.protocol else self.title

    def rich(self) -> RichTable:
        """The table for a terminal; cells wrap at spaces when it is narrow (`arena.review.fit.fitted` shows it as
        one block per row where even that does not fit)."""
        table = RichTable(title=self.shown_title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                          show_edge=False, collapse_padding=True)
        for i, name in enumerate(self.columns):
            table.add_column(name, justify="left" if i == 0 else "right")
        for row in self.rows:
            table.add_row(*row)
        return table

    def html(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>" for row in self.rows)
        return (f"<h2>{html.escape(self.shown_title)}</h2><table><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table>")
