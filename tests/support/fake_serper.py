"""A loopback stand-in for the paid Google APIs: Serper (/search, /images, /lens), SerpAPI's Google Lens
engine (/search.json), the pages their results link to, and thumbnails.

Wire formats, from the providers' documentation:
- Serper (https://serper.dev, API playground): `POST /search|/images|/lens`, key in `X-API-KEY`, JSON
  bodies `{"q", "num", "gl", "hl"}` / `{"url", "gl", "hl"}`; answers carry `searchParameters`,
  `organic` [{title, link, snippet, position}] (search), `images` [{title, imageUrl, imageWidth,
  imageHeight, thumbnailUrl, thumbnailWidth, thumbnailHeight, source, domain, link, googleUrl,
  position}] (images), `organic` [{title, source, link, imageUrl, thumbnailUrl}] (lens), and `credits`.
  Serper publishes no error reference; the bodies used here are the ones its API returns as quoted
  verbatim in public bug reports: HTTP 403 `{"message":"Unauthorized.","statusCode":403}` for a wrong
  key and HTTP 400 `{"message":"Not enough credits","statusCode":400}` for a spent one. Serper signals
  too many queries per second by HTTP 429 and documents no rate-limit headers; the 429 body here
  (`Too many requests`) is an assumption, and the fake adds a `Retry-After` header to check that one is
  honoured when a provider or proxy sends it.
- SerpAPI (https://serpapi.com/google-lens-api and https://serpapi.com/api-status-and-error-codes):
  `GET /search.json?engine=google_lens&url=...&api_key=...`; answers `search_metadata` and
  `visual_matches` [{position, title, link, source, thumbnail, image, ...}]; errors `{"error": ...}`:
  401 "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key", 429 "Your
  account has run out of searches.".

Like the real services, the Lens endpoints download the image at the given URL (here: a presigned URL
of the local S3 server) and answer by what they see: the fake classifies the image's mean colour.
"""

from __future__ import annotations

import io
import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import numpy as np
from PIL import Image

PAGES = {
    "orvanta": ("Orvanta Lighthouse", "<p>Orvanta Lighthouse is a stone tower on the Keltic coast.</p>"
                "<p>It was built in 1874 by the engineer Mirelle Dastrow.</p>"),
    "dastrow": ("Mirelle Dastrow", "<p>Mirelle Dastrow was an engineer born in Velmora.</p>"
                "<p>She founded the Dastrow Works in 1869.</p>"),
    "velmora": ("Velmora", "<p>Velmora is a harbour town with a yearly kite festival.</p>"),
    "boathouse": ("Velmora boathouse", "<p>The red boathouse of Velmora was painted in 1921.</p>"),
}
COLORS = {"red": (200, 30, 30), "white": (240, 240, 240), "blue": (70, 120, 180)}


def png(color: tuple[int, int, int], size: tuple[int, int] = (60, 40)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "PNG")
    return buf.getvalue()


def classify(data: bytes) -> str:
    """white / red / blue: the named colour nearest to the image's mean colour."""
    image = Image.open(io.BytesIO(data)).convert("RGB").resize((32, 32))
    mean = np.asarray(image, dtype=float).reshape(-1, 3).mean(axis=0)
    return min(COLORS, key=lambda name: sum((a - b) ** 2 for a, b in zip(COLORS[name], mean)))


class FakeGoogleApis:
    """The server. `credits` maps each valid key to its remaining credits (None: unlimited);
    `calls` counts answered requests per endpoint; `rate_limit` makes that many next requests answer 429
    with `Retry-After: retry_after`."""

    def __init__(self, credits: dict[str, int | None]):
        self.credits = dict(credits)
        self.calls: Counter[str] = Counter()
        self.refusals: Counter[str] = Counter()
        self.keys_used: list[str] = []
        self.lens_images: list[str] = []
        self.paths: list[str] = []
        self.rate_limit, self.retry_after = 0, "1"
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                self._send(status, json.dumps(payload).encode(), "application/json", headers)

            def do_POST(self) -> None:
                path = urlsplit(self.path).path
                fake.paths.append(path)
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    return self._json(400, {"message": "Invalid JSON", "statusCode": 400})
                if path not in ("/search", "/images", "/lens"):
                    return self._json(404, {"message": "Not found", "statusCode": 404})
                refusal = fake.charge(self.headers.get("X-API-KEY", ""), path, serper=True)
                if refusal:
                    return self._json(*refusal)
                if path == "/lens":
                    return self._json(200, fake.serper_lens(body))
                return self._json(200, fake.serper_search(path, body))

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                fake.paths.append(parts.path)
                if parts.path == "/search.json":
                    params = {k: v[0] for k, v in parse_qs(parts.query).items()}
                    if params.get("engine") != "google_lens":
                        return self._json(400, {"error": "Unsupported `engine` parameter."})
                    refusal = fake.charge(params.get("api_key", ""), "/search.json", serper=False)
                    if refusal:
                        return self._json(*refusal)
                    if not params.get("url"):
                        return self._json(400, {"error": "Missing `url` parameter."})
                    return self._json(200, fake.serpapi_lens(params["url"]))
                if parts.path.startswith("/pages/"):
                    name = parts.path.rsplit("/", 1)[-1]
                    if name not in PAGES:
                        return self._send(404, b"<h1>not found</h1>", "text/html")
                    title, text = PAGES[name]
                    html = f"<html><head><title>{title}</title></head><body>{text}</body></html>"
                    return self._send(200, html.encode(), "text/html; charset=utf-8")
                if parts.path.startswith("/img/"):
                    color = parts.path.rsplit("/", 1)[-1].removesuffix(".png")
                    if color in COLORS:
                        return self._send(200, png(COLORS[color]), "image/png")
                return self._send(404, b"not found", "text/plain")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    # -- accounting -------------------------------------------------------------------------------------

    def charge(self, key: str, path: str, *, serper: bool) -> tuple[int, dict[str, Any], dict[str, str]] | None:
        """None when the call may proceed (one credit taken), else (status, JSON body, headers)."""
        with self._lock:
            if self.rate_limit > 0:
                self.rate_limit -= 1
                self.refusals["429"] += 1
                body = {"message": "Too many requests", "statusCode": 429} if serper else \
                    {"error": "Your account has exceeded the hourly throughput limit."}
                return 429, body, {"Retry-After": self.retry_after}
            if key not in self.credits:
                self.refusals["auth"] += 1
                if serper:
                    return 403, {"message": "Unauthorized.", "statusCode": 403}, {}
                return 401, {"error": "Invalid API key. Your API key should be here: "
                                      "https://serpapi.com/manage-api-key"}, {}
            left = self.credits[key]
            if left is not None and left <= 0:
                self.refusals["credits"] += 1
                if serper:
                    return 400, {"message": "Not enough credits", "statusCode": 400}, {}
                return 429, {"error": "Your account has run out of searches."}, {}
            if left is not None:
                self.credits[key] = left - 1
            self.keys_used.append(key)
            self.calls[path] += 1
        return None

    # -- answers ----------------------------------------------------------------------------------------

    def serper_search(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        query = str(body.get("q", "")).lower()
        num = int(body.get("num", 10))
        params = {"q": body.get("q"), "gl": body.get("gl"), "hl": body.get("hl"), "num": num,
                  "type": "images" if path == "/images" else "search", "engine": "google"}
        if path == "/images":
            images = [{"title": f"{PAGES[n][0]} photo", "imageUrl": f"{self.base}/img/{c}.png", "imageWidth": 60,
                       "imageHeight": 40, "thumbnailUrl": f"{self.base}/img/{c}.png", "thumbnailWidth": 60,
                       "thumbnailHeight": 40, "source": PAGES[n][0], "domain": "127.0.0.1",
                       "link": f"{self.base}/pages/{n}", "googleUrl": "https://www.google.com/imgres", "position": i}
                      for i, (n, c) in enumerate((("orvanta", "white"), ("boathouse", "red")), 1)]
            return {"searchParameters": params, "images": images[:num], "credits": 1}
        order = ["dastrow", "orvanta", "velmora"] if "dastrow" in query else ["orvanta", "dastrow", "velmora"]
        organic = [{"title": PAGES[n][0], "link": f"{self.base}/pages/{n}",
                    "snippet": f"{PAGES[n][0]} (snippet for {query}).", "position": i}
                   for i, n in enumerate(order + ["gone"] if "gone" in query else order, 1) if n in PAGES]
        return {"searchParameters": params, "organic": organic[:num], "credits": 1}

    def _look(self, url: str) -> str:
        """Download the image like Google does and name what it shows."""
        response = httpx.get(url, timeout=10)
        response.raise_for_status()
        self.lens_images.append(url)
        return classify(response.content)

    def _matches(self, url: str) -> list[tuple[str, str, str]]:
        try:
            seen = self._look(url)
        except (httpx.HTTPError, OSError):
            return []
        return {"white": [("Orvanta Lighthouse sign", "orvanta", "white"), ("Mirelle Dastrow", "dastrow", "white")],
                "red": [("Velmora boathouse door", "boathouse", "red"), ("Velmora", "velmora", "red")],
                "blue": [("Keltic coast", "velmora", "blue")]}[seen]

    def serper_lens(self, body: dict[str, Any]) -> dict[str, Any]:
        organic = [{"title": title, "source": PAGES[page][0], "link": f"{self.base}/pages/{page}",
                    "imageUrl": f"{self.base}/img/{color}.png", "thumbnailUrl": f"{self.base}/img/{color}.png"}
                   for title, page, color in self._matches(str(body.get("url", "")))]
        return {"searchParameters": {"url": body.get("url"), "type": "lens", "engine": "google"},
                "organic": organic, "credits": 1}

    def serpapi_lens(self, url: str) -> dict[str, Any]:
        matches = self._matches(url)
        meta = {"id": "fake", "status": "Success", "google_lens_url": "https://lens.google.com/uploadbyurl"}
        if not matches:
            return {"search_metadata": meta, "error": "Google Lens hasn't returned any results for this query."}
        return {"search_metadata": meta, "visual_matches": [
            {"position": i, "title": title, "link": f"{self.base}/pages/{page}", "source": PAGES[page][0],
             "thumbnail": f"{self.base}/img/{color}.png", "image": f"{self.base}/img/{color}.png",
             "image_width": 60, "image_height": 40} for i, (title, page, color) in enumerate(matches, 1)]}

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
