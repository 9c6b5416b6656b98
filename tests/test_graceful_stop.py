"""SIGTERM: stop accepting, let running turns finish (up to shutdown_grace_s), keep partial answers,
checkpoint the WAL, exit 0."""
from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
from pathlib import Path
from typing import Any

import aiohttp

from tests.helpers.chat import make_agent, text_of
from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.process import ADMIN, ServerProcess


async def started(server: ServerProcess, session: aiohttp.ClientSession, llm: ScriptedOpenAI) -> tuple[ApiClient, str]:
    await server.start()
    api = ApiClient(server.url, session)
    r = await api.post("/api/v1/auth/login", {"username": ADMIN[0], "password": ADMIN[1]})
    api.tokens["admin"] = r.data["token"]
    await use_fake_openai(api, llm.url, token="admin")
    return api, await make_agent(api, token="admin")


def exit_code(server: ServerProcess, timeout: float = 20) -> int:
    assert server.proc is not None
    return server.proc.wait(timeout)


async def test_sigterm_mid_stream_lets_the_turn_finish_and_exits_0(tmp_path: Any, llm: ScriptedOpenAI) -> None:
    server = ServerProcess(str(tmp_path / "data"))
    async with aiohttp.ClientSession() as session:
        try:
            api, agent = await started(server, session, llm)
            llm.enqueue(Script(text=[f"w{i} " for i in range(20)], delay_s=0.05))
            stream = asyncio.create_task(api.sse("POST", "/api/v1/chat/stream", {
                "agentId": agent, "conversationId": "g1", "message": "go"}, token="admin"))
            await eventually(lambda: llm.requests, what="the turn's model call")
            await asyncio.sleep(0.2)
            assert server.proc is not None
            os.kill(server.proc.pid, signal.SIGTERM)
            events = await stream
            assert text_of(events) == "".join(f"w{i} " for i in range(20))
            assert events[-1].data["status"] == "completed"
            assert await asyncio.to_thread(exit_code, server) == 0
        finally:
            server.kill()
    db = Path(tmp_path / "data" / "platform.db")
    wal = Path(f"{db}-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT content, status FROM message WHERE role = 'assistant'").fetchall()
    assert rows == [("".join(f"w{i} " for i in range(20)), "completed")]


async def test_a_turn_longer_than_the_grace_is_stopped_with_its_partial_answer_kept(tmp_path: Any,
                                                                                   llm: ScriptedOpenAI) -> None:
    server = ServerProcess(str(tmp_path / "data"), env={"PLATFORM_SHUTDOWN_GRACE_S": "0.5"})
    async with aiohttp.ClientSession() as session:
        try:
            api, agent = await started(server, session, llm)
            llm.enqueue(Script(text=[f"w{i} " for i in range(400)], delay_s=0.05))
            stream = asyncio.create_task(api.sse("POST", "/api/v1/chat/stream", {
                "agentId": agent, "conversationId": "g2", "message": "go"}, token="admin"))
            await eventually(lambda: llm.requests, what="the turn's model call")
            await asyncio.sleep(0.3)
            assert server.proc is not None
            os.kill(server.proc.pid, signal.SIGTERM)
            events = await stream
            assert events[-1].data["status"] == "stopped"
            assert await asyncio.to_thread(exit_code, server) == 0
        finally:
            server.kill()
    with sqlite3.connect(Path(tmp_path / "data" / "platform.db")) as conn:
        content, status = conn.execute("SELECT content, status FROM message WHERE role = 'assistant'").fetchone()
    assert status == "stopped" and content.startswith("w0 w1 ") and len(content.split()) < 400
