"""Crash safety: a SIGKILL mid-answer loses nothing that was accepted and leaves nothing running."""
from __future__ import annotations

import os
import sqlite3
from typing import Any

import aiohttp

from tests.helpers.chat import make_agent
from tests.helpers.client import ApiClient, iter_sse
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.process import ADMIN, ServerProcess
from tests.test_skill_install import GOOD_ZIP, Site, site  # noqa: F401 - a local site whose /slow.zip waits to be released


async def _login(api: ApiClient) -> None:
    r = await api.post("/api/v1/auth/login", {"username": ADMIN[0], "password": ADMIN[1]})
    assert r.status == 200, r.body
    api.tokens["alice"] = r.data["token"]


async def test_a_server_killed_mid_answer_restarts_with_the_user_message_kept_and_the_conversation_idle(tmp_path: Any) -> None:
    llm = ScriptedOpenAI()
    await llm.start()
    data_dir = str(tmp_path / "data")
    server = ServerProcess(data_dir)
    await server.start()
    session = aiohttp.ClientSession()
    try:
        api = ApiClient(server.url, session)
        await _login(api)
        await use_fake_openai(api, llm.url)
        agent = await make_agent(api)
        llm.enqueue(Script(text=[f"part{i} " for i in range(400)], delay_s=0.02))
        r = await session.post(server.url + "/api/v1/chat/stream",
                               json={"agentId": agent, "conversationId": "crash", "message": "tell me a long story"},
                               headers={"Authorization": "Bearer " + api.tokens["alice"]})
        deltas, last_id = 0, 0
        async for ev in iter_sse(r):
            last_id = ev.id or last_id
            deltas += ev.event == "content_delta"
            if deltas >= 40:
                break
        server.kill()
        r.close()

        restarted = ServerProcess(data_dir)
        await restarted.start()
        try:
            api = ApiClient(restarted.url, session)
            await _login(api)
            status = await api.get("/api/v1/conversations/crash/status", token="alice")
            assert status.data["streamStatus"] == "idle"
            msgs = (await api.get("/api/v1/conversations/crash/messages", token="alice")).data
            assert msgs[0]["role"] == "user" and msgs[0]["content"] == "tell me a long story"
            assert msgs[1]["role"] == "assistant" and msgs[1]["status"] == "failed"
            assert msgs[1]["content"].startswith("part0 part1")
            llm.enqueue(Script(text="after the crash"))
            events = await api.sse("POST", "/api/v1/chat/stream",
                                   {"agentId": agent, "conversationId": "crash", "message": "still there?"}, token="alice")
            assert events[-1].data["status"] == "completed"
            assert min(e.id for e in events if e.id) > last_id
        finally:
            restarted.terminate()
        with sqlite3.connect(os.path.join(data_dir, "platform.db")) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        server.kill()
        await session.close()
        await llm.stop()


async def test_a_message_queued_behind_an_answer_is_kept_when_the_server_is_killed(tmp_path: Any) -> None:
    """A follow-up accepted for the running turn (`queued: true`) was held only in the process's memory: a SIGKILL
    lost it. It is stored when accepted, and the restart keeps it as the conversation's message after the failed
    answer (as a paused turn keeps its queue); the conversation takes a new turn."""
    llm = ScriptedOpenAI()
    await llm.start()
    data_dir = str(tmp_path / "data")
    server = ServerProcess(data_dir)
    await server.start()
    session = aiohttp.ClientSession()
    try:
        api = ApiClient(server.url, session)
        await _login(api)
        await use_fake_openai(api, llm.url)
        agent = await make_agent(api)
        llm.enqueue(Script(text=[f"part{i} " for i in range(400)], delay_s=0.02))
        r = await session.post(server.url + "/api/v1/chat/stream",
                               json={"agentId": agent, "conversationId": "queued", "message": "tell me a long story"},
                               headers={"Authorization": "Bearer " + api.tokens["alice"]})
        async for ev in iter_sse(r):
            if ev.event == "content_delta":
                break
        q = await api.post("/api/v1/chat/queued/interrupt", {"message": "and then what?"}, token="alice")
        assert q.status == 200 and q.data == {"queued": True, "queueSize": 1}, q.body
        server.kill()
        r.close()

        restarted = ServerProcess(data_dir)
        await restarted.start()
        try:
            api = ApiClient(restarted.url, session)
            await _login(api)
            msgs = (await api.get("/api/v1/conversations/queued/messages", token="alice")).data
            # the story, its half-written answer (when a partial save came before the kill), then the queued message
            assert [m["content"] for m in msgs if m["role"] == "user"] == ["tell me a long story", "and then what?"], msgs
            assert msgs[-1]["content"] == "and then what?" and all(m["status"] == "failed" for m in msgs if m["role"] == "assistant")
            llm.enqueue(Script(text="after the crash"))
            events = await api.sse("POST", "/api/v1/chat/stream",
                                   {"agentId": agent, "conversationId": "queued", "message": "still there?"}, token="alice")
            assert events[-1].data["status"] == "completed"
            msgs = (await api.get("/api/v1/conversations/queued/messages", token="alice")).data
            assert [m["content"] for m in msgs if m["role"] == "user"] == ["tell me a long story", "and then what?", "still there?"]
        finally:
            restarted.terminate()
    finally:
        server.kill()
        await session.close()
        await llm.stop()


async def test_a_skill_install_running_when_the_server_is_killed_reads_failed_after_the_restart(tmp_path: Any, site: Site) -> None:  # noqa: F811
    """An install task lived in the process's memory: after a SIGKILL its status answered 404. It is stored, and
    the restart fails it, saying why."""
    site.served["/slow.zip"] = GOOD_ZIP
    data_dir = str(tmp_path / "data")
    env = {"PLATFORM_WEB_FETCH_ALLOW_HOSTS": "127.0.0.1"}
    server = ServerProcess(data_dir, env=env)
    await server.start()
    session = aiohttp.ClientSession()
    try:
        api = ApiClient(server.url, session)
        await _login(api)
        r = await api.post("/api/v1/skills/install/start", {"url": site.base + "/slow.zip"}, token="alice")
        assert r.status == 200, r.body
        await eventually(lambda: "/slow.zip" in site.hits, what="the download")
        server.kill()
        restarted = ServerProcess(data_dir, env=env)
        await restarted.start()
        try:
            api = ApiClient(restarted.url, session)
            await _login(api)
            status = await api.get(f"/api/v1/skills/install/status/{r.data['taskId']}", token="alice")
            assert status.status == 200, status.body
            assert (status.data["status"], status.data["message"]) == ("failed", "Interrupted: the process running it stopped")
        finally:
            restarted.terminate()
    finally:
        server.kill()
        await session.close()
