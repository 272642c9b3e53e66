"""Model output is untrusted data: JSON parsed within bounds, text that always serialises (lone UTF-16
surrogates such as `"\\ud800"` are accepted by `json.loads` but by no UTF-8 writer)."""

from __future__ import annotations

import re
from typing import Any

MAX_JSON_DEPTH = 64
MAX_ARGUMENT_CHARS = 65_536
_SURROGATE = re.compile("[\ud800-\udfff]")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def json_text_problem(text: str, what: str) -> str | None:
    """Why `text` must not be handed to `json.loads` (too long, or nested deeper than
    MAX_JSON_DEPTH), or None. Linear in the length of the text; never recursive."""
    size = len(text)
    if size > MAX_ARGUMENT_CHARS:
        return f"{what} is {size:,} characters long, over the limit of {MAX_ARGUMENT_CHARS:,}"
    # too few brackets to nest deeper (strings' brackets included), or too few characters to hold that many
    if size <= MAX_JSON_DEPTH or text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return None
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub('""', text)):
        depth += 1 if match.group() in "[{" else -1
        if depth > MAX_JSON_DEPTH:
            return f"{what} is nested deeper than {MAX_JSON_DEPTH} levels of JSON arrays/objects"
    return None


def clean_text(text: str | None, field: str, notes: list[str]) -> str | None:
    """`text` with every lone surrogate replaced by U+FFFD; a replacement is noted in `notes`."""
    if text is None or text.isascii() or not _SURROGATE.search(text):  # (isascii: a flag, not a scan)
        return text
    note = f"{field}: invalid Unicode (lone surrogates) replaced by U+FFFD"
    if note not in notes:
        notes.append(note)
    return _SURROGATE.sub("\ufffd", text)


def clean_value(value: Any, field: str, notes: list[str], depth: int = 0) -> Any:
    """A JSON-like value with its strings (and keys) cleaned by `clean_text`: dicts and lists (tuples become lists)
    rebuilt, every other value kept as it is. Raises ValueError when it nests deeper than MAX_JSON_DEPTH."""
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"{field} is nested deeper than {MAX_JSON_DEPTH} levels of JSON arrays/objects")
    kind = type(value)  # the exact type first (no call), then isinstance for subclasses
    if kind in _NO_TEXT:
        return value
    # a plain key, scalar or string without surrogates, the common case, is taken here rather than in a call of its
    # own (past the depth limit every item goes through the call, which refuses it)
    kept = _KEPT if depth < MAX_JSON_DEPTH else ()
    if kind is dict or (kind is not list and isinstance(value, dict)):
        out = {}
        for key, item in value.items():
            key = key if type(key) is str and (key.isascii() or not _SURROGATE.search(key)) \
                else clean_text(str(key), field, notes)
            out[key] = item if type(item) in kept and (type(item) is not str or item.isascii()
                                                       or not _SURROGATE.search(item)) \
                else clean_value(item, field, notes, depth + 1)
        return out
    if kind is list or isinstance(value, (list, tuple)):
        if kept and _NO_TEXT.issuperset(map(type, value)):  # numbers, booleans and nulls only: nothing to clean
            return list(value)
        return [item if type(item) in kept and (type(item) is not str or item.isascii()
                                                or not _SURROGATE.search(item))
                else clean_value(item, field, notes, depth + 1) for item in value]
    if isinstance(value, str):
        return clean_text(value, field, notes)
    return value


_KEPT = frozenset((str, int, float, bool, type(None)))
"""The types of the items `clean_value` looks at in place (exact types: a subclass takes the general path)."""
_NO_TEXT = _KEPT - {str}
