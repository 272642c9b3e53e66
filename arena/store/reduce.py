"""A record that cannot be serialised is reduced, not lost.

`record_line` is the JSON line of a record. When pydantic cannot write it (a value
nested past its depth limit, invalid Unicode, a non-JSON object a plugin put in
`data`), the record is rebuilt from its fields with every string clipped and cleaned,
nesting cut at MAX_JSON_DEPTH and non-finite numbers written as null; a note saying
what was reduced goes into the record's `meta` (when it has one). The reduced line is
read back before it is returned, so the store never holds a line it cannot load.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import BaseModel, ValidationError

from arena.core.trajectory import clip
from arena.core.untrusted import MAX_JSON_DEPTH, clean_text

REDUCED_CHARS = 8192


class UnwritableRecord(ValueError):
    """A record that could not be written even once reduced."""


def _plain(value: Any, depth: int, notes: list[str]) -> Any:
    if depth > MAX_JSON_DEPTH:
        if "nesting" not in notes:
            notes.append("nesting")
        return f"[cut by the arena: nested deeper than {MAX_JSON_DEPTH} levels]"
    if isinstance(value, BaseModel):
        return {name: _plain(getattr(value, name), depth + 1, notes) for name in type(value).model_fields}
    if isinstance(value, dict):
        return {clean_text(str(k), "key", notes): _plain(v, depth + 1, notes) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1, notes) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return clean_text(clip(value if isinstance(value, str) else repr(value), REDUCED_CHARS), "text", notes)


def record_bytes(record: BaseModel) -> bytes:
    """`record_line` encoded (UTF-8), by `as_is_bytes` when the record can be written as it is."""
    line = as_is_bytes(record)
    return line if line is not None else record_line(record).encode()


def as_is_bytes(record: BaseModel) -> bytes | None:
    """The record's line (with its newline) as pydantic's JSON bytes, as they come (`model_dump_json` decodes them
    into the text `record_line` gives); None when it cannot be written as it is (`record_line` reduces it)."""
    try:
        return record.__pydantic_serializer__.to_json(record) + b"\n"
    except Exception:  # pydantic's serialiser raises several types for hostile values
        return None


def record_line(record: BaseModel) -> str:
    """The record as one JSON line (with its newline), reduced if it cannot be written as it is."""
    try:
        return record.model_dump_json() + "\n"
    except Exception as exc:  # pydantic's serialiser raises several types for hostile values
        reason = f"{type(exc).__name__}: {str(exc)[:300]}"
    notes: list[str] = []
    plain = _plain(record, 0, notes)
    note = (f"the arena reduced this record because it could not be serialised ({reason}): "
            f"strings clipped to {REDUCED_CHARS} characters, nesting cut at {MAX_JSON_DEPTH} levels, "
            "invalid Unicode replaced")
    if isinstance(plain.get("meta"), dict):
        plain["meta"]["reduced"] = note
    try:
        line = json.dumps(plain, ensure_ascii=False, allow_nan=False)
        type(record).model_validate_json(line)
    except (ValueError, ValidationError) as exc:
        raise UnwritableRecord(f"a {type(record).__name__} record cannot be written ({reason}); "
                               f"reduced, it still fails: {str(exc)[:300]}") from None
    return line + "\n"
