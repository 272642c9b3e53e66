"""`scripted`: plays a fixed list of actions from a JSON or YAML file (tests, demos, baselines).

The script is either a list of actions used for every task, or a mapping from task
id to a list (key `"*"` for any other task). An action is one of
`{"tool": NAME, "arguments": {...}}`, `{"answer": TEXT}`, or `{"text": RAW}` (raw
model text parsed with the Qwen/Hermes protocol, to script malformed output).
The agent is stateless: the action played is the one at the episode's step count.
In the final tool-less turn it plays the script's next answer, if any.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from arena.core.agent import Agent, AgentTurn, EpisodeView, register_agent
from arena.core.protocol import parse_response
from arena.core.trajectory import InputSummary

Action = dict[str, Any]


def load_script(source: str | Path | list | dict) -> dict[str, list[Action]]:
    if isinstance(source, (str, Path)):
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
            data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        except (OSError, json.JSONDecodeError, yaml.YAMLError) as exc:
            raise ValueError(f"{path}: cannot read the script ({exc})") from None
    else:
        data = source
    script = {"*": data} if isinstance(data, list) else data
    if not isinstance(script, dict):
        raise ValueError("a script is a list of actions or a mapping from task id to a list of actions")
    for task_id, actions in script.items():
        if not isinstance(actions, list):
            raise ValueError(f"script entry {task_id!r} must be a list of actions")
        for i, action in enumerate(actions):
            if not isinstance(action, dict) or not ({"tool", "answer", "text"} & set(action)):
                raise ValueError(f"script entry {task_id!r} action {i}: needs 'tool', 'answer' or 'text'")
    return {str(k): v for k, v in script.items()}


def turn_for(action: Action) -> AgentTurn:
    if "text" in action:
        parsed = parse_response(str(action["text"]))
        return AgentTurn(output=str(action["text"]), action=parsed.kind, tool=parsed.tool, arguments=parsed.arguments,
                         raw_call=parsed.raw_call, answer=parsed.answer, error=parsed.error,
                         reasoning=parsed.reasoning, ignored_calls=parsed.ignored_calls)
    if "tool" in action:
        arguments = action.get("arguments", {})
        call = json.dumps({"name": action["tool"], "arguments": arguments})
        return AgentTurn(output=f"<tool_call>{call}</tool_call>", action="tool_call", tool=str(action["tool"]),
                         arguments=arguments if isinstance(arguments, dict) else None, raw_call=call)
    answer = str(action["answer"])
    return AgentTurn(output=f"<answer>{answer}</answer>", action="answer", answer=answer)


class ScriptedAgent(Agent):
    text_protocol = True
    def __init__(self, script: str | Path | list | dict, id: str = "scripted"):
        self.source = str(script) if isinstance(script, (str, Path)) else "<inline>"
        self.script = load_script(script)
        self.id = id

    def actions_for(self, task_id: str) -> list[Action]:
        return self.script.get(task_id, self.script.get("*", []))

    async def act(self, view: EpisodeView) -> AgentTurn:
        actions = self.actions_for(view.task.id)
        position = len(view.steps)
        summary = InputSummary(messages=2 + 2 * position, images=len(view.images))
        if view.final_turn:
            remaining = [a for a in actions[position:] if "answer" in a]
            if remaining:
                turn = turn_for(remaining[0])
                turn.input = summary
                return turn
        if position >= len(actions):
            return AgentTurn(output="", action="invalid", error="the script has no more actions", input=summary)
        turn = turn_for(actions[position])
        turn.input = summary
        return turn

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "kind": "scripted", "script": self.source}


@register_agent("scripted")
def scripted(script: str | Path | list | dict, id: str = "scripted") -> ScriptedAgent:
    return ScriptedAgent(script, id=id)
