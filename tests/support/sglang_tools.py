"""SGLang's Qwen 2.5 tool-call parser (`--tool-call-parser qwen25`) as a server applies it to a model's raw text.

As issue 39 observed it: the raw text's `<tool_call>` blocks become the reply's `tool_calls` when their JSON parses;
a block whose JSON does not parse is dropped, and the reply's `content` is the text before the first `<tool_call>`,
with `finish_reason` "stop" when no call is left (so a client sees a plain sentence such as "I'll zoom in on the
orange banner to read its text." and nothing else)."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.support.openai_server import Reply

_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


def qwen25_reply(raw: str, call_id: str = "call_0") -> Reply:
    """The reply SGLang sends for the model's raw text `raw` (tools given in the request)."""
    start = raw.find("<tool_call>")
    if start == -1:
        return Reply(content=raw)
    calls: list[dict[str, Any]] = []
    for body in _BLOCK.findall(raw):
        try:
            data = json.loads(body)
        except json.JSONDecodeError:
            continue  # dropped, nothing said
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            calls.append({"id": f"{call_id}_{len(calls)}", "name": data["name"],
                          "arguments": json.dumps(data.get("arguments", {}))})
    return Reply(content=raw[:start].strip() or None, tool_calls=calls or None)
