"""High-resolution scene images (3840x2160) with visual anchors at recorded boxes.

`render_scene(spec)` is a pure function of its spec (it seeds its own
`random.Random`), so scenes can be rendered in worker processes and still be
byte-identical from run to run. Every anchor is measured against the
legibility rule; an anchor breaking it raises `AnchorRuleError`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from PIL import Image, ImageDraw
from pydantic import BaseModel

from arena.core.images import encode_png

from .drawing import RGB, anchor_margin, anchor_size, darker, draw_anchor, draw_logo, draw_support, font, text_box
from .graph import LogoSpec
from .legibility import Legibility, check, measure, relative_box

WIDTH, HEIGHT = 3840, 2160
THUMB_SIZE = (960, 540)
ANCHOR_CONTEXT = 0.6

ANCHOR_COLOURS: dict[str, RGB] = {
    "red": (196, 40, 40), "orange": (232, 128, 28), "yellow": (236, 204, 48), "green": (46, 140, 62),
    "teal": (24, 132, 138), "blue": (36, 76, 196), "purple": (116, 58, 168), "pink": (228, 118, 168),
    "white": (244, 244, 240), "black": (28, 28, 30), "brown": (116, 72, 38),
}
ANCHOR_KINDS: dict[str, tuple[str, ...]] = {
    "organisation": ("banner", "flag", "plaque"), "product": ("crate label", "billboard"),
    "event": ("poster", "banner"), "place": ("road sign",), "person": ("plaque", "poster"), "symbol": ("flag",),
}
ENTITY_NOUNS = {"organisation": "organisation", "product": "product", "event": "event", "place": "place",
                "person": "person", "symbol": "emblem"}
ENTITY_VERBS = {"organisation": "whose logo appears on", "product": "advertised on", "event": "advertised on",
                "place": "named on", "person": "named on", "symbol": "shown on"}

SCENARIOS: tuple[tuple[str, str, str], ...] = (
    ("Life", "Street market", "street"), ("Life", "Harbour quay", "waterfront"),
    ("Life", "Railway station concourse", "hall"), ("Life", "Shopping arcade", "hall"),
    ("Life", "Park fair", "field"),
    ("Science", "Research campus open day", "street"), ("Science", "Observatory courtyard", "field"),
    ("Science", "Science fair hall", "hall"), ("Science", "Natural history museum", "hall"),
    ("Science", "Botanical garden", "field"),
    ("Society", "Town square rally", "street"), ("Society", "Civic assembly", "hall"),
    ("Society", "Stadium match", "stadium"), ("Society", "Memorial parade", "street"),
    ("Society", "Election night", "hall"),
    ("Technology", "Trade expo floor", "hall"), ("Technology", "Airport terminal", "hall"),
    ("Technology", "Shipyard", "waterfront"), ("Technology", "Factory open house", "field"),
    ("Technology", "Launch site viewing area", "field"),
    ("Culture", "Concert stage", "stadium"), ("Culture", "Gallery opening", "hall"),
    ("Culture", "Theatre district", "street"), ("Culture", "Film premiere", "street"),
    ("Culture", "Book fair", "hall"),
)
SCENARIO_STYLES = {title: style for _, title, style in SCENARIOS}

COLUMNS, ROWS = 6, 3
ROW_BANDS = ((260, 820), (880, 1400), (1440, 1980))
COLUMN_WORDS = ("left", "left", "centre", "centre", "right", "right")
ROW_WORDS = ("upper", "middle", "lower")
POSITION_PHRASES = {
    ("upper", "left"): "in the upper left of the image", ("upper", "centre"): "at the top centre of the image",
    ("upper", "right"): "in the upper right of the image", ("middle", "left"): "on the left side of the image",
    ("middle", "centre"): "near the centre of the image", ("middle", "right"): "on the right side of the image",
    ("lower", "left"): "in the lower left of the image", ("lower", "centre"): "at the bottom centre of the image",
    ("lower", "right"): "in the lower right of the image",
}


class Anchor(BaseModel):
    """A visual anchor: an entity's name and logo drawn on a sign at a recorded box.

    `box` is the sign's surface in scene pixels, `bbox_2d` the smallest relative 0-1000
    box around it (what a crop should ask for), `context_box` the region saved as
    `thumbnail`, and `thumbnail_box` the surface inside that thumbnail.
    """

    id: str
    entity: str
    name: str
    etype: str
    kind: str
    colour: str
    position: str
    box: list[int]
    bbox_2d: list[int]
    font_size: int
    legibility: Legibility
    description: str
    thumbnail: str
    context_box: list[int]
    thumbnail_box: list[int]


class Scene(BaseModel):
    id: str
    image: str
    thumbnail: str
    title: str
    url: str
    scenario: str
    domain: str
    width: int
    height: int
    anchors: list[Anchor]


@dataclass(frozen=True)
class AnchorSpec:
    """What to draw for one anchor, before it has a place."""

    entity: str
    name: str
    etype: str
    kind: str
    colour: str
    font_size: int


@dataclass(frozen=True)
class RenderJob:
    """A laid-out scene and the logos of its anchors' entities: everything `render_scene` needs."""

    scene: Scene
    seed: int
    logos: dict[str, LogoSpec]


def describe(etype: str, kind: str, colour: str, position: str) -> str:
    """How a question names an anchor's entity: only by what the image shows."""
    return f"the {ENTITY_NOUNS[etype]} {ENTITY_VERBS[etype]} the {colour} {kind} {position}"


def _backdrop(draw: ImageDraw.ImageDraw, rng: random.Random, style: str) -> None:
    def muted() -> RGB:
        base = rng.randint(90, 200)
        return (base + rng.randint(-25, 25), base + rng.randint(-25, 25), base + rng.randint(-25, 25))

    if style == "hall":
        wall, floor = muted(), darker(muted(), 0.7)
        draw.rectangle([0, 0, WIDTH, 1500], fill=wall)
        draw.rectangle([0, 1500, WIDTH, HEIGHT], fill=floor)
        for x in range(rng.randint(80, 200), WIDTH, rng.randint(420, 640)):
            draw.rectangle([x, 0, x + 90, 1500], fill=darker(wall, 0.85))
        for x in range(0, WIDTH, 320):
            draw.line([(x, 1500), (x - 500, HEIGHT)], fill=darker(floor, 0.85), width=6)
        draw.rectangle([0, 0, WIDTH, 120], fill=darker(wall, 0.7))
    else:
        sky = (rng.randint(150, 200), rng.randint(185, 220), rng.randint(215, 245))
        horizon = rng.randint(1150, 1400)
        draw.rectangle([0, 0, WIDTH, horizon], fill=sky)
        ground = darker(muted(), 0.75)
        if style == "waterfront":
            draw.rectangle([0, horizon, WIDTH, horizon + 320], fill=(50, 90, 130))
            for x in range(0, WIDTH, 180):
                draw.line([(x, horizon + 60), (x + 90, horizon + 60)], fill=(90, 130, 170), width=5)
            for _ in range(5):
                bx = rng.randint(0, WIDTH - 500)
                draw.polygon([(bx, horizon + 120), (bx + 480, horizon + 120), (bx + 420, horizon + 220),
                              (bx + 60, horizon + 220)], fill=muted())
            draw.rectangle([0, horizon + 320, WIDTH, HEIGHT], fill=ground)
        else:
            draw.rectangle([0, horizon, WIDTH, HEIGHT], fill=ground)
        if style in ("street", "waterfront"):
            x = 0
            while x < WIDTH:
                w, top = rng.randint(260, 620), rng.randint(80, horizon - 300)
                facade = muted()
                draw.rectangle([x, top, x + w, horizon], fill=facade)
                window = darker(facade, 0.6)
                for wx in range(x + 30, x + w - 50, 90):
                    for wy in range(top + 40, horizon - 90, 130):
                        draw.rectangle([wx, wy, wx + 44, wy + 70], fill=window)
                x += w + rng.randint(0, 60)
        elif style == "stadium":
            for i in range(9):
                tier = 200 + i * 110
                draw.rectangle([0, tier, WIDTH, tier + 90], fill=darker(muted(), 0.9))
            draw.rectangle([600, horizon - 200, WIDTH - 600, horizon], fill=(60, 60, 66))
        else:  # field
            for _ in range(7):
                tx = rng.randint(0, WIDTH)
                draw.ellipse([tx - 200, horizon - 420, tx + 200, horizon - 20], fill=(70, 120, 70))
                draw.rectangle([tx - 20, horizon - 40, tx + 20, horizon + 40], fill=(90, 70, 50))
            for _ in range(4):
                tx = rng.randint(0, WIDTH - 500)
                draw.polygon([(tx, horizon + 60), (tx + 250, horizon - 200), (tx + 500, horizon + 60)], fill=muted())
    for _ in range(rng.randint(60, 110)):
        px, py = rng.randint(0, WIDTH - 40), rng.randint(1650, HEIGHT - 160)
        draw.ellipse([px, py, px + 36, py + 36], fill=(rng.randint(60, 120), rng.randint(40, 90), 40))
        draw.rectangle([px - 6, py + 38, px + 42, py + 150], fill=darker(muted(), 0.8))


def _place(rng: random.Random, spec: AnchorSpec, cells: list[tuple[int, int]]) -> tuple[int, int, tuple[int, int]]:
    w, h = anchor_size(spec.kind, spec.name, spec.font_size)
    ml, mt, mr, mb = anchor_margin(spec.kind)
    cell_w = WIDTH // COLUMNS
    for index, (col, row) in enumerate(list(cells)):
        top_band, bottom_band = ROW_BANDS[row]
        x_low, x_high = col * cell_w + 40 + ml, (col + 1) * cell_w - 40 - mr - w
        y_low, y_high = top_band + mt, min(bottom_band - h, HEIGHT - 20 - mb - h)
        if x_high >= x_low and y_high >= y_low:
            cells.pop(index)
            return rng.randint(x_low, x_high), rng.randint(y_low, y_high), (col, row)
    raise ValueError(f"anchor {spec.name!r} ({spec.kind}, {w}x{h} px) fits in no free cell")


def layout_scene(scene_id: str, number: int, scenario: int, anchors: list[AnchorSpec],
                 rng: random.Random) -> Scene:
    """Place the anchors (one grid cell each), measure them against the legibility rule and describe them.

    Raises AnchorRuleError for an anchor whose text breaks the rule, ValueError when one fits nowhere.
    """
    domain, title, _ = SCENARIOS[scenario]
    cells = [(c, r) for r in range(ROWS) for c in range(COLUMNS)]
    rng.shuffle(cells)
    records = []
    for i, spec in enumerate(anchors, 1):
        x, y, (col, row) = _place(rng, spec, cells)
        w, h = anchor_size(spec.kind, spec.name, spec.font_size)
        box = (x, y, x + w, y + h)
        anchor_id = f"{scene_id}-a{i}"
        left, top, right, bottom = text_box(spec.name, spec.font_size)
        rel = relative_box(box, WIDTH, HEIGHT)
        legibility = check(measure(bottom - top, rel, WIDTH, HEIGHT), f"scene {scene_id} anchor {anchor_id}")
        position = POSITION_PHRASES[(ROW_WORDS[row], COLUMN_WORDS[col])]
        context = [max(0, x - int(w * ANCHOR_CONTEXT)), max(0, y - int(h * ANCHOR_CONTEXT)),
                   min(WIDTH, x + w + int(w * ANCHOR_CONTEXT)), min(HEIGHT, y + h + int(h * ANCHOR_CONTEXT))]
        cx1, cy1 = context[0], context[1]
        records.append(Anchor(
            id=anchor_id, entity=spec.entity, name=spec.name, etype=spec.etype, kind=spec.kind, colour=spec.colour,
            position=position, box=list(box), bbox_2d=rel, font_size=spec.font_size, legibility=legibility,
            description=describe(spec.etype, spec.kind, spec.colour, position),
            thumbnail=f"images/anchors/{anchor_id}.png", context_box=context,
            thumbnail_box=[x - cx1, y - cy1, x - cx1 + w, y - cy1 + h]))
    return Scene(id=scene_id, image=f"images/scenes/{scene_id}.png", thumbnail=f"images/thumbs/{scene_id}.png",
                 title=f"{title}, archive photograph {number:04d}",
                 url=f"https://wiki.vistahop.test/media/Photograph_{number:04d}",
                 scenario=title, domain=domain, width=WIDTH, height=HEIGHT, anchors=records)


def render_scene(job: RenderJob) -> dict[str, bytes]:
    """Draw a laid-out scene; return its files (world-relative path -> PNG bytes): the scene,
    its thumbnail, and each anchor with context around it (the anchor's index image)."""
    scene = job.scene
    rng = random.Random(job.seed)
    image = Image.new("RGB", (scene.width, scene.height), (128, 128, 128))
    draw = ImageDraw.Draw(image)
    _backdrop(draw, rng, SCENARIO_STYLES[scene.scenario])
    for a in scene.anchors:
        draw_support(draw, a.kind, a.box[0], a.box[1], a.box[2] - a.box[0], a.box[3] - a.box[1])
    for a in scene.anchors:
        draw_anchor(draw, a.kind, a.box[0], a.box[1], a.name, a.font_size, ANCHOR_COLOURS[a.colour],
                    job.logos[a.entity])
    files = {scene.image: encode_png(image),
             scene.thumbnail: encode_png(image.resize(THUMB_SIZE, Image.Resampling.BOX))}
    for a in scene.anchors:
        files[a.thumbnail] = encode_png(image.crop(tuple(a.context_box)))
    return files


def render_logo(name: str, logo: LogoSpec) -> bytes:
    """A standalone 256x256 logo card (logo and name) for the reverse-image index."""
    image = Image.new("RGB", (256, 256), (250, 250, 248))
    draw = ImageDraw.Draw(image)
    draw_logo(draw, (48, 20, 208, 180), logo)
    size = 20
    while size > 9 and text_box(name, size)[2] - text_box(name, size)[0] > 240:
        size -= 1
    left, top, right, bottom = text_box(name, size)
    draw.text(((256 - (right - left)) // 2 - left, 200 - top), name, font=font(size), fill=(30, 30, 30))
    return encode_png(image)
