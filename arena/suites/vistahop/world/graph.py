"""The fictional knowledge graph: entities with typed attributes and functional relations.

Generated from a `random.Random` only, so a seed gives the same graph. About a
quarter of the entities are near-duplicates of another (a name one edit away,
half of the attributes and relations shared), so that shallow name or value
matching picks the wrong page.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from .names import NameForge
from .schema import ATTRIBUTE_COLOURS, ATTRIBUTES, RELATION_BY_NAME, RELATIONS, Attribute, Relation

LOGO_SHAPES = ("circle", "triangle", "diamond", "star", "hexagon", "ring", "cross", "square", "chevron", "bars")


@dataclass(frozen=True)
class LogoSpec:
    shape: str
    fg: tuple[int, int, int]
    bg: tuple[int, int, int]
    accent: tuple[int, int, int]


@dataclass
class Entity:
    id: str
    etype: str
    kind: str
    name: str
    logo: LogoSpec
    attrs: dict[str, int | str] = field(default_factory=dict)
    rels: dict[str, str] = field(default_factory=dict)
    near_duplicate_of: str | None = None

    @property
    def slug(self) -> str:
        return self.name.replace(" ", "_")


@dataclass
class KnowledgeGraph:
    entities: dict[str, Entity]

    def of_type(self, etype: str, kind: str | None = None) -> list[Entity]:
        return [e for e in self.entities.values() if e.etype == etype and (kind is None or e.kind == kind)]

    def relations_of(self, entity: Entity) -> list[tuple[Relation, Entity]]:
        return [(RELATION_BY_NAME[name], self.entities[target]) for name, target in sorted(entity.rels.items())]

    def attributes_of(self, entity: Entity) -> list[tuple[Attribute, int | str]]:
        return [(a, entity.attrs[a.name]) for a in ATTRIBUTES if a.name in entity.attrs]

    def near_duplicates(self, entity: Entity) -> list[Entity]:
        root = entity.near_duplicate_of or entity.id
        return [e for e in self.entities.values()
                if e.id != entity.id and (e.id == root or e.near_duplicate_of == root)]


# (type, kind) -> base count at scale 1.0
BASE_COUNTS: dict[tuple[str, str], int] = {
    ("person", ""): 40, ("organisation", "company"): 22, ("organisation", "body"): 8, ("product", ""): 20,
    ("place", "city"): 16, ("place", "region"): 5, ("event", ""): 16, ("symbol", ""): 12,
}


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    return int(round(math.exp(rng.uniform(math.log(low), math.log(high)))))


def _attribute_value(rng: random.Random, name: str, kind: str) -> int | str:
    if name == "founded":
        return rng.randint(1650, 2005)
    if name == "employees":
        return _log_uniform(rng, 40, 90_000)
    if name == "born":
        return rng.randint(1620, 1995)
    if name == "works":
        return rng.randint(2, 240)
    if name == "released":
        return rng.randint(1850, 2022)
    if name == "units":
        return _log_uniform(rng, 800, 4_000_000)
    if name == "city_founded":
        return rng.randint(700, 1890)
    if name == "population":
        return _log_uniform(rng, 50_000, 9_000_000) if kind == "region" else _log_uniform(rng, 1_500, 3_000_000)
    if name == "opened":
        return rng.randint(1700, 2020)
    if name == "attendance":
        return _log_uniform(rng, 200, 400_000)
    if name == "adopted":
        return rng.randint(1400, 2010)
    if name == "points":
        return rng.randint(3, 24)
    if name.endswith("colour"):
        return rng.choice(ATTRIBUTE_COLOURS)
    raise ValueError(f"no generator for attribute {name!r}")


def _perturb(rng: random.Random, name: str, value: int | str, kind: str) -> int | str:
    if isinstance(value, str):
        return rng.choice([c for c in ATTRIBUTE_COLOURS if c != value])
    if name in ("points", "works"):
        return max(2, value + rng.choice([-3, -2, -1, 1, 2, 3]))
    if name in ("employees", "units", "population", "attendance"):
        return max(10, int(value * rng.uniform(0.55, 1.45)))
    return value + rng.choice([-1, 1]) * rng.randint(1, 40)


def _random_colour(rng: random.Random, light: bool) -> tuple[int, int, int]:
    low, high = (150, 250) if light else (20, 140)
    return (rng.randint(low, high), rng.randint(low, high), rng.randint(low, high))


def _logo(rng: random.Random) -> LogoSpec:
    return LogoSpec(rng.choice(LOGO_SHAPES), _random_colour(rng, False), _random_colour(rng, True),
                    _random_colour(rng, False))


def generate_graph(rng: random.Random, scale: float, duplicate_rate: float = 0.25) -> KnowledgeGraph:
    """A consistent graph: every relation points at an entity of the right type, ranks and
    neighbour relations agree with each other, and time-ordered relations point back in time."""
    forge = NameForge(rng)
    entities: dict[str, Entity] = {}

    def add(etype: str, kind: str, name: str, logo: LogoSpec, twin: str | None = None) -> Entity:
        entity = Entity(id=f"e{len(entities) + 1:04d}", etype=etype, kind=kind, name=name, logo=logo,
                        near_duplicate_of=twin)
        entities[entity.id] = entity
        return entity

    for (etype, kind), base in BASE_COUNTS.items():
        for _ in range(max(2, round(base * scale))):
            entity = add(etype, kind, forge.fresh(etype, kind), _logo(rng))
            for attribute in ATTRIBUTES:
                if attribute.applies_to(etype, kind) and attribute.name not in ("index_rank", "sales_rank"):
                    entity.attrs[attribute.name] = _attribute_value(rng, attribute.name, kind)

    originals = list(entities.values())
    for original in originals:
        if rng.random() >= duplicate_rate:
            continue
        logo = LogoSpec(original.logo.shape, _random_colour(rng, False), original.logo.bg, _random_colour(rng, False))
        twin = add(original.etype, original.kind, forge.near_duplicate(original.name, original.etype, original.kind),
                   logo, twin=original.id)
        for name, value in sorted(original.attrs.items()):
            twin.attrs[name] = value if rng.random() < 0.5 else _perturb(rng, name, value, original.kind)

    graph = KnowledgeGraph(entities)
    _assign_ranks(rng, graph)
    _assign_relations(rng, graph)
    return graph


def _assign_ranks(rng: random.Random, graph: KnowledgeGraph) -> None:
    for (etype, kind), attribute in ((("organisation", "company"), "index_rank"), (("product", None), "sales_rank")):
        members = graph.of_type(etype, kind)
        rng.shuffle(members)
        for rank, entity in enumerate(members, 1):
            entity.attrs[attribute] = rank


def _year(entity: Entity) -> int | None:
    for name in ("born", "founded", "released", "opened", "adopted", "city_founded"):
        if name in entity.attrs:
            return int(entity.attrs[name])
    return None


def _pick(rng: random.Random, pool: list[Entity], subject: Entity, prefer=None) -> Entity | None:
    candidates = [e for e in pool if e.id != subject.id]
    if prefer is not None:
        preferred = [e for e in candidates if prefer(e)]
        candidates = preferred or candidates
    return rng.choice(candidates) if candidates else None


def _assign_relations(rng: random.Random, graph: KnowledgeGraph) -> None:
    ents = graph.entities
    companies = graph.of_type("organisation", "company")
    by_rank = {int(e.attrs["index_rank"]): e for e in companies}
    for company in companies:
        above = by_rank.get(int(company.attrs["index_rank"]) - 1)
        if above is not None:
            company.rels["ranked_above"] = above.id
    products = graph.of_type("product")
    by_sales = {int(e.attrs["sales_rank"]): e for e in products}
    for product in products:
        above = by_sales.get(int(product.attrs["sales_rank"]) - 1)
        if above is not None:
            product.rels["outsold_by"] = above.id

    cities, regions = graph.of_type("place", "city"), graph.of_type("place", "region")
    for city in cities:
        city.rels["region"] = rng.choice(regions).id
    for region in regions:
        inside = [c for c in cities if c.rels["region"] == region.id]
        if not inside:
            capital = rng.choice(cities)
            capital.rels["region"] = region.id
            inside = [capital]
        region.rels["capital"] = rng.choice(inside).id
    for region in regions:  # a region's capital must lie inside it, even after reassignments
        if ents[region.rels["capital"]].rels["region"] != region.id:
            region.rels["capital"] = next(c.id for c in cities if c.rels["region"] == region.id)
    order = list(regions)
    rng.shuffle(order)
    for south, north in zip(order, order[1:]):
        south.rels["borders"] = north.id
    shuffled = list(cities)
    rng.shuffle(shuffled)
    for a, b in zip(shuffled[0::2], shuffled[1::2]):
        a.rels["twin"], b.rels["twin"] = b.id, a.id

    def earlier(subject: Entity):
        year = _year(subject)
        return lambda e: year is not None and _year(e) is not None and _year(e) < year

    pools = {
        "headquarters": cities, "parent": companies, "founder": graph.of_type("person"),
        "alliance": graph.of_type("organisation", "body"), "emblem": graph.of_type("symbol"),
        "born_in": cities, "mentor": graph.of_type("person"), "member_of": graph.of_type("organisation", "body"),
        "successor": graph.of_type("person"), "maker": companies, "designer": graph.of_type("person"),
        "predecessor": products, "unveiled_at": graph.of_type("event"), "mayor": graph.of_type("person"),
        "place_emblem": graph.of_type("symbol"), "host": cities, "organiser": graph.of_type("organisation"),
        "prompted_by": graph.of_type("event"), "preceded_by": graph.of_type("event"),
        "symbol_designer": graph.of_type("person"), "first_raised": cities,
    }
    preferences = {
        "mentor": lambda s: (lambda e: int(e.attrs["born"]) < int(s.attrs["born"]) - 15),
        "successor": lambda s: (lambda e: int(e.attrs["born"]) > int(s.attrs["born"]) + 5),
        "founder": lambda s: (lambda e: 18 <= int(s.attrs["founded"]) - int(e.attrs["born"]) <= 70),
        "predecessor": earlier, "prompted_by": earlier, "preceded_by": earlier,
        "parent": lambda s: (lambda e: int(e.attrs["founded"]) < int(s.attrs["founded"])),
    }
    for entity in ents.values():
        twin = ents.get(entity.near_duplicate_of) if entity.near_duplicate_of else None
        for relation in RELATIONS:
            if relation.name not in pools or not relation.applies_to(entity.etype, entity.kind):
                continue
            if twin is not None and relation.name in twin.rels and rng.random() < 0.5:
                target = twin.rels[relation.name]
                if target != entity.id:
                    entity.rels[relation.name] = target
                    continue
            prefer = preferences.get(relation.name)
            chosen = _pick(rng, pools[relation.name], entity, prefer(entity) if prefer else None)
            if chosen is not None:
                entity.rels[relation.name] = chosen.id
