"""Rate limits on Redis (`redis_url`, issue 31): several processes share one budget per webchat widget."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from platform_server.features.channels.webchat_limits import RedisWebchatLimiter
from platform_server.web.errors import TooManyRequests
from tests.helpers.chat import chat_env
from tests.helpers.redis_server import redis_url  # noqa: F401  (the fixture)
from tests.helpers.server import create_personas, start_server
from tests.test_channels import make_channel

CONFIG = "/api/v1/channels/webchat/config"


async def test_two_limiters_on_one_redis_share_one_budget_and_refusals_do_not_count(redis_url: str) -> None:  # noqa: F811
    a, b = RedisWebchatLimiter(redis_url, 3, 0), RedisWebchatLimiter(redis_url, 3, 0)
    try:
        await a.check(7, "10.0.0.1")
        await b.check(7, "10.0.0.1")
        await a.check(7, "10.0.0.1")
        for limiter in (a, b, b):  # full: each process refuses, and the refusals add nothing
            with pytest.raises(TooManyRequests, match=r"Too many webchat requests, try again in (59|60) s"):
                await limiter.check(7, "10.0.0.1")
        await b.check(7, "10.0.0.2")  # another address of the same widget has its own window
        await a.check(8, "10.0.0.1")  # and so has another widget
    finally:
        await a.windows.close()
        await b.windows.close()


async def test_two_limiters_racing_for_the_last_slots_admit_exactly_the_cap(redis_url: str) -> None:  # noqa: F811
    limiters = [RedisWebchatLimiter(redis_url, 0, 5) for _ in range(2)]

    async def one(i: int) -> bool:
        try:
            await limiters[i % 2].check(1, f"10.0.0.{i}")
        except TooManyRequests:
            return False
        return True

    try:
        results = await asyncio.gather(*(one(i) for i in range(40)))
        assert sum(results) == 5  # the per-token cap, counted atomically across both
    finally:
        for limiter in limiters:
            await limiter.windows.close()


async def test_a_server_with_redis_url_counts_webchat_requests_in_redis(redis_url: str, tmp_path: Any, llm: Any) -> None:  # noqa: F811
    running = await start_server(str(tmp_path / "data"), redis_url=redis_url, webchat_rate_per_address=4)
    try:
        env = await chat_env(running.client, await create_personas(running.client), llm)
        channel = await make_channel(env, "webchat")
        token = channel["publicToken"]
        assert (await env.api.get(CONFIG, params={"token": token})).status == 200
        # Another process spends two of this address's four requests on the same widget.
        other = RedisWebchatLimiter(redis_url, 4, 0)
        try:
            await other.check(int(channel["id"]), "127.0.0.1")
            await other.check(int(channel["id"]), "127.0.0.1")
        finally:
            await other.windows.close()
        assert (await env.api.get(CONFIG, params={"token": token})).status == 200
        r = await env.api.get(CONFIG, params={"token": token})
        assert r.status == 429 and r.body["code"] == 429 and r.msg.startswith("Too many webchat requests"), r.body
    finally:
        await running.stop()
