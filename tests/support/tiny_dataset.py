"""A tiny VistaArena-format dataset written to a directory: real PNGs, a corpus, stored image-search results."""

from __future__ import annotations

import json
import random
from pathlib import Path

from PIL import Image, ImageDraw

DOCS = [
    {"id": "d1", "url": "https://wiki.local/Orvanta", "title": "Orvanta Lighthouse",
     "text": "Orvanta Lighthouse is a stone tower on the Keltic coast. It was built in 1874 by the engineer "
             "Mirelle Dastrow. The tower is 42 metres tall. Its lamp is visible for 30 kilometres."},
    {"id": "d2", "url": "https://wiki.local/Mirelle_Dastrow", "title": "Mirelle Dastrow",
     "text": "Mirelle Dastrow was an engineer born in Velmora. She designed Orvanta Lighthouse. "
             "She founded the Dastrow Works in 1869."},
    {"id": "d3", "url": "https://wiki.local/Velmora", "title": "Velmora",
     "text": "Velmora is a harbour town. Its population is 12000. The town hosts a yearly kite festival."},
    {"id": "d4", "url": "https://wiki.local/Kite", "title": "Kite festival",
     "text": "A kite festival is an event where people fly kites. Many towns host one in spring."},
]


def scene(width: int = 1600, height: int = 1000, grain: float = 0.0) -> Image.Image:
    """The scene; `grain` (0-1) blends in seeded noise, as a photo's grain, so its PNGs do not shrink to almost
    nothing (a request's size then grows with every image as a photo's would)."""
    image = Image.new("RGB", (width, height), (70, 120, 180))
    draw = ImageDraw.Draw(image)
    draw.rectangle([1200, 100, 1500, 200], fill=(250, 250, 250))
    draw.text((1220, 130), "ORVANTA", fill=(0, 0, 0))
    draw.rectangle([100, 600, 400, 900], fill=(200, 60, 60))
    if grain:
        noise = Image.frombytes("L", (width, height), random.Random(0).randbytes(width * height)).convert("RGB")
        image = Image.blend(image, noise, grain)
    return image


def write_tiny_dataset(root: Path, n_items: int = 2, grain: float = 0.0) -> Path:
    """Write images, corpus and `annotations.jsonl` (VistaArena format); returns the annotation path. `grain`: see
    `scene`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "images").mkdir(exist_ok=True)
    scene(grain=grain).save(root / "images" / "scene.png")
    thumb = scene().resize((160, 100))
    thumb.save(root / "images" / "thumb0.png")
    (root / "corpus").mkdir(exist_ok=True)
    (root / "corpus" / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    items = [
        {"id": "q1", "prompt": [{"role": "user", "content": "<image>Who built the lighthouse named on the white sign?"}],
         "reward_model": {"ground_truth": ["Mirelle Dastrow"]}, "image": ["images/scene.png"],
         "image_search_title_list": ["Orvanta Lighthouse - Wiki"], "image_search_thumbnail_list": ["images/thumb0.png"],
         "hops": 2},
        {"id": "q2", "prompt": [{"role": "user", "content": "<image>In which year was the lighthouse on the sign built?"}],
         "reward_model": {"ground_truth": "1874"}, "image": ["images/scene.png"], "hops": 6},
    ]
    for i in range(len(items), n_items):
        items.append({**items[1], "id": f"q{i + 1}"})
    items = items[:n_items]
    path = root / "annotations.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    return path
