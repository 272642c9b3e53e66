"""Fusing the numbers K chains end in, and writing numeric answers in one canonical form."""

from __future__ import annotations

from typing import Sequence

OPS = ("add", "subtract", "multiply", "divide", "max", "min", "average", "conditional")
LETTERS = "ABC"


class FusionError(ValueError):
    """An operation that cannot be applied to these values (unknown op, wrong arity, division by zero)."""


def apply(op: str, values: Sequence[float]) -> float:
    """`subtract` is the absolute difference; `conditional` is A + B if A > B, else B - A."""
    if not values:
        raise FusionError(f"{op}: no values")
    if op == "add":
        return sum(values)
    if op == "average":
        return sum(values) / len(values)
    if op == "max":
        return max(values)
    if op == "min":
        return min(values)
    if len(values) != 2:
        raise FusionError(f"{op} takes exactly two values, got {len(values)}")
    a, b = values
    if op == "subtract":
        return abs(a - b)
    if op == "multiply":
        return a * b
    if op == "divide":
        if b == 0:
            raise FusionError("divide: division by zero")
        return a / b
    if op == "conditional":
        return a + b if a > b else b - a
    raise FusionError(f"unknown operation {op!r}; known: {', '.join(OPS)}")


def format_number(value: float) -> str:
    """Integers without a decimal point; other numbers rounded to 2 decimals, trailing zeros dropped."""
    rounded = round(float(value), 2)
    if rounded.is_integer():
        return str(int(rounded))
    return f"{rounded:.2f}".rstrip("0").rstrip(".")


def answer_forms(value: float) -> list[str]:
    """Accepted spellings: the canonical form first, then the 2-decimal form when it differs."""
    canonical = format_number(value)
    forms = [canonical]
    if "." in canonical and f"{round(float(value), 2):.2f}" != canonical:
        forms.append(f"{round(float(value), 2):.2f}")
    return forms


def question_for(op: str, count: int) -> str:
    """The sentence asking for the fused value of letters A, B(, C)."""
    letters = list(LETTERS[:count])
    listed = ", ".join(letters[:-1]) + " and " + letters[-1]
    if op == "add":
        return f"What is the sum of {listed}?"
    if op == "average":
        return f"What is the average of {listed}, rounded to two decimal places?"
    if op == "max":
        return f"What is the {'larger' if count == 2 else 'largest'} of {listed}?"
    if op == "min":
        return f"What is the {'smaller' if count == 2 else 'smallest'} of {listed}?"
    if op == "subtract":
        return "What is the absolute difference between A and B?"
    if op == "multiply":
        return "What is A multiplied by B?"
    if op == "divide":
        return "What is A divided by B, rounded to two decimal places?"
    if op == "conditional":
        return "If A is greater than B, give A plus B; otherwise give B minus A."
    raise FusionError(f"unknown operation {op!r}")
