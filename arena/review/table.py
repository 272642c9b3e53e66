"""Rich tables of a run summary."""

from __future__ import annotations

import textwrap
from typing import Any

from rich import box
from rich.console import Console, RenderableType
from rich.table import Table

from arena.core.prompt_book import protocol_label

from .fit import fits, fitted


def fmt(value: Any, digits: int = 2) -> str:
    """A figure for a table: fixed decimals for floats, a dash for a missing value."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def ci_text(group: dict[str, Any]) -> str:
    """The 95 % interval of Pass@1 as "[low, high]", or a dash."""
    ci = group.get("pass1_ci")
    return f"[{fmt(ci[0], 1)}, {fmt(ci[1], 1)}]" if ci else "–"


ERRORED_LEFT_OUT = ("Pass@1 over the episodes played to the end; errored ones (error, rejected, context overflow) "
                    "are left out and counted under 'errored'")
ERRORED_AS_WRONG = ("Pass@1 counts errored episodes (error, rejected, context overflow) as wrong over every "
                    "episode, as the published script scores an item whose run failed (protocol original)")


def errors_counted_as_wrong(summary: dict[str, Any]) -> bool:
    """Whether a summary's Pass@1 is shown as the published scripts count it: errored episodes as wrong, over every
    episode (`--protocol original`), rather than over the episodes played to the end (the arena's)."""
    return summary.get("protocol") == "original"


def shown_pass1(summary: dict[str, Any], group: dict[str, Any]) -> Any:
    """The Pass@1 a table shows for a group under the summary's protocol (see `errors_counted_as_wrong`)."""
    if errors_counted_as_wrong(summary) and group.get("errored") and "pass1_all" in group:
        return group["pass1_all"]
    return group["pass1"]


COMPACT_COLUMNS = ("agent", "setting", "N", "eps", "Pass@1 % [95% CI]", "errored", "finish")
"""The columns a summary table shows by default: they read whole at 80 columns (the rest: `wide`)."""
WIDE_COLUMNS = ("agent", "setting", "N", "eps", "Pass@1 % [95% CI]", "L1", "L2", "L3", "calls", "rounds", "util %",
                "inval", "errored", "j.err", "unjud", "tok/ep", "s/ep", "finish")
LEFT_COLUMNS = ("agent", "setting", "finish")


def summary_table(summary: dict[str, Any], title: str | None = None, wide: bool = False,
                  stacked: bool = False) -> Table:
    """Per (agent, setting, max rounds): the episodes, Pass@1 (± std over repeats, 95 % CI), errored episodes and
    finish reasons (`COMPACT_COLUMNS`); with `wide`, also per level, tool use, judge errors, unjudged episodes,
    tokens and seconds (`WIDE_COLUMNS`); the cost when a price is known, either way. Pass@1 is over the episodes
    played to the end, errored ones counted apart, or under `--protocol original` with them counted as wrong; the
    caption says which. No cell is ever cut: a run of one agent names it in the title instead of a column, a long
    agent name breaks after its last "/" or ":", and with `stacked` (for a narrow terminal: `fitted_summary`)
    Pass@1 breaks before its interval and each finish reason takes a line; setting, N and counts never break."""
    groups = summary.get("groups", [])
    agents = sorted({g["agent"] for g in groups})
    title = title or f"judge: {summary.get('judge')}"
    if len(agents) == 1 and agents[0] not in title:
        title += f" · agent: {agents[0]}"
    if summary.get("protocol") and "protocol:" not in title:
        title += f" · protocol: {protocol_label(summary['protocol'], summary.get('prompts'))}"
    errored = sum(g.get("errored", 0) for g in groups)
    table = Table(title=title, show_lines=False, box=box.SIMPLE_HEAD, padding=(0, 1),
                  collapse_padding=True, show_edge=False, pad_edge=False, caption_justify="left",
                  title_justify="left",
                  caption=(ERRORED_AS_WRONG if errors_counted_as_wrong(summary) else ERRORED_LEFT_OUT)
                  if errored else None)
    costed = any(g.get("cost") is not None for g in groups)  # dollars are always worth a column
    names = [n for n in (WIDE_COLUMNS if wide else COMPACT_COLUMNS) if n != "agent" or len(agents) != 1]
    rows = []
    for g in groups:
        cells = group_cells(summary, g)
        cells["agent"] = agent_lines(g["agent"])
        if stacked:
            cells["Pass@1 % [95% CI]"] = cells["Pass@1 % [95% CI]"].replace(" [", "\n[")
            cells["finish"] = cells["finish"].replace(" ", "\n")
        if costed:
            cells["cost $"] = fmt(g.get("cost"), 4)
        rows.append(cells)
    names += ["cost $"] if costed else []
    for name in names:
        header = name.replace(" [", "\n[") if stacked else name
        longest = max((len(line) for r in rows for line in r[name].splitlines()), default=0)
        table.add_column(header, justify="left" if name in LEFT_COLUMNS else "right", no_wrap=True,
                         min_width=max([longest] + [len(line) for line in header.splitlines()]))
    for cells in rows:
        table.add_row(*(cells[name] for name in names))
    return table


def fitted_summary(console: Console, summary: dict[str, Any], title: str | None = None,
                   wide: bool = False) -> RenderableType:
    """`summary_table` as it reads whole on `console`: on one line per row when that fits, else stacked, else one
    block per row (`arena.review.fit.as_rows`)."""
    table = summary_table(summary, title, wide)
    if fits(console, table):
        return table
    return fitted(console, summary_table(summary, title, wide, stacked=True))


def agent_lines(agent: str, longest: int = 16) -> str:
    """An agent's name for a table cell: whole when short, else broken after its last "/" (or ":") so that the
    cell is as narrow as its longer part (`openai:Qwen/` above `Qwen2.5-VL-7B-Instruct`)."""
    if len(agent) <= longest:
        return agent
    cut = max(agent.rfind("/"), agent.rfind(":"))
    return agent if cut <= 0 or cut == len(agent) - 1 else f"{agent[:cut + 1]}\n{agent[cut + 1:]}"


def _pass1_cell(summary: dict[str, Any], g: dict[str, Any]) -> str:
    """Pass@1 as shown: with ± std over repeats and the interval, unless it counts errored episodes as wrong."""
    if shown_pass1(summary, g) is None:
        return "–"  # no episode played to the end
    as_wrong = shown_pass1(summary, g) is not g["pass1"]
    pass1 = fmt(shown_pass1(summary, g))
    if g.get("repeats", 1) > 1 and not as_wrong:
        pass1 += f" ± {fmt(g['pass1_std'])}"
    if not as_wrong:
        pass1 += f" {ci_text(g)}"  # the interval is over the episodes played to the end
    return pass1


def group_cells(summary: dict[str, Any], g: dict[str, Any]) -> dict[str, str]:
    """Every column's cell of one group (`WIDE_COLUMNS`, cost apart)."""
    levels = g.get("levels", {})
    tokens = (g.get("avg_prompt_tokens") or 0) + (g.get("avg_completion_tokens") or 0)
    return {"agent": g["agent"], "setting": g["setting"], "N": str(g["max_rounds"]), "eps": str(g["episodes"]),
            "Pass@1 % [95% CI]": _pass1_cell(summary, g), "L1": fmt(levels.get("L1"), 1),
            "L2": fmt(levels.get("L2"), 1), "L3": fmt(levels.get("L3"), 1), "calls": fmt(g["avg_tool_calls"]),
            "rounds": fmt(g["avg_rounds"]), "util %": fmt(g["tool_utilisation"], 1),
            "inval": str(g["invalid_calls"]), "errored": str(g.get("errored", g.get("errors", 0))),
            "j.err": str(g.get("judge_errors", 0)), "unjud": str(g.get("unjudged", 0)),
            "tok/ep": fmt(float(tokens), 0), "s/ep": fmt(g.get("avg_seconds")),
            "finish": " ".join(f"{k}:{v}" for k, v in g.get("finish_reasons", {}).items())}


# What each column of `summary_table` means (its legend); a column added to the table needs a line here (tested).
COLUMN_MEANINGS: dict[str, str] = {
    "agent": "the agent that played (a scripted policy, or a model behind an endpoint)",
    "setting": "the tools offered: no-tool; search (text and reverse-image search); search+crop (and the zoom tool)",
    "N": "the round budget: at most N rounds, each one tool call or the answer",
    "eps": "episodes in the row (tasks x repeats)",
    "Pass@1 % [95% CI]": "percent of the episodes played to the end judged correct (unjudged and judge-error "
                         "episodes count as wrong; errored ones are left out and counted apart, or under "
                         "--protocol original counted as wrong, as the published scripts do); \u00b1 the "
                         "standard deviation over repeats; [the 95 % bootstrap interval over tasks]",
    "L1": "Pass@1 of the tasks of level L1 (fewer than 5 hops in all)",
    "L2": "Pass@1 of level L2 (5 to 9 hops)",
    "L3": "Pass@1 of level L3 (10 hops or more)",
    "calls": "tool calls per episode, on average",
    "rounds": "rounds used per episode, on average (the final-answer turn after the budget is not a round)",
    "util %": "tool utilisation: calls / the calls the budget allows (N x calls per round), VistaHop's metric",
    "inval": "invalid tool calls in all (malformed, unknown tool, bad arguments: the model saw an error)",
    "errored": "episodes an error ended before the end (endpoint, tool or task file; a refused request; a "
               "context overflow): not judged, left out of Pass@1 (arena resume plays them again)",
    "j.err": "judge errors: replies the judge gave that hold no verdict; each scores 0 (re-judge: arena judge)",
    "unjud": "episodes without a verdict of this judge; each scores 0",
    "tok/ep": "prompt + completion tokens per episode as the server reported them (0: no model was called)",
    "s/ep": "seconds per episode, on average",
    "finish": "how the episodes ended, reason:count (below)",
    "cost $": "dollars spent on the agent's model calls (--price, or the list prices of runs/pricing.py)",
}

FINISH_MEANINGS: dict[str, str] = {
    "answered": "the agent answered within its N rounds",
    "budget": "the N rounds ran out; under --protocol arena one more, tool-less turn asks for the answer, which "
              "is judged like any other, so a row can have more correct episodes than answered ones",
    "invalid": "a malformed turn ended the episode (the published rule under --protocol original, or "
               "--stop-on-invalid)",
    "error": "an endpoint, tool or task failure ended the episode (arena resume retries it)",
    "rejected": "the model server refused a request for good (e.g. an unknown model)",
    "context_overflow": "the conversation outgrew the model's context",
}


def legend_lines(summary: dict[str, Any], width: int = 100, wide: bool = False) -> list[str]:
    """What the columns of `summary_table(summary, wide=wide)` mean, in its column order, then the finish reasons
    its rows show; each meaning wrapped to `width` characters under its own start."""
    headers = [str(c.header) for c in summary_table(summary, wide=wide).columns]
    shown = sorted({r for g in summary.get("groups", []) for r in g.get("finish_reasons", {})},
                   key=lambda r: list(FINISH_MEANINGS).index(r) if r in FINISH_MEANINGS else len(FINISH_MEANINGS))
    lines = _aligned([(h, COLUMN_MEANINGS.get(h, "")) for h in headers], "  ", width)
    if shown:
        lines.append("  finish reasons:")
        lines += _aligned([(r, FINISH_MEANINGS.get(r, "")) for r in shown], "    ", width)
    return lines


def _aligned(rows: list[tuple[str, str]], indent: str, width: int) -> list[str]:
    name_width = max(len(name) for name, _ in rows)
    hang = " " * (len(indent) + name_width + 2)
    return [line for name, meaning in rows
            for line in textwrap.wrap(meaning, max(width, len(hang) + 20),
                                      initial_indent=f"{indent}{name:<{name_width}}  ", subsequent_indent=hang)
            or [f"{indent}{name}"]]


def judge_warnings(summary: dict[str, Any]) -> list[str]:
    """One line per group whose Pass@1 counts judge errors or unjudged episodes as 0, naming how many and why."""
    lines = []
    for g in summary.get("groups", []):
        errors, unjudged = g.get("judge_errors", 0), g.get("unjudged", 0)
        if not errors and not unjudged:
            continue
        parts = []
        if errors:
            reasons = "; ".join(f"{n}× {r}" for r, n in g.get("judge_error_reasons", {}).items())
            parts.append(f"{errors} judge error(s)" + (f" ({reasons})" if reasons else ""))
        if unjudged:
            parts.append(f"{unjudged} episode(s) without a verdict of judge {summary.get('judge')!r}")
        lines.append(f"{g['agent']} · {g['setting']} · N={g['max_rounds']}: {' and '.join(parts)} of "
                     f"{g['episodes']} scored 0 in Pass@1 (re-judge with `arena judge RUN --judge ...`)")
    return lines


def repeat_lines(summary: dict[str, Any]) -> list[str]:
    """pass@k and majority@k over repeats, one line per group that has them."""
    lines = []
    for g in summary.get("groups", []):
        if g.get("pass_at_k"):
            passes = " ".join(f"pass@{k}={fmt(v)}" for k, v in g["pass_at_k"].items())
            votes = " ".join(f"maj@{k}={fmt(v)}" for k, v in g.get("majority_at_k", {}).items())
            lines.append(f"{g['agent']} · {g['setting']} · N={g['max_rounds']}: {passes}  {votes}")
    return lines


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
