"""Per-endpoint admission limits: at most `max_parallel` requests in flight and at most
`requests_per_minute` started in any 60-second window, per model endpoint (base URL).

Limits are keyed by base URL; the key `"*"` applies to every endpoint without its own
entry. Agents are wrapped by `LimitedAgent` (one agent turn is one model request);
judges' calls go through the same gate on the driver. The Ray backend shares one gate
between all workers through a Ray actor (`arena.runs.backends.ray_backend`).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any, Awaitable, Callable, Protocol

from arena.core.agent import Agent, AgentTurn, EpisodeView, Prompting
from arena.core.task import RequestLayout

from .config import EndpointLimit


class Gate(Protocol):
    def slot(self, endpoint: str | None) -> Any:
        """Async context manager holding one request slot of `endpoint` (None: unlimited)."""


class SlidingWindow:
    """Admits at most `per_minute` starts in any `period` seconds (clock and sleep injectable for tests)."""

    def __init__(self, per_minute: float, *, period: float = 60.0,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep):
        self.capacity = max(1, int(per_minute * period / 60.0))
        self.period = period
        self.clock, self.sleep = clock, sleep
        self.starts: deque[float] = deque()
        self._lock = asyncio.Lock()

    async def admit(self) -> None:
        async with self._lock:
            while True:
                now = self.clock()
                while self.starts and self.starts[0] <= now - self.period:
                    self.starts.popleft()
                if len(self.starts) < self.capacity:
                    self.starts.append(now)
                    return
                await self.sleep(self.starts[0] + self.period - now)


def endpoint_limit(limits: dict[str, EndpointLimit], endpoint: str | None) -> EndpointLimit | None:
    """The limit of `limits` that applies to `endpoint` (its URL with or without a trailing slash, else "*"); None:
    no limit, and every gate (`EndpointGate`, its worker and Ray stand-ins) lets the endpoint's calls through."""
    if endpoint is None or not limits:  # (a run without limits, the common case: no lookups per call)
        return None
    return limits.get(endpoint.rstrip("/")) or limits.get(endpoint) or limits.get("*")


class EndpointGate:
    """In-process gate: one semaphore and one sliding window per limited endpoint."""

    def __init__(self, limits: dict[str, EndpointLimit], **window_options: Any):
        self.limits = limits
        self.window_options = window_options
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._windows: dict[str, SlidingWindow] = {}

    def limit_for(self, endpoint: str | None) -> EndpointLimit | None:
        return endpoint_limit(self.limits, endpoint)

    async def acquire(self, endpoint: str | None) -> None:
        limit = self.limit_for(endpoint)
        if limit is None or endpoint is None:
            return
        if limit.max_parallel:
            slots = self._slots.setdefault(endpoint, asyncio.Semaphore(limit.max_parallel))
            await slots.acquire()
        if limit.requests_per_minute:
            window = self._windows.get(endpoint)
            if window is None:
                window = self._windows[endpoint] = SlidingWindow(limit.requests_per_minute, **self.window_options)
            try:
                await window.admit()
            except BaseException:
                self.release(endpoint)
                raise

    def release(self, endpoint: str | None) -> None:
        if endpoint is not None and endpoint in self._slots:
            self._slots[endpoint].release()

    def slot(self, endpoint: str | None) -> "_Slot":
        return _Slot(self, endpoint)


class _Slot:
    """`EndpointGate.slot`: one request slot of an endpoint, held from entry to exit (a class rather than a generator
    context manager: one is entered for every model call)."""

    __slots__ = ("gate", "endpoint")

    def __init__(self, gate: EndpointGate, endpoint: str | None):
        self.gate, self.endpoint = gate, endpoint

    async def __aenter__(self) -> None:
        await self.gate.acquire(self.endpoint)

    async def __aexit__(self, *exc_info: Any) -> None:
        self.gate.release(self.endpoint)


class RunSlots:
    """The run's `--concurrency` slots, each free slot handed to a waiting judging before a waiting episode: a finished
    episode is judged (and shown by the progress) while the run goes on, instead of queueing behind every episode
    not yet started (a FIFO semaphore made the first verdicts wait for the last wave)."""

    def __init__(self, size: int):
        self.size = self.free = size
        self._judging: deque[asyncio.Future[None]] = deque()
        self._playing: deque[asyncio.Future[None]] = deque()

    def slot(self, judging: bool = False) -> "_RunSlot":
        """An async context manager holding one slot from entry to exit (a judging is handed a free slot first)."""
        return _RunSlot(self, judging)

    def idle(self) -> bool:
        """True when no slot is held and none is awaited: nothing plays or judges, nothing waits to (a waiter
        cancelled but not yet passed over still counts: False is the safe answer)."""
        return self.free == self.size and not self._judging and not self._playing

    async def acquire(self, judging: bool) -> None:
        """Take a free slot, or wait to be handed one."""
        if self.free > 0:
            self.free -= 1
            return
        waiter = asyncio.get_running_loop().create_future()
        (self._judging if judging else self._playing).append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed a slot as it was cancelled: pass it on
            raise

    def release(self) -> None:
        """Hand the slot to the first waiting judging, else the first waiting episode, else free it."""
        for waiting in (self._judging, self._playing):
            while waiting:
                waiter = waiting.popleft()
                if not waiter.done():
                    waiter.set_result(None)
                    return
        self.free += 1


class _RunSlot:
    """`RunSlots.slot`: one slot, held from entry to exit (a class rather than a generator context manager: one is
    entered for every episode and judging)."""

    __slots__ = ("slots", "judging")

    def __init__(self, slots: RunSlots, judging: bool):
        self.slots, self.judging = slots, judging

    async def __aenter__(self) -> None:
        await self.slots.acquire(self.judging)

    async def __aexit__(self, *exc_info: Any) -> None:
        self.slots.release()


def endpoint_of(options: dict[str, Any]) -> str | None:
    """The endpoint an agent or judge calls, from its factory options (None: it calls no model)."""
    url = options.get("base_url")
    return str(url).rstrip("/") if url else None


class LimitedAgent(Agent):
    """An agent whose turns pass through a gate; everything else is the wrapped agent's (an agent whose endpoint has
    no limit needs no wrapper: every gate lets its turns through, `endpoint_limit`)."""

    def __init__(self, inner: Agent, gate: Gate, endpoint: str | None):
        self.inner, self.gate, self.endpoint = inner, gate, endpoint
        self.id = inner.id
        self.text_protocol = inner.text_protocol

    async def act(self, view: EpisodeView) -> AgentTurn:
        async with self.gate.slot(self.endpoint):
            return await self.inner.act(view)

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def learned_limits(self) -> dict[str, Any]:
        return self.inner.learned_limits()

    def learned_version(self) -> Any:
        return self.inner.learned_version()

    def apply_limits(self, limits: dict[str, Any]) -> None:
        self.inner.apply_limits(limits)

    def prompt_templates(self, prompting: Prompting, layout: RequestLayout, tools: bool,
                         final_turn: bool) -> list[str]:
        return self.inner.prompt_templates(prompting, layout, tools, final_turn)

    async def aclose(self) -> None:
        await self.inner.aclose()
