"""`mmir-mini`: generated MMIR artifacts — HTML pages rendered by Chromium, each with one injected inconsistency.

Artifacts cycle through six kinds (shopping, classifieds and wiki pages, a slide,
a poster, a chart page) and, independently, through MMIR's five inconsistency
categories, so artifact i has kind i mod 6 and category i mod 5. Every kind
states each fact it uses exactly twice (a material, an entity name, a pair of
related numbers, a pair of ordered dates, a place) and shows a picture that fits
its theme; the injection rewrites one element from a consistent fact set:

    Factual Contradiction          the second mention of the material     truth: both elements
    Identity Misattribution        the second mention of the name         truth: that element
    Contextual Mismatch            the picture shows an off-theme motif   truth: the picture
    Quantitative Discrepancy       the derived number no longer follows   truth: both numbers
    Temporal/Spatial Incoherence   the later date moves before the first  truth: both dates
                                   (every other cycle: the place gets the wrong country; truth: that element)

Elements carry their MMIR id as `data-arena-id` in the page, so the browser tool
shows the same ids; ids, types, contents and boxes come from the real rendering
(`arena.tools.browser_render`). World layout:

    site/mmir/<name>.html, site/mmir/img/*.png     the pages (served to the browser tool)
    images/<name>.png, images/<name>_som.png        full-page screenshot and its Set-of-Marks version
    tasks.jsonl                                     per artifact one MCQ and one open-ended task
    questions_mcq.json, questions_open.json,        the same items in MMIR's public format
    metadata.jsonl

Task ids are `<group>-<kind>-<nnn>:<mode>` (see `arena.suites.mmir.loader`).
"""

from __future__ import annotations

import html
import json
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from arena.core.images import encode_png
from arena.core.task import Task
from arena.core.world import WorldInfo, write_world
from arena.tools.browser_dom import draw_marks
from arena.tools.browser_render import render_site_pages, run_sync

from .loader import CATEGORIES, build_question, source_group, task_id

BRANDS = ["Lorell", "Nordhaven", "Bellweather", "Marlowe", "Quillfield", "Ashcombe", "Tidewell", "Corvane"]
PEOPLE = ["Maria Lopez", "James Okafor", "Chen Wei", "Anna Kowalski", "Tom Becker", "Priya Nair", "Lars Eriksen",
          "Fatima Haddad"]
PLACES = [("Lyon", "France"), ("Osaka", "Japan"), ("Porto", "Portugal"), ("Leeds", "United Kingdom"),
          ("Denver", "United States"), ("Bergen", "Norway"), ("Adelaide", "Australia"), ("Graz", "Austria")]
DISTRICTS = ["Riverside", "Old Town", "Harbour", "Northgate", "Westfield", "Hillcrest"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
PRODUCTS = [
    {"item": "electric kettle", "material": "stainless steel", "alt_material": "hand-blown glass",
     "motif": "kettle", "theme": "Kitchen", "use": "tea and coffee"},
    {"item": "hiking backpack", "material": "ripstop nylon", "alt_material": "genuine leather",
     "motif": "backpack", "theme": "Outdoor", "use": "long trail days"},
    {"item": "table lamp", "material": "brushed brass", "alt_material": "recycled cardboard",
     "motif": "lamp", "theme": "Home", "use": "reading at night"},
    {"item": "road bicycle", "material": "carbon fibre", "alt_material": "solid oak",
     "motif": "bicycle", "theme": "Sports", "use": "fast commuting"},
    {"item": "planter", "material": "glazed ceramic", "alt_material": "woven rattan",
     "motif": "planter", "theme": "Garden", "use": "indoor plants"},
    {"item": "camping tent", "material": "waterproof polyester", "alt_material": "cotton lace",
     "motif": "tent", "theme": "Outdoor", "use": "weekend trips"},
]
OFF_MOTIFS = ["cake", "snowman", "umbrella", "duck"]
MOTIF_DESCRIPTIONS = {
    "kettle": "a silver electric kettle on a light background",
    "backpack": "a green hiking backpack with straps",
    "lamp": "a brass table lamp with a cream shade",
    "bicycle": "a black road bicycle seen from the side",
    "planter": "a blue ceramic planter holding a green plant",
    "tent": "an orange camping tent on grass",
    "cake": "a pink birthday cake with lit candles",
    "snowman": "a snowman with a scarf in the snow",
    "umbrella": "a striped beach umbrella on sand",
    "duck": "a yellow rubber duck in a bath",
}
SIZES = {"small": 10, "full": 60}


def money(value: float) -> str:
    return f"${value:,.2f}"


def make_facts(rng: random.Random) -> dict[str, Any]:
    """One consistent fact set, plus the values each injection substitutes."""
    product = dict(rng.choice(PRODUCTS))
    brand, other_brand = rng.sample(BRANDS, 2)
    person, other_person = rng.sample(PEOPLE, 2)
    (city, country), (_, other_country) = rng.sample(PLACES, 2)
    year = rng.randint(2012, 2022)
    month, day = rng.randrange(12), rng.randint(1, 28)
    gap = rng.randint(1, 3)
    later_month, later_day = rng.randrange(12), rng.randint(1, 28)
    price = rng.choice([24, 36, 48, 60, 72, 96])
    discount = rng.choice([25, 50])
    was = price * 100 / (100 - discount)
    employees = rng.choice([120, 340, 860, 1200, 2400])
    base = rng.choice([40, 60, 80, 120])
    growth = rng.choice([25, 50])
    months = [base] + [base + rng.randint(-8, 22) for _ in range(4)] + [base * (100 + growth) // 100]
    facts: dict[str, Any] = {
        **product, "item_title": product["item"].title(), "items": product["item"] + "s",
        "material_title": product["material"].title(), "brand": brand, "person": person,
        "city": city, "country": country, "district": rng.choice(DISTRICTS),
        "year": year, "month": MONTHS[month], "day": day,
        "later_year": year + gap, "later_month": MONTHS[later_month], "later_day": later_day,
        "price": money(price), "discount": discount, "was": money(was), "deposit": money(price / 2),
        "employees": f"{employees:,}", "employees_b": f"{employees:,}", "growth": growth,
        "r1": f"${base}M", "r2": f"${months[-1]}M", "sales": months,
        "motif": product["motif"], "off_motif": rng.choice(OFF_MOTIFS),
    }
    wrong_growth = rng.choice([g for g in (10, 80, 120) if g != growth])
    facts["overrides"] = {
        "factual": {"material": product["alt_material"], "material_title": product["alt_material"].title()},
        "identity": {"brand": other_brand, "person": other_person},
        "contextual": {"motif": facts["off_motif"]},
        "quantitative": {"was": money(price - 6), "deposit": money(price * 0.8),
                         "employees_b": f"{max(employees // 12, 9):,}", "growth": wrong_growth},
        "temporal": {"later_year": year - gap},
        "spatial": {"country": other_country},
    }
    return facts


@dataclass(frozen=True)
class Slot:
    """One artifact element: its role, HTML tag, CSS class and text template (or picture for `img`/`svg`)."""

    role: str
    tag: str
    template: str = ""
    cls: str = ""


@dataclass(frozen=True)
class Kind:
    name: str
    source: str
    width: int
    css: str
    slots: tuple[Slot, ...]
    attr: tuple[str, str]
    name_role: str
    num: tuple[str, str]
    time: tuple[str, str]
    place: str
    height: int | None = None


BASE_CSS = ("*{box-sizing:border-box} body{margin:0;font-family:'DejaVu Sans',Arial,sans-serif;color:#222;"
            "background:#fff} img{display:block}")

KINDS: list[Kind] = [
    Kind("shopping", "web page", 1024, BASE_CSS + """
      .header{background:#232f3e;color:#fff;padding:14px 24px;font-size:20px;font-weight:bold}
      .nav{padding:8px 24px;color:#555;font-size:13px} .wrap{display:flex;gap:28px;padding:12px 24px}
      .col{flex:1} h1{font-size:24px;margin:4px 0 10px} .price{font-size:26px;color:#b12704;margin:6px 0}
      .discount{color:#007600;margin-bottom:12px} p{line-height:1.5;margin:8px 0} .spec{margin:6px 0;color:#333}
      .review{margin:14px 0;padding:10px;background:#f7f7f7;border-radius:6px;font-style:italic}
      button{background:#ffd814;border:1px solid #fcd200;border-radius:18px;padding:10px 28px;font-size:15px}""",
         (Slot("header", "div", "{brand} Official Store", "header"),
          Slot("nav", "div", "Home › {theme} › {item_title}s", "nav"),
          Slot("wrap_open", "open", "wrap"), Slot("image", "img"), Slot("col_open", "open", "col"),
          Slot("title", "h1", "{brand} {material_title} {item_title}"),
          Slot("price", "div", "{price}", "price"),
          Slot("discount", "div", "Save {discount}% · was {was}", "discount"),
          Slot("desc", "p", "This {item} is made of {material} and built for {use}. Ships from {city}, {country}."),
          Slot("brandline", "div", "Brand: {brand}", "spec"),
          Slot("release", "div", "First available: {month} {year}", "spec"),
          Slot("review", "div", "Review from {later_month} {later_year} by {person}: “Exactly as described, five "
                                "stars.”", "review"),
          Slot("cart", "button", "Add to Cart"), Slot("col_close", "close"), Slot("wrap_close", "close")),
         attr=("title", "desc"), name_role="brandline", num=("price", "discount"), time=("release", "review"),
         place="desc"),
    Kind("classifieds", "web page", 1024, BASE_CSS + """
      .header{background:#5a2d82;color:#fff;padding:14px 24px;font-size:20px;font-weight:bold}
      .nav{padding:8px 24px;color:#666;font-size:13px} .wrap{display:flex;gap:28px;padding:12px 24px}
      .col{flex:1} h1{font-size:22px;margin:4px 0 10px} .price{font-size:24px;font-weight:bold;margin:6px 0}
      .spec{margin:7px 0} p{line-height:1.5;background:#faf7fd;padding:10px;border-radius:6px}
      button{background:#5a2d82;color:#fff;border:0;border-radius:4px;padding:10px 24px;font-size:15px}""",
         (Slot("site", "div", "{city} Classifieds", "header"),
          Slot("crumbs", "div", "For sale › {theme} › posted by {person}", "nav"),
          Slot("wrap_open", "open", "wrap"), Slot("col_open", "open", "col"),
          Slot("title", "h1", "{item_title} in {material}, like new"), Slot("image", "img"),
          Slot("col_close", "close"), Slot("col_open", "open", "col"),
          Slot("price", "div", "Asking {price}", "price"),
          Slot("deposit", "div", "A 50% deposit ({deposit}) holds the item.", "spec"),
          Slot("location", "div", "Pick-up: {district}, {city}, {country}", "spec"),
          Slot("posted", "div", "Posted {month} {day}, {year}", "spec"),
          Slot("updated", "div", "Last updated {later_month} {later_day}, {later_year}", "spec"),
          Slot("body", "p", "Selling my {item}. The {material} is in great shape; it was used mostly for {use}."),
          Slot("contact", "div", "Contact {person} through the reply form.", "spec"),
          Slot("reply", "button", "Reply to seller"), Slot("col_close", "close"), Slot("wrap_close", "close")),
         attr=("title", "body"), name_role="contact", num=("price", "deposit"), time=("posted", "updated"),
         place="location"),
    Kind("wiki", "web page", 1024, BASE_CSS + """
      .wrap{display:flex;gap:24px;padding:16px 28px} .main{flex:1}
      h1{font-family:Georgia,serif;font-weight:normal;font-size:30px;border-bottom:1px solid #a2a9b1;margin:0 0 10px}
      p{line-height:1.6;margin:10px 0} .box{width:300px;border:1px solid #a2a9b1;background:#f8f9fa;padding:8px;
      font-size:14px} .row{padding:5px 2px;border-top:1px solid #ddd} figcaption{font-size:13px;color:#444;
      padding:4px 0}""",
         (Slot("wrap_open", "open", "wrap"), Slot("main_open", "open", "main"),
          Slot("title", "h1", "{brand}"),
          Slot("lead", "p", "{brand} is a manufacturer of {items} based in {city}."),
          Slot("history", "p", "In {later_year}, {brand} opened a second factory; today it employs about "
                               "{employees_b} people."),
          Slot("products", "p", "Its best-known {items} are made of {material}."),
          Slot("main_close", "close"), Slot("box_open", "open", "box"), Slot("image", "img"),
          Slot("caption", "figcaption", "A {brand} {item} on display"),
          Slot("founded", "div", "Founded: {year}", "row"),
          Slot("hq", "div", "Headquarters: {city}, {country}", "row"),
          Slot("staff", "div", "Employees: {employees}", "row"),
          Slot("material_row", "div", "Main material: {material}", "row"),
          Slot("people", "div", "Key people: {person} (CEO)", "row"),
          Slot("box_close", "close"), Slot("wrap_close", "close")),
         attr=("material_row", "products"), name_role="caption", num=("staff", "history"),
         time=("founded", "history"), place="hq"),
    Kind("slides", "slides", 1280, BASE_CSS + """
      body{width:1280px;height:720px;overflow:hidden;background:linear-gradient(#fdfdfd,#eef2f7)}
      h1{margin:0;padding:36px 56px 4px;font-size:40px;color:#1d3557} .sub{padding:0 56px;color:#457b9d;font-size:20px}
      .wrap{display:flex;gap:36px;padding:24px 56px} ul{flex:1;font-size:22px;line-height:1.5;margin:0}
      li{margin:6px 0} .side{width:420px} .foot{position:absolute;left:56px;bottom:22px;font-size:15px;color:#555}""",
         (Slot("title", "h1", "{brand} · {theme} Division Review"),
          Slot("subtitle", "div", "Presented by {person}, Head of {theme}", "sub"),
          Slot("wrap_open", "open", "wrap"), Slot("list_open", "open_ul"),
          Slot("b_growth", "li", "Revenue grew {growth}% year on year"),
          Slot("b_flagship", "li", "Flagship: the {material} {item}"),
          Slot("b_praise", "li", "Customers praise the {material} finish of our {items}"),
          Slot("b_launch", "li", "Next launch: {later_month} {later_year}"),
          Slot("b_team", "li", "Prepared with the {brand} analytics team"),
          Slot("list_close", "close_ul"), Slot("side_open", "open", "side"), Slot("chart", "img"),
          Slot("image", "img"), Slot("side_close", "close"), Slot("wrap_close", "close"),
          Slot("footer", "div", "{city}, {country} office · {month} {day}, {year}", "foot")),
         attr=("b_flagship", "b_praise"), name_role="b_team", num=("chart", "b_growth"),
         time=("footer", "b_launch"), place="footer", height=720),
    Kind("poster", "poster", 720, BASE_CSS + """
      body{background:#fff8e7;text-align:center;padding:24px 40px} .org{letter-spacing:3px;color:#9c6644}
      h1{font-size:44px;margin:8px 0 16px;color:#7f5539} img{margin:0 auto 16px} .when{font-size:22px;margin:4px}
      .where{font-size:18px;margin:10px;color:#555} p{font-size:18px;margin:8px} .tix{display:inline-block;
      margin:10px 12px;padding:8px 16px;border:2px solid #7f5539;border-radius:8px;font-size:18px}""",
         (Slot("org", "div", "{brand} presents", "org"),
          Slot("title", "h1", "The {theme} Fair"), Slot("image", "img"),
          Slot("opens", "div", "Opens {month} {day}, {year}", "when"),
          Slot("closes", "div", "Closes {later_month} {later_day}, {later_year}", "when"),
          Slot("venue", "div", "{district} Hall, {city}, {country}", "where"),
          Slot("host", "p", "Hosted by {person}"),
          Slot("demo", "p", "Live demos of {material} {items}"),
          Slot("workshop", "p", "Workshop: caring for {material}"),
          Slot("adults", "div", "Adults {price}", "tix"),
          Slot("children", "div", "Children half price: {deposit}", "tix"),
          Slot("welcome", "p", "Meet {person} at the opening talk")),
         attr=("demo", "workshop"), name_role="welcome", num=("adults", "children"), time=("opens", "closes"),
         place="venue"),
    Kind("chart", "chart", 900, BASE_CSS + """
      body{padding:20px 32px} h1{font-size:26px;margin:0 0 12px} svg{display:block;margin:6px 0}
      p{margin:8px 0;line-height:1.5} .meta{color:#555;font-size:14px;margin:4px 0}
      .wrap{display:flex;gap:24px;align-items:flex-start}""",
         (Slot("title", "h1", "{brand} {item} sales, {year}"),
          Slot("wrap_open", "open", "wrap"), Slot("chart", "svg"), Slot("image", "img"), Slot("wrap_close", "close"),
          Slot("caption", "p", "Sales rose {growth}% from January to June."),
          Slot("scope", "p", "Figures cover the {material} {item} line only."),
          Slot("soldout", "p", "The {material} models sold out in June."),
          Slot("region", "div", "Region: {city}, {country}", "meta"),
          Slot("author", "div", "Prepared by {person}, {brand} analytics", "meta"),
          Slot("collected", "div", "Data collected {month} {year}", "meta"),
          Slot("published", "div", "Published {later_month} {later_day}, {later_year}", "meta"),
          Slot("contact", "div", "Questions: contact {person}", "meta")),
         attr=("scope", "soldout"), name_role="contact", num=("chart", "caption"), time=("collected", "published"),
         place="region"),
]


def _font(size: int) -> Any:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:
        return ImageFont.load_default()


def draw_motif(motif: str, size: tuple[int, int] = (280, 210)) -> Image.Image:
    """A simple drawing of a motif (the artifact's product or an off-theme subject)."""
    w, h = size
    backgrounds = {"snowman": (225, 235, 245), "umbrella": (250, 228, 180), "tent": (200, 230, 190),
                   "duck": (200, 230, 250), "cake": (252, 232, 240)}
    im = Image.new("RGB", size, backgrounds.get(motif, (242, 242, 238)))
    d = ImageDraw.Draw(im)
    cx, cy = w // 2, h // 2
    if motif == "kettle":
        d.ellipse([cx - 60, cy - 50, cx + 60, cy + 60], fill=(190, 195, 200), outline=(90, 90, 90), width=3)
        d.polygon([(cx + 55, cy), (cx + 100, cy - 35), (cx + 60, cy + 20)], fill=(170, 175, 180))
        d.arc([cx - 45, cy - 95, cx + 45, cy - 20], 180, 360, fill=(60, 60, 60), width=8)
    elif motif == "backpack":
        d.rounded_rectangle([cx - 55, cy - 70, cx + 55, cy + 75], 28, fill=(60, 130, 70), outline=(30, 70, 35), width=3)
        d.rounded_rectangle([cx - 35, cy + 5, cx + 35, cy + 55], 10, fill=(45, 105, 55))
        d.arc([cx - 30, cy - 100, cx + 30, cy - 50], 180, 360, fill=(30, 70, 35), width=7)
    elif motif == "lamp":
        d.polygon([(cx - 55, cy - 10), (cx + 55, cy - 10), (cx + 30, cy - 80), (cx - 30, cy - 80)], fill=(245, 230, 190))
        d.rectangle([cx - 5, cy - 10, cx + 5, cy + 60], fill=(181, 140, 60))
        d.ellipse([cx - 45, cy + 55, cx + 45, cy + 75], fill=(181, 140, 60))
    elif motif == "bicycle":
        for x in (cx - 65, cx + 65):
            d.ellipse([x - 45, cy - 5, x + 45, cy + 85], outline=(20, 20, 20), width=6)
        d.line([(cx - 65, cy + 40), (cx - 10, cy - 30), (cx + 40, cy - 30), (cx + 65, cy + 40)], fill=(20, 20, 20),
               width=6)
        d.line([(cx - 10, cy - 30), (cx, cy + 40), (cx - 65, cy + 40)], fill=(20, 20, 20), width=6)
    elif motif == "planter":
        d.polygon([(cx - 55, cy), (cx + 55, cy), (cx + 40, cy + 80), (cx - 40, cy + 80)], fill=(50, 90, 170))
        for dx in (-30, 0, 30):
            d.ellipse([cx + dx - 18, cy - 80, cx + dx + 18, cy + 5], fill=(60, 150, 60))
    elif motif == "tent":
        d.polygon([(cx - 100, cy + 70), (cx, cy - 80), (cx + 100, cy + 70)], fill=(235, 120, 40), outline=(120, 50, 10))
        d.polygon([(cx - 25, cy + 70), (cx, cy + 10), (cx + 25, cy + 70)], fill=(90, 40, 10))
    elif motif == "cake":
        d.rectangle([cx - 80, cy, cx + 80, cy + 70], fill=(240, 160, 190))
        d.rectangle([cx - 80, cy - 8, cx + 80, cy + 8], fill=(255, 255, 255))
        for dx in (-50, -15, 20, 55):
            d.rectangle([cx + dx - 4, cy - 45, cx + dx + 4, cy - 8], fill=(80, 140, 220))
            d.ellipse([cx + dx - 7, cy - 62, cx + dx + 7, cy - 44], fill=(255, 200, 0))
    elif motif == "snowman":
        d.ellipse([cx - 60, cy - 10, cx + 60, cy + 100], fill=(255, 255, 255), outline=(170, 170, 190), width=2)
        d.ellipse([cx - 40, cy - 85, cx + 40, cy - 5], fill=(255, 255, 255), outline=(170, 170, 190), width=2)
        d.rectangle([cx - 45, cy - 20, cx + 45, cy - 8], fill=(200, 30, 30))
        d.polygon([(cx, cy - 48), (cx + 30, cy - 42), (cx, cy - 38)], fill=(240, 130, 20))
    elif motif == "umbrella":
        d.pieslice([cx - 100, cy - 80, cx + 100, cy + 60], 180, 360, fill=(220, 40, 40))
        d.pieslice([cx - 50, cy - 80, cx + 50, cy + 60], 180, 360, fill=(255, 255, 255))
        d.line([(cx, cy - 10), (cx, cy + 90)], fill=(90, 60, 30), width=6)
    elif motif == "duck":
        d.ellipse([cx - 75, cy - 5, cx + 65, cy + 70], fill=(255, 215, 0))
        d.ellipse([cx + 10, cy - 70, cx + 80, cy], fill=(255, 215, 0))
        d.polygon([(cx + 75, cy - 40), (cx + 110, cy - 30), (cx + 75, cy - 22)], fill=(240, 120, 20))
        d.ellipse([cx + 45, cy - 50, cx + 55, cy - 40], fill=(0, 0, 0))
    return im


def draw_bar_chart(labels: list[str], values: list[int], size: tuple[int, int] = (420, 260)) -> Image.Image:
    """A bar chart of revenues in $M, the value written above every bar."""
    w, h = size
    im = Image.new("RGB", size, (255, 255, 255))
    d = ImageDraw.Draw(im)
    font = _font(15)
    top, bottom, left = 30, h - 34, 20
    d.line([(left, bottom), (w - 10, bottom)], fill=(80, 80, 80), width=2)
    slot = (w - left - 10) / len(values)
    peak = max(values) or 1
    for i, (label, value) in enumerate(zip(labels, values)):
        x0 = left + i * slot + slot * 0.2
        x1 = left + (i + 1) * slot - slot * 0.2
        y = bottom - (bottom - top) * value / peak
        d.rectangle([x0, y, x1, bottom], fill=(69, 123, 157))
        d.text(((x0 + x1) / 2, y - 4), f"${value}M", fill=(20, 20, 20), font=font, anchor="md")
        d.text(((x0 + x1) / 2, bottom + 6), label, fill=(20, 20, 20), font=font, anchor="ma")
    return im


def chart_svg(values: list[int], element_id: int) -> str:
    labels = ["Jan", "Feb", "Mar", "Apr", "May", "Jun"]
    peak = max(values)
    bars = []
    for i, (label, value) in enumerate(zip(labels, values)):
        x = 30 + i * 85
        height = 200 * value / peak
        y = 230 - height
        bars.append(f'<rect x="{x}" y="{y:.1f}" width="55" height="{height:.1f}" fill="#e76f51"/>'
                    f'<text x="{x + 27}" y="{y - 6:.1f}" font-size="14" text-anchor="middle">{value}</text>'
                    f'<text x="{x + 27}" y="250" font-size="14" text-anchor="middle">{label}</text>')
    return (f'<svg data-arena-id="{element_id}" width="540" height="260" viewBox="0 0 540 260" role="img" '
            f'aria-label="Bar chart of monthly sales"><line x1="20" y1="230" x2="530" y2="230" stroke="#555"/>'
            f'{"".join(bars)}</svg>')


def chart_description(values: list[int]) -> str:
    labels = ["Jan", "Feb", "Mar", "Apr", "May", "Jun"]
    return "a bar chart of monthly sales: " + ", ".join(f"{m} {v}" for m, v in zip(labels, values))


@dataclass
class Artifact:
    name: str
    kind: Kind
    category: str
    variant: str
    html: str
    pictures: dict[str, Image.Image]
    ids: dict[str, int]
    texts: dict[int, str]
    descriptions: dict[int, str]
    truth: list[int]
    rationale: str
    facts: dict[str, Any] = field(default_factory=dict)


def _variant_for(index: int, category: str) -> str:
    names = {"Factual Contradiction": "factual", "Identity Misattribution": "identity",
             "Contextual Mismatch": "contextual", "Quantitative Discrepancy": "quantitative",
             "Temporal/Spatial Incoherence": "temporal"}
    variant = names[category]
    if variant == "temporal" and (index // len(CATEGORIES)) % 2 == 1:
        return "spatial"
    return variant


def _changed_roles(kind: Kind, variant: str) -> tuple[str, list[str]]:
    """(role that is rewritten, roles that form the ground truth)."""
    return {
        "factual": (kind.attr[1], list(kind.attr)),
        "identity": (kind.name_role, [kind.name_role]),
        "contextual": ("image", ["image"]),
        "quantitative": (kind.num[1], list(kind.num)),
        "temporal": (kind.time[1], list(kind.time)),
        "spatial": (kind.place, [kind.place]),
    }[variant]


def build_artifact(index: int, rng: random.Random) -> Artifact:
    kind = KINDS[index % len(KINDS)]
    category = CATEGORIES[index % len(CATEGORIES)]
    variant = _variant_for(index, category)
    facts = make_facts(rng)
    changed, truth_roles = _changed_roles(kind, variant)
    name = f"{kind.name}-{index:03d}"
    pictures: dict[str, Image.Image] = {}
    ids: dict[str, int] = {}
    texts: dict[int, str] = {}
    descriptions: dict[int, str] = {}
    parts: list[str] = []
    next_id = 1
    for slot in kind.slots:
        if slot.tag in ("open", "close", "open_ul", "close_ul"):
            parts.append({"open": f'<div class="{slot.template}">', "close": "</div>", "open_ul": "<ul>",
                          "close_ul": "</ul>"}[slot.tag])
            continue
        values = dict(facts)
        if slot.role == changed:
            values.update(facts["overrides"][variant])
        element_id = next_id
        next_id += 1
        ids[slot.role] = element_id
        if slot.tag == "svg":
            sales = list(values["sales"])
            parts.append(chart_svg(sales, element_id))
            descriptions[element_id] = chart_description(sales)
            texts[element_id] = "Bar chart of monthly sales"
        elif slot.tag == "img" and slot.role == "chart":
            file = f"img/{name}-chart.png"
            r1, r2 = int(values["r1"].strip("$M")), int(values["r2"].strip("$M"))
            pictures[file] = draw_bar_chart(["Last year", "This year"], [r1, r2])
            descriptions[element_id] = f"a bar chart of revenue: last year {values['r1']}, this year {values['r2']}"
            texts[element_id] = descriptions[element_id]
            parts.append(f'<img data-arena-id="{element_id}" src="{file}" width="420" height="260" '
                         f'alt="{html.escape(descriptions[element_id])}">')
        elif slot.tag == "img":
            file = f"img/{name}-{values['motif']}.png"
            pictures[file] = draw_motif(values["motif"])
            descriptions[element_id] = MOTIF_DESCRIPTIONS[values["motif"]]
            texts[element_id] = descriptions[element_id]
            parts.append(f'<img data-arena-id="{element_id}" src="{file}" width="280" height="210" '
                         f'alt="{html.escape(descriptions[element_id])}">')
        else:
            text = slot.template.format(**values)
            texts[element_id] = text
            cls = f' class="{slot.cls}"' if slot.cls else ""
            parts.append(f'<{slot.tag} data-arena-id="{element_id}"{cls}>{html.escape(text)}</{slot.tag}>')
    truth = sorted(ids[r] for r in truth_roles)
    rationale = _rationale(variant, truth, changed, ids, texts, facts, descriptions)
    size = f"width:{kind.width}px;" + (f"height:{kind.height}px;" if kind.height else "")
    page = (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(name)}</title>"
            f"<style>{kind.css} html{{{size}}}</style></head><body>{''.join(parts)}</body></html>")
    return Artifact(name=name, kind=kind, category=category, variant=variant, html=page, pictures=pictures,
                    ids=ids, texts=texts, descriptions=descriptions, truth=truth, rationale=rationale, facts=facts)


def _rationale(variant: str, truth: list[int], changed: str, ids: dict[str, int], texts: dict[int, str],
               facts: dict[str, Any], descriptions: dict[int, str]) -> str:
    quoted = " and ".join(f"[{i}] “{texts[i]}”" for i in truth)
    target = ids[changed]
    if variant == "factual":
        return f"{quoted} contradict each other: one says {facts['material']}, the other {facts['alt_material']}."
    if variant == "identity":
        return (f"[{target}] “{texts[target]}” names a different brand or person than the rest of the artifact "
                f"({facts['brand']}, {facts['person']}).")
    if variant == "contextual":
        return f"The picture [{target}] shows {descriptions[target]}, which does not fit an artifact about {facts['items']}."
    if variant == "quantitative":
        return f"The numbers in {quoted} do not agree with each other."
    if variant == "temporal":
        return f"The dates in {quoted} are in an impossible order: the later event is dated before the earlier one."
    return (f"[{target}] “{texts[target]}” places {facts['city']} in {facts['overrides']['spatial']['country']}, "
            f"but {facts['city']} is in {facts['country']}.")


def _location(x: float, y: float, w: float, h: float, page_w: int, page_h: int) -> str:
    cx, cy = (x + w / 2) / max(page_w, 1), (y + h / 2) / max(page_h, 1)
    vertical = "top" if cy < 1 / 3 else "center" if cy < 2 / 3 else "bottom"
    horizontal = "left" if cx < 1 / 3 else "center" if cx < 2 / 3 else "right"
    return f"{vertical}-{horizontal}"


def option_line(element_id: int, tag: str, text: str, description: str | None, box: tuple[int, int, int, int],
                page_size: tuple[int, int]) -> str:
    """An MMIR-style option: `[12] Wide text span at top-center: '...'` or `[3] Image, description: ... at ...`."""
    x, y, w, h = box
    where = _location(x, y, w, h, *page_size)
    if description is not None:
        return f"[{element_id}] Image, description: {description} at {where}"
    if tag == "button":
        return f"[{element_id}] Button at {where}: '{text}'"
    span = "Wide text span" if w >= 0.45 * page_size[0] else "Text span"
    return f"[{element_id}] {span} at {where}: '{text}'"


def build(out: Path, *, seed: int = 0, size: str = "small", count: int | None = None) -> Path:
    """Generate `count` artifacts (small: 10, full: 60), render them in Chromium, write tasks and public files."""
    if size not in SIZES and count is None:
        raise ValueError(f"unknown size {size!r}; sizes: {', '.join(SIZES)}")
    total = count if count is not None else SIZES[size]
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    (out / "site" / "mmir" / "img").mkdir(parents=True)
    (out / "images").mkdir()
    rng = random.Random(seed)
    artifacts = [build_artifact(i, random.Random(rng.randrange(2**32))) for i in range(total)]
    for art in artifacts:
        (out / "site" / "mmir" / f"{art.name}.html").write_text(art.html, encoding="utf-8")
        for file, picture in art.pictures.items():
            (out / "site" / "mmir" / file).write_bytes(encode_png(picture))
    pages: list[tuple[str, tuple[int, int]]] = [(f"mmir/{a.name}.html", (a.kind.width, a.kind.height or 768))
                                                for a in artifacts]
    rendered = run_sync(render_site_pages(out / "site", pages, only_marked=True))
    tasks: list[Task] = []
    public: dict[str, list[dict[str, Any]]] = {"mcq": [], "open": []}
    metadata_rows = []
    for art, page in zip(artifacts, rendered):
        found = {e.id: e for e in page.elements}
        missing = sorted(set(art.texts) - set(found))
        if missing or page.blocked:
            raise RuntimeError(f"{art.name}: elements {missing} not rendered / blocked requests {page.blocked}")
        shot = page.screenshot
        image_rel, som_rel = f"images/{art.name}.png", f"images/{art.name}_som.png"
        (out / image_rel).write_bytes(encode_png(shot))
        (out / som_rel).write_bytes(encode_png(draw_marks(shot, sorted(found.values(), key=lambda e: e.id))))
        page_size = (shot.width, shot.height)
        elements = []
        options = []
        for element_id in sorted(art.texts):
            el = found[element_id]
            description = art.descriptions.get(element_id)
            options.append(option_line(element_id, el.tag, art.texts[element_id], description, el.box, page_size))
            elements.append({"id": element_id, "type": "image" if description else el.tag,
                             "content": description or art.texts[element_id], "bbox": list(el.box)})
        group = source_group(art.kind.source)
        base_meta = {"source": art.kind.source, "kind": art.kind.name, "gt_ans": art.truth,
                     "rationale": art.rationale, "variant": art.variant, "elements": elements,
                     "som_image": som_rel, "start_url": f"http://world.local/mmir/{art.name}.html",
                     "page": f"site/mmir/{art.name}.html"}
        for mode in ("mcq", "open"):
            tasks.append(Task(id=task_id(group, art.name, mode), suite="mmir",
                              question=build_question(mode, art.kind.source, options), images=[image_rel],
                              answers=[str(i) for i in art.truth], kind="element_ids", options=options,
                              category=art.category, judge="mmir", metadata={"mode": mode, **base_meta}))
            public[mode].append({"id": art.name, "image": image_rel, "source": art.kind.source,
                                 "category": art.category, "descs": "\n".join(options), "gt_ans": art.truth,
                                 "rationale": art.rationale})
        metadata_rows.append({"file_name": image_rel, "som_file_name": som_rel, "id": art.name,
                              "category": art.category, "gt_ans": art.truth, "elements": elements})
    (out / "tasks.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in tasks), encoding="utf-8")
    for mode, items in public.items():
        (out / f"questions_{mode}.json").write_text(json.dumps(items, indent=1, ensure_ascii=False) + "\n",
                                                    encoding="utf-8")
    (out / "metadata.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in metadata_rows),
                                        encoding="utf-8")
    write_world(out, WorldInfo(name="mmir-mini", suite="mmir", seed=seed, size=size,
                               counts={"artifacts": len(artifacts), "tasks": len(tasks)},
                               meta={"categories": CATEGORIES, "kinds": [k.name for k in KINDS]}))
    return out
