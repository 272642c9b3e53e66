"""Invented names: syllable stems that read like names but belong to no real entity.

`NameForge` hands out unique names per entity type and near-duplicates of a name
(one letter changed, or the same stem with another suffix) for distractor entities.
"""

from __future__ import annotations

import random

ONSETS = ("b", "br", "d", "dr", "f", "g", "gr", "h", "k", "kh", "l", "m", "n", "p", "qu", "r", "s", "sk",
          "t", "th", "v", "vr", "z", "zh", "c", "cl", "j", "tr", "sv", "w")
VOWELS = ("a", "e", "i", "o", "u", "ae", "ei", "ou", "y", "ia")
CODAS = ("", "", "n", "r", "l", "th", "s", "x", "m", "nd", "rk", "sh", "v", "lt")

COMPANY_SUFFIXES = ("Works", "Dynamics", "Foundry", "Mills", "Shipyards", "Laboratories", "Instruments",
                    "Textiles", "Motors", "Ceramics", "Optics", "Brewery")
BODY_SUFFIXES = ("Guild", "Society", "Consortium", "League", "Institute", "Trust", "Assembly", "Circle")
CITY_SUFFIXES = ("mere", "holt", "gate", "wick", "haven", "ford", "moor", "stead", "port", "vale", "burgh", "fell")
REGION_SUFFIXES = ("Reach", "March", "Province", "Lowlands", "Highlands", "Coast", "Basin", "Marches")
EVENT_KINDS = ("Accord", "Summit", "Exhibition", "Regatta", "Festival", "Congress", "Games", "Fair", "Convention",
               "Symposium")
SYMBOL_KINDS = ("Sigil", "Crest", "Knot", "Seal", "Rune", "Wheel", "Star", "Mark")
MODEL_LETTERS = "BDFHKLMNRTVXZ"

_VOWEL_SWAPS = {"a": "e", "e": "a", "i": "y", "o": "u", "u": "o", "y": "i"}


class NameForge:
    """Unique invented names, deterministic for a given `random.Random`."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: set[str] = set()
        self.stems: set[str] = set()

    def _syllable(self) -> str:
        return self.rng.choice(ONSETS) + self.rng.choice(VOWELS) + self.rng.choice(CODAS)

    def stem(self, syllables: tuple[int, int] = (2, 2)) -> str:
        """A fresh capitalised stem of 2 syllables (or as asked), 4 to 9 letters, no tripled letters."""
        while True:
            word = "".join(self._syllable() for _ in range(self.rng.randint(*syllables)))
            doubled = any(a == b for a, b in zip(word, word[1:]))
            if 4 <= len(word) <= 9 and not doubled and word not in self.stems:
                self.stems.add(word)
                return word.capitalize()

    def claim(self, name: str) -> str | None:
        if name in self.used:
            return None
        self.used.add(name)
        return name

    def fresh(self, etype: str, kind: str) -> str:
        while True:
            name = self.claim(self.compose(etype, kind, self.stem()))
            if name:
                return name

    def compose(self, etype: str, kind: str, stem: str) -> str:
        rng = self.rng
        if etype == "person":
            return f"{self.stem((1, 2))} {stem}"
        if etype == "organisation":
            return f"{stem} {rng.choice(COMPANY_SUFFIXES if kind == 'company' else BODY_SUFFIXES)}"
        if etype == "product":
            return f"{stem} {rng.choice(MODEL_LETTERS)}{rng.randint(2, 98)}"
        if etype == "place":
            if kind == "region":
                return f"{stem} {rng.choice(REGION_SUFFIXES)}"
            return stem + rng.choice(CITY_SUFFIXES)
        if etype == "event":
            return f"{stem} {rng.choice(EVENT_KINDS)}"
        if etype == "symbol":
            return f"{stem} {rng.choice(SYMBOL_KINDS)}"
        raise ValueError(f"unknown entity type {etype!r}")

    def near_duplicate(self, name: str, etype: str, kind: str) -> str:
        """A name close to `name`: one vowel changed in its distinctive word (the family name of a
        person, the stem otherwise), or the same distinctive word with a new first name or suffix."""
        words = name.split(" ")
        at = len(words) - 1 if etype == "person" else 0
        for _ in range(50):
            variant = list(words)
            word = words[at]
            if self.rng.random() < 0.6 or len(words) == 1:
                positions = [i for i, ch in enumerate(word) if ch in _VOWEL_SWAPS and i > 0]
                if not positions:
                    continue
                i = self.rng.choice(positions)
                variant[at] = word[:i] + _VOWEL_SWAPS[word[i]] + word[i + 1:]
            elif etype == "person":
                variant = [self.stem((1, 2)), word]
            else:
                variant = self.compose(etype, kind, word).split(" ")
            candidate = self.claim(" ".join(variant))
            if candidate:
                return candidate
        return self.fresh(etype, kind)
