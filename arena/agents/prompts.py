"""The arena's agent prompts, written for the VistaArena protocol (Qwen/Hermes tool format), as named templates.

Each text below is the arena's wording of a template (`arena.core.prompt_book`, kind `agent`); a run's prompts file
(`arena run --prompts FILE`) may give other text for any of them, e.g. a paper's published instructions, which the
project does not copy. A dataset's own system prompt or format instruction (VistaArena's
`input_template.arguments`) still wins over both. The templates and their placeholders:

- `agent.system.intro`, `agent.system.tools` (`{tools}`: the JSON signatures), `agent.system.outro`: the system
  prompt in xml tool mode, joined by blank lines;
- `agent.system.native`: the system prompt in native tool mode; `agent.system.no_tools`: without tools;
- `agent.system.budget` (`{max_rounds}`): appended when the agent is told its budget;
- `agent.user.format`: the format instruction after the question;
- `agent.user.final_round` (`{max_rounds}`): the message of the extra tool-less turn at the round limit;
- `agent.user.tool_response` (`{text}`): a tool's text result in xml tool mode;
- `agent.user.tool_images` (`{tool}`): the lead-in of the images a tool returned, in native tool mode.
"""

from __future__ import annotations

from arena.core.agent import Prompting
from arena.core.prompt_book import TEMPLATES, PromptBook, register_template
from arena.core.task import RequestLayout

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

TOOL_IMAGES = "Images returned by {tool}:"

INTRO_T, TOOLS_T, OUTRO_T = "agent.system.intro", "agent.system.tools", "agent.system.outro"
NATIVE_T, NO_TOOLS_T, BUDGET_T = "agent.system.native", "agent.system.no_tools", "agent.system.budget"
FORMAT_T, FINAL_T = "agent.user.format", "agent.user.final_round"
TOOL_RESPONSE_T, TOOL_IMAGES_T = "agent.user.tool_response", "agent.user.tool_images"
for _name, _text, _placeholders in (
        (INTRO_T, INTRO, ()), (TOOLS_T, TOOLS_SECTION, ("tools",)), (OUTRO_T, OUTRO, ()), (NATIVE_T, NATIVE, ()),
        (NO_TOOLS_T, NO_TOOLS, ()), (BUDGET_T, BUDGET_NOTE, ("max_rounds",)), (FORMAT_T, FORMAT_INSTRUCTION, ()),
        (FINAL_T, FINAL_ANSWER, ("max_rounds",)), (TOOL_RESPONSE_T, TOOL_RESPONSE, ("text",)),
        (TOOL_IMAGES_T, TOOL_IMAGES, ("tool",))):
    register_template(_name, _text, _placeholders, kind="agent")


def system_parts(mode: str, tools: bool, *, show_budget: bool, override: str | None = None) -> list[str]:
    """The parts of the system prompt for tool mode `xml` or `native`, in order: template names, or `override` (a
    dataset's own system prompt, kept as written; in xml mode the tools section is appended unless it already has
    a `{tools}` slot or a `<tools>` block)."""
    if not tools:
        return [override or NO_TOOLS_T]
    if override:
        parts = [override, TOOLS_T] if mode == "xml" and "{tools}" not in override and "<tools>" not in override \
            else [override]
    else:
        parts = [INTRO_T, TOOLS_T, OUTRO_T] if mode == "xml" else [NATIVE_T]
    return parts + [BUDGET_T] if show_budget else parts


def system_prompt(mode: str, tools_block: str, *, max_rounds: int, show_budget: bool,
                  override: str | None = None, book: PromptBook | None = None) -> str:
    """System prompt for tool mode `xml` or `native` (`tools_block` empty means no tools), each template's text
    from `book` (the run's prompts; default: the arena's wording)."""
    book = book or PromptBook()
    values = {TOOLS_T: {"tools": tools_block}, BUDGET_T: {"max_rounds": max_rounds}}
    parts = system_parts(mode, bool(tools_block), show_budget=show_budget, override=override)
    return "\n\n".join(book.format(part, **values.get(part, {})) if part in TEMPLATES
                       else part.replace("{tools}", tools_block) if tools_block else part for part in parts)


def templates_used(mode: str, *, tools: bool, prompting: Prompting, layout: RequestLayout,
                   final_turn: bool) -> list[str]:
    """The templates an episode's requests use in tool mode `mode` (what run.json records): the system prompt's
    (sent with tools, or without when the layout keeps a system message; the final-round turn has no tools), the
    format instruction unless the dataset gives its own or the layout sends the question alone, the final round's
    message when the budget has that turn, and the tool-result wrapper of the mode."""
    names: list[str] = []
    for with_tools in ({tools, False} if final_turn else {tools}):
        if with_tools or layout.system_message:
            names += [part for part in system_parts(mode, with_tools, show_budget=prompting.show_budget,
                                                    override=prompting.system_prompt) if part in TEMPLATES]
    if prompting.format_instruction is None and not layout.question_verbatim and not layout.question_alone_with_tools:
        names.append(FORMAT_T)
    if final_turn:
        names.append(FINAL_T)
    if tools:
        names.append(TOOL_RESPONSE_T if mode == "xml" else TOOL_IMAGES_T)
    return names
