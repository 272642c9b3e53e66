""""Did you mean": the closest known name to a mistyped one, for every refusal of an unknown setting, tool, agent,
judge or tool option (issue 31), as click does for a mistyped flag.

Closeness is difflib's ratio (`difflib.get_close_matches`, cutoff 0.75): `serch` finds `search`, `oracel` finds
`oracle`, `normalised` finds `normalized`; a name close to nothing gets no suggestion."""

from __future__ import annotations

import difflib
from typing import Iterable

from arena.core.settings import ALIASES, SETTINGS
from arena.core.tool import TOOLS

CUTOFF = 0.75  # 0.6, difflib's default, offers `normalized` for `oracle`


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name most like `name`, or None when none is close."""
    matches = difflib.get_close_matches(name, sorted(set(known)), n=1, cutoff=CUTOFF)
    return matches[0] if matches else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the known name closest to `name`, or "" when none is close."""
    match = closest(name, known)
    return f" (did you mean {match!r}?)" if match else ""


def setting_did_you_mean(setting: str) -> str:
    """For a setting that names an unknown tool: the registered setting closest to it, else the setting with each
    unknown `+`-part replaced by the closest setting, alias or tool name (` (did you mean 'search+crop'?)`)."""
    whole = closest(setting, SETTINGS)
    if whole:
        return f" (did you mean {whole!r}?)"
    parts = [p.strip() for p in setting.split("+") if p.strip()]
    known = set(SETTINGS) | set(ALIASES) | set(TOOLS)
    fixed = [p if p in known else closest(p, known) for p in parts]
    if not parts or None in fixed or fixed == parts:
        return ""
    return f" (did you mean {'+'.join(f for f in fixed if f)!r}?)"
