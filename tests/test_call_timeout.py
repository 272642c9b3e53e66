"""A tool call under its timeout (`arena.core.call_timeout.within`): a call that ends without suspending runs with no
timer; one that suspends is cancelled at its deadline, counted from the call's start; cancellation from outside and
the call's own exceptions pass through unchanged."""

import asyncio
import time

import pytest

from arena.core.call_timeout import within


async def _at_once() -> int:
    return 1


async def _raises() -> int:
    raise ValueError("bad box")


async def _sleeps(seconds: float, value: int = 2) -> int:
    await asyncio.sleep(seconds)
    return value


async def _yields(times: int) -> int:
    for _ in range(times):
        await asyncio.sleep(0)
    return times


async def _busy_then_sleeps() -> int:
    time.sleep(0.15)  # past the deadline before its first suspension
    await asyncio.sleep(0.01)
    return 4


async def _handles_its_cancellation() -> str:
    try:
        await asyncio.sleep(10)
    except asyncio.CancelledError:
        return "cleaned up"
    return "slept"


def test_results_and_exceptions_pass_through():
    async def main():
        assert await within(_at_once(), 1) == 1
        assert await within(_yields(5), 1) == 5
        assert await within(_sleeps(0.01), 1) == 2
        assert await within(asyncio.to_thread(lambda: 7), 1) == 7
        with pytest.raises(ValueError, match="bad box"):
            await within(_raises(), 1)
    asyncio.run(main())


def test_a_suspended_call_times_out_at_its_deadline():
    async def main():
        started = time.perf_counter()
        with pytest.raises(asyncio.TimeoutError):
            await within(_sleeps(5), 0.1)
        assert 0.08 < time.perf_counter() - started < 2
        with pytest.raises(asyncio.TimeoutError):  # the time spent before suspending counts
            await within(_busy_then_sleeps(), 0.1)
        assert await within(_handles_its_cancellation(), 0.05) == "cleaned up"
    asyncio.run(main())


def test_a_cancellation_from_outside_is_not_a_timeout():
    async def main():
        task = asyncio.ensure_future(within(_sleeps(5), 10))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    asyncio.run(main())


def test_an_awaitable_that_is_not_a_coroutine_is_awaited_under_the_timer():
    async def main():
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        loop.call_later(0.01, ready.set_result, 9)
        assert await within(ready, 1) == 9
        with pytest.raises(asyncio.TimeoutError):
            await within(loop.create_future(), 0.05)
    asyncio.run(main())
