"""The world's wiki: one page per entity (infobox lines, then prose stating each relation and
attribute once) plus disambiguation and noise pages, as `corpus/docs.jsonl` records."""

from __future__ import annotations

import random

from pydantic import BaseModel

from .graph import Entity, KnowledgeGraph
from .names import NameForge
from .schema import ATTRIBUTE_COLOURS, INDEX_NAME, render_sentence

SITE = "https://wiki.vistahop.test"

KIND_LABELS = {
    ("person", ""): "Person", ("organisation", "company"): "Company", ("organisation", "body"): "Civic body",
    ("product", ""): "Product", ("place", "city"): "City", ("place", "region"): "Region", ("event", ""): "Event",
    ("symbol", ""): "Symbol",
}
INTROS = {
    ("person", ""): "{n} is a figure recorded in the civic archives of the Vista lands.",
    ("organisation", "company"): "{n} is a trading company of the Vista lands.",
    ("organisation", "body"): "{n} is a civic body of the Vista lands.",
    ("product", ""): "{n} is a manufactured product sold across the Vista lands.",
    ("place", "city"): "{n} is a city of the Vista lands.",
    ("place", "region"): "{n} is one of the historic regions of the Vista lands.",
    ("event", ""): "The {n} is a recurring gathering of the Vista lands.",
    ("symbol", ""): "The {n} is a heraldic symbol of the Vista lands.",
}


class Document(BaseModel):
    """One line of `corpus/docs.jsonl`."""

    id: str
    url: str
    title: str
    text: str


def page_url(title: str) -> str:
    return f"{SITE}/wiki/{title.replace(' ', '_')}"


def entity_page(graph: KnowledgeGraph, entity: Entity, rng: random.Random) -> Document:
    """Infobox lines first, then shuffled prose; every fact about `entity` appears once as a sentence."""
    key = (entity.etype, entity.kind)
    infobox = [entity.name, f"Type: {KIND_LABELS[key]}"]
    sentences = []
    for relation, target in graph.relations_of(entity):
        infobox.append(f"{relation.label}: {target.name}")
        sentences.append(render_sentence(relation.sentence, entity.name, target.name))
    for attribute, value in graph.attributes_of(entity):
        infobox.append(f"{attribute.label}: {value}")
        sentences.append(render_sentence(attribute.sentence, entity.name, str(value)))
    rng.shuffle(sentences)
    prose = [INTROS[key].format(n=entity.name)] + sentences
    others = graph.near_duplicates(entity)
    if others:
        prose.append("Not to be confused with " + ", ".join(o.name for o in others) + ".")
    mentions = _mentions(graph, entity)
    if mentions:
        prose.append(mentions)
    text = "\n".join(infobox) + "\n\n" + " ".join(prose)
    return Document(id=entity.id, url=page_url(entity.name), title=entity.name, text=text)


def _mentions(graph: KnowledgeGraph, entity: Entity) -> str:
    """A 'see also' line naming entities that point at this one (noise for shallow matching)."""
    incoming = sorted(e.name for e in graph.entities.values() if entity.id in e.rels.values())
    if not incoming:
        return ""
    return "Related articles: " + ", ".join(incoming[:6]) + "."


def disambiguation_pages(graph: KnowledgeGraph) -> list[Document]:
    groups: dict[str, list[Entity]] = {}
    for entity in graph.entities.values():
        if entity.near_duplicate_of:
            groups.setdefault(entity.near_duplicate_of, [graph.entities[entity.near_duplicate_of]]).append(entity)
    pages = []
    for root_id in sorted(groups):
        members = groups[root_id]
        head = members[0].name.split(" ")[0 if members[0].etype != "person" else -1]
        title = f"{head} (disambiguation)"
        lines = [f"{head} may refer to:"] + [
            f"{m.name}, a {KIND_LABELS[(m.etype, m.kind)].lower()} of the Vista lands" for m in members]
        pages.append(Document(id=f"d-{root_id}", url=page_url(title), title=title, text="\n".join(lines)))
    return pages


NOISE_TOPICS = ("Glossary of {w} weaving", "Timeline of the {w} ferries", "List of {w} lighthouses",
                "Customs of the {w} harvest", "History of {w} printing", "Survey of {w} canals",
                "Register of {w} bell foundries", "Folklore of the {w} valley", "Index of {w} almanacs")
NOISE_SENTENCES = (
    "Records list {n} entries for the year {y}.", "The archive was founded in {y} and moved twice.",
    "Its headquarters were rebuilt after the fire of {y}.", "A founder's charter names {n} signatories.",
    "The mayor of the district opened the registry in {y}.", "Around {n} members attended the gathering of {y}.",
    "The emblem of the guild was redrawn in {y}.", "The region borders the northern marshes.",
    "A successor volume appeared in {y} with {n} plates.", "The exhibition of {y} drew {n} visitors.",
    "It was designed by an unnamed artist and manufactured locally.", "Its official colour was {c}.",
    "It holds rank {r} in the {idx} of that year.", "Sales reached {n} units before {y}.",
)


def noise_pages(rng: random.Random, forge: NameForge, count: int) -> list[Document]:
    """Pages about nothing in any chain, written with the chains' vocabulary to mislead keyword matching."""
    pages = []
    for i in range(count):
        title = rng.choice(NOISE_TOPICS).format(w=forge.stem())
        body = [rng.choice(NOISE_SENTENCES).format(n=rng.randint(3, 90_000), y=rng.randint(1400, 2020),
                                                   c=rng.choice(ATTRIBUTE_COLOURS), r=rng.randint(1, 99),
                                                   idx=INDEX_NAME)
                for _ in range(rng.randint(4, 9))]
        pages.append(Document(id=f"n{i + 1:04d}", url=page_url(title), title=title,
                              text=title + "\n\n" + " ".join(body)))
    return pages
