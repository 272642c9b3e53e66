"""`PolicyServer`: the OpenAI-compatible endpoint `arena serve` starts (`arena.endpoints.chat_server` on the wire).

Every `POST /v1/chat/completions` is answered by one of its roles: a helper's (a judge's verdict or a web summary,
`helper_roles`) when the last user message is one of the arena's helper prompts, else the agent's (the policy's
next turn, `agent_role`). A request that is neither (no task of the data has its question in it) is refused with a
400 whose message says so; a policy that fails on a request gets a 500 naming its error. Replies name what answered them (`arena-serve/<policy>`, `arena-serve/normalized-judge`,
`arena-serve/extractive-summary`), never the model the request asked for; `usage` is counted (`usage`); `latency`
seconds pass before each reply.
"""

from __future__ import annotations

import inspect
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from arena.core.agent import Agent
from arena.core.dataset import load_datasets
from arena.core.prompt_book import PromptBook
from arena.core.suite import SUITES
from arena.endpoints.chat_server import ChatServer, Reply

from ..plugins import accepted_options, call_with_options, load_plugins
from .agent_role import TaskIndex, UnknownTask, play_turn
from .conversation import ConversationError, read_conversation, text_of
from .helper_roles import JUDGE_MODEL, SUMMARY_MODEL, helper_roles, recognise
from .usage import prompt_tokens, text_tokens

SERVED_BY = "arena-serve"


def policies() -> dict[str, Callable[..., Agent]]:
    """The scripted policies the suites register (their agents that call no model endpoint), by name."""
    load_plugins()
    found = {}
    for suite in SUITES.values():
        for name, factory in suite.agents.items():
            params = inspect.signature(factory).parameters
            if not {"base_url", "model"} & set(params):
                found[name] = factory
    return dict(sorted(found.items()))


def build_policy(name: str, data: Path) -> Agent:
    """Policy `name`, given the world directory when the data is one and the policy reads its world."""
    known = policies()
    if name not in known:
        raise ValueError(f"unknown policy {name!r}; the suites' policies: {', '.join(known)}")
    options = accepted_options(known[name], {"world": str(data.resolve())}) if data.is_dir() else {}
    return call_with_options(known[name], options, f"policy {name!r}")


class PolicyServer:
    """A policy over the tasks of `data`, served at `host:port` (see the module docstring)."""

    def __init__(self, data: str | Path, policy: str, host: str = "127.0.0.1", port: int = 8000,
                 latency: float = 0.0, prompts: str | Path | None = None):
        if latency < 0:
            raise ValueError(f"latency must be 0 or more seconds, got {latency}")
        self.data, self.policy_name, self.latency = Path(data), policy, latency
        self.policy = build_policy(policy, self.data)
        datasets = load_datasets(self.data, original_only=True)
        self.tasks = TaskIndex(datasets)
        self.roles = helper_roles(PromptBook.load(prompts))
        self.model = f"{SERVED_BY}/{policy}"
        self.answered: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.http = ChatServer(self.respond, host=host, port=port, models=(self.model, JUDGE_MODEL, SUMMARY_MODEL),
                               chat_path_only=True, reply_id=f"chatcmpl-{SERVED_BY}")

    @property
    def base_url(self) -> str:
        return self.http.base_url

    def _count(self, what: str) -> None:
        with self._lock:
            self.answered[what] += 1

    def _refuse(self, message: str) -> Reply:
        self._count("refused")
        return Reply(status=400, error=f"{SERVED_BY} ({self.policy_name} over {self.data}): {message}",
                     delay=self.latency)

    def _reply(self, request: dict[str, Any], content: str, model: str,
               tool_calls: list[dict[str, Any]] | None = None) -> Reply:
        calls = sum(text_tokens(str(c["arguments"])) + text_tokens(c["name"]) for c in tool_calls or [])
        return Reply(content=content, tool_calls=tool_calls, model=model, delay=self.latency,
                     prompt_tokens=prompt_tokens(request), completion_tokens=text_tokens(content) + calls)

    def respond(self, request: Any) -> Reply:
        """The reply to one chat request (see the module docstring)."""
        if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
            return self._refuse("the request has no `messages` list")
        if request.get("stream"):
            return self._refuse("streaming is not served; send the request without `stream`")
        users = [m for m in request["messages"] if isinstance(m, dict) and m.get("role") == "user"]
        helper = recognise(self.roles, text_of(users[-1].get("content"))) if users else None
        if helper is not None:
            role, values = helper
            self._count(role.name)
            return self._reply(request, role.answer(values), role.model)
        try:
            played = play_turn(self.policy, self.tasks, read_conversation(request))
        except (UnknownTask, ConversationError) as exc:
            return self._refuse(f"{exc}; nor is it a judge or summariser request of the arena")
        except Exception as exc:  # the policy's own failure: a 500 naming it, never a dropped connection
            self._count("failed")
            return Reply(status=500, error=f"{SERVED_BY} ({self.policy_name}): the policy failed on this request: "
                                           f"{type(exc).__name__}: {exc}", delay=self.latency)
        self._count("agent turn")
        return self._reply(request, played.content, self.model, [played.tool_call] if played.tool_call else None)

    def serve_forever(self) -> None:
        self.http.serve_forever()

    def start(self) -> "PolicyServer":
        self.http.start()
        return self

    def stop(self) -> None:
        self.http.stop()

    def __enter__(self) -> "PolicyServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
