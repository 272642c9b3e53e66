"""Pillow drawing primitives for scenes: fonts, logos, and the visual anchors (banners, flags, signs...).

Each anchor function draws one anchor whose top-left corner is at (x, y) and returns
the box of its readable surface (the part a crop should cover); supports such as
poles or ropes are drawn outside that box.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

from PIL import ImageDraw, ImageFont

from .graph import LogoSpec

FONT_CANDIDATES = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans-Bold.ttf",
)

Box = tuple[int, int, int, int]
RGB = tuple[int, int, int]


@functools.lru_cache(maxsize=None)
def font_source() -> str:
    """The TTF used for all text: DejaVu Sans Bold when installed, else Pillow's bundled default font."""
    return next((p for p in FONT_CANDIDATES if Path(p).is_file()), "pillow-default")


@functools.lru_cache(maxsize=64)
def font(size: int) -> ImageFont.FreeTypeFont:
    source = font_source()
    if source == "pillow-default":
        return ImageFont.load_default(size=size)
    return ImageFont.truetype(source, size)


def text_box(text: str, size: int) -> Box:
    return tuple(int(v) for v in font(size).getbbox(text))  # type: ignore[return-value]


def ink(fill: RGB) -> RGB:
    """Black or white, whichever reads better on `fill`."""
    r, g, b = fill
    return (20, 20, 20) if 0.299 * r + 0.587 * g + 0.114 * b > 140 else (245, 245, 245)


def darker(colour: RGB, factor: float = 0.6) -> RGB:
    return tuple(int(c * factor) for c in colour)  # type: ignore[return-value]


def _polygon(cx: float, cy: float, radius: float, sides: int,
             rotation: float = -math.pi / 2) -> list[tuple[float, float]]:
    return [(cx + radius * math.cos(rotation + 2 * math.pi * i / sides),
             cy + radius * math.sin(rotation + 2 * math.pi * i / sides)) for i in range(sides)]


def draw_logo(draw: ImageDraw.ImageDraw, box: Box, logo: LogoSpec) -> None:
    x1, y1, x2, y2 = box
    draw.rectangle(box, fill=logo.bg, outline=darker(logo.bg), width=max(1, (x2 - x1) // 20))
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    r = (x2 - x1) * 0.36
    shape = logo.shape
    if shape == "circle":
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=logo.fg)
    elif shape == "ring":
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], outline=logo.fg, width=max(2, int(r / 3)))
    elif shape == "triangle":
        draw.polygon(_polygon(cx, cy + r * 0.15, r, 3), fill=logo.fg)
    elif shape == "diamond":
        draw.polygon(_polygon(cx, cy, r, 4), fill=logo.fg)
    elif shape == "hexagon":
        draw.polygon(_polygon(cx, cy, r, 6), fill=logo.fg)
    elif shape == "square":
        draw.rectangle([cx - r * 0.8, cy - r * 0.8, cx + r * 0.8, cy + r * 0.8], fill=logo.fg)
    elif shape == "star":
        points = []
        for i in range(10):
            radius = r if i % 2 == 0 else r * 0.45
            angle = -math.pi / 2 + math.pi * i / 5
            points.append((cx + radius * math.cos(angle), cy + radius * math.sin(angle)))
        draw.polygon(points, fill=logo.fg)
    elif shape == "cross":
        w = r * 0.35
        draw.rectangle([cx - w, cy - r, cx + w, cy + r], fill=logo.fg)
        draw.rectangle([cx - r, cy - w, cx + r, cy + w], fill=logo.fg)
    elif shape == "chevron":
        draw.polygon([(cx - r, cy - r * 0.2), (cx, cy - r), (cx + r, cy - r * 0.2), (cx + r, cy + r * 0.4),
                      (cx, cy - r * 0.35), (cx - r, cy + r * 0.4)], fill=logo.fg)
    else:  # bars
        for i in range(3):
            top = cy - r + i * r * 0.75
            draw.rectangle([cx - r, top, cx + r, top + r * 0.45], fill=logo.fg)
    draw.ellipse([cx - r * 0.18, cy - r * 0.18, cx + r * 0.18, cy + r * 0.18], fill=logo.accent)


def _text(draw: ImageDraw.ImageDraw, x: int, y: int, text: str, size: int, fill: RGB) -> None:
    """Draw `text` with its ink box's top-left corner at (x, y)."""
    left, top, _, _ = text_box(text, size)
    draw.text((x - left, y - top), text, font=font(size), fill=fill)


def anchor_size(kind: str, text: str, size: int) -> tuple[int, int]:
    """Width and height of the readable surface of an anchor of `kind` showing `text`."""
    left, _, right, _ = text_box(text, size)
    tw = right - left
    pad = 14
    if kind == "banner":
        return 3 * pad + 56 + tw, 84
    if kind == "flag":
        return max(tw + 2 * pad, 190), 150
    if kind == "plaque":
        return 3 * pad + 44 + tw, 70
    if kind == "poster":
        return max(tw + 2 * pad, 170), 240
    if kind == "billboard":
        return max(3 * pad + 90 + tw, 340), 140
    if kind == "crate label":
        return 3 * pad + 40 + tw, 62
    if kind == "road sign":
        return 3 * pad + 34 + tw, 56
    raise ValueError(f"unknown anchor kind {kind!r}")


def anchor_margin(kind: str) -> tuple[int, int, int, int]:
    """Extra room (left, top, right, bottom) the supports of an anchor need around its surface."""
    return {"banner": (0, 60, 0, 0), "flag": (12, 30, 0, 360), "plaque": (0, 0, 0, 0), "poster": (0, 0, 0, 0),
            "billboard": (0, 0, 0, 160), "crate label": (40, 40, 40, 90), "road sign": (0, 0, 0, 180)}[kind]


def draw_support(draw: ImageDraw.ImageDraw, kind: str, x: int, y: int, w: int, h: int) -> None:
    """Poles, ropes, legs and crates: drawn for every anchor before any surface, so no support covers text."""
    if kind == "banner":
        draw.line([(x + 6, y), (x - 20, y - 60)], fill=(70, 70, 70), width=4)
        draw.line([(x + w - 6, y), (x + w + 20, y - 60)], fill=(70, 70, 70), width=4)
    elif kind == "flag":
        draw.rectangle([x - 12, y - 30, x - 2, y + h + 360], fill=(90, 90, 96))
    elif kind == "billboard":
        draw.rectangle([x + 30, y + h, x + 44, y + h + 160], fill=(80, 80, 80))
        draw.rectangle([x + w - 44, y + h, x + w - 30, y + h + 160], fill=(80, 80, 80))
    elif kind == "crate label":
        draw.rectangle([x - 40, y - 40, x + w + 40, y + h + 90], fill=(150, 104, 60), outline=(90, 60, 30), width=6)
        for i in range(1, 4):
            yy = y - 40 + i * (h + 130) // 4
            draw.line([(x - 40, yy), (x + w + 40, yy)], fill=(110, 75, 40), width=4)
    elif kind == "road sign":
        draw.rectangle([x + w // 2 - 6, y + h, x + w // 2 + 6, y + h + 180], fill=(120, 120, 125))


def draw_anchor(draw: ImageDraw.ImageDraw, kind: str, x: int, y: int, text: str, size: int, fill: RGB,
                logo: LogoSpec) -> Box:
    """Draw the readable surface of an anchor (call `draw_support` first) and return its box."""
    w, h = anchor_size(kind, text, size)
    left, top, right, bottom = text_box(text, size)
    tw, th = right - left, bottom - top
    pad = 14
    colour = ink(fill)
    box = (x, y, x + w, y + h)
    if kind == "banner":
        draw.rectangle(box, fill=fill, outline=darker(fill), width=4)
        draw_logo(draw, (x + pad, y + 14, x + pad + 56, y + 70), logo)
        _text(draw, x + 2 * pad + 56, y + (h - th) // 2, text, size, colour)
    elif kind == "flag":
        draw.rectangle(box, fill=fill, outline=darker(fill), width=3)
        draw_logo(draw, (x + w // 2 - 45, y + 14, x + w // 2 + 45, y + 104), logo)
        _text(draw, x + (w - tw) // 2, y + 116, text, size, colour)
    elif kind == "plaque":
        draw.rectangle(box, fill=fill, outline=darker(fill), width=6)
        draw.rectangle([x + 8, y + 8, x + w - 8, y + h - 8], outline=darker(fill, 0.8), width=2)
        draw_logo(draw, (x + pad, y + 13, x + pad + 44, y + 57), logo)
        _text(draw, x + 2 * pad + 44, y + (h - th) // 2, text, size, colour)
    elif kind == "poster":
        draw.rectangle(box, fill=fill, outline=darker(fill), width=4)
        draw_logo(draw, (x + w // 2 - 60, y + 20, x + w // 2 + 60, y + 140), logo)
        for i in range(3):
            draw.rectangle([x + pad, y + 152 + i * 12, x + w - pad, y + 158 + i * 12], fill=darker(fill, 0.8))
        _text(draw, x + (w - tw) // 2, y + 196, text, size, colour)
    elif kind == "billboard":
        draw.rectangle(box, fill=fill, outline=darker(fill), width=5)
        draw_logo(draw, (x + pad, y + 25, x + pad + 90, y + 115), logo)
        _text(draw, x + 2 * pad + 90, y + (h - th) // 2, text, size, colour)
    elif kind == "crate label":
        draw.rectangle(box, fill=fill, outline=darker(fill), width=3)
        draw_logo(draw, (x + pad, y + 11, x + pad + 40, y + 51), logo)
        _text(draw, x + 2 * pad + 40, y + (h - th) // 2, text, size, colour)
    elif kind == "road sign":
        draw.rectangle(box, fill=fill, outline=ink(fill), width=3)
        draw.polygon([(x + pad, y + 18), (x + pad + 22, y + 18), (x + pad + 22, y + 10), (x + pad + 34, y + 28),
                      (x + pad + 22, y + 46), (x + pad + 22, y + 38), (x + pad, y + 38)], fill=colour)
        _text(draw, x + 2 * pad + 34, y + (h - th) // 2, text, size, colour)
    else:
        raise ValueError(f"unknown anchor kind {kind!r}")
    return box
