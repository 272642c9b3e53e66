"""The arena's prompts, written for the VistaArena protocol (Qwen/Hermes tool format)."""

from __future__ import annotations

INTRO = (
    "You are a visual search agent. Answer the user's question about the image(s) by reasoning step by "
    "step and, when it helps, calling tools to inspect image regions or look up facts."
)

TOOLS_SECTION = """# Tools

You may call one function per turn. The functions are described as JSON signatures inside <tools></tools>:
<tools>
{tools}
</tools>

To call a function, put a JSON object with its name and arguments inside <tool_call></tool_call>:
<tool_call>
{{"name": <function-name>, "arguments": <arguments-json-object>}}
</tool_call>
Only the first tool call of a turn is executed. Its result comes back inside <tool_response></tool_response>."""

OUTRO = (
    "Think inside <think></think> before you act. When you are confident, stop calling tools and give the "
    "final answer inside <answer></answer>."
)

NATIVE = (
    "You are a visual search agent. Answer the user's question about the image(s) by reasoning step by "
    "step and, when it helps, calling the provided tools (one call per turn) to inspect image regions or "
    "look up facts. When you are confident, stop calling tools and give the final answer inside "
    "<answer></answer>."
)

NO_TOOLS = (
    "You are a visual reasoning assistant. Answer the user's question about the image(s). Think inside "
    "<think></think>, then give the final answer inside <answer></answer>."
)

FORMAT_INSTRUCTION = "Give your final answer inside <answer></answer>."

BUDGET_NOTE = "You have at most {max_rounds} rounds; each round is one tool call or the final answer."

FINAL_ANSWER = (
    "You have used all {max_rounds} rounds, so no more tools can be called. "
    "Based on everything above, give your final answer now inside <answer></answer>."
)

TOOL_RESPONSE = "<tool_response>\n{text}\n</tool_response>"


def system_prompt(mode: str, tools_block: str, *, max_rounds: int, show_budget: bool,
                  override: str | None = None) -> str:
    """System prompt for tool mode `xml` or `native`; `tools_block` empty means no tools.

    A dataset's own system prompt (`override`) is kept as written; in xml mode the
    tools section is appended unless the prompt already has a `{tools}` slot or a
    `<tools>` block.
    """
    budget = BUDGET_NOTE.format(max_rounds=max_rounds) if show_budget and tools_block else ""
    if not tools_block:
        parts = [override or NO_TOOLS]
    elif override:
        if "{tools}" in override:
            parts = [override.replace("{tools}", tools_block)]
        elif mode == "xml" and "<tools>" not in override:
            parts = [override, TOOLS_SECTION.format(tools=tools_block)]
        else:
            parts = [override]
    elif mode == "xml":
        parts = [INTRO, TOOLS_SECTION.format(tools=tools_block), OUTRO]
    else:
        parts = [NATIVE]
    if budget:
        parts.append(budget)
    return "\n\n".join(parts)
