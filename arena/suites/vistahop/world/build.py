"""`vistahop-mini`: build a VistaHop-style world directory from a seed.

    arena world build vistahop-mini --seed 0 --size tiny|small|full --out DIR

Writes (paths relative to the world directory):

    world.json                      name, seed, size, counts, content hash
    tasks.jsonl                     arena Task records (metadata: gold_chain, gold_path, anchors, image_search)
    vistaarena/annotations.jsonl    the same items in VistaArena's evaluator format
    vistaarena/datasets.json        its dataset config (root = the world directory)
    corpus/docs.jsonl               entity, disambiguation and noise pages for text search
    graph/entities.jsonl            the knowledge graph behind the pages (for checking facts)
    images/scenes/*.png             3840x2160 scenes with visual anchors
    images/thumbs/*.png             scene thumbnails (960x540)
    images/anchors/*.png            each anchor with context around it
    images/logos/*.png              logo cards of anchor entities
    images/index.jsonl              the reverse-image index manifest (what to index, with titles and URLs)
    images/scenes.jsonl             every scene and anchor: boxes, descriptions, text heights (legibility)

Everything is a function of the seed and size: building twice gives identical bytes.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel

from arena.core.task import Task, level_for_hops
from arena.core.world import WorldInfo, is_world, write_world

from . import chains as C
from .corpus import Document, disambiguation_pages, entity_page, noise_pages, page_url
from .drawing import font_source
from .graph import Entity, KnowledgeGraph, generate_graph
from .legibility import ILLEGIBLE_BELOW_PX, LEGIBLE_FROM_PX, AnchorRuleError, crop_pixels
from .names import NameForge
from .scenes import (ANCHOR_COLOURS, ANCHOR_KINDS, SCENARIOS, AnchorSpec, RenderJob, Scene, layout_scene,
                     render_logo, render_scene)

WORLD_NAME = "vistahop-mini"
SUITE = "vistahop"
SIZES = ("tiny", "small", "full")

SYSTEM_PROMPT = (
    "You are a visual search agent. The user asks a multi-hop question about an image. Inspect regions of the "
    "image, search the web by text or by image, and connect the evidence step by step. Call one tool per turn."
)
FORMAT_INSTRUCTION = "Give your final answer inside <answer></answer>."

SEED_TYPE_WEIGHTS = {"organisation": 3.0, "product": 2.0, "event": 2.0, "place": 1.0, "person": 1.5, "symbol": 1.0}
SINGLE_END_WEIGHTS = {"entity": 0.35, "year": 0.3, "count": 0.2, "rank": 0.08, "colour": 0.07}
FUSED_KIND_WEIGHTS = {"year": 0.5, "count": 0.35, "rank": 0.15}
SINGLE_HOP_WEIGHTS = {5: 8, 6: 7, 7: 6, 8: 5, 9: 3, 10: 2, 11: 2, 12: 2}


class WorldBuildError(RuntimeError):
    """The builder could not produce a valid world (the message says which item and why)."""


@dataclass(frozen=True)
class Profile:
    """How big a world is: graph scale, single-chain lengths, fused chain-length lists, noise pages."""

    scale: float
    singles: tuple[int, ...]
    fused: tuple[tuple[int, ...], ...]
    second_task_rate: float
    noise_pages: int


def _split(rng: random.Random, total: int, parts: int) -> tuple[int, ...]:
    while True:
        cuts = sorted(rng.sample(range(1, total), parts - 1))
        lengths = [b - a for a, b in zip([0] + cuts, cuts + [total])]
        if max(lengths) <= 7:
            return tuple(lengths)


def _fused_lengths(rng: random.Random, level: str) -> tuple[int, ...]:
    if level == "L1":
        total = rng.choice([2, 3, 4, 4])
        parts = 3 if total == 4 and rng.random() < 0.3 else 2
    elif level == "L2":
        total = rng.randint(5, 9)
        parts = 3 if rng.random() < 0.25 else 2
    else:
        total = rng.randint(10, 14)
        parts = 3 if rng.random() < 0.4 else 2
    return _split(rng, total, parts)


def profile_for(size: str, rng: random.Random) -> Profile:
    if size == "tiny":
        return Profile(scale=0.7, singles=(5, 10), fused=((1, 2), (3, 3), (2, 4, 4)), second_task_rate=0.0,
                       noise_pages=12)
    counts = {"small": (22, 6, 8, 6, 1.0, 40), "full": (180, 40, 65, 45, 4.5, 220)}
    if size not in counts:
        raise WorldBuildError(f"unknown size {size!r}; sizes: {', '.join(SIZES)}")
    singles, l1, l2, l3, scale, noise = counts[size]
    hops, weights = zip(*SINGLE_HOP_WEIGHTS.items())
    single_lengths = tuple(rng.choices(hops, weights, k=singles))
    fused = tuple(_fused_lengths(rng, level) for level, n in (("L1", l1), ("L2", l2), ("L3", l3)) for _ in range(n))
    return Profile(scale=scale, singles=single_lengths, fused=fused, second_task_rate=0.3, noise_pages=noise)


class _Draft(BaseModel):
    """A task before its scene is laid out: which anchors (by position in the scene) and which walks."""

    kind: str
    anchor_slots: list[int]
    walks: list[list[C.ChainHop]]
    op: str | None = None


class _Planner:
    def __init__(self, graph: KnowledgeGraph, rng: random.Random):
        self.graph = graph
        self.rng = rng
        self.uses: dict[str, int] = {}
        self.seeds = [e for e in graph.entities.values() if e.etype in SEED_TYPE_WEIGHTS]

    def _candidates(self, exclude: set[str]) -> list[Entity]:
        pool = [e for e in self.seeds if e.id not in exclude]
        weights = [SEED_TYPE_WEIGHTS[e.etype] / (1 + self.uses.get(e.id, 0)) ** 2 for e in pool]
        ordered: list[Entity] = []
        for _ in range(min(60, len(pool))):
            pick = self.rng.choices(range(len(pool)), weights)[0]
            ordered.append(pool[pick])
            weights[pick] = 0.0
            if not any(weights):
                break
        return ordered

    def walk(self, length: int, end: str, exclude: set[str]) -> tuple[Entity, list[C.ChainHop]] | None:
        for seed in self._candidates(exclude):
            hops = C.sample_walk(self.graph, seed, length, end, self.rng)
            if hops is not None:
                self.uses[seed.id] = self.uses.get(seed.id, 0) + 1
                return seed, hops
        return None

    def single(self, length: int, exclude: set[str]) -> tuple[list[Entity], _Draft]:
        ends, weights = zip(*SINGLE_END_WEIGHTS.items())
        for _ in range(20):
            end = self.rng.choices(ends, weights)[0]
            found = self.walk(length, end, exclude)
            if found:
                seed, hops = found
                return [seed], _Draft(kind="single", anchor_slots=[], walks=[hops])
        raise WorldBuildError(f"no single chain of {length} hops found in the graph; use a larger scale")

    def fused(self, lengths: tuple[int, ...], exclude: set[str]) -> tuple[list[Entity], _Draft]:
        kinds, weights = zip(*FUSED_KIND_WEIGHTS.items())
        for _ in range(20):
            kind = self.rng.choices(kinds, weights)[0]
            seeds, walks, used = [], [], set(exclude)
            for length in lengths:
                found = self.walk(length, kind, used)
                if not found:
                    break
                seeds.append(found[0])
                walks.append(found[1])
                used.add(found[0].id)
            if len(walks) == len(lengths):
                values = [int(C.chain_answer(h)) for h in walks]
                op = self.rng.choice(C.allowed_ops(kind, len(walks), values))
                return seeds, _Draft(kind="fused", anchor_slots=[], walks=walks, op=op)
        raise WorldBuildError(f"no fused chains of lengths {lengths} found in the graph; use a larger scale")


def _slots(profile: Profile, rng: random.Random) -> list[tuple[str, Any]]:
    slots: list[tuple[str, Any]] = [("single", k) for k in profile.singles] + [("fused", f) for f in profile.fused]
    rng.shuffle(slots)
    return slots


def _scene_plans(profile: Profile, rng: random.Random) -> list[list[tuple[str, Any]]]:
    """Group task slots into scenes: each scene gets one slot, sometimes a second single one."""
    slots = _slots(profile, rng)
    scenes: list[list[tuple[str, Any]]] = []
    i = 0
    while i < len(slots):
        group = [slots[i]]
        i += 1
        if i < len(slots) and slots[i][0] == "single" and rng.random() < profile.second_task_rate:
            group.append(slots[i])
            i += 1
        scenes.append(group)
    return scenes


def _anchor_specs(entities: list[Entity], rng: random.Random) -> list[AnchorSpec]:
    colours = rng.sample(sorted(ANCHOR_COLOURS), len(entities))
    return [AnchorSpec(entity=e.id, name=e.name, etype=e.etype, kind=rng.choice(ANCHOR_KINDS[e.etype]),
                       colour=colour, font_size=rng.randint(16, 20)) for e, colour in zip(entities, colours)]


def _compose_scene(graph: KnowledgeGraph, planner: _Planner, group: list[tuple[str, Any]], number: int,
                   rng: random.Random) -> tuple[Scene, list[_Draft]]:
    scene_id = f"s{number:04d}"
    entities: list[Entity] = []
    drafts = []
    for kind, spec in group:
        used = {e.id for e in entities}
        seeds, draft = planner.single(spec, used) if kind == "single" else planner.fused(spec, used)
        draft.anchor_slots = list(range(len(entities), len(entities) + len(seeds)))
        entities += seeds
        drafts.append(draft)
    extras = [d for e in entities for d in graph.near_duplicates(e)]
    pool = [e for e in graph.entities.values() if e.etype in SEED_TYPE_WEIGHTS]
    wanted = min(7, len(entities) + rng.randint(1, 3))
    for candidate in extras[:1] + rng.sample(pool, min(len(pool), 12)):
        if len(entities) >= max(wanted, 2):
            break
        if candidate.id not in {e.id for e in entities}:
            entities.append(candidate)
    last: Exception | None = None
    for _ in range(8):
        specs = _anchor_specs(entities, rng)
        try:
            scene = layout_scene(scene_id, number, rng.randrange(len(SCENARIOS)), specs, rng)
            return scene, drafts
        except (AnchorRuleError, ValueError) as exc:
            last = exc
    raise WorldBuildError(f"scene {scene_id}: no valid layout after 8 attempts ({last})")


def _task(task_id: str, scene: Scene, draft: _Draft, stored: list[dict[str, str]]) -> Task:
    anchors = [scene.anchors[i] for i in draft.anchor_slots]
    if draft.kind == "single":
        hops = draft.walks[0]
        question = C.single_question(anchors[0], hops)
        answers = C.single_answer(hops)
        path = C.single_path(anchors[0], hops)
        fusion = None
    else:
        question = C.fused_question(anchors, draft.walks, draft.op or "")
        answers = C.fused_answer(draft.walks, draft.op or "")
        path = C.fused_path(anchors, draft.walks, draft.op or "")
        fusion = {"op": draft.op, "values": [C.chain_answer(h) for h in draft.walks]}
    leaked = C.answer_in_question(question, answers)
    if leaked is not None:
        raise WorldBuildError(f"task {task_id}: the answer {leaked!r} appears in its question {question!r}")
    hops_total = sum(len(h) for h in draft.walks)
    chains = [C.gold_chain(n, a, h) for n, (a, h) in enumerate(zip(anchors, draft.walks), 1)]
    metadata = {
        "type": draft.kind, "scene": scene.id, "scenario": scene.scenario, "chains": len(chains),
        "answer_kind": chains[0].answer_kind if draft.kind == "single" else "number",
        "relation_categories": sorted({hop.category for c in chains for hop in c.hops}),
        "gold_chain": [c.model_dump(mode="json") for c in chains],
        "gold_path": path.model_dump(mode="json"),
        "fusion": fusion,
        "max_rounds": path.rounds,
        "anchors": [a.model_dump(mode="json") for a in anchors],
        "image_search": stored,
    }
    return Task(id=task_id, suite=SUITE, question=question, images=[scene.image], answers=answers, kind="open",
                hops=hops_total, level=level_for_hops(hops_total), category=scene.domain, metadata=metadata)


def _stored_results(scenes: list[Scene]) -> dict[str, list[dict[str, str]]]:
    """Stored reverse-image results of each whole scene: itself, then up to 4 scenes of the same scenario."""
    by_scenario: dict[str, list[Scene]] = {}
    for scene in scenes:
        by_scenario.setdefault(scene.scenario, []).append(scene)
    out = {}
    for scene in scenes:
        similar = [s for s in by_scenario[scene.scenario] if s.id != scene.id][:4]
        out[scene.id] = [{"title": s.title, "thumbnail": s.thumbnail} for s in [scene] + similar]
    return out


def _vistaarena_item(task: Task) -> dict[str, Any]:
    stored = task.metadata["image_search"]
    return {
        "id": task.id,
        "data_source": WORLD_NAME,
        "prompt": [{"role": "user", "content": "<image>\n" + task.question}],
        "reward_model": {"style": "rule", "ground_truth": task.answers},
        "image": task.images,
        "image_search_title_list": [r["title"] for r in stored],
        "image_search_thumbnail_list": [r["thumbnail"] for r in stored],
        "level": task.level, "hops": task.hops, "category": task.category,
        "extra_info": {"type": task.metadata["type"], "fusion": task.metadata["fusion"],
                       "reasoning_path": [h["target"] for c in task.metadata["gold_chain"] for h in c["hops"]]},
    }


def _jsonl(rows: Iterable[Any]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def _write(root: Path, rel: str, data: bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _render_all(jobs: list[RenderJob], root: Path, workers: int) -> None:
    if workers <= 1 or len(jobs) <= 6:
        for job in jobs:
            for rel, data in render_scene(job).items():
                _write(root, rel, data)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for files in pool.map(render_scene, jobs, chunksize=2):
            for rel, data in files.items():
                _write(root, rel, data)


def _entity_record(entity: Entity) -> dict[str, Any]:
    return {"id": entity.id, "type": entity.etype, "kind": entity.kind, "name": entity.name,
            "near_duplicate_of": entity.near_duplicate_of, "attrs": dict(sorted(entity.attrs.items())),
            "rels": dict(sorted(entity.rels.items()))}


def generate(root: Path, *, seed: int, size: str, workers: int | None = None) -> WorldInfo:
    """Write the whole world into the empty directory `root`; returns its WorldInfo (content hash stamped)."""
    if size not in SIZES:
        raise WorldBuildError(f"unknown size {size!r}; sizes: {', '.join(SIZES)}")
    rng = random.Random(seed)
    profile = profile_for(size, rng)
    graph = generate_graph(random.Random(rng.randrange(2**32)), profile.scale)
    planner = _Planner(graph, random.Random(rng.randrange(2**32)))
    layout_rng = random.Random(rng.randrange(2**32))
    scenes: list[Scene] = []
    drafts: list[tuple[Scene, _Draft]] = []
    for number, group in enumerate(_scene_plans(profile, random.Random(rng.randrange(2**32))), 1):
        scene, scene_drafts = _compose_scene(graph, planner, group, number, layout_rng)
        scenes.append(scene)
        drafts += [(scene, d) for d in scene_drafts]
    stored = _stored_results(scenes)
    tasks = [_task(f"{WORLD_NAME}-{i:04d}", scene, draft, stored[scene.id])
             for i, (scene, draft) in enumerate(drafts, 1)]

    render_rng = random.Random(rng.randrange(2**32))
    jobs = [RenderJob(scene=s, seed=render_rng.randrange(2**32),
                      logos={a.entity: graph.entities[a.entity].logo for a in s.anchors}) for s in scenes]
    _render_all(jobs, root, workers if workers is not None else min(4, os.cpu_count() or 1))
    anchor_entities = sorted({a.entity for s in scenes for a in s.anchors})
    for entity_id in anchor_entities:
        entity = graph.entities[entity_id]
        _write(root, f"images/logos/{entity_id}.png", render_logo(entity.name, entity.logo))

    page_rng = random.Random(rng.randrange(2**32))
    docs: list[Document] = [entity_page(graph, e, page_rng) for e in graph.entities.values()]
    docs += disambiguation_pages(graph)
    docs += noise_pages(page_rng, NameForge(page_rng), profile.noise_pages)
    _write(root, "corpus/docs.jsonl", _jsonl(d.model_dump() for d in docs))
    _write(root, "graph/entities.jsonl", _jsonl(_entity_record(e) for e in graph.entities.values()))
    _write(root, "images/index.jsonl", _jsonl(_index_manifest(graph, scenes, anchor_entities)))
    _write(root, "images/scenes.jsonl", _jsonl(s.model_dump(mode="json") for s in scenes))
    _write(root, "tasks.jsonl", _jsonl(t.model_dump(mode="json", exclude_none=False) for t in tasks))
    _write(root, "vistaarena/annotations.jsonl", _jsonl(_vistaarena_item(t) for t in tasks))
    datasets = {WORLD_NAME: {"root": "..", "annotation": "vistaarena/annotations.jsonl", "reward_fn": ["llm_score"],
                             "input_template": {"arguments": {"system_prompt": SYSTEM_PROMPT,
                                                              "format_instruction": FORMAT_INSTRUCTION}}}}
    _write(root, "vistaarena/datasets.json", (json.dumps(datasets, indent=2) + "\n").encode())

    levels = {lvl: sum(1 for t in tasks if t.level == lvl) for lvl in ("L1", "L2", "L3")}
    counts = {"tasks": len(tasks), "single": sum(1 for t in tasks if t.metadata["type"] == "single"),
              "fused": sum(1 for t in tasks if t.metadata["type"] == "fused"), **levels, "scenes": len(scenes),
              "anchors": sum(len(s.anchors) for s in scenes), "entities": len(graph.entities),
              "documents": len(docs)}
    meta = {"font": Path(font_source()).name, "average_hops": round(sum(t.hops or 0 for t in tasks) / len(tasks), 2),
            "legibility": {"model_px_below": ILLEGIBLE_BELOW_PX, "crop_px_from": LEGIBLE_FROM_PX}}
    return write_world(root, WorldInfo(name=WORLD_NAME, suite=SUITE, seed=seed, size=size, counts=counts, meta=meta))


def _index_manifest(graph: KnowledgeGraph, scenes: list[Scene], anchor_entities: list[str]) -> list[dict[str, Any]]:
    """What the reverse-image index covers: whole scenes, each anchor in context, and logo cards.

    An anchor's `box` is its surface inside its context image; `extra_boxes` holds the region
    the crop tool takes for the anchor's relative box (rounded outwards), indexed as it is."""
    rows: list[dict[str, Any]] = []
    for scene in scenes:
        rows.append({"id": scene.id, "kind": "scene", "title": scene.title, "url": scene.url,
                     "thumbnail": scene.thumbnail, "source": scene.thumbnail, "box": None, "entity": None})
        for a in scene.anchors:
            ox, oy = a.box[0] - a.thumbnail_box[0], a.box[1] - a.thumbnail_box[1]
            x1, y1, x2, y2 = crop_pixels(a.bbox_2d, scene.width, scene.height)
            rows.append({"id": a.id, "kind": "anchor", "title": a.name, "url": page_url(a.name),
                         "thumbnail": a.thumbnail, "source": a.thumbnail, "box": a.thumbnail_box,
                         "extra_boxes": [[x1 - ox, y1 - oy, x2 - ox, y2 - oy]], "entity": a.entity})
    for entity_id in anchor_entities:
        entity = graph.entities[entity_id]
        logo = f"images/logos/{entity_id}.png"
        rows.append({"id": f"logo-{entity_id}", "kind": "logo", "title": entity.name, "url": page_url(entity.name),
                     "thumbnail": logo, "source": logo, "box": None, "entity": entity_id})
    return rows


def build(out: Path, *, seed: int = 0, size: str = "small") -> Path:
    """Build the world into `out` (created; an existing world there is replaced, any other content refused)."""
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not is_world(out):
        raise WorldBuildError(f"{out}: exists, is not empty and is not a world; choose another --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.building-", dir=out.parent))
    try:
        staging.chmod(0o755)
        generate(staging, seed=seed, size=size)
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out
