"""Elements of a rendered page: extraction in the page, the text list, and Set-of-Marks drawing.

Element ids are stored on the elements themselves (`data-arena-id`), so they are
stable for as long as the document lives: an element keeps its id across
scrolls, clicks and re-observations, and a newly appearing element gets the next
free id. A page may set `data-arena-id` itself (the MMIR world does, so the ids
the browser shows are the artifact's element ids); ids the browser assigns are
marked `data-arena-auto`. Ids are assigned in document order, so the same page
always gets the same ids.

Which elements are listed: author-marked ones; interactive ones (links, buttons,
inputs, selects, text areas, `[role=button|link|checkbox|tab|menuitem|switch]`,
`[onclick]`, content-editable); images, SVG drawings, canvases and videos; and
elements with their own visible text (not inside an interactive element, and not
inside an author-marked element). Only visible elements count (non-empty box,
not `display:none`/`visibility:hidden`/`opacity:0`), and only those meeting the
viewport unless the whole page is asked for.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from PIL import Image, ImageDraw, ImageFont

ELEMENTS_JS = r"""
(opts) => {
  const INTERACTIVE = new Set(["A", "BUTTON", "INPUT", "SELECT", "TEXTAREA", "SUMMARY"]);
  const MEDIA = new Set(["IMG", "SVG", "CANVAS", "VIDEO"]);
  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "TITLE", "META", "LINK", "OPTION"]);
  const ROLES = new Set(["button", "link", "checkbox", "tab", "menuitem", "switch", "radio", "option"]);
  const vw = window.innerWidth, vh = window.innerHeight;
  const sx = window.scrollX, sy = window.scrollY;
  const all = document.querySelectorAll("[data-arena-id]");
  let next = 1;
  for (const el of all) { const n = parseInt(el.getAttribute("data-arena-id"), 10); if (n >= next) next = n + 1; }
  const clean = (s) => (s || "").replace(/\s+/g, " ").trim();
  const isMarked = (el) => el.hasAttribute("data-arena-id") && !el.hasAttribute("data-arena-auto");
  const isInteractive = (el) => INTERACTIVE.has(el.tagName) || ROLES.has(el.getAttribute("role") || "")
      || el.hasAttribute("onclick") || el.isContentEditable && el.getAttribute("contenteditable") !== null;
  const ownText = (el) => {
    let t = "";
    for (const node of el.childNodes) if (node.nodeType === 3) t += node.textContent;
    return clean(t);
  };
  const textOf = (el) => {
    const tag = el.tagName;
    if (tag === "INPUT") {
      const type = (el.getAttribute("type") || "text").toLowerCase();
      if (type === "password") return el.value ? "\u2022".repeat(8) : clean(el.placeholder);
      if (type === "checkbox" || type === "radio") {
        const label = el.labels && el.labels.length ? clean(el.labels[0].innerText) : "";
        return (el.checked ? "[x] " : "[ ] ") + label;
      }
      return clean(el.value) || clean(el.placeholder);
    }
    if (tag === "TEXTAREA") return clean(el.value) || clean(el.placeholder);
    if (tag === "SELECT") return el.selectedIndex >= 0 ? clean(el.options[el.selectedIndex].text) : "";
    if (tag === "IMG") return clean(el.getAttribute("alt")) || clean(el.getAttribute("title"))
        || (el.getAttribute("src") || "").split("/").pop().slice(0, 60);
    if (MEDIA.has(tag.toUpperCase())) return clean(el.getAttribute("aria-label") || el.getAttribute("title") || "");
    const img = el.querySelector("img[alt]");
    return clean(el.innerText || el.textContent) || clean(el.getAttribute("aria-label"))
        || clean(el.getAttribute("title")) || (img ? clean(img.getAttribute("alt")) : "");
  };
  const out = [];
  const walk = (el, insideInteractive, insideMarked) => {
    const tag = el.tagName.toUpperCase();
    if (SKIP.has(tag)) return;
    const style = window.getComputedStyle(el);
    if (style.display === "none") return;
    const marked = isMarked(el);
    const interactive = isInteractive(el);
    let candidate = false;
    if (marked) candidate = true;
    else if (opts.onlyMarked) candidate = false;
    else if (interactive && !insideInteractive) candidate = true;
    else if (!insideMarked && !insideInteractive && (MEDIA.has(tag) || ownText(el).length > 0)) candidate = true;
    if (candidate && style.visibility !== "hidden" && parseFloat(style.opacity || "1") > 0) {
      const r = el.getBoundingClientRect();
      let x = r.left, y = r.top, w = r.width, h = r.height;
      let show = w >= 1 && h >= 1;
      if (show && !opts.fullPage) {
        const x2 = Math.min(r.right, vw), y2 = Math.min(r.bottom, vh);
        x = Math.max(r.left, 0); y = Math.max(r.top, 0); w = x2 - x; h = y2 - y;
        show = w >= 1 && h >= 1;
      } else if (show) { x += sx; y += sy; }
      if (show && out.length < opts.maxElements) {
        if (!el.hasAttribute("data-arena-id")) {
          el.setAttribute("data-arena-id", String(next++));
          el.setAttribute("data-arena-auto", "");
        }
        out.push({
          id: parseInt(el.getAttribute("data-arena-id"), 10),
          tag: tag.toLowerCase(),
          type: tag === "INPUT" ? (el.getAttribute("type") || "text").toLowerCase() : "",
          text: textOf(el).slice(0, opts.maxText),
          x: Math.round(x), y: Math.round(y), w: Math.round(w), h: Math.round(h),
          marked: marked,
        });
      }
    }
    if (MEDIA.has(tag) && tag !== "IMG") return;
    for (const child of el.children) walk(child, insideInteractive || (interactive && !marked), insideMarked || marked);
  };
  if (document.body) walk(document.body, false, false);
  return {
    elements: out, title: document.title, scrollX: Math.round(sx), scrollY: Math.round(sy),
    pageWidth: Math.round(document.documentElement.scrollWidth),
    pageHeight: Math.round(document.documentElement.scrollHeight),
    viewportWidth: vw, viewportHeight: vh,
  };
}
"""

PALETTE: list[tuple[int, int, int]] = [
    (230, 25, 75), (60, 180, 75), (0, 130, 200), (245, 130, 48), (145, 30, 180),
    (70, 190, 190), (240, 50, 230), (128, 128, 0), (0, 0, 128), (170, 110, 40),
    (128, 0, 0), (0, 128, 128),
]


@dataclass(frozen=True)
class Element:
    """One listed element; the box is (x, y, w, h) in pixels of the screenshot it belongs to."""

    id: int
    tag: str
    text: str
    x: int
    y: int
    w: int
    h: int
    type: str = ""
    marked: bool = False

    @property
    def box(self) -> tuple[int, int, int, int]:
        return self.x, self.y, self.w, self.h

    def line(self, max_text: int = 80) -> str:
        """`[id] <tag> "text" at (x, y, w, h)` as shown to the model."""
        tag = f"{self.tag} type={self.type}" if self.type and self.type != "text" else self.tag
        text = self.text if len(self.text) <= max_text else self.text[: max_text - 3] + "..."
        text = text.replace('"', "'")
        return f'[{self.id}] <{tag}> "{text}" at ({self.x}, {self.y}, {self.w}, {self.h})'

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def elements_from(raw: list[dict[str, Any]]) -> list[Element]:
    return [Element(id=int(e["id"]), tag=str(e["tag"]), text=str(e["text"]), x=int(e["x"]), y=int(e["y"]),
                    w=int(e["w"]), h=int(e["h"]), type=str(e.get("type") or ""), marked=bool(e.get("marked")))
            for e in raw]


def mark_color(element_id: int) -> tuple[int, int, int]:
    """The colour of an element's box and label in Set-of-Marks drawings."""
    return PALETTE[element_id % len(PALETTE)]


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:
        return ImageFont.load_default()


def draw_marks(image: Image.Image, elements: list[Element], line_width: int = 2, font_size: int = 12) -> Image.Image:
    """A copy of `image` with each element's box outlined and its id on a label in the box's colour.

    The outline runs along the box's own edges (x..x+w-1, y..y+h-1); the label sits
    just above the box's top-left corner, or inside it when there is no room above.
    """
    marked = image.convert("RGB")
    draw = ImageDraw.Draw(marked)
    font = _font(font_size)
    for el in elements:
        color = mark_color(el.id)
        x2, y2 = el.x + max(el.w, 1) - 1, el.y + max(el.h, 1) - 1
        draw.rectangle([el.x, el.y, x2, y2], outline=color, width=line_width)
    for el in elements:
        color = mark_color(el.id)
        label = str(el.id)
        left, top, right, bottom = draw.textbbox((0, 0), label, font=font)
        tw, th = right - left + 4, bottom - top + 2
        ly = el.y - th if el.y - th >= 0 else el.y + line_width
        lx = el.x
        draw.rectangle([lx, ly, lx + tw - 1, ly + th - 1], fill=color)
        draw.text((lx + 2 - left, ly + 1 - top), label, fill=(255, 255, 255), font=font)
    return marked
