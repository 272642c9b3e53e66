"""Tool settings: which tools an episode may call. The core knows only `no-tool`; the tools and
suites that provide the others declare them (`register_setting`, `register_alias`)."""

from __future__ import annotations

SETTINGS: dict[str, list[str]] = {"no-tool": []}
ALIASES: dict[str, list[str]] = {}


def register_setting(name: str, tools: list[str]) -> None:
    """Declare a named setting; declaring a name twice with other tools is an error."""
    if name in SETTINGS and SETTINGS[name] != list(tools):
        raise ValueError(f"setting {name!r} registered twice ({SETTINGS[name]} and {list(tools)})")
    SETTINGS[name] = list(tools)


def register_alias(name: str, tools: list[str]) -> None:
    """Declare a short name usable in `+`-joined settings (`text+crop`); same duplicate rule."""
    if name in ALIASES and ALIASES[name] != list(tools):
        raise ValueError(f"setting alias {name!r} registered twice ({ALIASES[name]} and {list(tools)})")
    ALIASES[name] = list(tools)


def tools_for_setting(setting: str, known: set[str]) -> list[str]:
    """Tool names of a setting: a registered name, or `+`-joined aliases and tool names."""
    if setting in SETTINGS:
        names = SETTINGS[setting]
    else:
        names = []
        for part in filter(None, (p.strip() for p in setting.split("+"))):
            names.extend(ALIASES.get(part, [part]))
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(
            f"setting {setting!r} names unknown tool(s) {', '.join(unknown)}; "
            f"settings: {', '.join(SETTINGS)}; tools: {', '.join(sorted(known))}"
        )
    return list(dict.fromkeys(names))
