"""ACP delegation: an agent hands a task to an ACP endpoint, sees its progress, relays its permission requests."""
from __future__ import annotations

import asyncio
import os
import pathlib
import sys
from typing import Any

from tests.helpers.chat import ChatEnv
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script, ScriptedToolCall

AGENT = str(pathlib.Path(__file__).resolve().parent / "helpers" / "acp_agent.py")


async def endpoint(env: ChatEnv, cwd: str = "projects/acp1") -> str:
    body = {"name": "helper", "displayName": "Helper", "command": sys.executable, "args": [AGENT], "cwd": cwd}
    r = await env.api.post("/api/v1/acp/endpoints", body, token="alice")
    assert r.status == 200, r.body
    assert (await env.api.put(f"/api/v1/acp/endpoints/{r.data['id']}/toggle", {"enabled": True},
                              token="alice")).status == 200
    r = await env.api.put("/api/v1/workspaces/1", {"hostTools": ["acp"]}, token="alice")  # a global admin enables it
    assert r.status == 200, r.body
    r = await env.api.put(f"/api/v1/agents/{env.agent_id}/tools", {"toolNames": ["acp_delegate"]}, token="alice")
    assert r.status == 200, r.body
    return "1/" + cwd  # the endpoint's folder for workspace 1, under <data_dir>/acp


def delegate(task: str) -> Script:
    return Script(tool_calls=[ScriptedToolCall("acp_delegate", {"endpoint": "helper", "task": task})])


async def pending(env: ChatEnv, conversation_id: str = "c1") -> dict[str, Any]:
    async def first() -> Any:
        r = await env.api.get(f"/api/v1/chat/{conversation_id}/pending-approvals", token="alice")
        return r.data and r.data[0]

    return await eventually(first, what="a pending approval")


async def test_the_acp_tool_returns_the_agents_answer_after_its_permission_request_was_approved(
    env: ChatEnv, server: Any
) -> None:
    cwd = await endpoint(env)
    env.llm.enqueue(delegate("write the notes"), Script(text="The helper says 42."))
    stream = asyncio.ensure_future(env.stream("ask the helper"))
    asked = await pending(env)
    assert asked["toolName"] == "acp_permission" and "Write notes.txt" in asked["arguments"]
    r = await env.api.post("/api/v1/chat/c1/interrupt", {"message": "/approve"}, token="alice")
    assert r.data == {"queued": False, "resolved": "approved"}
    events = await asyncio.wait_for(stream, 30)
    assert events[-1].data["status"] == "completed"
    done = next(e for e in events if e.event == "tool_call_completed").data
    assert done["success"] is True and "Done (allowed): the answer is 42." in done["result"]
    progress = [e.data for e in events if e.event == "tool_progress"]
    kinds = [p["kind"] for p in progress]
    assert kinds[0] == "started" and "agent_message_chunk" in kinds and "tool_call" in kinds and kinds[-1] == "finished"
    assert any(p["kind"] == "permission" and p["decision"] == "allowed" for p in progress)
    names = [e.event for e in events]
    assert names.index("tool_approval_requested") < names.index("tool_approval_resolved") < names.index(
        "tool_call_completed")
    notes = pathlib.Path(server.config.data_dir, "acp", cwd, "notes.txt")
    assert notes.read_text() == "write the notes"
    log = (await env.api.get("/api/v1/approval/resolutions", token="alice", params={"conversationId": "c1"})).data
    assert [(x["toolName"], x["decision"]) for x in log["records"]] == [("acp_permission", "approved")]


async def test_a_denied_permission_request_is_refused_to_the_agent(env: ChatEnv, server: Any) -> None:
    cwd = await endpoint(env, "projects/acp2")
    env.llm.enqueue(delegate("write the notes"), Script(text="Refused."))
    stream = asyncio.ensure_future(env.stream("ask the helper"))
    await pending(env)
    r = await env.api.post("/api/v1/chat/c1/interrupt", {"message": "/deny"}, token="alice")
    assert r.data == {"queued": False, "resolved": "denied"}
    events = await asyncio.wait_for(stream, 30)
    done = next(e for e in events if e.event == "tool_call_completed").data
    assert "Done (refused)" in done["result"]
    assert not pathlib.Path(server.config.data_dir, "acp", cwd, "notes.txt").exists()


async def test_stopping_the_turn_cancels_the_acp_session(env: ChatEnv, server: Any) -> None:
    cwd = await endpoint(env, "projects/acp3")
    env.llm.enqueue(delegate("please wait for me"))
    stream = asyncio.ensure_future(env.stream("ask the helper"))
    runtime = server.platform.services.chat

    def started() -> bool:
        turn = next(iter(runtime.turns.running()), None)
        return bool(turn and any(e.name == "tool_progress" and e.data.get("kind") == "agent_message_chunk"
                                 for e in turn.events))

    await eventually(started, what="the agent's first message chunk")
    r = await env.api.post("/api/v1/chat/c1/stop", token="alice")
    assert r.data["stopped"] is True
    events = await asyncio.wait_for(stream, 30)
    assert events[-1].data["status"] == "stopped"
    assert pathlib.Path(server.config.data_dir, "acp", cwd, "acp-cancelled").read_text() == "please wait for me"


async def test_each_workspace_has_its_own_acp_folder_and_the_agent_runs_sandboxed(env: ChatEnv, server: Any) -> None:
    cwd = await endpoint(env, "projects/shared")
    dave_ws = env.people["dave"]["workspace"]
    mine = pathlib.Path(server.config.data_dir, "acp", cwd)
    other = pathlib.Path(server.config.data_dir, "acp", dave_ws, "projects", "shared")
    other.mkdir(parents=True)
    (other / "notes.txt").write_text("dave's workspace notes")
    env.llm.enqueue(delegate("write the notes"), Script(text="ok"))
    stream = asyncio.ensure_future(env.stream("ask the helper"))
    await pending(env)
    await env.api.post("/api/v1/chat/c1/interrupt", {"message": "/approve"}, token="alice")
    events = await asyncio.wait_for(stream, 30)
    assert (mine / "notes.txt").read_text() == "write the notes"
    assert (other / "notes.txt").read_text() == "dave's workspace notes"  # another workspace's folder is untouched
    assert events[-1].data["status"] == "completed"
    if os.geteuid() == 0:  # written by the sandbox's uid, not the server's
        assert (mine / "notes.txt").stat().st_uid == server.config.sandbox_uid != os.geteuid()


async def test_acp_delegate_is_refused_where_no_global_admin_enabled_it(env: ChatEnv, server: Any) -> None:
    await endpoint(env, "projects/off")
    assert (await env.api.put("/api/v1/workspaces/1", {"hostTools": []}, token="alice")).status == 200
    env.llm.enqueue(delegate("write the notes"), Script(text="ok"))
    events = await env.stream("ask the helper")
    done = next(e for e in events if e.event == "tool_call_completed").data
    assert done["success"] is False and "not enabled in this workspace" in done["result"]
    assert not pathlib.Path(server.config.data_dir, "acp", "1", "projects", "off", "notes.txt").exists()
