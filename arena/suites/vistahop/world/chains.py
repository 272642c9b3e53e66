"""Evidence chains from visual anchors, the questions that describe them, and their gold tool paths.

A chain `v0 -r1-> v1 ... -rk-> vk` starts at an anchor's entity and follows k
functional relations, the last of which may be an attribute (a year, count,
rank or colour). A single-chain item asks for vk; a fused item asks for an
operation over the numbers K chains end in. Questions name the seed only by
what the image shows and phrase the chain from the answer back to the seed.
"""

from __future__ import annotations

import random
import re

from pydantic import BaseModel

from .fusion import LETTERS, answer_forms, apply, format_number, question_for
from .gold import Extract, Fusion, GoldPath, GoldStep
from .graph import Entity, KnowledgeGraph
from .scenes import Anchor
from .schema import ATTRIBUTE_BY_NAME, RELATION_BY_NAME, extraction_pattern

NUMERIC_KINDS = ("year", "count", "rank")
WALK_NODE_BUDGET = 4000


class ChainHop(BaseModel):
    step: int
    relation: str
    category: str
    source: str
    source_id: str
    target: str
    target_id: str | None = None
    kind: str


class GoldChain(BaseModel):
    chain: int
    anchor: str
    seed: str
    seed_id: str
    hops: list[ChainHop]
    answer: str | int
    answer_kind: str


def sample_walk(graph: KnowledgeGraph, start: Entity, length: int, end: str,
                rng: random.Random) -> list[ChainHop] | None:
    """A random path of `length` hops from `start` visiting no entity twice; its last hop is a relation
    (`end == "entity"`) or an attribute of kind `end`. None when no such path is found."""
    budget = [WALK_NODE_BUDGET]

    def final_options(entity: Entity, visited: set[str]) -> list[ChainHop]:
        if end == "entity":
            return [_relation_hop(length, entity, relation.name, target)
                    for relation, target in graph.relations_of(entity) if target.id not in visited]
        return [_attribute_hop(length, entity, attribute.name, value)
                for attribute, value in graph.attributes_of(entity) if attribute.kind == end]

    def walk(entity: Entity, visited: set[str], step: int) -> list[ChainHop] | None:
        budget[0] -= 1
        if budget[0] < 0:
            return None
        if step == length:
            options = final_options(entity, visited)
            return [rng.choice(options)] if options else None
        moves = [(r, t) for r, t in graph.relations_of(entity) if t.id not in visited]
        rng.shuffle(moves)
        for relation, target in moves[:4]:
            rest = walk(target, visited | {target.id}, step + 1)
            if rest is not None:
                return [_relation_hop(step, entity, relation.name, target)] + rest
        return None

    return walk(start, {start.id}, 1)


def _relation_hop(step: int, source: Entity, relation: str, target: Entity) -> ChainHop:
    return ChainHop(step=step, relation=relation, category=RELATION_BY_NAME[relation].category, source=source.name,
                    source_id=source.id, target=target.name, target_id=target.id, kind="entity")


def _attribute_hop(step: int, source: Entity, attribute: str, value: int | str) -> ChainHop:
    return ChainHop(step=step, relation=attribute, category="attributive", source=source.name, source_id=source.id,
                    target=str(value), kind=ATTRIBUTE_BY_NAME[attribute].kind)


def describe_chain(anchor: Anchor, hops: list[ChainHop]) -> str:
    """Noun phrase for the entity the last hop starts from, built outwards from the anchor's description."""
    phrase = anchor.description
    for hop in hops[:-1]:
        phrase = RELATION_BY_NAME[hop.relation].phrase.replace("{x}", phrase)
    return phrase


def chain_answer(hops: list[ChainHop]) -> str | int:
    last = hops[-1]
    return int(last.target) if last.kind in NUMERIC_KINDS else last.target


def single_question(anchor: Anchor, hops: list[ChainHop]) -> str:
    subject = describe_chain(anchor, hops)
    last = hops[-1]
    if last.kind == "entity":
        return f"What is the name of {RELATION_BY_NAME[last.relation].phrase.replace('{x}', subject)}?"
    return ATTRIBUTE_BY_NAME[last.relation].question.replace("{x}", subject)


def fused_question(anchors: list[Anchor], chains: list[list[ChainHop]], op: str) -> str:
    parts = []
    for letter, anchor, hops in zip(LETTERS, anchors, chains):
        value = ATTRIBUTE_BY_NAME[hops[-1].relation].value_phrase.replace("{x}", describe_chain(anchor, hops))
        parts.append(f"{letter} be {value}")
    lead = "Let " + "; let ".join(parts) + "."
    return f"{lead} {question_for(op, len(chains))}"


def chain_steps(number: int, anchor: Anchor, hops: list[ChainHop]) -> tuple[list[GoldStep], str]:
    """Crop the anchor, reverse-search the crop for the seed's name, then one text search per hop."""
    image_var, seed_var = f"c{number}_img", f"c{number}_e0"
    steps = [
        GoldStep(tool="image_zoom_in_tool", chain=number, hop=0,
                 arguments={"bbox_2d": list(anchor.bbox_2d), "label": f"{anchor.colour} {anchor.kind}", "img_idx": 0},
                 extract=Extract(var=image_var, source="new_image")),
        GoldStep(tool="image_search_tool", chain=number, hop=0, arguments={"img_idx": "{" + image_var + "}"},
                 extract=Extract(var=seed_var, source="top_title")),
    ]
    subject = seed_var
    for hop in hops:
        if hop.kind == "entity":
            rule = RELATION_BY_NAME[hop.relation]
            numeric, target = False, f"c{number}_e{hop.step}"
        else:
            rule = ATTRIBUTE_BY_NAME[hop.relation]
            numeric, target = hop.kind in NUMERIC_KINDS, f"c{number}_v"
        steps.append(GoldStep(
            tool="text_search_tool", chain=number, hop=hop.step,
            arguments={"query": "{" + subject + "} " + rule.keyword},
            extract=Extract(var=target, source="pattern", numeric=numeric,
                            pattern=extraction_pattern(rule.sentence, subject, numeric))))
        subject = target
    return steps, subject


def single_path(anchor: Anchor, hops: list[ChainHop]) -> GoldPath:
    steps, answer_var = chain_steps(1, anchor, hops)
    return GoldPath(steps=steps, answer=answer_var, rounds=len(steps) + 1)


def fused_path(anchors: list[Anchor], chains: list[list[ChainHop]], op: str) -> GoldPath:
    steps, inputs = [], []
    for number, (anchor, hops) in enumerate(zip(anchors, chains), 1):
        chain_steps_, var = chain_steps(number, anchor, hops)
        steps += chain_steps_
        inputs.append(var)
    return GoldPath(steps=steps, fusion=Fusion(op=op, inputs=inputs), rounds=len(steps) + 1)


def gold_chain(number: int, anchor: Anchor, hops: list[ChainHop]) -> GoldChain:
    answer = chain_answer(hops)
    return GoldChain(chain=number, anchor=anchor.id, seed=anchor.name, seed_id=anchor.entity, hops=hops,
                     answer=answer, answer_kind=hops[-1].kind)


def fused_answer(chains: list[list[ChainHop]], op: str) -> list[str]:
    return answer_forms(apply(op, [float(chain_answer(h)) for h in chains]))


def single_answer(hops: list[ChainHop]) -> list[str]:
    answer = chain_answer(hops)
    return [format_number(answer)] if isinstance(answer, int) else [str(answer)]


def allowed_ops(kind: str, count: int, values: list[int]) -> list[str]:
    if count == 3:
        return ["max", "average"] + (["add"] if kind != "year" else []) + (["min"] if kind != "rank" else [])
    ops = {"year": ["subtract", "max", "min", "average", "conditional"],
           "count": ["add", "subtract", "divide", "max", "min", "average", "conditional"],
           "rank": ["add", "subtract", "multiply", "max", "conditional"]}[kind]
    if kind == "count" and max(values) <= 2000:
        ops.append("multiply")
    if 0 in values[1:]:
        ops = [o for o in ops if o != "divide"]
    return ops


_PUNCT = re.compile(r"[^\w\s]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def _normal(text: str) -> str:
    return " ".join(_ARTICLES.sub(" ", _PUNCT.sub(" ", text.lower())).split())


def answer_in_question(question: str, answers: list[str]) -> str | None:
    """The first accepted answer that appears (as whole words, after normalisation) in the question."""
    haystack = f" {_normal(question)} "
    return next((a for a in answers if _normal(a) and f" {_normal(a)} " in haystack), None)
