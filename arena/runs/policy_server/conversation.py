"""An arena agent request read back into the episode it continues: the task's text, the tools offered, the steps
played so far (each tool call with the text and image positions it returned) and whether this is the tool-less
final turn.

The request is the one `arena.agents.openai_agent` sends, in either tool mode:
- `xml`: the tools as JSON lines inside `<tools>` of the system message, each call as `<tool_call>` text of an
  assistant message, its result as the next user message (text inside `<tool_response>`, then its images);
- `native`: the tools in the request's `tools`, each call as the assistant message's `tool_calls`, its result as the
  next `tool` message, its images in a user message right after it.
The first user message holds the task's images and its question. Images are numbered as the episode numbers them
(`EpisodeView.images`): the task's first, then each one a tool returned, in order; an image the agent left out of
the context to fit a limit (its `[img_idx N left out ...]` placeholder) keeps its number. A user message after a
step's result is the final-turn message (tools are off and an answer is due).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from arena.core.protocol import parse_response
from arena.core.trajectory import Observation, Step

_TOOL_RESPONSE = re.compile(r"^\s*<tool_response>\n?(.*?)\n?</tool_response>\s*$", re.S)
_TOOLS_BLOCK = re.compile(r"<tools>\s*\n(.*?)\n\s*</tools>", re.S)
_LEFT_OUT = re.compile(r"^\[img_idx (\d+) left out")


class ConversationError(ValueError):
    """A request that is not an arena agent conversation (the message says what is missing)."""


@dataclass
class Conversation:
    """What an agent request says of its episode."""

    task_text: str
    """The text parts of the first user message (the question, with the format instruction or image labels)."""
    task_images: int
    tools: list[str]
    native: bool
    steps: list[Step] = field(default_factory=list)
    final_turn: bool = False


def text_of(content: Any) -> str:
    """The text of a message's content: the string, or its text parts joined by line breaks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def images_of(content: Any) -> list[dict[str, Any]]:
    """The image parts of a message's content."""
    if not isinstance(content, list):
        return []
    return [p for p in content if isinstance(p, dict) and p.get("type") in ("image_url", "input_image")]


def offered_tools(request: dict[str, Any]) -> tuple[list[str], bool]:
    """The names of the tools the request offers, and whether it offers them natively (`tools`)."""
    native = request.get("tools")
    if native:
        return [str((t.get("function") or {}).get("name", "")) for t in native if isinstance(t, dict)], True
    names = []
    for message in request.get("messages", []):
        if message.get("role") != "system":
            continue
        block = _TOOLS_BLOCK.search(text_of(message.get("content")))
        for line in block.group(1).splitlines() if block else []:
            try:
                schema = json.loads(line)
            except json.JSONDecodeError:
                continue
            name = (schema.get("function") or {}).get("name") if isinstance(schema, dict) else None
            if name:
                names.append(str(name))
    return names, False


def _call_of(message: dict[str, Any], number: int) -> Step:
    """The step an assistant message played (its observation filled in by the caller)."""
    content = text_of(message.get("content"))
    calls = message.get("tool_calls") or []
    if calls:
        function = calls[0].get("function") or {}
        raw = function.get("arguments") or "{}"
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            arguments = None
        return Step(round=number, output=content, action="tool_call", tool=str(function.get("name", "")),
                    arguments=arguments if isinstance(arguments, dict) else None, call_id=calls[0].get("id"),
                    raw_call=raw if isinstance(raw, str) else json.dumps(raw))
    parsed = parse_response(content)
    return Step(round=number, output=content, action=parsed.kind, tool=parsed.tool, arguments=parsed.arguments,
                raw_call=parsed.raw_call, answer=parsed.answer, error=parsed.error)


class _Numbering:
    """Hands out the episode's image numbers as results show images (or their left-out placeholders)."""

    def __init__(self, first: int):
        self.next = first

    def take(self, content: Any) -> list[int]:
        taken = []
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, dict):
                continue
            left_out = _LEFT_OUT.match(str(part.get("text", ""))) if part.get("type") == "text" else None
            if part.get("type") in ("image_url", "input_image") or left_out:
                taken.append(int(left_out.group(1)) if left_out else self.next)
                self.next = max(self.next, taken[-1]) + 1
        return taken


def _observation(messages: list[dict[str, Any]], numbering: _Numbering) -> Observation:
    """The observation the messages of one result show: their text (unwrapped from `<tool_response>`) and the
    numbers of their images."""
    texts, indices = [], []
    for message in messages:
        text = text_of(message.get("content"))
        if message.get("role") == "user" and images_of(message.get("content")) and texts:
            pass  # native mode: the images' lead-in line is not part of the tool's text
        else:
            unwrapped = _TOOL_RESPONSE.match(text)
            texts.append(unwrapped.group(1) if unwrapped else text)
        indices += numbering.take(message.get("content"))
    return Observation(text="\n".join(texts), image_indices=indices)


def read_conversation(request: dict[str, Any]) -> Conversation:
    """The episode an agent request continues (see the module docstring); ConversationError when it has no user
    message."""
    messages = [m for m in request.get("messages", []) if isinstance(m, dict)]
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not users:
        raise ConversationError("the request has no user message")
    first = messages[users[0]]
    tools, native = offered_tools(request)
    conversation = Conversation(task_text=text_of(first.get("content")), task_images=len(images_of(first.get(
        "content"))), tools=tools, native=native)
    numbering = _Numbering(conversation.task_images)
    rest = messages[users[0] + 1:]
    i = 0
    while i < len(rest):
        if rest[i].get("role") != "assistant":
            conversation.final_turn = i == len(rest) - 1 and rest[i].get("role") == "user"
            i += 1
            continue
        step = _call_of(rest[i], len(conversation.steps) + 1)
        result = []
        j = i + 1
        if j < len(rest) and rest[j].get("role") in ("user", "tool"):
            result.append(rest[j])
            j += 1
            if rest[j - 1].get("role") == "tool" and j < len(rest) and rest[j].get("role") == "user" and \
                    images_of(rest[j].get("content")):
                result.append(rest[j])
                j += 1
        step.observation = _observation(result, numbering) if result else None
        conversation.steps.append(step)
        i = j
    return conversation
