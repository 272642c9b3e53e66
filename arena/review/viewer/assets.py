"""The viewer's page: its HTML template (`page.html`), style (`viewer.css`) and script (`viewer.js`), files shipped
as package data beside this module and read once with `importlib.resources` (data and shards come from
`arena.review.viewer`).

The script reads the index from a JSON block, draws the table over it (sortable, paged, filtered), and loads
an episode's shard (and the image shards it needs) when the episode is opened. Everything from the run reaches
the page through `textContent`, element attributes set from script, or data URLs; never as HTML. The template's
`%TITLE%`, `%CSS%`, `%SUMMARY%`, `%INDEX%`, `%SHARDS%` and `%JS%` are filled by `arena.review.viewer`.
"""

from importlib.resources import files


def _read(name: str) -> str:
    """A page file as shipped (read as bytes and decoded, so line endings stay exactly as in the file)."""
    return files(__package__).joinpath(name).read_bytes().decode("utf-8")


TEMPLATE = _read("page.html")
CSS = _read("viewer.css")
JS = _read("viewer.js")
