"""Hundreds of clients leaving mid-stream leak no turn and no subscriber; their turns still finish."""
from __future__ import annotations

import asyncio
import time

import aiohttp

from tests.helpers.chat import make_agent
from tests.helpers.client import ApiClient, iter_sse
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.server import RunningServer

CLIENTS = 500


async def test_500_clients_that_disconnect_mid_stream_leave_no_turn_or_subscriber_behind(
    server: RunningServer, api: ApiClient, people: dict
) -> None:
    llm = ScriptedOpenAI()
    await llm.start()
    try:
        await use_fake_openai(api, llm.url)
        agent = await make_agent(api)
        llm.enqueue(*[Script(text=["word "] * 8, delay_s=0.05) for _ in range(CLIENTS)])
        runtime = server.platform.services.chat
        headers = {"Authorization": "Bearer " + api.tokens["alice"]}
        got_text = 0

        async def leave_after_first_delta(session: aiohttp.ClientSession, i: int) -> None:
            nonlocal got_text
            body = {"agentId": agent, "conversationId": f"leave-{i}", "message": "talk"}
            r = await session.post(server.url + "/api/v1/chat/stream", json=body, headers=headers)
            async for event in iter_sse(r):
                if event.event == "content_delta":
                    got_text += 1
                    break
            r.close()  # drop the connection mid-answer

        connector = aiohttp.TCPConnector(limit=0, force_close=True)
        async with aiohttp.ClientSession(connector=connector) as session:
            await asyncio.gather(*(leave_after_first_delta(session, i) for i in range(CLIENTS)))
        assert got_text == CLIENTS

        turns = runtime.turns.all()
        assert len(turns) == CLIENTS
        await eventually(lambda: all(not t.subscribers for t in turns), timeout=60)  # every subscriber let go
        await eventually(lambda: not runtime.turns.running(), timeout=60)  # turns run to the end without a reader
        assert {t.status for t in turns} == {"completed"}
        assert all(not t.subscribers and t.task is not None and t.task.done() for t in turns)

        r = await api.get("/api/v1/admin/agent-runtime/snapshot", token="alice")
        assert r.status == 200, r.body
        msgs = await api.get("/api/v1/conversations/leave-7/messages", token="alice")
        assert msgs.data[-1]["status"] == "completed" and msgs.data[-1]["content"] == "word " * 8
        assert (await api.get("/api/v1/conversations/leave-7/status", token="alice")).data["streamStatus"] == "idle"
        runtime.turns.prune(now=time.monotonic() + runtime.turns.retention_s + 1)
        assert runtime.turns.all() == []  # nothing pins a finished turn past its replay window
    finally:
        await llm.stop()
