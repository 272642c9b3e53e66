"""`ureason-mini`: UReason-style items with programmatically checkable criteria (PROTOCOLS.md §5).

Five families as in UReason, each with prompts that hide the target behind a
little reasoning, and a criterion (`expect_en`) written in a fixed grammar that
`Criterion.parse` reads back:

- count (arithmetic, code): "Exactly 4 red circles are shown."
- order (spatial):          "From left to right: a red circle, a blue square, a green triangle."
- colour (attribute):       "There is one square and it is purple."
- text (text):              'The word "ROSE" is written.'

The world holds `tasks.jsonl` (one task per item and setting: direct, guided,
decontext) and the public-format files `data/{family}.jsonl` and
`data/direct_{family}.jsonl`. `gold_svg` / `wrong_svg` draw markup that meets /
fails a criterion (scripted baselines and tests).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from arena.suites.ureason.loader import FAMILIES, SETTINGS, ureason_task
from arena.core.world import WorldInfo, write_world

SHAPES = ("circle", "square", "triangle")
SHAPE_COLORS = ("red", "blue", "green", "yellow", "orange", "purple", "black", "pink", "gray", "brown")
PALETTE: dict[str, tuple[tuple[int, int, int], ...]] = {
    "red": ((255, 0, 0), (220, 20, 60), (200, 30, 30), (178, 34, 34)),
    "green": ((0, 128, 0), (0, 255, 0), (34, 139, 34), (50, 205, 50), (46, 139, 87)),
    "blue": ((0, 0, 255), (30, 144, 255), (0, 0, 139), (65, 105, 225), (70, 130, 180)),
    "yellow": ((255, 255, 0), (255, 215, 0), (240, 230, 140)),
    "orange": ((255, 165, 0), (255, 140, 0), (255, 127, 80), (255, 99, 71)),
    "purple": ((128, 0, 128), (148, 0, 211), (138, 43, 226), (160, 32, 240), (186, 85, 211)),
    "pink": ((255, 192, 203), (255, 105, 180), (255, 20, 147)),
    "black": ((0, 0, 0), (30, 30, 30)),
    "white": ((255, 255, 255), (245, 245, 245)),
    "gray": ((128, 128, 128), (169, 169, 169), (192, 192, 192), (105, 105, 105)),
    "brown": ((165, 42, 42), (139, 69, 19), (160, 82, 45), (128, 64, 0)),
}
SIZES = {"small": 2, "full": 20}


def color_name(rgb: tuple[int, int, int], max_distance: float = 110.0) -> str | None:
    """The palette colour nearest to `rgb`, or None when nothing is close."""
    best, name = max_distance ** 2, None
    for candidate, prototypes in PALETTE.items():
        for proto in prototypes:
            dist = sum((a - b) ** 2 for a, b in zip(rgb, proto))
            if dist < best:
                best, name = dist, candidate
    return name


@dataclass(frozen=True)
class Criterion:
    """A checkable target: `count` shapes of a colour, an `order` of (colour, shape), the `color` of the only
    shape of a kind, or a `text` that must be written."""

    kind: str
    shape: str | None = None
    color: str | None = None
    count: int | None = None
    sequence: tuple[tuple[str, str], ...] = ()
    text: str | None = None

    def sentence(self) -> str:
        if self.kind == "count":
            noun = self.shape if self.count == 1 else f"{self.shape}s"
            return f"Exactly {self.count} {self.color} {noun} {'is' if self.count == 1 else 'are'} shown."
        if self.kind == "order":
            return "From left to right: " + ", ".join(f"a {c} {s}" for c, s in self.sequence) + "."
        if self.kind == "color":
            return f"There is one {self.shape} and it is {self.color}."
        if self.kind == "text":
            return f'The word "{self.text}" is written.'
        raise ValueError(f"unknown criterion kind {self.kind!r}")

    @classmethod
    def parse(cls, sentence: str) -> "Criterion | None":
        """The criterion a sentence of this grammar states; None for any other sentence."""
        text = sentence.strip()
        shapes, colors = "|".join(SHAPES), "|".join(SHAPE_COLORS)
        if m := re.fullmatch(rf"Exactly (\d+) ({colors}) ({shapes})s? (?:is|are) shown\.", text):
            return cls("count", shape=m.group(3), color=m.group(2), count=int(m.group(1)))
        if m := re.fullmatch(r"From left to right: (.+)\.", text):
            parts = [re.fullmatch(rf"an? ({colors}) ({shapes})", p.strip()) for p in m.group(1).split(",")]
            if parts and all(parts):
                return cls("order", sequence=tuple((p.group(1), p.group(2)) for p in parts if p))
            return None
        if m := re.fullmatch(rf"There is one ({shapes}) and it is ({colors})\.", text):
            return cls("color", shape=m.group(1), color=m.group(2))
        if m := re.fullmatch(r'The word "([A-Z]+)" is written\.', text):
            return cls("text", text=m.group(1))
        return None


# --- markup that meets or fails a criterion ------------------------------------------------------------------

def _shape_svg(shape: str, color: str, cx: float, cy: float, r: float = 34) -> str:
    if shape == "circle":
        return f'<circle cx="{cx:g}" cy="{cy:g}" r="{r:g}" fill="{color}"/>'
    if shape == "square":
        return f'<rect x="{cx - r:g}" y="{cy - r:g}" width="{2 * r:g}" height="{2 * r:g}" fill="{color}"/>'
    points = f"{cx:g},{cy - r:g} {cx - r:g},{cy + r:g} {cx + r:g},{cy + r:g}"
    return f'<polygon points="{points}" fill="{color}"/>'


def _row_svg(items: list[tuple[str, str]]) -> list[str]:
    out, per_row = [], 5
    for i, (color, shape) in enumerate(items):
        row, col = divmod(i, per_row)
        out.append(_shape_svg(shape, color, 56 + col * 100, 70 + row * 96))
    return out


def gold_svg(criterion: Criterion) -> str:
    """An SVG that satisfies the criterion."""
    if criterion.kind == "count":
        body = _row_svg([(criterion.color or "red", criterion.shape or "circle")] * (criterion.count or 0))
    elif criterion.kind == "order":
        body = _row_svg(list(criterion.sequence))
    elif criterion.kind == "color":
        body = [_shape_svg(criterion.shape or "square", criterion.color or "red", 256, 256, 80)]
    else:
        body = [f'<text x="256" y="280" font-size="96" text-anchor="middle" fill="black">{criterion.text}</text>']
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512">'
            '<rect width="512" height="512" fill="white"/>' + "".join(body) + "</svg>")


def wrong_svg(criterion: Criterion) -> str:
    """An SVG that fails the criterion by one detail (one shape too many, reversed order, another colour...)."""
    if criterion.kind == "count":
        wrong = Criterion("count", shape=criterion.shape, color=criterion.color, count=(criterion.count or 0) + 1)
    elif criterion.kind == "order":
        wrong = Criterion("order", sequence=tuple(reversed(criterion.sequence)))
    elif criterion.kind == "color":
        other = next(c for c in SHAPE_COLORS if c != criterion.color)
        wrong = Criterion("color", shape=criterion.shape, color=other)
    else:
        wrong = Criterion("text", text=(criterion.text or "X")[::-1] + "S")
    return gold_svg(wrong)


# --- items ---------------------------------------------------------------------------------------------------

_OBJECTS = {"circle": "marbles", "square": "tiles", "triangle": "pennants"}
_MIXES = (("red", "yellow", "orange"), ("blue", "yellow", "green"), ("red", "blue", "purple"),
          ("red", "white", "pink"), ("black", "white", "gray"))
_ACROSTIC = {
    "A": "apple", "B": "banana", "C": "cherry", "D": "dolphin", "E": "eagle", "F": "falcon", "G": "grape",
    "H": "honey", "I": "igloo", "J": "jelly", "K": "kiwi", "L": "lemon", "M": "mango", "N": "nutmeg",
    "O": "olive", "P": "pepper", "Q": "quartz", "R": "radish", "S": "salmon", "T": "tomato", "U": "umbrella",
    "V": "violin", "W": "walnut", "X": "xylophone", "Y": "yogurt", "Z": "zebra",
}
_WORDS = ("ROSE", "STAR", "LAMP", "MOON", "TREE", "FISH", "BOOK", "CAKE", "SHIP", "BIRD", "KITE", "WOLF")


@dataclass(frozen=True)
class Item:
    family: str
    item_id: str
    title: str
    scenario: str
    describe: str
    picture: str
    criterion: Criterion

    def reasoning_prompt(self) -> str:
        return (f"Task: {self.title}\nScenario: {self.scenario}\nInstructions:\nDescribe & Format: {self.describe} "
                'After thinking, please output the description following the format as "refined prompt: '
                '{Your Visual Description Here}"\n'
                f"Generate: Generate the {self.picture} image based ONLY on your visual description.")

    def direct_prompt(self) -> str:
        return (f"Task: {self.title}\nScenario: {self.scenario}\nInstructions:\nGenerate an image of the "
                f"{self.picture} strictly according to the final state described.")


def _arithmetic(rng: random.Random, item_id: str) -> Item:
    shape, color = rng.choice(SHAPES), rng.choice(SHAPE_COLORS)
    start, lost = rng.randint(4, 7), rng.randint(1, 3)
    added = rng.randint(1, 3)
    things = _OBJECTS[shape]
    scenario = (f"A tray starts with {start} {color} {things}. {lost} of them fall off and are lost under the "
                f"sofa. Then a friend adds {added} more {color} {things} and takes away a "
                f"{rng.choice([c for c in SHAPE_COLORS if c != color])} cup that was standing next to the tray.")
    return Item("arithmetic", item_id, "Counting What Is Left", scenario,
                f"Work out how many {things} remain on the tray and draw each as a plain {color} {shape}.",
                f"tray of {things}", Criterion("count", shape=shape, color=color, count=start - lost + added))


def _code(rng: random.Random, item_id: str) -> Item:
    shape, color = rng.choice(SHAPES), rng.choice(SHAPE_COLORS)
    values = [rng.randint(1, 20) for _ in range(7)]
    threshold = rng.randint(6, 12)
    if not any(v > threshold for v in values):
        values[rng.randrange(len(values))] = threshold + rng.randint(1, 5)
    count = sum(1 for v in values if v > threshold)
    scenario = (f"A program draws shapes:\n```python\nvalues = {values}\nn = len([v for v in values if v > "
                f"{threshold}])\nfor _ in range(n):\n    draw('{shape}', color='{color}')\n```\n"
                f"A comment in the code says to draw {len(values)} shapes, but the comment is outdated.")
    return Item("code", item_id, "Executing a Drawing Program", scenario,
                "Run the program in your head and describe exactly what it draws on a white canvas.",
                "program output", Criterion("count", shape=shape, color=color, count=count))


def _spatial(rng: random.Random, item_id: str) -> Item:
    colors = rng.sample(SHAPE_COLORS, 3)
    shapes = [rng.choice(SHAPES) for _ in range(3)]
    order = list(zip(colors, shapes))
    names = [f"{c} {s}" for c, s in order]
    listed = rng.sample(names, 3)
    removed = f"{rng.choice([c for c in SHAPE_COLORS if c not in colors])} {rng.choice(SHAPES)}"
    scenario = (f"Three shapes stand in a row: a {listed[0]}, a {listed[1]} and a {listed[2]}, in some order. "
                f"The {names[0]} is at the far left. The {names[2]} is directly to the right of the {names[1]}. "
                f"A {removed} was placed in the middle earlier, but it was taken away.")
    return Item("spatial", item_id, "Arranging a Shelf", scenario,
                "Work out the final left-to-right order and describe the row of shapes.",
                "row of shapes", Criterion("order", sequence=tuple(order)))


def _attribute(rng: random.Random, item_id: str) -> Item:
    first, second, mixed = rng.choice(_MIXES)
    shape = rng.choice(SHAPES)
    scenario = (f"A painter pours equal amounts of {first} paint and {second} paint into one pot, stirs until the "
                f"colour is even, and paints a single {shape} with it. An unused pot of "
                f"{rng.choice([c for c in SHAPE_COLORS if c not in (first, second, mixed)])} paint stays closed.")
    return Item("attribute", item_id, "The Painter's Mixture", scenario,
                f"Work out the colour of the mixture and describe the painted {shape} on a white background.",
                f"painted {shape}", Criterion("color", shape=shape, color=mixed))


def _text(rng: random.Random, item_id: str) -> Item:
    word = rng.choice(_WORDS)
    clues = ", ".join(_ACROSTIC[ch].capitalize() for ch in word)
    decoy = rng.choice([w for w in _WORDS if w != word])
    scenario = (f"A sign maker writes the word formed by the first letters of these words, in order: {clues}. "
                f"The customer had first asked for \"{decoy}\" but changed their mind.")
    return Item("text", item_id, "The Sign Maker", scenario,
                "Work out the word and describe a sign that shows only that word in capital letters.",
                "sign", Criterion("text", text=word))


_MAKERS = {"arithmetic": _arithmetic, "code": _code, "spatial": _spatial, "attribute": _attribute, "text": _text}


def generate(seed: int, per_family: int) -> list[Item]:
    items = []
    for index, family in enumerate(FAMILIES):
        rng = random.Random(f"ureason|{seed}|{family}")
        for i in range(per_family):
            items.append(_MAKERS[family](rng, str(100 * (index + 1) + i + 1)))
    return items


def build(out: Path, *, seed: int = 0, size: str = "small") -> Path:
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}, got {size!r}")
    out = Path(out)
    (out / "data").mkdir(parents=True, exist_ok=True)
    items = generate(seed, SIZES[size])
    tasks = []
    for item in items:
        sentence = item.criterion.sentence()
        assert Criterion.parse(sentence) == item.criterion, sentence
        for setting in SETTINGS:
            prompt = item.direct_prompt() if setting == "direct" else item.reasoning_prompt()
            tasks.append(ureason_task(item.family, item.item_id, prompt, sentence, setting,
                                      {"criterion_kind": item.criterion.kind}).model_dump_json())
    (out / "tasks.jsonl").write_text("\n".join(tasks) + "\n", encoding="utf-8")
    for family in FAMILIES:
        mine = [i for i in items if i.family == family]
        for prefix, prompt in (("", Item.reasoning_prompt), ("direct_", Item.direct_prompt)):
            lines = [json.dumps({"id": int(i.item_id), "prompt": prompt(i), "expect_en": i.criterion.sentence(),
                                 "category": family}, ensure_ascii=False) for i in mine]
            (out / "data" / f"{prefix}{family}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_world(out, WorldInfo(name="ureason-mini", suite="ureason", seed=seed, size=size,
                               counts={"items": len(items), "tasks": len(tasks)},
                               meta={"families": list(FAMILIES), "settings": list(SETTINGS)}))
    return out
