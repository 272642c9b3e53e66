"""Rich tables of a run summary."""

from __future__ import annotations

import textwrap
from typing import Any

from rich import box
from rich.table import Table

from arena.core.prompt_book import protocol_label


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


def summary_table(summary: dict[str, Any], title: str | None = None) -> Table:
    """Pass@1 (± std over repeats, 95 % CI), per level, tool use, errored episodes, judge errors, unjudged episodes,
    tokens, seconds and finish reasons per (agent, setting, max rounds). Pass@1 is over the episodes played to the
    end, errored ones counted apart, or under `--protocol original` with them counted as wrong; the caption says
    which."""
    title = title or f"judge: {summary.get('judge')}"
    if summary.get("protocol") and "protocol:" not in title:
        title += f" · protocol: {protocol_label(summary['protocol'], summary.get('prompts'))}"
    errored = sum(g.get("errored", 0) for g in summary.get("groups", []))
    table = Table(title=title, show_lines=False, box=box.SIMPLE_HEAD, padding=(0, 1),
                  collapse_padding=True, show_edge=False,
                  pad_edge=False, caption_justify="left",
                  caption=(ERRORED_AS_WRONG if errors_counted_as_wrong(summary) else ERRORED_LEFT_OUT)
                  if errored else None)
    for name, justify in [("agent", "left"), ("setting", "left"), ("N", "right"), ("eps", "right"),
                          ("Pass@1 % [95% CI]", "right"), ("L1", "right"), ("L2", "right"), ("L3", "right"),
                          ("calls", "right"), ("rounds", "right"), ("util %", "right"), ("inval", "right"),
                          ("errored", "right"), ("j.err", "right"), ("unjud", "right"), ("tok/ep", "right"),
                          ("s/ep", "right"), ("finish", "left")]:
        table.add_column(name, justify=justify, no_wrap=name != "finish",  # type: ignore[arg-type]
                         min_width=12 if name == "finish" else None)
    costed = any(g.get("cost") is not None for g in summary.get("groups", []))
    if costed:
        table.add_column("cost $", justify="right")
    for g in summary.get("groups", []):
        as_wrong = shown_pass1(summary, g) is not g["pass1"]
        pass1 = fmt(shown_pass1(summary, g))
        if g.get("repeats", 1) > 1 and not as_wrong:
            pass1 += f" ± {fmt(g['pass1_std'])}"
        if not as_wrong:
            pass1 += f" {ci_text(g)}"  # the interval is over the episodes played to the end
        levels = g.get("levels", {})
        finish = " ".join(f"{k}:{v}" for k, v in g.get("finish_reasons", {}).items())
        tokens = (g.get("avg_prompt_tokens") or 0) + (g.get("avg_completion_tokens") or 0)
        cells = [g["agent"], g["setting"], str(g["max_rounds"]), str(g["episodes"]), pass1,
                 fmt(levels.get("L1"), 1), fmt(levels.get("L2"), 1), fmt(levels.get("L3"), 1),
                 fmt(g["avg_tool_calls"]), fmt(g["avg_rounds"]), fmt(g["tool_utilisation"], 1),
                 str(g["invalid_calls"]), str(g.get("errored", g.get("errors", 0))), str(g.get("judge_errors", 0)),
                 str(g.get("unjudged", 0)), fmt(float(tokens), 0), fmt(g.get("avg_seconds")), finish]
        if costed:
            cells.append(fmt(g.get("cost"), 4))
        table.add_row(*cells)
    return table


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


def legend_lines(summary: dict[str, Any], width: int = 100) -> list[str]:
    """What the columns of `summary_table(summary)` mean, in its column order, then the finish reasons its rows
    show; each meaning wrapped to `width` characters under its own start."""
    headers = [str(c.header) for c in summary_table(summary).columns]
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
