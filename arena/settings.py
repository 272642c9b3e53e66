"""Tool settings: which tools an episode may call (VistaHop's No-Tool / Search / Search+Crop, and more)."""

from __future__ import annotations

SETTINGS: dict[str, list[str]] = {
    "no-tool": [],
    "search": ["text_search_tool", "image_search_tool"],
    "search+crop": ["text_search_tool", "image_search_tool", "image_zoom_in_tool"],
    "crop": ["image_zoom_in_tool"],
}

ALIASES: dict[str, list[str]] = {
    "text": ["text_search_tool"],
    "image": ["image_search_tool"],
    "search": ["text_search_tool", "image_search_tool"],
    "crop": ["image_zoom_in_tool"],
}


def register_setting(name: str, tools: list[str]) -> None:
    SETTINGS[name] = list(tools)


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
