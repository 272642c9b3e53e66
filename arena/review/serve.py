"""`arena view --serve`: serve a written viewer over HTTP, read-only: the page and its shard files, nothing else.

The page lives in the run directory, next to episodes.jsonl and run.json; only the
page itself, `<page>-view/[eip]-NNNNN.js` and the full-resolution images `<page>-view/f-<sha256>.js`
are answered (everything else is 404), so serving a viewer never publishes the run store. Bind to
127.0.0.1 (the default) and forward the port (`ssh -L 8765:127.0.0.1:8765 host`) to look at a run on a remote machine.
"""

from __future__ import annotations

import functools
import re
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable
from urllib.parse import unquote, urlsplit

from .viewer import shard_dir

SHARD_FILE = re.compile(r"[eip]-\d{5}\.js|f-[0-9a-f]{64}\.js")


class ViewerHandler(SimpleHTTPRequestHandler):
    """Static files limited to one page and its shards."""

    def __init__(self, *args, page: Path, **kwargs):
        self.page = page
        super().__init__(*args, directory=str(page.parent), **kwargs)

    def allowed(self) -> bool:
        path = unquote(urlsplit(self.path).path)
        if path == "/" + self.page.name:
            return True
        folder, _, name = path.lstrip("/").partition("/")
        return folder == shard_dir(self.page).name and SHARD_FILE.fullmatch(name) is not None

    def do_GET(self) -> None:
        if urlsplit(self.path).path == "/":
            self.send_response(302)
            self.send_header("Location", "/" + self.page.name)
            self.end_headers()
            return
        if not self.allowed():
            self.send_error(404)
            return
        super().do_GET()

    def do_HEAD(self) -> None:
        if not self.allowed():
            self.send_error(404)
            return
        super().do_HEAD()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        return


def serve_viewer(page: Path, host: str, port: int, announce: Callable[[str], None]) -> None:
    """Serve `page` and its shards until interrupted; `announce` gets the page's URL once listening."""
    handler = functools.partial(ViewerHandler, page=page.resolve())
    with ThreadingHTTPServer((host, port), handler) as server:
        bound_host, bound_port = server.server_address[:2]
        announce(f"http://{bound_host}:{bound_port}/{page.name}")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
