"""`arena transcript`: every model call of an episode as it was sent and received (from `<run>/calls.jsonl`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import orjson
import typer

from arena.review.replay import message_line
from arena.store.calls import CALLS_FILE, read_calls
from arena.store.store import RunStore, RunStoreError

from .common import fail

app = typer.Typer()


def _episode_key(run_dir: Path, episode: str) -> str:
    """The episode key for `episode` given as a key, an episode id, or a key's leading fields (`TASK|SETTING|N`,
    `TASK|SETTING|N|REPEAT`) that only one episode has, as `arena replay` takes them; several matches are refused,
    naming them."""
    leading = []
    for item in RunStore(run_dir).episodes():
        if episode in (item.key, item.id):
            return item.key
        if item.key.startswith(episode + "|") and item.key not in leading:
            leading.append(item.key)
    if len(leading) == 1:
        return leading[0]
    if leading:
        keys = "".join(f"\n  {key}" for key in leading[:20])
        raise ValueError(f"{run_dir}: {len(leading)} episodes match {episode!r}; give more of the key:{keys}")
    return episode  # judged or played calls may exist for an episode whose record was not written


def readable(call: dict[str, Any]) -> str:
    """One call as text: parameters, each message (images as references), the raw response (for a failed call,
    the client's error and the error body)."""
    request = call["request"]
    params = {k: v for k, v in request.items() if k not in ("messages", "tools")}
    lines = [f"=== round {call['round']} · {call['role']} · {orjson.dumps(params).decode()}"]
    if request.get("tools"):
        lines.append(f"tools: {', '.join(str((t.get('function') or {}).get('name', t)) for t in request['tools'])}")
    lines += [message_line(message) for message in request.get("messages", [])]
    if "error" in call:
        lines.append(f"failed: {call['error']}")
    response = orjson.dumps(call["response"]).decode()
    lines.append(f"response: {response if len(response) <= 2000 else response[:2000] + f'... ({len(response)} chars)'}")
    return "\n".join(lines)


@app.command(rich_help_panel="Look at runs")
def transcript(run_dir: Path,
               episode: str = typer.Option(..., "--episode", help="Episode key or id."),
               round_: Optional[int] = typer.Option(None, "--round", help="Only the calls of this round."),
               as_json: bool = typer.Option(False, "--json", help="One JSON line per call: round, role, the exact "
                                            "request body and the raw response body (and status, error for a "
                                            "failed call).")) -> None:
    """Show every model call (agent and judge) of one episode exactly as sent and received."""
    if not (run_dir / CALLS_FILE).is_file():
        fail(f"{run_dir}: no {CALLS_FILE} (the run recorded no model calls, or is not a run directory)")
    try:
        calls = read_calls(run_dir, _episode_key(run_dir, episode))
    except (ValueError, OSError, RunStoreError) as exc:
        fail(str(exc))
    calls = [c for c in calls if round_ is None or c["round"] == round_]
    if not calls:
        fail(f"{run_dir}: no recorded model call for episode {episode!r}"
             + (f" in round {round_}" if round_ is not None else ""))
    for call in calls:
        typer.echo(orjson.dumps(call).decode() if as_json else readable(call))
