"""`carv-mini`: CARV items generated from scene states and drawn with Pillow (PROTOCOLS.md §4, paper Algorithm 1).

Cells follow the paper's Table 1: single-step (|T| = 2); Shared Source Union,
Intersection, Difference (|T| = 2) and Union, Intersection (|T| = 3, 4);
Different Source Union, Intersection, Difference (|T| = 2). Each cell has the
same number of items (`small`: 4, `full`: 500 as in the paper, 5,500 in all),
balanced over transformation types (which properties T1 and T2 change, and
which they share) by cycling through every type in a seeded order. Every fourth
Intersection / Difference item with |T| = 2 has an empty target, answered
"No resulting image.".

The world directory holds `images/{stem}.png` (one per distinct state),
`tasks.jsonl` (arena tasks) and `carv_items.jsonl` (the same items in the
public CARV format, readable by the `carv` loader).
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Callable

from PIL import Image, ImageDraw

from arena.core.images import encode_png
from arena.suites.carv.loader import (
    OPERATIONS, PROPERTIES, VALUES, Atomic, State, answer_caption, apply, carv_task, compose,
)
from arena.core.world import WorldInfo, write_world

WIDTH, HEIGHT = 480, 360
FLOOR_Y = 322
CELLS: tuple[tuple[str, str, int], ...] = (
    ("single", "single", 2),
    ("union", "SS", 2), ("union", "DS", 2),
    ("intersection", "SS", 2), ("intersection", "DS", 2),
    ("difference", "SS", 2), ("difference", "DS", 2),
    ("union", "SS", 3), ("intersection", "SS", 3),
    ("union", "SS", 4), ("intersection", "SS", 4),
)
SIZES = {"small": 4, "full": 500}
EMPTY_EVERY = 4

# --- drawing ----------------------------------------------------------------------------------------------------

_FURNITURE_RGB = {"wood": (150, 98, 52), "red": (196, 38, 38), "blue": (42, 78, 190)}
_OUTLINE = (40, 30, 25)
_SURFACES = {"table": (240, 170), "chair": (228, 206)}


def _shade(rgb: tuple[int, int, int], k: float) -> tuple[int, int, int]:
    return tuple(max(0, min(255, int(c * k))) for c in rgb)  # type: ignore[return-value]


def _draw_table(d: ImageDraw.ImageDraw, rgb: tuple[int, int, int], grain: bool) -> None:
    dark = _shade(rgb, 0.7)
    for x in (122, 346):
        d.rectangle((x, 186, x + 12, FLOOR_Y), fill=dark, outline=_OUTLINE)
    d.rectangle((108, 170, 372, 186), fill=rgb, outline=_OUTLINE, width=2)
    if grain:
        for y in (175, 180):
            d.line((114, y, 366, y), fill=_shade(rgb, 0.8))


def _draw_chair(d: ImageDraw.ImageDraw, rgb: tuple[int, int, int], grain: bool) -> None:
    dark = _shade(rgb, 0.7)
    for x in (158, 300):
        d.rectangle((x, 218, x + 10, FLOOR_Y), fill=dark, outline=_OUTLINE)
    d.rectangle((306, 92, 320, 206), fill=rgb, outline=_OUTLINE, width=2)
    d.rectangle((298, 86, 328, 100), fill=rgb, outline=_OUTLINE, width=2)
    d.rectangle((150, 206, 322, 218), fill=rgb, outline=_OUTLINE, width=2)
    if grain:
        d.line((156, 212, 316, 212), fill=_shade(rgb, 0.8))
        d.line((313, 104, 313, 200), fill=_shade(rgb, 0.8))


def _bottle(d, x, b, s):
    d.rectangle((x - 11 * s, b - 40 * s, x + 11 * s, b), fill=(52, 140, 84), outline=_OUTLINE)
    d.polygon([(x - 11 * s, b - 40 * s), (x - 5 * s, b - 50 * s), (x + 5 * s, b - 50 * s), (x + 11 * s, b - 40 * s)],
              fill=(52, 140, 84), outline=_OUTLINE)
    d.rectangle((x - 5 * s, b - 60 * s, x + 5 * s, b - 50 * s), fill=(52, 140, 84), outline=_OUTLINE)
    d.rectangle((x - 6 * s, b - 66 * s, x + 6 * s, b - 60 * s), fill=(200, 170, 40), outline=_OUTLINE)
    d.rectangle((x - 9 * s, b - 30 * s, x + 9 * s, b - 14 * s), fill=(245, 240, 225))


def _mug(d, x, b, s):
    d.ellipse((x + 4 * s, b - 26 * s, x + 22 * s, b - 8 * s), outline=(230, 130, 40), width=max(2, int(4 * s)))
    d.rectangle((x - 14 * s, b - 32 * s, x + 10 * s, b), fill=(230, 130, 40), outline=_OUTLINE)
    d.ellipse((x - 14 * s, b - 36 * s, x + 10 * s, b - 28 * s), fill=(120, 70, 30), outline=_OUTLINE)


def _bowl(d, x, b, s):
    d.chord((x - 24 * s, b - 40 * s, x + 24 * s, b), 0, 180, fill=(90, 170, 200), outline=_OUTLINE)
    d.line((x - 24 * s, b - 20 * s, x + 24 * s, b - 20 * s), fill=_OUTLINE, width=2)
    d.rectangle((x - 8 * s, b - 3 * s, x + 8 * s, b), fill=(70, 140, 170))


def _book(d, x, b, s):
    d.rectangle((x - 14 * s, b - 46 * s, x + 14 * s, b), fill=(120, 60, 150), outline=_OUTLINE, width=2)
    d.rectangle((x - 14 * s, b - 46 * s, x - 8 * s, b), fill=(90, 40, 115))
    for y in (b - 36 * s, b - 30 * s):
        d.line((x - 4 * s, y, x + 10 * s, y), fill=(235, 220, 160), width=2)


def _knife(d, x, b, s):
    d.rectangle((x - 20 * s, b - 7 * s, x - 6 * s, b), fill=(70, 45, 30), outline=_OUTLINE)
    d.polygon([(x - 6 * s, b - 9 * s), (x + 21 * s, b - 3 * s), (x + 19 * s, b), (x - 6 * s, b)],
              fill=(200, 202, 210), outline=_OUTLINE)


def _scissors(d, x, b, s):
    w = max(2, int(4 * s))
    d.line((x - 6 * s, b - 14 * s, x + 8 * s, b - 54 * s), fill=(170, 172, 180), width=w)
    d.line((x + 6 * s, b - 14 * s, x - 8 * s, b - 54 * s), fill=(170, 172, 180), width=w)
    d.ellipse((x - 16 * s, b - 16 * s, x - 2 * s, b), outline=(210, 40, 40), width=w)
    d.ellipse((x + 2 * s, b - 16 * s, x + 16 * s, b), outline=(210, 40, 40), width=w)
    d.ellipse((x - 3 * s, b - 31 * s, x + 3 * s, b - 25 * s), fill=_OUTLINE)


def _spatula(d, x, b, s):
    d.rectangle((x - 3 * s, b - 26 * s, x + 3 * s, b), fill=(30, 30, 30))
    d.rectangle((x - 12 * s, b - 58 * s, x + 12 * s, b - 26 * s), fill=(90, 90, 95), outline=_OUTLINE)
    for dx in (-5, 0, 5):
        d.line((x + dx * s, b - 52 * s, x + dx * s, b - 32 * s), fill=(200, 200, 205), width=2)


def _toilet_paper(d, x, b, s):
    d.rectangle((x - 15 * s, b - 34 * s, x + 15 * s, b - 4 * s), fill=(250, 250, 250), outline=_OUTLINE)
    d.ellipse((x - 15 * s, b - 8 * s, x + 15 * s, b), fill=(250, 250, 250), outline=_OUTLINE)
    d.rectangle((x - 14 * s, b - 34 * s, x + 14 * s, b - 5 * s), fill=(250, 250, 250))
    d.ellipse((x - 15 * s, b - 40 * s, x + 15 * s, b - 28 * s), fill=(240, 240, 240), outline=_OUTLINE)
    d.ellipse((x - 6 * s, b - 37 * s, x + 6 * s, b - 31 * s), fill=(150, 120, 90))


def _phone(d, x, b, s):
    d.rounded_rectangle((x - 13 * s, b - 48 * s, x + 13 * s, b), radius=int(5 * s), fill=(25, 25, 30),
                        outline=_OUTLINE)
    d.rectangle((x - 10 * s, b - 42 * s, x + 10 * s, b - 9 * s), fill=(90, 150, 210))
    d.ellipse((x - 3 * s, b - 7 * s, x + 3 * s, b - 2 * s), fill=(160, 160, 160))


SUBJECT_PAINTERS: dict[str, Callable[..., None]] = {
    "bottle": _bottle, "mug": _mug, "bowl": _bowl, "book": _book, "knife": _knife, "scissors": _scissors,
    "spatula": _spatula, "toilet-paper": _toilet_paper, "phone": _phone,
}


def _anchor(state: State) -> tuple[int, int]:
    """Centre x and base line y of the subject group."""
    if state.spatial_relation == "on":
        return _SURFACES[state.object]
    if state.spatial_relation == "under":
        return (234 if state.object == "chair" else 240), FLOOR_Y
    return (58 if state.spatial_relation == "left" else 422), FLOOR_Y


def render_state(state: State) -> Image.Image:
    """Draw a scene: wall, floor, the furniture in its colour, one or two subjects at their position."""
    image = Image.new("RGB", (WIDTH, HEIGHT), (236, 230, 218))
    d = ImageDraw.Draw(image)
    d.rectangle((0, FLOOR_Y, WIDTH, HEIGHT), fill=(190, 186, 180))
    d.line((0, FLOOR_Y, WIDTH, FLOOR_Y), fill=(150, 146, 140), width=2)
    rgb = _FURNITURE_RGB[state.object_color]
    (_draw_table if state.object == "table" else _draw_chair)(d, rgb, state.object_color == "wood")
    x, base = _anchor(state)
    painter = SUBJECT_PAINTERS[state.subject]
    if state.subject_number == "one":
        painter(d, x, base, 1.5)
    else:
        for dx in (-28, 28):
            painter(d, x + dx, base, 1.1)
    return image


# --- sampling (Algorithm 1) -----------------------------------------------------------------------------------

Structure = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]


def structures(operation: str, k: int, empty: bool) -> list[Structure]:
    """Transformation types of a cell: (shared properties, T1-only properties, T2-only properties).

    Shared properties carry identical atomic transformations in T1 and T2; the
    others change disjoint properties, so the union stays applicable.
    """
    if operation == "single":
        return [((), combo, ()) for combo in itertools.combinations(PROPERTIES, k)]
    if empty:
        shared_sizes = [0] if operation == "intersection" else [k]
    else:
        low = max(0, 2 * k - len(PROPERTIES))
        shared_sizes = [s for s in range(low, k) if not (operation == "intersection" and s == 0)]
    out = []
    for s in shared_sizes:
        if 2 * k - s > len(PROPERTIES):
            continue
        for shared in itertools.combinations(PROPERTIES, s):
            rest = [p for p in PROPERTIES if p not in shared]
            for only1 in itertools.combinations(rest, k - s):
                left = [p for p in rest if p not in only1]
                for only2 in itertools.combinations(left, k - s):
                    out.append((shared, only1, only2))
    return out


def _random_state(rng: random.Random, fixed: dict[str, str]) -> State:
    return State(**{p: fixed.get(p) or rng.choice(VALUES[p]) for p in PROPERTIES})


def _changes(rng: random.Random, props: tuple[str, ...], source: dict[str, str]) -> dict[str, Atomic]:
    out = {}
    for p in props:
        old = source.get(p) or rng.choice(VALUES[p])
        out[p] = (p, old, rng.choice([v for v in VALUES[p] if v != old]))
    return out


def sample_item(rng: random.Random, operation: str, setting: str, structure: Structure) -> tuple[list[State], State | None]:
    """Context states (3 or 5) and the answer state (None: empty target) for one item."""
    shared, only1, only2 = structure
    if operation == "single":
        atoms = _changes(rng, only1, {})
        t1 = frozenset(atoms.values())
        old = {p: a[1] for p, a in atoms.items()}
        first = _random_state(rng, old)
        query = _random_state(rng, old)
        while query == first:
            query = _random_state(rng, old)
        return [first, apply(t1, first), query], apply(t1, query)
    if setting == "SS":
        source = _random_state(rng, {})
        atoms = _changes(rng, shared + only1 + only2, source.as_dict())
    else:
        atoms = _changes(rng, shared + only1 + only2, {})
    t1 = frozenset(atoms[p] for p in shared + only1)
    t2 = frozenset(atoms[p] for p in shared + only2)
    target = compose(operation, t1, t2)
    if setting == "SS":
        i1 = i2 = query = source
    else:
        old = {p: a[1] for p, a in atoms.items()}
        while True:
            i1 = _random_state(rng, {p: old[p] for p in shared + only1})
            i2 = _random_state(rng, {p: old[p] for p in shared + only2})
            query = _random_state(rng, {a[0]: a[1] for a in target})
            if len({i1, i2, query}) == 3:
                break
    answer = apply(target, query) if target else None
    return [i1, apply(t1, i1), i2, apply(t2, i2), query], answer


def generate(seed: int, per_cell: int) -> list[tuple[str, list[State], State | None, str, str, Structure]]:
    """Every item of the world: (id, context states, answer state, operation, setting, structure)."""
    items = []
    for operation, setting, k in CELLS:
        rng = random.Random(f"carv|{seed}|{operation}|{setting}|{k}")
        can_be_empty = operation in ("intersection", "difference") and k == 2
        pools = {empty: structures(operation, k, empty) for empty in ((False, True) if can_be_empty else (False,))}
        for pool in pools.values():
            rng.shuffle(pool)
        cursor = {empty: 0 for empty in pools}
        for i in range(per_cell):
            empty = can_be_empty and i % EMPTY_EVERY == EMPTY_EVERY - 1
            pool = pools[empty]
            structure = pool[cursor[empty] % len(pool)]
            cursor[empty] += 1
            states, answer = sample_item(rng, operation, setting, structure)
            tag = operation if operation == "single" else f"{operation}-{setting.lower()}"
            items.append((f"carv-{tag}-t{k}-{i:04d}", states, answer, operation, setting, structure))
    return items


def build(out: Path, *, seed: int = 0, size: str = "small") -> Path:
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}, got {size!r}")
    out = Path(out)
    (out / "images").mkdir(parents=True, exist_ok=True)
    items = generate(seed, SIZES[size])
    drawn: set[State] = set()
    tasks, public = [], []
    for task_id, states, answer, operation, setting, structure in items:
        for state in states + ([answer] if answer else []):
            if state not in drawn:
                (out / "images" / f"{state.stem}.png").write_bytes(encode_png(render_state(state)))
                drawn.add(state)
        shared, only1, only2 = structure
        task = carv_task(task_id, [f"images/{s.stem}.png" for s in states], states, answer, operation, setting,
                         {"type": {"shared": list(shared), "t1_only": list(only1), "t2_only": list(only2)}})
        assert task.answers == [answer_caption(answer)]
        tasks.append(task.model_dump_json())
        public.append(json.dumps({"id": task_id, "context_image": [s.stem for s in states],
                                  "label": answer.stem if answer else "", "operation": operation,
                                  "setting": setting}))
    (out / "tasks.jsonl").write_text("\n".join(tasks) + "\n", encoding="utf-8")
    (out / "carv_items.jsonl").write_text("\n".join(public) + "\n", encoding="utf-8")
    write_world(out, WorldInfo(name="carv-mini", suite="carv", seed=seed, size=size,
                               counts={"tasks": len(tasks), "images": len(drawn)},
                               meta={"cells": [list(c) for c in CELLS], "per_cell": SIZES[size],
                                     "operations": list(OPERATIONS)}))
    return out
