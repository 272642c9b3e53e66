"""Dollars per million tokens, and the cost of episodes and judge calls.

`--price IN,OUT` sets the price of the run's agent model(s); otherwise a model named
in `KNOWN` is priced from this small table, written from the providers' public
pricing pages (OpenAI "API pricing", Google "Gemini Developer API pricing",
Anthropic "Pricing", standard tier, prompts under 200k tokens, as listed in 2025).
Prices change: pass `--price` for anything that matters. Cached prompt tokens are
charged at the prompt price (an upper bound). A cost is unknown (None) when the
model has no price or the server reported no token counts.
"""

from __future__ import annotations

from typing import Any

from arena.core.trajectory import Usage

KNOWN: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o3": (2.00, 8.00),
    "o4-mini": (1.10, 4.40),
    "gemini-2.5-pro": (1.25, 10.00),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
}


def parse_price(text: str) -> tuple[float, float]:
    """`IN,OUT` in dollars per million prompt and completion tokens."""
    parts = text.split(",")
    try:
        price = (float(parts[0]), float(parts[1]))
    except (ValueError, IndexError):
        raise ValueError(f"--price must look like IN,OUT in dollars per million tokens (e.g. 2.5,10), "
                         f"got {text!r}") from None
    if len(parts) != 2 or min(price) < 0:
        raise ValueError(f"--price must be two non-negative numbers IN,OUT, got {text!r}")
    return price


def price_of(model: str | None, given: tuple[float, float] | list[float] | None = None) -> tuple[float, float] | None:
    """The price of `model`: the given one, else the table's (longest known prefix of the model name)."""
    if given is not None:
        return (float(given[0]), float(given[1]))
    if not model:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    matches = [k for k in KNOWN if name == k or name.startswith(k + "-")]
    return KNOWN[max(matches, key=len)] if matches else None


def cost(prompt_tokens: int | None, completion_tokens: int | None,
         price: tuple[float, float] | None) -> float | None:
    if price is None or (prompt_tokens is None and completion_tokens is None):
        return None
    return ((prompt_tokens or 0) * price[0] + (completion_tokens or 0) * price[1]) / 1e6


def usage_cost(usage: Usage, price: tuple[float, float] | None) -> float | None:
    return cost(usage.prompt_tokens, usage.completion_tokens, price)


def agent_prices(agents: list[Any], given: tuple[float, float] | list[float] | None = None
                 ) -> dict[str, tuple[float, float] | None]:
    """The price of each agent's model by agent id (`--price` when given, else `price_of` its endpoint's model)."""
    return {a.id: price_of((a.describe().get("endpoint") or {}).get("model"), given) for a in agents}
