"""`condchain-mini`: generated MM-CondChain items in all three domains, every condition checked by VPIR.

Each item is one image (natural scene or chart) or one GUI trajectory, the typed
facts it was rendered from, and a chain of 2–4 layers. A layer's condition is a
conjunction of two VPIR predicates over the facts (`arena.suites.condchain.vpir`), paired with a
minimally perturbed false predicate (one constant, comparison or name changed);
every predicate is evaluated by the restricted evaluator at build time (true
ones must hold, false ones must not). Each layer has an exit question asked when
its condition fails, the last layer a final question; answers are VPIR value
expressions over the facts, options are labelled per layer (A, B, C, D) and F
for the final question. About one final question in five lists no correct
option, so its true-path answer is `None`.

The chain compiles into a True-path instruction (all conditions true) and a
False-path one (one layer's condition replaced by its perturbation); the answer
of each path is computed by executing the chain with the evaluator.

    natural  Pillow scenes of shapes on a 3x3 grid (shape, colour, size, row, column)
    chart    matplotlib bar or line charts of generated data (values printed on the marks)
    gui      phone-app flows (home, settings, shop, cart, dialogs) written as HTML and
             rendered by Chromium into frames `images/gui/<id>/<id>_<n>.png`

The world holds the public format (`data/{natural,chart,gui}.jsonl`, `images/`)
and `tasks.jsonl` made from it by the suite loader. `condchain-mini-agentic` is
the same world with GUI tasks that carry no images: the agent views the frames
one at a time with the browser tool's frame actions.
"""

from __future__ import annotations

import html
import io
import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from PIL import Image, ImageDraw

from arena.core.images import encode_png
from arena.core.world import WorldInfo, write_world
from arena.tools.browser_render import render_site_pages, run_sync

from . import vpir
from .loader import tasks_from_record

SIZES = {"small": 2, "full": 20}
LAYER_LETTERS = "ABCD"
FINAL_LETTER = "F"
NONE_RATE = 0.2

COLORS = {"red": (220, 50, 47), "green": (60, 160, 70), "blue": (40, 100, 210), "yellow": (240, 200, 30),
          "purple": (140, 70, 170), "orange": (245, 130, 30)}
SHAPES = ["circle", "square", "triangle", "diamond"]
ROWS = ["top", "middle", "bottom"]
COLUMNS = ["left", "center", "right"]


@dataclass
class Atom:
    """One predicate with its minimal perturbation, and their texts."""

    kind: str
    true: str
    false: str
    true_text: str
    false_text: str


@dataclass
class Question:
    text: str
    expr: str
    choices: list[str]


@dataclass
class Layer:
    subject: str
    true: str
    false: str
    true_text: str
    false_text: str
    exit: Question


def q(value: str) -> str:
    """A string literal for a VPIR expression."""
    return json.dumps(value)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# -- natural scenes ---------------------------------------------------------------------------------------------


def natural_facts(rng: random.Random) -> dict[str, Any]:
    cells = rng.sample([(r, c) for r in range(3) for c in range(3)], rng.randint(5, 7))
    objects = []
    for r, c in sorted(cells):
        objects.append({"shape": rng.choice(SHAPES), "color": rng.choice(sorted(COLORS)),
                        "size": rng.choice(["small", "large"]), "row": ROWS[r], "column": COLUMNS[c], "x": c, "y": r})
    return {"objects": objects}


def draw_scene(facts: dict[str, Any], rng: random.Random, size: tuple[int, int] = (600, 450)) -> Image.Image:
    w, h = size
    im = Image.new("RGB", size, (236, 232, 220))
    d = ImageDraw.Draw(im)
    d.rectangle([0, int(h * 0.62), w, h], fill=(214, 204, 182))
    cw, ch = w / 3, h / 3
    for o in facts["objects"]:
        cx = cw * (o["x"] + 0.5) + rng.randint(-12, 12)
        cy = ch * (o["y"] + 0.5) + rng.randint(-10, 10)
        r = 52 if o["size"] == "large" else 24
        color = COLORS[o["color"]]
        outline = (40, 40, 40)
        if o["shape"] == "circle":
            d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=color, outline=outline, width=2)
        elif o["shape"] == "square":
            d.rectangle([cx - r, cy - r, cx + r, cy + r], fill=color, outline=outline, width=2)
        elif o["shape"] == "triangle":
            d.polygon([(cx, cy - r), (cx + r, cy + r), (cx - r, cy + r)], fill=color, outline=outline)
        else:
            d.polygon([(cx, cy - r), (cx + r, cy), (cx, cy + r), (cx - r, cy)], fill=color, outline=outline)
    return im


def _unique_objects(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = [(o["color"], o["shape"]) for o in objects]
    return [o for o in objects if keys.count((o["color"], o["shape"])) == 1]


def natural_atoms(facts: dict[str, Any], rng: random.Random) -> list[Atom]:
    objects = facts["objects"]
    atoms: list[Atom] = []
    color = rng.choice(sorted({o["color"] for o in objects}))
    n = sum(o["color"] == color for o in objects)
    expr = f'len([o for o in objects if o["color"] == {q(color)}]) == '
    atoms.append(Atom("count_color", expr + str(n), expr + str(n + 1),
                      f"there are exactly {plural(n, color + ' object')}",
                      f"there are exactly {plural(n + 1, color + ' object')}"))
    unique = _unique_objects(objects)
    if unique:
        o = rng.choice(unique)
        other = "small" if o["size"] == "large" else "large"
        expr = (f'any(o["shape"] == {q(o["shape"])} and o["color"] == {q(o["color"])} and o["size"] == ' + "{}"
                " for o in objects)")
        atoms.append(Atom("exists", expr.format(q(o["size"])), expr.format(q(other)),
                          f"there is a {o['size']} {o['color']} {o['shape']}",
                          f"there is a {other} {o['color']} {o['shape']}"))
    pairs = [(a, b) for a in unique for b in unique if a["x"] < b["x"]]
    if pairs:
        a, b = rng.choice(pairs)
        expr = (f'any(a["color"] == {q(a["color"])} and a["shape"] == {q(a["shape"])} and any(b["color"] == '
                f'{q(b["color"])} and b["shape"] == {q(b["shape"])} and a["x"] ' + "{}" + ' b["x"] for b in objects)'
                " for a in objects)")
        atoms.append(Atom("left_of", expr.format("<"), expr.format(">"),
                          f"the {a['color']} {a['shape']} is to the left of the {b['color']} {b['shape']}",
                          f"the {a['color']} {a['shape']} is to the right of the {b['color']} {b['shape']}"))
    shapes = sorted({o["shape"] for o in objects})
    uniform = [s for s in shapes if len({o["size"] for o in objects if o["shape"] == s}) == 1]
    if uniform:
        shape = rng.choice(uniform)
        size = next(o["size"] for o in objects if o["shape"] == shape)
        other = "small" if size == "large" else "large"
        expr = 'all(o["size"] == {} for o in objects if o["shape"] == ' + q(shape) + ")"
        atoms.append(Atom("all_size", expr.format(q(size)), expr.format(q(other)),
                          f"every {shape} in the image is {size}", f"every {shape} in the image is {other}"))
    d = len({o["color"] for o in objects})
    expr = 'len(set(o["color"] for o in objects)) == '
    atoms.append(Atom("distinct", expr + str(d), expr + str(d + 1),
                      f"the objects come in exactly {d} different colours",
                      f"the objects come in exactly {d + 1} different colours"))
    shape = rng.choice(sorted({o["shape"] for o in objects}))
    n = sum(o["shape"] == shape for o in objects)
    expr = f'len([o for o in objects if o["shape"] == {q(shape)}]) == '
    atoms.append(Atom("count_shape", expr + str(n), expr + str(n + 1), f"there are exactly {plural(n, shape)}",
                      f"there are exactly {plural(n + 1, shape)}"))
    n = sum(o["size"] == "large" for o in objects)
    expr = 'len([o for o in objects if o["size"] == "large"]) == '
    atoms.append(Atom("large_count", expr + str(n), expr + str(n + 1),
                      f"exactly {plural(n, 'large object')} {'is' if n == 1 else 'are'} in the image",
                      f"exactly {plural(n + 1, 'large object')} {'is' if n + 1 == 1 else 'are'} in the image"))
    o = rng.choice(objects)
    other = rng.choice(sorted(set(COLORS) - {o["color"]}))
    expr = (f'any(o["row"] == {q(o["row"])} and o["column"] == {q(o["column"])} and o["color"] == ' + "{}"
            " for o in objects)")
    atoms.append(Atom("cell_color", expr.format(q(o["color"])), expr.format(q(other)),
                      f"the object in the {o['row']} {o['column']} part of the image is {o['color']}",
                      f"the object in the {o['row']} {o['column']} part of the image is {other}"))
    row = rng.choice(ROWS)
    n = sum(o["row"] == row for o in objects)
    wrong = n + 1 if n == 0 or rng.random() < 0.5 else n - 1
    expr = f'len([o for o in objects if o["row"] == {q(row)}]) == '
    atoms.append(Atom("row_count", expr + str(n), expr + str(wrong),
                      f"exactly {plural(n, 'object')} {'is' if n == 1 else 'are'} in the {row} row",
                      f"exactly {plural(wrong, 'object')} {'is' if wrong == 1 else 'are'} in the {row} row"))
    return atoms


def _count_choices(value: int, rng: random.Random) -> list[str]:
    pool = sorted({max(value + d, 0) for d in (-2, -1, 1, 2, 3)} - {value})
    return [str(value)] + [str(v) for v in rng.sample(pool, 2)]


def natural_questions(facts: dict[str, Any], rng: random.Random) -> list[Question]:
    objects = facts["objects"]
    out = []
    for o in rng.sample(objects, min(3, len(objects))):
        where = f'o["row"] == {q(o["row"])} and o["column"] == {q(o["column"])}'
        others = rng.sample(sorted(set(COLORS) - {o["color"]}), 2)
        out.append(Question(f"What colour is the object in the {o['row']} {o['column']} part of the image?",
                            f'[o["color"] for o in objects if {where}][0]', [o["color"], *others]))
        shapes = rng.sample(sorted(set(SHAPES) - {o["shape"]}), 2)
        out.append(Question(f"What shape is the object in the {o['row']} {o['column']} part of the image?",
                            f'[o["shape"] for o in objects if {where}][0]', [o["shape"], *shapes]))
    shape = rng.choice(sorted({o["shape"] for o in objects}))
    n = sum(o["shape"] == shape for o in objects)
    out.append(Question(f"How many {shape}s are in the image?",
                        f'len([o for o in objects if o["shape"] == {q(shape)}])', _count_choices(n, rng)))
    n = sum(o["size"] == "large" for o in objects)
    out.append(Question("How many large objects are in the image?",
                        'len([o for o in objects if o["size"] == "large"])', _count_choices(n, rng)))
    return out


# -- charts -----------------------------------------------------------------------------------------------------

CHART_TOPICS = [
    ("Monthly visitors to the city museum (thousands)", ["Jan", "Feb", "Mar", "Apr", "May", "Jun"]),
    ("Bakery sales by weekday (loaves)", ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]),
    ("Rainfall by region (mm)", ["North", "South", "East", "West", "Central"]),
    ("Team points per season", ["2019", "2020", "2021", "2022", "2023"]),
]


def chart_facts(rng: random.Random) -> dict[str, Any]:
    title, categories = rng.choice(CHART_TOPICS)
    values = rng.sample(range(12, 96), len(categories))
    return {"title": title, "chart_type": rng.choice(["bar", "line"]), "categories": list(categories),
            "values": values, "value_of": dict(zip(categories, values))}


def draw_chart(facts: dict[str, Any]) -> Image.Image:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context({"font.family": "DejaVu Sans", "font.size": 11}):
        fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=100)
        cats, values = facts["categories"], facts["values"]
        if facts["chart_type"] == "bar":
            ax.bar(cats, values, color="#4c78a8")
            for i, v in enumerate(values):
                ax.text(i, v + 1.5, str(v), ha="center", va="bottom")
        else:
            ax.plot(cats, values, marker="o", color="#e45756", linewidth=2)
            for i, v in enumerate(values):
                ax.text(i, v + 2.5, str(v), ha="center", va="bottom")
        ax.set_title(facts["title"])
        ax.set_ylim(0, max(values) * 1.18)
        ax.spines[["top", "right"]].set_visible(False)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        plt.close(fig)
    with Image.open(io.BytesIO(buf.getvalue())) as im:
        return im.convert("RGB")


def chart_atoms(facts: dict[str, Any], rng: random.Random) -> list[Atom]:
    cats, values, of = facts["categories"], facts["values"], facts["value_of"]
    atoms = []
    a, b = rng.sample(cats, 2)
    if of[a] < of[b]:
        a, b = b, a
    atoms.append(Atom("compare", f"value_of[{q(a)}] > value_of[{q(b)}]", f"value_of[{q(a)}] < value_of[{q(b)}]",
                      f"the value for {a} is higher than the value for {b}",
                      f"the value for {a} is lower than the value for {b}"))
    top = max(cats, key=lambda c: of[c])
    other = rng.choice([c for c in cats if c != top])
    atoms.append(Atom("argmax", f"max(values) == value_of[{q(top)}]", f"max(values) == value_of[{q(other)}]",
                      f"{top} has the highest value", f"{other} has the highest value"))
    low = min(cats, key=lambda c: of[c])
    other = rng.choice([c for c in cats if c != low])
    atoms.append(Atom("argmin", f"min(values) == value_of[{q(low)}]", f"min(values) == value_of[{q(other)}]",
                      f"{low} has the lowest value", f"{other} has the lowest value"))
    total = sum(values)
    t = total - rng.randint(5, 25)
    atoms.append(Atom("sum", f"sum(values) > {t}", f"sum(values) < {t}", f"the values add up to more than {t}",
                      f"the values add up to less than {t}"))
    ordered = sorted(values)
    k = rng.randrange(1, len(ordered) - 1)
    threshold = (ordered[k - 1] + ordered[k]) // 2
    n = sum(v > threshold for v in values)
    atoms.append(Atom("above", f"len([v for v in values if v > {threshold}]) == {n}",
                      f"len([v for v in values if v > {threshold}]) == {n + 1}",
                      f"exactly {plural(n, 'category')} {'is' if n == 1 else 'are'} above {threshold}".replace(
                          "categorys", "categories"),
                      f"exactly {plural(n + 1, 'category')} are above {threshold}".replace("categorys", "categories")))
    c = rng.choice(cats)
    atoms.append(Atom("value", f"value_of[{q(c)}] == {of[c]}", f"value_of[{q(c)}] == {of[c] + 2}",
                      f"the value for {c} is {of[c]}", f"the value for {c} is {of[c] + 2}"))
    a, b = rng.sample(cats, 2)
    if of[a] < of[b]:
        a, b = b, a
    gap = of[a] - of[b]
    atoms.append(Atom("gap", f"value_of[{q(a)}] - value_of[{q(b)}] == {gap}",
                      f"value_of[{q(a)}] - value_of[{q(b)}] == {gap + 3}",
                      f"{a} is exactly {gap} above {b}", f"{a} is exactly {gap + 3} above {b}"))
    first, last = cats[0], cats[-1]
    up = values[-1] > values[0]
    atoms.append(Atom("trend", f"values[-1] {'>' if up else '<'} values[0]", f"values[-1] {'<' if up else '>'} values[0]",
                      f"the value for {last} is {'higher' if up else 'lower'} than the value for {first}",
                      f"the value for {last} is {'lower' if up else 'higher'} than the value for {first}"))
    return atoms


def chart_questions(facts: dict[str, Any], rng: random.Random) -> list[Question]:
    cats, values, of = facts["categories"], facts["values"], facts["value_of"]
    out = []
    for c in rng.sample(cats, 2):
        v = of[c]
        wrong = rng.sample(sorted({v + d for d in (-7, -3, 4, 9)} - {v}), 2)
        out.append(Question(f"What is the value for {c}?", f"value_of[{q(c)}]", [str(v), *map(str, wrong)]))
    low = min(cats, key=lambda c: of[c])
    out.append(Question("Which category has the lowest value?", "[c for c in categories if value_of[c] == min(values)][0]",
                        [low, *rng.sample([c for c in cats if c != low], 2)]))
    top = max(cats, key=lambda c: of[c])
    out.append(Question("Which category has the highest value?", "[c for c in categories if value_of[c] == max(values)][0]",
                        [top, *rng.sample([c for c in cats if c != top], 2)]))
    span = max(values) - min(values)
    out.append(Question("What is the difference between the highest and the lowest value?",
                        "max(values) - min(values)", [str(span), str(span + 5), str(max(span - 6, 1))]))
    return out


# -- GUI trajectories -------------------------------------------------------------------------------------------

SCREENS = {"home": "Home", "settings": "Settings", "shop": "Shop", "cart": "Cart"}
DIALOGS = ["Allow location access?", "Install the update now?", "Remove all items from the cart?",
           "Turn on notifications?"]
PRODUCTS = ["Desk lamp", "Water bottle", "Notebook", "Headphones", "Backpack", "Plant pot"]


def gui_facts(rng: random.Random, frames: int) -> dict[str, Any]:
    state = {"screen": "home", "battery": rng.randint(35, 95), "minute": rng.randint(8 * 60, 20 * 60),
             "wifi": rng.random() < 0.6, "bluetooth": rng.random() < 0.5, "location": rng.random() < 0.5,
             "badge": 0, "dialog": "", "theme": rng.choice(["light", "dark"])}
    out = []
    for i in range(frames):
        if i:
            state["minute"] += rng.randint(1, 4)
            state["battery"] = max(state["battery"] - rng.randint(0, 2), 5)
            state["dialog"] = ""
            move = rng.random()
            if state["screen"] == "settings" and move < 0.5:
                key = rng.choice(["wifi", "bluetooth", "location"])
                state[key] = not state[key]
            elif state["screen"] == "shop" and move < 0.6:
                state["badge"] += 1
            elif move < 0.25:
                state["dialog"] = rng.choice(DIALOGS)
            else:
                state["screen"] = rng.choice(sorted(set(SCREENS) - {state["screen"]}))
        frame = dict(state)
        frame["title"] = SCREENS[frame["screen"]]
        frame["time"] = f"{frame['minute'] // 60:02d}:{frame['minute'] % 60:02d}"
        out.append(frame)
    return {"frames": out}


def gui_page(frame: dict[str, Any]) -> str:
    dark = frame["theme"] == "dark"
    bg, fg, card = ("#1e1f24", "#f2f2f2", "#2c2e35") if dark else ("#f4f5f7", "#1d1d1f", "#ffffff")
    status = f"{frame['time']}" + (" · Wi-Fi" if frame["wifi"] else "") + f" · {frame['battery']}%"
    screen = frame["screen"]
    if screen == "home":
        body = "".join(f"<div class='tile'>{html.escape(t)}</div>" for t in ("Settings", "Shop", "Cart", "Camera"))
        body = f"<div class='grid'>{body}</div>"
    elif screen == "settings":
        rows = [("Wi-Fi", frame["wifi"]), ("Bluetooth", frame["bluetooth"]), ("Location", frame["location"])]
        body = "".join(f"<div class='row'><span>{name}</span><span class='switch {'on' if on else 'off'}'>"
                       f"{'On' if on else 'Off'}</span></div>" for name, on in rows)
    elif screen == "shop":
        body = "".join(f"<div class='row'><span>{p}</span><button>Add</button></div>" for p in PRODUCTS[:4])
    else:
        body = (f"<div class='row'><span>Items in cart</span><b>{frame['badge']}</b></div>"
                "<div class='row'><button>Checkout</button></div>")
    dialog = ""
    if frame["dialog"]:
        dialog = (f"<div class='veil'><div class='dialog'><p>{html.escape(frame['dialog'])}</p>"
                  "<button>Cancel</button> <button class='primary'>OK</button></div></div>")
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{frame['title']}</title><style>
body{{margin:0;width:360px;height:640px;background:{bg};color:{fg};font-family:'DejaVu Sans',Arial,sans-serif;
position:relative;overflow:hidden}}
.status{{display:flex;justify-content:space-between;padding:6px 14px;font-size:13px;opacity:.85}}
.bar{{display:flex;justify-content:space-between;align-items:center;padding:12px 16px;font-size:22px;font-weight:bold}}
.badge{{font-size:14px;background:#e63946;color:#fff;border-radius:12px;padding:3px 9px}}
.row{{display:flex;justify-content:space-between;align-items:center;background:{card};margin:8px 12px;padding:14px;
border-radius:10px;font-size:17px}}
.switch{{padding:3px 10px;border-radius:12px;font-size:14px}} .on{{background:#34c759;color:#fff}}
.off{{background:#8e8e93;color:#fff}} .grid{{display:grid;grid-template-columns:1fr 1fr;gap:12px;padding:12px}}
.tile{{background:{card};border-radius:14px;height:110px;display:flex;align-items:center;justify-content:center;
font-size:17px}} button{{font-size:15px;padding:6px 14px;border-radius:8px;border:1px solid #999;background:#eee}}
.veil{{position:absolute;inset:0;background:rgba(0,0,0,.45);display:flex;align-items:center;justify-content:center}}
.dialog{{background:#fff;color:#111;border-radius:14px;padding:18px;width:260px;text-align:center;font-size:17px}}
.primary{{background:#0a84ff;color:#fff;border-color:#0a84ff}}
</style></head><body><div class="status"><span>{status}</span></div>
<div class="bar"><span>{frame['title']}</span><span class="badge">Cart {frame['badge']}</span></div>
{body}{dialog}</body></html>"""


def gui_atoms(facts: dict[str, Any], rng: random.Random) -> list[Atom]:
    frames = facts["frames"]
    n = len(frames)
    atoms = []
    i = rng.randrange(n)
    level = frames[i]["battery"]
    low, high = level - rng.randint(3, 10), level + rng.randint(3, 10)
    atoms.append(Atom("battery", f'frames[{i}]["battery"] > {low}', f'frames[{i}]["battery"] > {high}',
                      f"the battery level in frame {i + 1} is above {low}%",
                      f"the battery level in frame {i + 1} is above {high}%"))
    i = rng.randrange(n)
    on = frames[i]["wifi"]
    atoms.append(Atom("wifi", f'frames[{i}]["wifi"] == {on}', f'frames[{i}]["wifi"] == {not on}',
                      f"Wi-Fi is {'on' if on else 'off'} in frame {i + 1}",
                      f"Wi-Fi is {'off' if on else 'on'} in frame {i + 1}"))
    shown = sorted({f["dialog"] for f in frames if f["dialog"]})
    absent = [d for d in DIALOGS if d not in shown]
    if shown and absent:
        d, other = rng.choice(shown), rng.choice(absent)
        expr = "any(f[\"dialog\"] == {} for f in frames)"
        atoms.append(Atom("dialog", expr.format(q(d)), expr.format(q(other)),
                          f"a dialog asking “{d}” appears in the trajectory",
                          f"a dialog asking “{other}” appears in the trajectory"))
    badge = frames[-1]["badge"]
    atoms.append(Atom("badge", f'frames[-1]["badge"] == {badge}', f'frames[-1]["badge"] == {badge + 1}',
                      f"the cart badge shows {badge} in the last frame",
                      f"the cart badge shows {badge + 1} in the last frame"))
    i = rng.randrange(n)
    screen = frames[i]["screen"]
    other = rng.choice(sorted(set(SCREENS) - {screen}))
    atoms.append(Atom("screen", f'frames[{i}]["screen"] == {q(screen)}', f'frames[{i}]["screen"] == {q(other)}',
                      f"frame {i + 1} shows the {SCREENS[screen]} screen",
                      f"frame {i + 1} shows the {SCREENS[other]} screen"))
    theme = frames[0]["theme"]
    other_theme = "light" if theme == "dark" else "dark"
    atoms.append(Atom("theme", f'all(f["theme"] == {q(theme)} for f in frames)',
                      f'all(f["theme"] == {q(other_theme)} for f in frames)',
                      f"every frame uses the {theme} theme", f"every frame uses the {other_theme} theme"))
    count = sum(f["screen"] == "home" for f in frames)
    atoms.append(Atom("home_count", f'len([f for f in frames if f["screen"] == "home"]) == {count}',
                      f'len([f for f in frames if f["screen"] == "home"]) == {count + 1}',
                      f"exactly {plural(count, 'frame')} {'shows' if count == 1 else 'show'} the Home screen",
                      f"exactly {plural(count + 1, 'frame')} show the Home screen"))
    i = rng.randrange(n)
    time = frames[i]["time"]
    later = f"{(frames[i]['minute'] + 2) // 60:02d}:{(frames[i]['minute'] + 2) % 60:02d}"
    atoms.append(Atom("time", f'frames[{i}]["time"] == {q(time)}', f'frames[{i}]["time"] == {q(later)}',
                      f"the clock shows {time} in frame {i + 1}", f"the clock shows {later} in frame {i + 1}"))
    span = frames[-1]["minute"] - frames[0]["minute"]
    atoms.append(Atom("elapsed", f'frames[-1]["minute"] - frames[0]["minute"] >= {span}',
                      f'frames[-1]["minute"] - frames[0]["minute"] >= {span + 5}',
                      f"at least {span} minutes pass between the first and the last frame",
                      f"at least {span + 5} minutes pass between the first and the last frame"))
    return atoms


def gui_questions(facts: dict[str, Any], rng: random.Random) -> list[Question]:
    frames = facts["frames"]
    out = []
    level = frames[-1]["battery"]
    out.append(Question("What battery level is shown in the last frame?", 'frames[-1]["battery"]',
                        [str(level), str(level + 4), str(max(level - 6, 1))]))
    for i in rng.sample(range(len(frames)), 2):
        screen = frames[i]["screen"]
        others = rng.sample(sorted(set(SCREENS) - {screen}), 2)
        out.append(Question(f"Which screen is shown in frame {i + 1}?", f'frames[{i}]["screen"]', [screen, *others]))
    i = rng.randrange(len(frames))
    time = frames[i]["time"]
    hour, minute = divmod(frames[i]["minute"] + 7, 60)
    out.append(Question(f"What time is shown in frame {i + 1}?", f'frames[{i}]["time"]',
                        [time, f"{hour:02d}:{minute:02d}", f"{(frames[i]['minute'] // 60 + 1) % 24:02d}:{time[3:]}"]))
    badge = frames[-1]["badge"]
    out.append(Question("How many items does the cart badge show in the last frame?", 'frames[-1]["badge"]',
                        _count_choices(badge, rng)))
    return out


# -- chains -----------------------------------------------------------------------------------------------------


@dataclass
class Domain:
    facts: Callable[[random.Random], dict[str, Any]]
    atoms: Callable[[dict[str, Any], random.Random], list[Atom]]
    questions: Callable[[dict[str, Any], random.Random], list[Question]]


def _label_options(question: Question, letter: str, facts: dict[str, Any], rng: random.Random,
                   allow_none: bool) -> tuple[list[str], str]:
    """Shuffled option texts with labels, and the label of the correct one ("None" if it was left out)."""
    correct = str(vpir.evaluate(question.expr, facts))
    if correct != question.choices[0]:
        raise AssertionError(f"question {question.text!r}: VPIR gives {correct!r}, generator {question.choices[0]!r}")
    choices = list(dict.fromkeys(question.choices))
    if allow_none and rng.random() < NONE_RATE:
        choices = [c for c in choices if c != correct]
    rng.shuffle(choices)
    labels = [f"{letter}{i + 1}" for i in range(len(choices))]
    answer = labels[choices.index(correct)] if correct in choices else "None"
    return [f"{label}. {text}" for label, text in zip(labels, choices)], answer


def build_chain(domain: Domain, facts: dict[str, Any], rng: random.Random, depth: int) -> tuple[list[Layer], Question]:
    atoms = domain.atoms(facts, rng)
    questions = domain.questions(facts, rng)
    rng.shuffle(atoms)
    rng.shuffle(questions)
    if len(atoms) < 2 * depth or len(questions) < depth + 1:
        depth = min(len(atoms) // 2, len(questions) - 1)
    layers = []
    for i in range(depth):
        a, b = atoms[2 * i], atoms[2 * i + 1]
        flip_first = rng.random() < 0.5
        true = f"({a.true}) and ({b.true})"
        false = f"({a.false}) and ({b.true})" if flip_first else f"({a.true}) and ({b.false})"
        true_text = f"{a.true_text} and {b.true_text}"
        false_text = f"{a.false_text} and {b.true_text}" if flip_first else f"{a.true_text} and {b.false_text}"
        if not vpir.holds(true, facts) or vpir.holds(false, facts):
            raise AssertionError(f"layer {i + 1}: {true!r} must hold and {false!r} must not")
        layers.append(Layer(f"{a.kind} + {b.kind}", true, false, true_text, false_text, questions[i]))
    return layers, questions[depth]


def compile_path(layers: list[Layer], final: Question, facts: dict[str, Any], options: dict[str, list[str]],
                 answers: dict[str, str], flip: int | None) -> tuple[str, str, str]:
    """(instruction, pseudocode, answer) of the chain with layer `flip` (0-based) perturbed, or none."""
    lines = ["Check the conditions below in order, using the image(s)."]
    code: list[str] = []
    answer = None
    for i, layer in enumerate(layers):
        letter = LAYER_LETTERS[i]
        condition, text = (layer.false, layer.false_text) if i == flip else (layer.true, layer.true_text)
        exit_part = f"Otherwise, answer: {layer.exit.text} Options: {'; '.join(options[letter])}."
        if i + 1 < len(layers):
            lines.append(f"{i + 1}. If {text}, continue with condition {i + 2}. {exit_part}")
        else:
            lines.append(f"{i + 1}. If {text}, answer: {final.text} Options: "
                         f"{'; '.join(options[FINAL_LETTER])}. {exit_part}")
        indent = "    " * i
        code.append(f"{indent}# layer {i + 1}: {layer.subject}")
        code.append(f"{indent}if {condition}:")
        if answer is None and not vpir.holds(condition, facts):
            answer = answers[letter]
    code.append("    " * len(layers) + f"answer({final.expr})  # options {FINAL_LETTER}")
    for i in reversed(range(len(layers))):
        code.append("    " * i + "else:")
        code.append("    " * (i + 1) + f"answer({layers[i].exit.expr})  # options {LAYER_LETTERS[i]}")
    if answer is None:
        answer = answers[FINAL_LETTER]
    return "\n".join(lines), "\n".join(code), answer


def make_item(item_id: str, domain_name: str, domain: Domain, facts: dict[str, Any], image: str,
              rng: random.Random) -> dict[str, Any]:
    depth = rng.randint(2, 4)
    layers, final = build_chain(domain, facts, rng, depth)
    options, answers = {}, {}
    for i, layer in enumerate(layers):
        options[LAYER_LETTERS[i]], answers[LAYER_LETTERS[i]] = _label_options(layer.exit, LAYER_LETTERS[i], facts,
                                                                              rng, allow_none=False)
    options[FINAL_LETTER], answers[FINAL_LETTER] = _label_options(final, FINAL_LETTER, facts, rng, allow_none=True)
    flip = rng.randrange(len(layers))
    true_text, true_code, true_answer = compile_path(layers, final, facts, options, answers, None)
    false_text, false_code, false_answer = compile_path(layers, final, facts, options, answers, flip)
    if true_answer != answers[FINAL_LETTER] or false_answer != answers[LAYER_LETTERS[flip]]:
        raise AssertionError(f"{item_id}: executing the chain does not reach the expected exits")
    return {"id": item_id, "domain": domain_name, "image": image, "facts": facts,
            "true_path": {"full_instruction": true_text, "pseudocode": true_code, "correct_answer": true_answer},
            "false_path": {"diverge_node": f"qa_{flip + 1}", "full_instruction": false_text,
                           "pseudocode": false_code, "correct_answer": false_answer}}


DOMAINS = {"natural": Domain(natural_facts, natural_atoms, natural_questions),
           "chart": Domain(chart_facts, chart_atoms, chart_questions),
           "gui": Domain(lambda rng: gui_facts(rng, rng.randint(4, 6)), gui_atoms, gui_questions)}


def build_world(out: Path, *, seed: int, size: str, count: int | None, browse_gui: bool, name: str) -> Path:
    if size not in SIZES and count is None:
        raise ValueError(f"unknown size {size!r}; sizes: {', '.join(SIZES)}")
    per_domain = count if count is not None else SIZES[size]
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    for folder in ("data", "images/natural", "images/chart", "images/gui", "site/condchain/gui"):
        (out / folder).mkdir(parents=True)
    master = random.Random(seed)
    records: dict[str, list[dict[str, Any]]] = {d: [] for d in DOMAINS}
    gui_pages: list[tuple[str, tuple[int, int]]] = []
    gui_targets: list[Path] = []
    for domain_name, domain in DOMAINS.items():
        for k in range(per_domain):
            rng = random.Random(master.randrange(2**32))
            item_id = f"{domain_name}_{k:03d}"
            if domain_name == "gui":
                facts = gui_facts(rng, 10 if k == 0 else rng.randint(4, 6))
                image = f"images/gui/{item_id}"
                (out / image).mkdir()
                for i, frame in enumerate(facts["frames"], 1):
                    page = f"condchain/gui/{item_id}/{i}.html"
                    (out / "site" / page).parent.mkdir(parents=True, exist_ok=True)
                    (out / "site" / page).write_text(gui_page(frame), encoding="utf-8")
                    gui_pages.append((page, (360, 640)))
                    gui_targets.append(out / image / f"{item_id}_{i}.png")
            else:
                facts = domain.facts(rng)
                image = f"images/{domain_name}/{item_id}.png"
                picture = draw_scene(facts, rng) if domain_name == "natural" else draw_chart(facts)
                (out / image).write_bytes(encode_png(picture))
            records[domain_name].append(make_item(item_id, domain_name, domain, facts, image, rng))
    if gui_pages:
        for target, page in zip(gui_targets, run_sync(render_site_pages(out / "site", gui_pages, full_page=False))):
            if page.blocked:
                raise RuntimeError(f"{page.path}: blocked requests {page.blocked}")
            target.write_bytes(encode_png(page.screenshot))
    tasks = []
    for domain_name, items in records.items():
        file = out / "data" / f"{domain_name}.jsonl"
        file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items), encoding="utf-8")
        for index, record in enumerate(items):
            tasks.extend(tasks_from_record(record, index, out.resolve(), f"{file}:{index + 1}", domain_name,
                                           browse_gui=browse_gui))
    (out / "tasks.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in tasks), encoding="utf-8")
    write_world(out, WorldInfo(name=name, suite="condchain", seed=seed, size=size,
                               counts={d: len(r) for d, r in records.items()} | {"tasks": len(tasks)},
                               meta={"gui_frames": "browse" if browse_gui else "all"}))
    return out


def build(out: Path, *, seed: int = 0, size: str = "small", count: int | None = None) -> Path:
    """Items per domain: small 2, full 20 (`count` overrides); GUI frames given to the agent all at once."""
    return build_world(out, seed=seed, size=size, count=count, browse_gui=False, name="condchain-mini")


def build_agentic(out: Path, *, seed: int = 0, size: str = "small", count: int | None = None) -> Path:
    """As `condchain-mini`, but GUI tasks have no images: frames are viewed through the browser tool."""
    return build_world(out, seed=seed, size=size, count=count, browse_gui=True, name="condchain-mini-agentic")
