"""Containment: hostile pages in a world's `site/` and hostile markup given to `render` reach nothing outside.

Sinks listen on 127.0.0.1 (one TCP and one UDP port per vector) and count
every connection and datagram. Each vector is one hostile page (or one
`render` call) aimed at its own sink; after the page has had time to act, the
sink must have received nothing. The controls show that the sink counts a
plain socket and that an unsealed Chromium does reach it, so every other test
can fail. One Chromium serves all browser vectors (a fresh context per
vector, 4 at a time) and one serves all render vectors.
"""

from __future__ import annotations

import asyncio
import selectors
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from arena.core.blobs import BlobStore
from arena.core.dataset import Dataset
from arena.core.task import Task
from arena.core.tool import ToolContext, ToolError, ToolOptions
from arena.tools.browser import BrowserTool
from arena.tools.render import RenderTool


class Sinks:
    """One TCP and one UDP port on 127.0.0.1 per vector; counts every connection and datagram each receives.

    A connection's first bytes are kept and answered with an HTTP 302 back to the same port, so a client
    that follows redirects would be counted again.
    """

    def __init__(self, names: list[str]) -> None:
        self.selector = selectors.DefaultSelector()
        self.ports: dict[str, tuple[int, int]] = {}
        self.got: dict[str, dict[str, list[bytes]]] = {}
        self._sockets: list[socket.socket] = []
        for name in names:
            tcp = socket.create_server(("127.0.0.1", 0))
            udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            udp.bind(("127.0.0.1", 0))
            for sock, kind in ((tcp, "tcp"), (udp, "udp")):
                sock.setblocking(False)
                self.selector.register(sock, selectors.EVENT_READ, (name, kind))
                self._sockets.append(sock)
            self.ports[name] = (tcp.getsockname()[1], udp.getsockname()[1])
            self.got[name] = {"tcp": [], "udp": []}
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop:
            for key, _ in self.selector.select(0.05):
                name, kind = key.data
                sock = key.fileobj
                try:
                    if kind == "udp":
                        self.got[name]["udp"].append(sock.recvfrom(4096)[0])
                    elif kind == "tcp":
                        conn, _ = sock.accept()
                        conn.setblocking(False)
                        self.got[name]["tcp"].append(b"")
                        self.selector.register(conn, selectors.EVENT_READ, (name, "conn"))
                    else:
                        first = sock.recv(512)
                        if first and not self.got[name]["tcp"][-1]:
                            self.got[name]["tcp"][-1] = first
                        port = self.ports[name][0]
                        sock.sendall(f"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{port}/again\r\n"
                                     "Content-Length: 0\r\nConnection: close\r\n\r\n".encode())
                        self.selector.unregister(sock)
                        sock.close()
                except OSError:
                    if kind == "conn":
                        self.selector.unregister(sock)
                        sock.close()

    def received(self, name: str) -> dict[str, list[bytes]]:
        """What the vector's ports received: {"tcp": [first bytes of each connection], "udp": [datagrams]},
        without the empty kinds."""
        return {kind: list(got) for kind, got in self.got[name].items() if got}

    def close(self) -> None:
        self._stop = True
        self._thread.join(2)
        for sock in self._sockets:
            sock.close()


# -- hostile pages -------------------------------------------------------------------------------------------------

T, U = "{T}", "{U}"  # replaced by the sink's TCP and UDP ports
TCP = f"http://127.0.0.1:{T}"

PEER = """<script>
const pc = new RTCPeerConnection(%s);
pc.createDataChannel('x');
pc.createOffer().then(o => pc.setLocalDescription(o));
</script>"""
REMOTE_CANDIDATE = """<script>
(async () => {
  const a = new RTCPeerConnection(), b = new RTCPeerConnection();
  a.createDataChannel('x');
  await a.setLocalDescription(await a.createOffer());
  await b.setRemoteDescription(a.localDescription);
  await b.setLocalDescription(await b.createAnswer());
  await a.setRemoteDescription(b.localDescription);
  await a.addIceCandidate({candidate: 'candidate:1 1 udp 2122260223 127.0.0.1 {U} typ host',
                           sdpMid: a.localDescription.sdp.match(/a=mid:(\\S+)/)[1], sdpMLineIndex: 0});
})();
</script>"""

# name -> (page body, browser actions after goto). Actions: ("click", text) clicks the element whose text
# contains `text`; ("type", text, value) types into the element with that text and presses Enter.
PAGES: dict[str, tuple[str, list[tuple]]] = {
    "fetch": (f"<script>fetch('{TCP}/fetch')</script>", []),
    "fetch_keepalive": (f"<script>fetch('{TCP}/k', {{method: 'POST', keepalive: true, mode: 'no-cors'}})</script>", []),
    "fetch_localhost": (f"<script>fetch('http://localhost:{T}/fetch')</script>", []),
    "fetch_userinfo": (f"<script>fetch('http://world.local@127.0.0.1:{T}/fetch')</script>", []),
    "xhr": (f"<script>const x = new XMLHttpRequest(); x.open('GET', '{TCP}/xhr'); x.send()</script>", []),
    "websocket": (f"<script>new WebSocket('ws://127.0.0.1:{T}/ws')</script>", []),
    "websocket_world_port": (f"<script>new WebSocket('ws://world.local:{T}/ws')</script>", []),
    "eventsource": (f"<script>new EventSource('{TCP}/events')</script>", []),
    "send_beacon": (f"<script>navigator.sendBeacon('{TCP}/beacon', 'x')</script>", []),
    "img": (f"<img src='{TCP}/img.png'>", []),
    "img_srcset": (f"<img srcset='{TCP}/a.png 1x, {TCP}/b.png 2x'>", []),
    "script_src": (f"<script src='{TCP}/x.js'></script>", []),
    "module_import": (f"<script type=module>import('{TCP}/m.js')</script>", []),
    "stylesheet": (f"<link rel=stylesheet href='{TCP}/s.css'>", []),
    "css_url": (f"<div style=\"width:9px;height:9px;background:url('{TCP}/bg.png')\"></div>", []),
    "css_import": (f"<style>@import url('{TCP}/i.css');</style>", []),
    "font_face": (f"<style>@font-face{{font-family:F;src:url('{TCP}/f.woff')}} p{{font-family:F}}</style><p>x</p>", []),
    "favicon": (f"<link rel=icon href='{TCP}/favicon.ico'>", []),
    "manifest": (f"<link rel=manifest href='{TCP}/m.json'>", []),
    "video_poster": (f"<video poster='{TCP}/p.png' src='{TCP}/v.mp4'></video>", []),
    "object_embed": (f"<object data='{TCP}/o'></object><embed src='{TCP}/e'>", []),
    "svg_image": (f"<svg width=9 height=9><image href='{TCP}/s.png' width=9 height=9 /></svg>", []),
    "prefetch": (f"<link rel=prefetch href='{TCP}/prefetch'>", []),
    "preload": (f"<link rel=preload as=image href='{TCP}/preload.png'>", []),
    "preconnect": (f"<link rel=preconnect href='{TCP}'>", []),
    "dns_prefetch": (f"<link rel=dns-prefetch href='//127.0.0.1:{T}'><a href='{TCP}/a'>link</a>", []),
    "speculation_rules": ('<script type="speculationrules">{"prefetch": [{"source": "list", "urls": ["'
                          f'{TCP}/spec"]}}], "prerender": [{{"source": "list", "urls": ["{TCP}/pre"]}}]}}</script>',
                          []),
    "iframe": (f"<iframe src='{TCP}/frame'></iframe>", []),
    "iframe_srcdoc": (f"<iframe srcdoc=\"<img src='{TCP}/in-srcdoc.png'>\"></iframe>", []),
    "meta_refresh": (f"<meta http-equiv=refresh content='0;url={TCP}/refresh'>", []),
    "js_location": (f"<script>location = '{TCP}/location'</script>", []),
    "js_location_replace": (f"<script>location.replace('{TCP}/replace')</script>", []),
    "form_autosubmit": (f"<form id=f method=post action='{TCP}/form'><input name=a value=1></form>"
                        "<script>document.getElementById('f').submit()</script>", []),
    "form_click": (f"<form action='{TCP}/form'><button>Send form</button></form>", [("click", "Send form")]),
    "typed_url": ("<input placeholder='address' onchange='location = this.value'>",
                  [("type", "", f"{TCP}/typed")]),
    "typed_form": (f"<form action='{TCP}/search'><input name=q placeholder='search'></form>",
                   [("type", "", "kettles")]),
    "window_open": (f"<script>window.open('{TCP}/popup')</script>", []),
    "target_blank": (f"<a target=_blank href='{TCP}/blank'>Open tab</a>", [("click", "Open tab")]),
    "anchor_ping": (f"<a href='page.html' ping='{TCP}/ping'>Pinged link</a>", [("click", "Pinged link")]),
    "base_href": (f"<base href='{TCP}/'><img src='rel.png'><a href='rel.html'>Relative</a>",
                  [("click", "Relative")]),
    "worker": (f"<script>new Worker(URL.createObjectURL(new Blob([\"fetch('{TCP}/worker')\"], "
               "{type: 'text/javascript'})))</script>", []),
    "service_worker": ("<script>navigator.serviceWorker && navigator.serviceWorker.register('sw.js')</script>", []),
    "webrtc_stun": (PEER % f"{{iceServers: [{{urls: 'stun:127.0.0.1:{U}'}}]}}", []),
    "webrtc_turn_udp": (PEER % f"{{iceServers: [{{urls: 'turn:127.0.0.1:{U}', username: 'u', credential: 'p'}}]}}",
                        []),
    "webrtc_turn_tcp": (PEER % f"{{iceServers: [{{urls: 'turn:127.0.0.1:{T}?transport=tcp', username: 'u', "
                               "credential: 'p'}]}", []),
    "webrtc_remote_candidate": (REMOTE_CANDIDATE, []),
    "webtransport": (f"<script>try {{ new WebTransport('https://127.0.0.1:{U}/wt') }} catch (e) {{}}</script>", []),
    "file_navigation": ("<script>location = 'file:///etc/hostname'</script>", []),
}
SW = f"self.addEventListener('install', () => fetch('{TCP}/sw'));"
WEBRTC = {name for name in PAGES if name.startswith("webrtc") or name == "webtransport"}


RENDER_NO_SCRIPT: dict[str, str] = {
    name: PAGES[name][0] for name in (
        "img", "img_srcset", "stylesheet", "css_url", "css_import", "font_face", "favicon", "manifest",
        "video_poster", "object_embed", "svg_image", "prefetch", "preload", "preconnect", "dns_prefetch",
        "speculation_rules", "iframe", "iframe_srcdoc", "meta_refresh", "base_href")}
RENDER_NO_SCRIPT["form_image_input"] = f"<form action='{TCP}/f'><input type=image src='{TCP}/i.png'></form>"
RENDER_NO_SCRIPT["meta_refresh_file"] = "<meta http-equiv=refresh content='0;url=file:///etc/hostname'>"
RENDER_SCRIPT = {name: PAGES[name][0] for name in (
    "fetch", "xhr", "websocket", "eventsource", "send_beacon", "js_location", "form_autosubmit", "window_open",
    "worker", "webrtc_stun", "webrtc_turn_udp", "webrtc_turn_tcp", "webrtc_remote_candidate", "webtransport",
    "file_navigation")}
RENDER_SCRIPT["file_fetch"] = ("<p id=out>none</p><script>fetch('file:///etc/hostname').then(r => r.text())"
                               ".then(t => { document.getElementById('out').textContent = 'READ ' + t })"
                               ".catch(() => {})</script>")
GOTO_OUTSIDE = ("http://127.0.0.1:{T}/", "file:///etc/hostname", "ws://127.0.0.1:{T}/", "http://world.local:{T}/",
                "http://world.local@127.0.0.1:{T}/", "http://localhost:{T}/")
HOSTNAME = Path("/etc/hostname").read_text().strip() or "\0"
SETTLE = 1.5  # seconds a page keeps running after its last action (ICE gathering takes ~1 s)

NAMES = (["control", "unsealed", "goto_outside"] + [f"browser-{n}" for n in PAGES]
         + [f"render-{n}" for n in RENDER_NO_SCRIPT] + [f"render-scripts-{n}" for n in RENDER_SCRIPT])


@pytest.fixture(scope="module")
def sinks():
    s = Sinks(NAMES)
    yield s
    s.close()


def _fill(text: str, sinks: Sinks, name: str) -> str:
    tcp, udp = sinks.ports[name]
    return text.replace(T, str(tcp)).replace(U, str(udp))


def test_sink_counts_a_plain_connection(sinks: Sinks):
    tcp, udp = sinks.ports["control"]
    with socket.create_connection(("127.0.0.1", tcp)) as conn:
        conn.sendall(b"GET /control HTTP/1.1\r\n\r\n")
        conn.recv(100)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"ping", ("127.0.0.1", udp))
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and len(sinks.received("control")) < 2:
        time.sleep(0.02)
    assert sinks.received("control") == {"tcp": [b"GET /control HTTP/1.1\r\n\r\n"], "udp": [b"ping"]}


def test_an_unsealed_chromium_does_reach_the_sink(sinks: Sinks):
    """The same Chromium without the arena's flags and guards leaks through fetch and WebRTC (so the attacks work)."""
    from playwright.async_api import async_playwright

    from arena.tools.chromium import chromium_executable

    page_html = _fill(PAGES["fetch"][0] + PAGES["webrtc_stun"][0], sinks, "unsealed")

    async def scenario() -> None:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=chromium_executable(), headless=True,
                                                       args=["--no-sandbox"])
            page = await browser.new_page()
            await page.set_content(page_html)
            await page.wait_for_timeout(SETTLE * 1000)
            await browser.close()

    asyncio.run(scenario())
    got = sinks.received("unsealed")
    assert got["tcp"][0].startswith(b"GET /fetch ") and got["udp"], got


class Loop:
    """An event loop in a thread, so one browser serves every test of the module."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro, timeout: float = 120) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def _ctx(root: Path, tmp: Path) -> ToolContext:
    task = Task(id="hostile", question="q")
    dataset = Dataset(name="hostile", root=root, tasks=[task], source=root / "tasks.jsonl", world=root)
    return ToolContext(task=task, dataset=dataset, images=[], blobs=BlobStore(tmp / "blobs"))


@pytest.fixture(scope="module")
def browser_visits(tmp_path_factory, sinks: Sinks) -> dict[str, list[str]]:
    """Visit every hostile page (4 episodes at a time, one Chromium); per vector the texts the agent saw, or
    the failure that is not a ToolError."""
    root = tmp_path_factory.mktemp("hostile-world")
    site = root / "site"
    site.mkdir()
    for name, (body, _) in PAGES.items():
        (site / f"{name}.html").write_text(f"<!doctype html><html><head><title>{name}</title></head>"
                                           f"<body>{_fill(body, sinks, 'browser-' + name)}</body></html>")
    (site / "page.html").write_text("<p>a page of the world</p>")
    (site / "sw.js").write_text(_fill(SW, sinks, "browser-service_worker"))
    tool = BrowserTool(ToolOptions(browser_viewport="640x400"))
    slots = asyncio.Semaphore(4)

    async def visit(vector: str) -> list[str]:
        ctx = _ctx(root, tmp_path_factory.mktemp("blobs"))
        texts: list[str] = []
        async with slots:
            try:
                result = await tool({"action": "goto", "url": f"http://world.local/{vector}.html"}, ctx)
                texts.append(result.text)
                for action in PAGES[vector][1]:
                    element = next(e for e in result.data["elements"]
                                   if action[1] in e["text"] and (action[0] == "click" or e["tag"] == "input"))
                    call = ({"action": "click", "element_id": element["id"]} if action[0] == "click" else
                            {"action": "type", "element_id": element["id"], "text": action[2], "press_enter": True})
                    try:
                        result = await tool(call, ctx)
                        texts.append(result.text)
                    except ToolError as exc:  # a refused navigation is fine; reaching the sink is not
                        texts.append(f"ToolError: {exc}")
                await asyncio.sleep(SETTLE if vector in WEBRTC else 0.3)
            except Exception as exc:
                texts.append(f"FAILED {type(exc).__name__}: {exc}")
            finally:
                await tool.end_episode(ctx)
        return texts

    async def goto_outside() -> list[str]:
        ctx = _ctx(root, tmp_path_factory.mktemp("blobs"))
        texts = []
        for url in GOTO_OUTSIDE:
            try:
                await tool({"action": "goto", "url": _fill(url, sinks, "goto_outside")}, ctx)
                texts.append(f"OPENED {url}")
            except ToolError as exc:
                texts.append(str(exc))
        await tool.end_episode(ctx)
        return texts

    async def all_visits() -> dict[str, list[str]]:
        try:
            names = list(PAGES)
            results = await asyncio.gather(*(visit(n) for n in names), goto_outside())
            return dict(zip([*names, "goto_outside"], results))
        finally:
            await tool.aclose()

    loop = Loop()
    try:
        yield loop.run(all_visits())
    finally:
        loop.close()


@pytest.mark.parametrize("vector", list(PAGES))
def test_browser_vector_reaches_nothing(vector: str, sinks: Sinks, browser_visits: dict[str, list[str]]):
    texts = browser_visits[vector]
    assert not any(text.startswith("FAILED") for text in texts), texts
    assert sinks.received(f"browser-{vector}") == {}, f"{vector} reached the sink; the agent saw {texts}"
    for text in texts:
        urls = [line for line in text.splitlines() if line.startswith("URL:")]
        assert all(u.startswith("URL: http://world.local/") or u == "URL: about:blank" for u in urls), urls


def test_browser_goto_outside_the_world_is_refused(sinks: Sinks, browser_visits: dict[str, list[str]]):
    texts = browser_visits["goto_outside"]
    assert len(texts) == len(GOTO_OUTSIDE) and all("outside the world" in t for t in texts), texts
    assert sinks.received("goto_outside") == {}


@pytest.fixture(scope="module")
def renders(sinks: Sinks) -> dict[str, str]:
    """Every hostile markup through `render` (scripts off and on): per sink name, what the call returned."""
    tools = {False: RenderTool(ToolOptions()), True: RenderTool(ToolOptions(render_scripts=True))}

    async def render(scripts: bool, name: str, markup: str) -> str:
        try:
            result = await tools[scripts]({"html": markup + "<p>hostile</p>", "width": 200, "height": 120}, None)
            return result.text + "\n" + " ".join(e["text"] for e in result.data["elements"])
        except ToolError as exc:  # a page that fails to render is fine; reaching the sink is not
            return f"ToolError: {exc}"
        except Exception as exc:
            return f"FAILED {type(exc).__name__}: {exc}"

    async def all_renders() -> dict[str, str]:
        jobs = [(False, f"render-{n}", m) for n, m in RENDER_NO_SCRIPT.items()]
        jobs += [(True, f"render-scripts-{n}", m) for n, m in RENDER_SCRIPT.items()]
        try:
            texts = await asyncio.gather(*(render(scripts, name, _fill(markup, sinks, name))
                                           for scripts, name, markup in jobs))
            await asyncio.sleep(SETTLE)
        finally:
            for tool in tools.values():
                await tool.aclose()
        return {name: text for (_, name, _), text in zip(jobs, texts)}

    loop = Loop()
    try:
        yield loop.run(all_renders())
    finally:
        loop.close()


@pytest.mark.parametrize("name", [f"render-{n}" for n in RENDER_NO_SCRIPT] + [f"render-scripts-{n}" for n in RENDER_SCRIPT])
def test_render_vector_reaches_nothing(name: str, sinks: Sinks, renders: dict[str, str]):
    assert not renders[name].startswith("FAILED"), renders[name]
    assert sinks.received(name) == {}, f"{name} reached the sink"
    assert "READ" not in renders[name] and HOSTNAME not in renders[name]  # no local file was read
