"""The world's ontology: entity types, functional relations in VistaHop's 8 categories, typed attributes.

Every relation and attribute is single-valued, so a chain of them has exactly one
answer. Each carries the sentence its subject's page states it with (the
extraction pattern is derived from it), the noun phrase a question uses for
its object, and the keyword a searcher would add to the subject's name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CATEGORIES = ("part-whole", "member-collection", "causal", "temporal", "spatial", "comparative",
              "attributive", "associative")

INDEX_NAME = "Tallow Index"

VALUE_GROUP = "(?P<value>[^.\\n]+?)"
NUMBER_GROUP = "(?P<value>\\d+)"


@dataclass(frozen=True)
class Relation:
    """`subject` -> `object`, both as (entity type, kind or None for any kind)."""

    name: str
    subject: tuple[str, str | None]
    object: tuple[str, str | None]
    category: str
    label: str
    sentence: str
    phrase: str
    keyword: str

    def applies_to(self, etype: str, kind: str) -> bool:
        return self.subject[0] == etype and self.subject[1] in (None, kind)


@dataclass(frozen=True)
class Attribute:
    name: str
    subject: tuple[str, str | None]
    kind: str
    label: str
    sentence: str
    question: str
    value_phrase: str
    keyword: str

    def applies_to(self, etype: str, kind: str) -> bool:
        return self.subject[0] == etype and self.subject[1] in (None, kind)


ORG = ("organisation", None)
COMPANY = ("organisation", "company")
BODY = ("organisation", "body")
PERSON = ("person", None)
PRODUCT = ("product", None)
CITY = ("place", "city")
REGION = ("place", "region")
EVENT = ("event", None)
SYMBOL = ("symbol", None)

RELATIONS: tuple[Relation, ...] = (
    Relation("headquarters", ORG, CITY, "spatial", "Headquarters",
             "The headquarters of {s} are in {o}.", "the headquarters city of {x}", "headquarters"),
    Relation("parent", COMPANY, COMPANY, "part-whole", "Parent organisation",
             "The parent organisation of {s} is {o}.", "the parent organisation of {x}", "parent organisation"),
    Relation("founder", ORG, PERSON, "causal", "Founder",
             "The founder of {s} was {o}.", "the founder of {x}", "founder"),
    Relation("alliance", COMPANY, BODY, "member-collection", "Membership",
             "{S} holds membership in {o}.", "the membership body of {x}", "membership"),
    Relation("ranked_above", COMPANY, COMPANY, "comparative", f"Next above in the {INDEX_NAME}",
             f"In the {INDEX_NAME}, {{o}} is ranked directly above {{s}}.",
             f"the {INDEX_NAME} entry ranked directly above {{x}}", f"ranked directly above {INDEX_NAME}"),
    Relation("emblem", ORG, SYMBOL, "attributive", "Emblem",
             "The emblem of {s} is the {o}.", "the emblem of {x}", "emblem"),
    Relation("born_in", PERSON, CITY, "spatial", "Birthplace",
             "{S} was born in the city of {o}.", "the birthplace of {x}", "born city"),
    Relation("mentor", PERSON, PERSON, "associative", "Mentor",
             "{S} trained under the mentor {o}.", "the mentor of {x}", "mentor"),
    Relation("member_of", PERSON, BODY, "member-collection", "Member of",
             "{S} is a sworn member of {o}.", "the body holding the sworn membership of {x}", "sworn member"),
    Relation("successor", PERSON, PERSON, "temporal", "Successor",
             "{S} was succeeded in office by {o}.", "the successor in office of {x}", "succeeded office"),
    Relation("maker", PRODUCT, COMPANY, "associative", "Manufacturer",
             "{S} is manufactured by {o}.", "the manufacturer of {x}", "manufactured"),
    Relation("designer", PRODUCT, PERSON, "attributive", "Designer",
             "{S} was designed by {o}.", "the designer of {x}", "designed"),
    Relation("predecessor", PRODUCT, PRODUCT, "temporal", "Predecessor",
             "The predecessor of {s} was the {o}.", "the predecessor of {x}", "predecessor"),
    Relation("outsold_by", PRODUCT, PRODUCT, "comparative", "Outsold by",
             "In annual sales, {s} was outsold only by {o}.", "the product selling directly ahead of {x}",
             "outsold annual sales"),
    Relation("unveiled_at", PRODUCT, EVENT, "associative", "Unveiled at",
             "{S} was unveiled at the {o}.", "the unveiling event of {x}", "unveiled"),
    Relation("region", CITY, REGION, "part-whole", "Region",
             "{S} lies within the region of {o}.", "the region that contains {x}", "lies within region"),
    Relation("mayor", CITY, PERSON, "associative", "Mayor",
             "The mayor of {s} is {o}.", "the mayor of {x}", "mayor"),
    Relation("twin", CITY, CITY, "associative", "Twin city",
             "{S} is twinned with {o}.", "the twin city of {x}", "twinned"),
    Relation("capital", REGION, CITY, "part-whole", "Capital",
             "The capital of {s} is {o}.", "the capital of {x}", "capital"),
    Relation("borders", REGION, REGION, "spatial", "Northern neighbour",
             "To the north, {s} borders {o}.", "the northern neighbour of {x}", "borders north"),
    Relation("place_emblem", CITY, SYMBOL, "attributive", "Emblem",
             "The emblem of {s} is the {o}.", "the emblem of {x}", "emblem"),
    Relation("host", EVENT, CITY, "spatial", "Host city",
             "The {s} was hosted by the city of {o}.", "the host city of {x}", "hosted city"),
    Relation("organiser", EVENT, ORG, "associative", "Organiser",
             "The {s} was organised by {o}.", "the organiser of {x}", "organised"),
    Relation("prompted_by", EVENT, EVENT, "causal", "Prompted by",
             "The {s} was convened in response to the {o}.", "the event that prompted {x}", "convened response"),
    Relation("preceded_by", EVENT, EVENT, "temporal", "Preceded by",
             "The {s} was preceded by the {o}.", "the event that preceded {x}", "preceded"),
    Relation("symbol_designer", SYMBOL, PERSON, "attributive", "Designer",
             "The {s} was drawn by the artist {o}.", "the artist who drew {x}", "drawn artist"),
    Relation("first_raised", SYMBOL, CITY, "spatial", "First raised in",
             "The {s} was first raised in {o}.", "the city that first raised {x}", "first raised"),
)

ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("founded", ORG, "year", "Founded", "{S} was founded in {v}.",
              "In what year was {x} founded?", "the year in which {x} was founded", "founded"),
    Attribute("employees", ORG, "count", "Employees", "{S} employs {v} people.",
              "How many people does {x} employ?", "the number of people employed by {x}", "employs people"),
    Attribute("index_rank", COMPANY, "rank", f"{INDEX_NAME} rank", f"{{S}} holds rank {{v}} in the {INDEX_NAME}.",
              f"What rank does {{x}} hold in the {INDEX_NAME}?", f"the {INDEX_NAME} rank of {{x}}",
              f"holds rank {INDEX_NAME}"),
    Attribute("house_colour", ORG, "colour", "House colour", "The house colour of {s} is {v}.",
              "What is the house colour of {x}?", "the house colour of {x}", "house colour"),
    Attribute("born", PERSON, "year", "Born", "{S} was born in the year {v}.",
              "In what year was {x} born?", "the year in which {x} was born", "born year"),
    Attribute("works", PERSON, "count", "Published works", "{S} published {v} works.",
              "How many works did {x} publish?", "the number of works published by {x}", "published works"),
    Attribute("released", PRODUCT, "year", "Released", "{S} was released in {v}.",
              "In what year was {x} released?", "the year in which {x} was released", "released"),
    Attribute("units", PRODUCT, "count", "Units sold", "{S} sold {v} units.",
              "How many units of {x} were sold?", "the number of units of {x} sold", "sold units"),
    Attribute("sales_rank", PRODUCT, "rank", "Sales rank", "{S} holds sales rank {v}.",
              "What sales rank does {x} hold?", "the sales rank of {x}", "sales rank"),
    Attribute("casing_colour", PRODUCT, "colour", "Casing colour", "The casing colour of {s} is {v}.",
              "What is the casing colour of {x}?", "the casing colour of {x}", "casing colour"),
    Attribute("city_founded", CITY, "year", "Founded", "{S} was founded in {v}.",
              "In what year was {x} founded?", "the year in which {x} was founded", "founded"),
    Attribute("population", ("place", None), "count", "Population", "{S} has a population of {v}.",
              "What is the population of {x}?", "the population of {x}", "population"),
    Attribute("flag_colour", ("place", None), "colour", "Flag colour", "The flag colour of {s} is {v}.",
              "What is the flag colour of {x}?", "the flag colour of {x}", "flag colour"),
    Attribute("opened", EVENT, "year", "First opened", "The {s} first opened in {v}.",
              "In what year did {x} first open?", "the year in which {x} first opened", "first opened"),
    Attribute("attendance", EVENT, "count", "Attendance", "The {s} drew {v} attendees.",
              "How many attendees did {x} draw?", "the number of attendees drawn by {x}", "drew attendees"),
    Attribute("official_colour", EVENT, "colour", "Official colour", "The official colour of the {s} is {v}.",
              "What is the official colour of {x}?", "the official colour of {x}", "official colour"),
    Attribute("adopted", SYMBOL, "year", "Adopted", "The {s} was adopted in {v}.",
              "In what year was {x} adopted?", "the year in which {x} was adopted", "adopted"),
    Attribute("points", SYMBOL, "count", "Points", "The {s} has {v} points.",
              "How many points does {x} have?", "the number of points on {x}", "points"),
    Attribute("principal_colour", SYMBOL, "colour", "Principal colour", "The principal colour of the {s} is {v}.",
              "What is the principal colour of {x}?", "the principal colour of {x}", "principal colour"),
)

RELATION_BY_NAME = {r.name: r for r in RELATIONS}
ATTRIBUTE_BY_NAME = {a.name: a for a in ATTRIBUTES}

ATTRIBUTE_COLOURS = ("crimson", "amber", "ochre", "jade", "olive", "turquoise", "cobalt", "indigo", "violet",
                     "magenta", "maroon", "silver", "gold", "ivory", "charcoal", "saffron", "scarlet", "azure",
                     "emerald", "copper")

def render_sentence(template: str, subject: str, value: str) -> str:
    """Fill a relation/attribute sentence: `{s}`/`{S}` the subject, `{o}`/`{v}` the object or value."""
    return template.replace("{S}", subject).replace("{s}", subject).replace("{o}", value).replace("{v}", value)


def extraction_pattern(template: str, subject_slot: str, numeric: bool) -> str:
    """A regex for the sentence with the subject left as a `{slot}` placeholder and the object as group `value`.

    The oracle replaces `{slot}` with the escaped name it learned earlier; literal
    text is escaped so the pattern matches exactly the page's sentence.
    """
    parts = re.split(r"(\{[SsOoVv]\})", template)
    out = []
    for part in parts:
        if part in ("{S}", "{s}"):
            out.append("{" + subject_slot + "}")
        elif part in ("{o}", "{O}", "{v}", "{V}"):
            out.append(NUMBER_GROUP if numeric else VALUE_GROUP)
        elif part:
            out.append(re.escape(part))
    return "".join(out)
