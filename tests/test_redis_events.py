"""The event bus on Redis (`redis_url`, ports/redis_events.py) as one process sees it: a server started on
Redis stops promptly, whatever its control channel was doing (skipped without redis-server)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tests.helpers.chat import chat_env, text_of
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.redis_server import redis_url  # noqa: F401  (the fixture)
from tests.helpers.server import create_personas, start_server

STOP_BUDGET_S = 20.0  # a stop takes well under a second; the old hang lasted until pytest's timeout


async def stop_within_budget(running: Any) -> float:
    started = time.monotonic()
    await asyncio.wait_for(running.stop(), STOP_BUDGET_S)
    return time.monotonic() - started


async def test_a_server_on_redis_stops_promptly_right_after_its_start(tmp_path: Any, redis_url: str) -> None:  # noqa: F811
    """The control channel's pub/sub read swallowed the stop's cancel: the stop waited on it forever (the
    PostgreSQL + Redis suite hung in a test that starts a server and stops it at once)."""
    for attempt in range(3):
        running = await start_server(str(tmp_path / f"data{attempt}"), redis_url=redis_url)
        assert await stop_within_budget(running) < STOP_BUDGET_S


async def test_a_server_on_redis_that_ran_a_turn_stops_promptly_and_its_stream_is_closed_in_redis(
    tmp_path: Any, redis_url: str, llm: ScriptedOpenAI  # noqa: F811
) -> None:
    import redis

    running = await start_server(str(tmp_path / "data"), redis_url=redis_url)
    try:
        env = await chat_env(running.client, await create_personas(running.client), llm)
        llm.enqueue(Script(text="hello there"))
        events = await env.stream("hi", conversation_id="c-redis")
        assert text_of(events) == "hello there"
    finally:
        assert await stop_within_budget(running) < STOP_BUDGET_S
    with redis.Redis.from_url(redis_url) as client:
        streams = client.keys("ev:chat-turn:*")
        assert streams and all(b"end" in client.xrange(key)[-1][1] for key in streams)  # closed for other processes
        assert client.keys("owner:*") == []  # no lease outlives the process that stopped
