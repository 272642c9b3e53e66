"""The gold evidence path of a task beside an agent's steps, and where the agent first left it (for the viewer).

Two kinds of gold, shown when the task has them:

- the **gold tool path** of a generated world's task (`metadata.gold_path.steps`: tool, arguments with
  `{var}` placeholders, chain and hop). The agent's tool calls (not the invalid ones) are compared with it in order, by tool
  name: the first divergence is the first call to another tool than the gold step at that position, or, when
  every call matched, the point where the agent stopped calling tools before the path's end (or the first
  call beyond its end). Arguments are not compared (they hold values learned from observations);
- the **gold evidence chain** (`task.evidence`: the entities each hop leads to, from the world's gold chain or
  VistaArena's `extra_info.reasoning_path`). Each entity is looked for, after answer normalisation, in the
  agent's observations round by round, as whole words (so "8" is not found in "1874"); the first divergence is the first entity of the chain no observation
  contained.

Both are computed from parsed JSON records (the episode's steps, the task's metadata) so the viewer's
streaming pass can call them without building pydantic objects.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from arena.judges.normalized import normalize_answer

_normalized = lru_cache(maxsize=16384)(normalize_answer)


def tool_path(gold: Any, steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The gold tool path with the agent's matching round per gold step and the first divergence, or None."""
    gold_steps = [s for s in (gold.get("steps") or []) if isinstance(s, dict)] if isinstance(gold, dict) else []
    if not gold_steps:
        return None
    calls = [s for s in steps if s.get("action") == "tool_call" and s.get("tool")]
    rows, divergence = [], None
    for i, g in enumerate(gold_steps):
        call = calls[i] if i < len(calls) else None
        same = call is not None and call.get("tool") == g.get("tool")
        rows.append({"tool": str(g.get("tool")), "arguments": g.get("arguments"), "chain": g.get("chain"),
                     "hop": g.get("hop"), "round": call.get("round") if same and call else None})
        if divergence is None and not same:
            if call is None:
                divergence = {"gold": i + 1, "round": None,
                              "why": f"the agent made {len(calls)} tool call(s) and stopped before gold step "
                                     f"{i + 1} ({g.get('tool')})"}
            else:
                divergence = {"gold": i + 1, "round": call.get("round"),
                              "why": f"round {call.get('round')} called {call.get('tool')} where gold step {i + 1} "
                                     f"calls {g.get('tool')}"}
    if divergence is None and len(calls) > len(gold_steps):
        extra = calls[len(gold_steps)]
        divergence = {"gold": None, "round": extra.get("round"),
                      "why": f"round {extra.get('round')} made a call beyond the gold path's {len(gold_steps)} "
                             f"({extra.get('tool')})"}
    return {"steps": rows, "divergence": divergence}


def evidence_chain(evidence: list[str], steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Each entity of the chain with the first round whose observation contained it, and the first missing one."""
    targets = [str(t) for t in evidence if str(t).strip()]
    if not targets:
        return None
    seen = [(s.get("round"), f' {_normalized((s.get("observation") or {}).get("text") or "")} ')
            for s in steps if s.get("observation")]
    rows, divergence = [], None
    for i, target in enumerate(targets):
        wanted = _normalized(target)
        found = next((r for r, text in seen if wanted and f" {wanted} " in text), None)
        rows.append({"target": target, "round": found})
        if found is None and divergence is None:
            divergence = {"gold": i + 1, "round": None,
                          "why": f"hop {i + 1} ({target}) never appeared in an observation"}
    return {"steps": rows, "divergence": divergence}


def gold_view(task_metadata: dict[str, Any] | None, evidence: list[str], steps: list[dict[str, Any]]
              ) -> dict[str, Any] | None:
    """What the viewer shows of the gold beside the steps: `{"path": ..., "chain": ...}` (either may be None),
    or None when the task has neither."""
    path = tool_path((task_metadata or {}).get("gold_path"), steps)
    chain = evidence_chain(evidence, steps)
    if path is None and chain is None:
        return None
    return {"path": path, "chain": chain}
