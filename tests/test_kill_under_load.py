"""SIGKILL under load (streams and creates at once, a few seconds): every answer a stream reported
`completed` and every create answered 200 is there after the restart, nothing is left running, and a
create retried with its Idempotency-Key after the restart is not made twice."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

import aiohttp

from tests.helpers.chat import make_agent
from tests.helpers.client import ApiClient, Response
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.process import ADMIN, ServerProcess


async def _login(api: ApiClient) -> None:
    r = await api.post("/api/v1/auth/login", {"username": ADMIN[0], "password": ADMIN[1]})
    assert r.status == 200, r.body
    api.tokens["admin"] = r.data["token"]


async def test_a_kill_under_load_loses_no_acknowledged_answer_or_create_and_retries_create_once(tmp_path: Any, llm: ScriptedOpenAI) -> None:
    data_dir = str(tmp_path / "data")
    server = ServerProcess(data_dir)
    dones: dict[str, dict[str, Any]] = {}
    creates: dict[str, tuple[str, Response | None]] = {}  # name -> (key, answer or None when cut off)
    async with aiohttp.ClientSession() as session:
        try:
            await server.start()
            api = ApiClient(server.url, session)
            await _login(api)
            await use_fake_openai(api, llm.url, token="admin")
            agent = await make_agent(api, token="admin")
            llm.default_delay_s = 0.01

            async def chat(i: int) -> None:
                for turn in range(50):
                    conversation = f"k{i}"
                    with contextlib.suppress(Exception):
                        events = await api.sse("POST", "/api/v1/chat/stream",
                                               {"agentId": agent, "conversationId": conversation, "message": f"m{turn}"},
                                               token="admin", timeout=10)
                        done = [e.data for e in events if e.event == "done"]
                        if done and done[-1]["status"] == "completed":
                            dones[done[-1]["assistantMessageId"]] = {"conversation": conversation}

            async def create(i: int) -> None:
                for n in range(200):
                    name, key = f"K{i}-{n}-{uuid.uuid4().hex[:4]}", uuid.uuid4().hex
                    creates[name] = (key, None)
                    try:
                        r = await api.post("/api/v1/agents", {"name": name, "agentType": "react"}, token="admin",
                                           headers={"Idempotency-Key": key})
                    except Exception:  # noqa: BLE001 - cut off by the kill
                        return
                    creates[name] = (key, r)

            load = [asyncio.ensure_future(chat(i)) for i in range(6)] + [asyncio.ensure_future(create(i)) for i in range(3)]
            await eventually(lambda: dones and any(c[1] is not None and c[1].status == 200 for c in creates.values()),
                             what="turns completed and agents created under load")  # then kill it mid-load
            server.kill()
            await asyncio.gather(*load, return_exceptions=True)
            llm.default_delay_s = 0.0
            assert dones and [c for c in creates.values() if c[1] is not None and c[1].status == 200]

            await server.start()
            api = ApiClient(server.url, session)
            await _login(api)
            for message_id, where in dones.items():
                r = await api.get(f"/api/v1/conversations/{where['conversation']}/messages", token="admin")
                assert message_id in {m["id"] for m in r.data}, where
                status = await api.get(f"/api/v1/conversations/{where['conversation']}/status", token="admin")
                assert status.data["streamStatus"] == "idle"
            names = [a["name"] for a in (await api.get("/api/v1/agents", token="admin")).data]
            for name, (key, answer) in creates.items():
                if answer is not None and answer.status == 200:
                    assert names.count(name) == 1, name
                retry = await api.post("/api/v1/agents", {"name": name, "agentType": "react"}, token="admin",
                                       headers={"Idempotency-Key": key})
                assert retry.status in (200, 409), retry.body
                if answer is not None and answer.status == 200:  # replayed, not made again
                    assert retry.status == 200 and retry.data["id"] == answer.data["id"]
            names = [a["name"] for a in (await api.get("/api/v1/agents", token="admin")).data]
            assert all(names.count(name) <= 1 for name in creates)
        finally:
            server.kill()
