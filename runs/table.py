"""Rich tables of a run summary."""

from __future__ import annotations

from typing import Any

from rich.table import Table


def fmt(value: Any, digits: int = 2) -> str:
    """A figure for a table: fixed decimals for floats, a dash for a missing value."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def summary_table(summary: dict[str, Any], title: str | None = None) -> Table:
    """Pass@1 (± std over repeats), per level, tool use and finish reasons per (agent, setting, max rounds)."""
    title = title or f"judge: {summary.get('judge')}"
    if summary.get("protocol") and "protocol:" not in title:
        title += f" · protocol: {summary['protocol']}"
    table = Table(title=title, show_lines=False)
    for name, justify in [("agent", "left"), ("setting", "left"), ("N", "right"), ("episodes", "right"),
                          ("Pass@1 %", "right"), ("L1", "right"), ("L2", "right"), ("L3", "right"),
                          ("calls", "right"), ("rounds", "right"), ("util %", "right"), ("invalid", "right"),
                          ("finish", "left")]:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    costed = any(g.get("cost") is not None for g in summary.get("groups", []))
    if costed:
        table.add_column("cost $", justify="right")
    for g in summary.get("groups", []):
        pass1 = fmt(g["pass1"])
        if g.get("repeats", 1) > 1:
            pass1 += f" ± {fmt(g['pass1_std'])}"
        levels = g.get("levels", {})
        finish = " ".join(f"{k}:{v}" for k, v in g.get("finish_reasons", {}).items())
        cells = [g["agent"], g["setting"], str(g["max_rounds"]), str(g["episodes"]), pass1,
                 fmt(levels.get("L1")), fmt(levels.get("L2")), fmt(levels.get("L3")),
                 fmt(g["avg_tool_calls"]), fmt(g["avg_rounds"]), fmt(g["tool_utilisation"]),
                 str(g["invalid_calls"]), finish]
        if costed:
            cells.append(fmt(g.get("cost"), 4))
        table.add_row(*cells)
    return table


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested figures as one level of dotted keys; lists joined as text."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(value, list):
        return {prefix: ", ".join(fmt(v) for v in value)}
    return {prefix: value}


def support_lines(summary: dict[str, Any]) -> list[str]:
    """Per group with evidence verdicts: correct answers that are supported vs unsupported by what was retrieved."""
    lines = []
    for g in summary.get("groups", []):
        if "correct_supported" in g:
            lines.append(f"{g['agent']} · {g['setting']} · N={g['max_rounds']}: {g['correct']} correct = "
                         f"{g['correct_supported']} supported + {g['correct_unsupported']} unsupported"
                         + (f" + {g['correct_support_unknown']} undecided" if g["correct_support_unknown"] else "")
                         + " by the retrieved evidence")
    return lines


def suite_headlines(summary: dict[str, Any], limit: int = 8) -> list[str]:
    """One line per group and suite with its headline figures (top-level and `overall.*`)."""
    lines = []
    for g in summary.get("groups", []):
        for suite, figures in g.get("suites", {}).items():
            flat = flatten(figures)
            head = [(k, v) for k, v in flat.items() if "." not in k or k.startswith("overall.")]
            shown = ", ".join(f"{k.removeprefix('overall.')}={fmt(v)}" for k, v in head[:limit])
            if shown:
                lines.append(f"{g['agent']} · {g['setting']} · N={g['max_rounds']} · {suite}: {shown}")
    return lines
