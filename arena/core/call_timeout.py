"""A tool call under its timeout, with no timer armed for a call that ends without suspending."""

from __future__ import annotations

import asyncio
import time
import types
from typing import Any, Awaitable, Coroutine, Generator, TypeVar

Result = TypeVar("Result")
_TIMEOUT = getattr(asyncio, "timeout", None)
"""`asyncio.timeout`, where there is one (Python 3.11 on)."""


async def within(call: Awaitable[Result], seconds: float) -> Result:
    """`await call`, cancelled after `seconds` (then asyncio.TimeoutError). Since Python 3.11 in the episode's own
    task (`asyncio.timeout`); `asyncio.wait_for` of 3.10 and 3.11 runs it in a task of its own, a task and a loop
    iteration more per tool call.

    A call that ends without suspending (a tool answered from memory, on the loop) cannot be interrupted by a timer
    either, so none is armed for it: a coroutine `call` is run up to its first suspension here, and only one that
    suspends is awaited on under the timeout, for what is left of `seconds` (a left time of zero or less expires at
    once, as the timer armed before the call would have at that suspension). Any other awaitable is awaited under
    the timer from the start."""
    if _TIMEOUT is None:
        return await asyncio.wait_for(call, seconds)
    if type(call) is not types.CoroutineType:
        async with _TIMEOUT(seconds):
            return await call
    started = time.perf_counter()
    try:
        pending = call.send(None)
    except StopIteration as done:
        return done.value
    async with _TIMEOUT(seconds - (time.perf_counter() - started)):
        return await _resumed(call, pending)


@types.coroutine
def _resumed(call: Coroutine[Any, Any, Any], pending: Any) -> Generator[Any, Any, Any]:
    """The rest of coroutine `call`, which suspended on `pending` (what it yielded to the task: a future, or None):
    awaiting this yields `pending` to the task, then passes every value and exception the task sends on to `call`
    (as `await` would have, from the start), and returns its result."""
    while True:
        try:
            try:
                sent = yield pending
            except GeneratorExit:
                call.close()
                raise
            except BaseException as exc:  # (a cancellation among them: thrown into `call`, which may handle it)
                pending = call.throw(exc)
            else:
                pending = call.send(sent)
        except StopIteration as done:
            return done.value
