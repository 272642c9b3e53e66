"""The request fields an endpoint refused are run state (`arena.endpoints.client.LearnedParams`), not a process
global: a run's refusals shape only its own requests, two runs in one process keep theirs apart, and code outside a
run (a worker process playing one run) shares the process's."""

from __future__ import annotations

import asyncio

from arena.endpoints.client import (Endpoint, EndpointConfig, LearnedParams, ParamRefusal, learned_params,
                                    restore_params, use_params)

CONFIG = EndpointConfig(base_url="http://127.0.0.1:9/v1", model="m", max_tokens=64)


def refused(field: str, rename: str | None = None) -> dict[str, dict[str, object]]:
    return {field: ParamRefusal(field, rename, 64, "unsupported").as_dict()}


def test_two_runs_in_one_process_keep_their_refusals_apart() -> None:
    endpoint = Endpoint(CONFIG)
    where = CONFIG.where()

    async def one_run(recorded: dict[str, dict[str, object]]) -> tuple[dict, dict]:
        use_params(LearnedParams({where: recorded}))
        await asyncio.sleep(0)  # the other run installs its own meanwhile
        return learned_params(), endpoint.params([{"role": "user", "content": "hi"}])

    async def both():
        return await asyncio.gather(one_run(refused("max_tokens", "max_completion_tokens")),
                                    one_run(refused("max_tokens")))

    (renamed_state, renamed), (dropped_state, dropped) = asyncio.run(both())
    assert renamed["max_completion_tokens"] == 64 and "max_tokens" not in renamed
    assert "max_tokens" not in dropped and "max_completion_tokens" not in dropped
    assert renamed_state[where]["max_tokens"]["rename"] == "max_completion_tokens"
    assert dropped_state[where]["max_tokens"]["rename"] is None
    assert endpoint.params([])["max_tokens"] == 64  # outside both runs: nothing was learned


def test_outside_a_run_refusals_are_the_process_s() -> None:
    where = "http://127.0.0.1:9/v1 other"

    async def worker() -> dict:
        return learned_params()  # no run installed its own: the process's

    restore_params({where: refused("temperature")})
    assert asyncio.run(worker())[where]["temperature"]["said"] == "unsupported"
