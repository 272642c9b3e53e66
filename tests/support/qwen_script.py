"""Scripted Qwen-style behaviour for the stub endpoint: an agent that thinks, calls tools in the
Hermes format and answers, and a judge that answers in VistaArena's `<judge>` format (and `<supported>` for evidence checks)."""

from __future__ import annotations

import json
from typing import Any

from tests.support.openai_server import Reply, last_user_text


def call(name: str, **arguments: Any) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


AGENT_TURNS = {
    "Who built": [
        "<think>The white sign names a lighthouse; zoom in to read it.</think>\n"
        + call("image_zoom_in_tool", bbox_2d=[740, 90, 950, 210], label="white sign"),
        "<think>Search the crop.</think>" + call("image_search_tool"),
        "<think>It is Orvanta Lighthouse.</think>" + call("text_search_tool", query="Orvanta Lighthouse built by"),
        "<think>The page says Mirelle Dastrow.</think><answer>Mirelle Dastrow</answer>",
    ],
    "In which year": [
        "<think>Read the sign first.</think>" + call("image_zoom_in_tool", bbox_2d=[740, 90, 950, 210]),
        "<think>Search.</think>" + call("text_search_tool", query="Orvanta Lighthouse built year"),
        "<think>1874.</think><answer>It was built in the year 1874.</answer>",
    ],
}


def rounds_so_far(request: dict[str, Any]) -> int:
    return sum(1 for m in request["messages"] if m["role"] == "assistant")


def question_of(request: dict[str, Any]) -> str:
    user = next(m for m in request["messages"] if m["role"] == "user")
    return "\n".join(p.get("text", "") for p in user["content"] if p.get("type") == "text")


def judge_reply(request: dict[str, Any]) -> Reply:
    prompt = last_user_text(request)
    if "<supported>" in str(request["messages"][0].get("content")):
        supported = "Orvanta" in prompt
        return Reply(content=f"<supported>{'Yes' if supported else 'No'}</supported><reason>the search result "
                             f"{'names' if supported else 'lacks'} it</reason>", prompt_tokens=80, completion_tokens=8)
    candidate = prompt.split("Model answer:", 1)[1].split("\n", 1)[0]
    truth = prompt.split("Reference answer:", 1)[1].split("\n", 1)[0].strip()
    verdict = "Yes" if truth in candidate else "No"
    return Reply(content=f"<judge>{verdict}</judge><reason>candidate {'contains' if verdict == 'Yes' else 'lacks'} "
                         f"{truth}</reason>", prompt_tokens=50, completion_tokens=8)


def respond(request: dict[str, Any]) -> Reply:
    if request.get("model") == "judge":
        return judge_reply(request)
    question = question_of(request)
    turns = next(v for k, v in AGENT_TURNS.items() if k in question)
    n = rounds_so_far(request)
    text = turns[min(n, len(turns) - 1)]
    return Reply(content=text, prompt_tokens=100 + 10 * n, completion_tokens=20)
