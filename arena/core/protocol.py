"""The Qwen/Hermes text protocol: thinking, `<tool_call>` JSON, `<answer>`.

Parsing never raises: whatever the model wrote becomes a tool call, an answer or
an invalid action with a message the model can act on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Literal

from .untrusted import json_text_problem

_THINK_OPEN = re.compile(r"<(think|thinking)>")
_TOOL_OPEN = "<tool_call>"
_TOOL_CLOSE = "</tool_call>"
MAX_PARSED_CHARS = 2_000_000


@dataclass
class ParsedAction:
    kind: Literal["tool_call", "answer", "invalid"]
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    raw_call: str | None = None
    answer: str | None = None
    error: str | None = None
    ignored_calls: int = 0
    reasoning: str | None = None
    tagged: bool = True


def split_thinking(text: str) -> tuple[str, str | None]:
    """Return (text without thinking, thinking). Handles `<think>`/`<thinking>` blocks and a
    leading block whose opening tag the chat template already emitted (`...</think>`).
    Linear in the length of the text, whatever it contains."""
    lowered = text.lower()
    thoughts: list[str] = []
    visible: list[str] = []
    pos = 0
    first_open = _THINK_OPEN.search(lowered)
    for closer in ("</think>", "</thinking>"):
        at = lowered.find(closer)
        if at != -1 and (first_open is None or at < first_open.start()):
            thoughts.append(text[:at].strip())
            pos = at + len(closer)
            break
    while True:
        opening = _THINK_OPEN.search(lowered, pos)
        if opening is None:
            visible.append(text[pos:])
            break
        closer = f"</{opening.group(1)}>"
        end = lowered.find(closer, opening.end())
        if end == -1:
            visible.append(text[pos:])
            break
        visible.append(text[pos:opening.start()])
        thoughts.append(text[opening.end():end].strip())
        pos = end + len(closer)
    return "".join(visible), ("\n\n".join(t for t in thoughts if t) or None)


def _answers(text: str) -> list[tuple[int, str]]:
    """(position, content) of every complete `<answer>...</answer>` block, in order (linear scan)."""
    lowered, found, pos = text.lower(), [], 0
    while True:
        start = lowered.find("<answer>", pos)
        if start == -1:
            return found
        end = lowered.find("</answer>", start + 8)
        if end == -1:
            return found
        found.append((start, text[start + 8:end]))
        pos = end + 9


def _tool_call_bodies(text: str) -> list[str]:
    bodies, pos = [], 0
    while True:
        start = text.find(_TOOL_OPEN, pos)
        if start == -1:
            return bodies
        end = text.find(_TOOL_CLOSE, start)
        if end == -1:
            bodies.append(text[start + len(_TOOL_OPEN):])
            return bodies
        bodies.append(text[start + len(_TOOL_OPEN):end])
        pos = end + len(_TOOL_CLOSE)


def parse_tool_call_json(body: str) -> tuple[str | None, dict[str, Any] | None, str | None]:
    """Parse `{"name": ..., "arguments": {...}}`; returns (name, arguments, error)."""
    snippet = body.strip()
    problem = json_text_problem(snippet, "the tool call")
    if problem:
        return None, None, f"{problem}; write a smaller call"
    try:
        data = json.loads(snippet)
    except json.JSONDecodeError as exc:
        return None, None, (
            f"the tool call is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            'write <tool_call>{"name": "...", "arguments": {...}}</tool_call>'
        )
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        return None, None, f"the tool call has a number that cannot be read ({exc})"
    if not isinstance(data, dict):
        return None, None, f"the tool call must be a JSON object, got {type(data).__name__}"
    name = data.get("name")
    if not isinstance(name, str) or not name:
        if "name" not in data or name == "":
            return None, None, 'the tool call has no "name" string'
        return None, None, tool_name_problem(name)
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return name, None, f'"arguments" of {name} is a string that is not valid JSON ({exc.msg})'
        except ValueError as exc:
            return name, None, f'"arguments" of {name} has a number that cannot be read ({exc})'
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return name, None, f'"arguments" of {name} must be a JSON object, got {json_type(arguments)}'
    return name, arguments, None


def tool_name_problem(name: Any) -> str:
    """What is wrong with a tool call whose "name" is not a string: its JSON type and (the start of) its JSON, as
    every parser and agent says it."""
    return (f'the tool call\'s "name" must be a string naming a tool, got {json_type(name)} '
            f'{json.dumps(name, default=str)[:80]}')


def json_type(value: Any) -> str:
    """The JSON type of a parsed JSON value, as a model would name it: string, number, boolean, null, array,
    object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object" if isinstance(value, dict) else type(value).__name__


def extract_answer(text: str) -> tuple[str | None, bool]:
    """The content of the last `<answer>` block (thinking removed), else the visible text.
    Returns (answer or None when empty, whether it was tagged)."""
    visible, _ = split_thinking(text[:MAX_PARSED_CHARS])
    return _answer_in(visible, _answers(visible))


def _answer_in(visible: str, found: list[tuple[int, str]]) -> tuple[str | None, bool]:
    """`extract_answer` of a text whose visible part is `visible`, with `found` its `<answer>` blocks."""
    if found:
        return found[-1][1].strip(), True
    stripped = visible.strip()
    return (stripped or None), False


def parse_response(text: str) -> ParsedAction:
    """Turn one model response into the round's action.

    Whichever comes first wins: a `<tool_call>` (only the first one runs; the rest
    are counted in `ignored_calls`) or an `<answer>`. With neither, the visible text
    is the answer (as in the original VistaArena, which ends when no tool is called).
    """
    text = text[:MAX_PARSED_CHARS]
    visible, reasoning = split_thinking(text)
    bodies = _tool_call_bodies(visible)
    answers = _answers(visible)
    call_at = visible.find(_TOOL_OPEN)
    if bodies and (not answers or call_at < answers[0][0]):
        name, arguments, error = parse_tool_call_json(bodies[0])
        raw = bodies[0].strip()
        if error:
            return ParsedAction("invalid", tool=name, raw_call=raw, error=error,
                                ignored_calls=len(bodies) - 1, reasoning=reasoning)
        return ParsedAction("tool_call", tool=name, arguments=arguments, raw_call=raw,
                            ignored_calls=len(bodies) - 1, reasoning=reasoning)
    answer, tagged = _answer_in(visible, answers)  # (extract_answer of `text`, from its parts at hand)
    if answer is None:
        return ParsedAction("invalid", error="the response is empty: call a tool or give <answer></answer>",
                            reasoning=reasoning)
    return ParsedAction("answer", answer=answer, tagged=tagged, reasoning=reasoning,
                        ignored_calls=len(bodies))


TurnRule = Callable[[str], ParsedAction]  # raw model turn -> action (a protocol's own reading)
