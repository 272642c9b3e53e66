"""`arena cassette stats|export|merge`: inspect and combine recorded web traffic (see arena.tools.cassette)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from arena.tools.cassette import CassetteError, CassetteStore

from .common import console

app = typer.Typer(no_args_is_help=True, help="Inspect, export and merge web cassettes.")


def _open(path: Path, create: bool = False):
    try:
        return CassetteStore(path, create=create)
    except CassetteError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2)


@app.command("stats")
def stats(path: Path, as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")) -> None:
    """Entries per kind and backend, sizes and recording dates."""
    store = _open(path)
    try:
        info = store.stats()
    finally:
        store.close()
    if as_json:
        console.print_json(data=info)
        return
    table = Table(title=f"{info['path']}: {info['entries']} entries, {info['bytes']} bytes (format {info['format']})")
    for column in ("kind", "backend", "entries", "payload bytes", "first recorded", "last recorded"):
        table.add_column(column)
    for group in info["groups"]:
        table.add_row(group["kind"], group["backend"], str(group["entries"]), str(group["payload_bytes"]),
                      group["first"] or "", group["last"] or "")
    console.print(table)


@app.command("export")
def export(path: Path, out: Optional[Path] = typer.Option(None, help="JSON-lines file (default: standard output).")
           ) -> None:
    """Every entry as one JSON line (request, response, base64 blob), sorted by kind, backend and key."""
    store = _open(path)
    try:
        lines = (entry.model_dump_json() + "\n" for entry in store.entries())
        if out is None:
            for line in lines:
                sys.stdout.write(line)
        else:
            with out.open("w", encoding="utf-8") as fh:
                fh.writelines(lines)
            console.print(f"exported {store.stats()['entries']} entries to {out}")
    finally:
        store.close()


@app.command("merge")
def merge(target: Path, sources: list[Path],
          prefer: str = typer.Option("existing", help="On a request in both: existing, newer or incoming.")) -> None:
    """Merge cassettes into TARGET (created if missing)."""
    if prefer not in ("existing", "newer", "incoming"):
        console.print(f"[red]error:[/red] --prefer must be existing, newer or incoming, got {prefer!r}")
        raise typer.Exit(2)
    if any(source.resolve() == target.resolve() for source in sources):
        console.print(f"[red]error:[/red] {target} is both the target and a source")
        raise typer.Exit(2)
    stores = [_open(source) for source in sources]
    store = _open(target, create=True)
    try:
        for source, other in zip(sources, stores):
            counts = store.merge_from(other, prefer=prefer)  # type: ignore[arg-type]
            console.print(f"{source}: {counts['added']} added, {counts['replaced']} replaced, {counts['kept']} kept")
    finally:
        store.close()
        for other in stores:
            other.close()
