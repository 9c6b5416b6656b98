"""Rate limits on Redis (`redis_url`, issue 31): several processes share one budget per webchat widget and one login lockout."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from platform_server.features.auth.limits import RedisLoginLimiter
from platform_server.features.channels.webchat_limits import RedisWebchatLimiter
from platform_server.web.errors import TooManyRequests
from tests.helpers.chat import chat_env
from tests.helpers.redis_server import redis_url  # noqa: F401  (the fixture)
from tests.helpers.server import PASSWORD, create_personas, start_server
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


# ---- logins ------------------------------------------------------------------------------------------------


async def test_two_login_limiters_on_one_redis_lock_a_pair_and_an_address_together(redis_url: str) -> None:  # noqa: F811
    a, b = RedisLoginLimiter(redis_url, 3, 5, 300), RedisLoginLimiter(redis_url, 3, 5, 300)
    try:
        assert await a.before_login("bob", "10.0.0.1") == 0
        await a.failed_login("bob", "10.0.0.1")
        await b.failed_login("Bob", "10.0.0.1")  # usernames count case-insensitively
        assert await b.before_login("bob", "10.0.0.1") == 0
        await a.failed_login("bob", "10.0.0.1")  # the third failure, counted by another process
        for limiter in (a, b):
            with pytest.raises(TooManyRequests, match="Too many failed login attempts"):
                await limiter.before_login("bob", "10.0.0.1")
        assert await b.before_login("bob", "10.0.0.2") == 0.5  # the real user's own address gets in, slowed
        await b.failed_login("carol", "10.0.0.1")
        await a.failed_login("dave", "10.0.0.1")  # the address's fifth failure, over both processes
        with pytest.raises(TooManyRequests):
            await b.before_login("erin", "10.0.0.1")
    finally:
        await a.close()
        await b.close()


async def test_a_username_guessed_through_two_processes_slows_down_and_the_right_password_resets_it(redis_url: str) -> None:  # noqa: F811
    a, b = RedisLoginLimiter(redis_url, 5, 50, 300), RedisLoginLimiter(redis_url, 5, 50, 300)
    try:
        waits = []
        for i in range(8):
            await (a if i % 2 else b).failed_login("alice", f"10.0.1.{i}")
            waits.append(await a.before_login("alice", "192.168.1.1"))  # never a lockout of the username itself
        assert waits == [0, 0, 0, 0, 0.5, 1.0, 2.0, 4.0]
        await b.succeeded_login("alice", "192.168.1.1")
        assert await a.before_login("alice", "192.168.1.1") == 0
    finally:
        await a.close()
        await b.close()


@pytest.mark.parametrize("shared", [True, False])
async def test_a_server_with_redis_url_refuses_logins_another_process_locked(redis_url: str, tmp_path: Any, shared: bool) -> None:  # noqa: F811
    extra = {"redis_url": redis_url if shared else ""}  # "" also under PLATFORM_TEST_REDIS=1
    running = await start_server(str(tmp_path / "data"), login_max_failures_per_user=2, **extra)
    other = RedisLoginLimiter(redis_url, 2, 50, 300)
    try:
        await create_personas(running.client)
        for _ in range(2):  # another process saw two wrong passwords for bob from this address
            await other.failed_login("bob", "127.0.0.1")
        r = await running.client.post("/api/v1/auth/login", {"username": "bob", "password": PASSWORD})
        # With redis_url the lock is this process's too; without it each process counts alone.
        assert r.status == (429 if shared else 200), r.body
    finally:
        await other.close()
        await running.stop()
