"""Who may approve a guarded tool call: the conversation's owner (console/API), a channel's approverIds, nobody else."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.chat import ChatEnv, names, text_of
from tests.helpers.cron import make_job, scheduler
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script, ScriptedToolCall
from tests.helpers.server import RunningServer


def workspace_file(server: Any, agent_id: str, name: str) -> Path:
    return Path(server.config.data_dir) / "agents" / agent_id / "workspace" / name


def write_call(name: str = "note.txt", content: str = "hello") -> Script:
    return Script(tool_calls=[ScriptedToolCall("write_file", {"path": name, "content": content})])


async def settle(server: RunningServer) -> None:
    """Wait until every chat turn of the process has finished."""
    runtime = server.platform.services.chat
    await eventually(lambda: not runtime.turns.running(), interval=0.01, what="every turn ended")


async def make_channel(env: ChatEnv, kind: str, **settings: Any) -> dict[str, Any]:
    """A webchat, or a Telegram channel (im_e) whose answers go nowhere: these tests look at what was approved."""
    body = {"name": f"my {kind}", "channelType": kind, "agentId": env.agent_id, "settings": settings}
    if kind != "webchat":
        body["settings"] = {"botToken": "123:abc", "apiBaseUrl": "https://example.invalid", **settings}
    r = await env.api.post("/api/v1/channels", body, token="alice")
    assert r.status == 200, r.body
    return r.data


async def inbound(env: ChatEnv, channel: dict[str, Any], sender: str, text: str, message_id: str) -> None:
    """A Telegram update (message_id doubles as update_id) carrying the webhook's secret token."""
    update = {"update_id": int(message_id[1:]), "message": {"message_id": int(message_id[1:]), "date": int(time.time()), "text": text,
                                                             "chat": {"id": int(sender), "type": "private"},
                                                             "from": {"id": int(sender), "is_bot": False, "first_name": "X"}}}
    headers = {"Content-Type": "application/json", "X-Telegram-Bot-Api-Secret-Token": channel["secret"]}
    r = await env.api.post(channel["webhookUrl"], data=json.dumps(update).encode(), headers=headers)
    assert r.status == 200 and r.data["accepted"] is True, r.body


async def test_a_webchat_visitors_approve_is_ordinary_text_and_the_call_waits_for_the_owner(
        env: ChatEnv, server: RunningServer) -> None:
    from platform_server.features.channels.models import Channel
    from platform_server.features.channels.runtime import conversation_id_for

    channel = await make_channel(env, "webchat")
    env.llm.enqueue(write_call(), Script(text="Saved it."))
    start = {"token": channel["publicToken"], "sessionId": "s1"}
    first = await env.api.sse("POST", "/api/v1/channels/webchat/stream", {**start, "message": "save a note"})
    assert first[-1].data["status"] == "awaiting_approval"
    visitor = await env.api.sse("POST", "/api/v1/channels/webchat/stream", {**start, "message": "/approve"})
    assert "tool_approval_resolved" not in names(visitor)
    assert "waiting for the owner" in text_of(visitor)
    assert not workspace_file(server, env.agent_id, "note.txt").exists()
    cid = conversation_id_for(Channel.get_by_id(int(channel["id"])), "s1", prefix="wc")
    pending = await env.api.get(f"/api/v1/chat/{cid}/pending-approvals", token="alice")
    assert pending.status == 200 and len(pending.data) == 1, pending.body
    owner = await env.stream("/approve", conversation_id=cid, endUserId="webchat:s1")
    assert "tool_approval_resolved" in names(owner)
    assert workspace_file(server, env.agent_id, "note.txt").read_text() == "hello"


async def test_a_channel_approve_counts_only_from_the_channels_approver_ids(env: ChatEnv, server: RunningServer) -> None:
    channel = await make_channel(env, "im_e", approverIds=["2002"])
    env.llm.enqueue(write_call())
    await inbound(env, channel, "1001", "save a note", "m1")
    await settle(server)
    await inbound(env, channel, "1001", "/approve", "m2")
    await settle(server)
    assert not workspace_file(server, env.agent_id, "note.txt").exists()
    env.llm.enqueue(write_call("boss.txt", "by the boss"), Script(text="Saved it."))
    await inbound(env, channel, "2002", "save a note", "m3")
    await settle(server)
    assert not workspace_file(server, env.agent_id, "boss.txt").exists()
    await inbound(env, channel, "2002", "/approve", "m4")
    await settle(server)
    assert workspace_file(server, env.agent_id, "boss.txt").read_text() == "by the boss"


async def test_a_channel_without_approver_ids_lets_nobody_approve_by_text(env: ChatEnv, server: RunningServer) -> None:
    channel = await make_channel(env, "im_e")
    env.llm.enqueue(write_call())
    await inbound(env, channel, "1001", "save a note", "m1")
    await settle(server)
    await inbound(env, channel, "1001", "/approve", "m2")
    await settle(server)
    assert not workspace_file(server, env.agent_id, "note.txt").exists()


async def test_a_cron_message_saying_approve_in_the_owners_conversation_approves_nothing(
        env: ChatEnv, server: RunningServer) -> None:
    env.llm.enqueue(write_call())
    events = await env.stream("save a note", conversation_id="daily")
    assert events[-1].data["status"] == "awaiting_approval"
    job = await make_job(env.api, env.agent_id, message="/approve", conversationMode="fixed", conversationId="daily")
    await env.api.post(f"/api/v1/cron-jobs/{job['id']}/run", token="alice")
    await scheduler(server).drain()
    assert not workspace_file(server, env.agent_id, "note.txt").exists()
    pending = await env.api.get("/api/v1/chat/daily/pending-approvals", token="alice")
    assert len(pending.data) == 1


@pytest.mark.config(shell_exec_enabled=True)
@pytest.mark.parametrize("tool", ["write_file", "shell_exec"])
async def test_a_viewer_is_neither_offered_nor_allowed_to_approve_a_tool_her_role_may_not_use(
        env: ChatEnv, server: RunningServer, tool: str) -> None:
    args = {"path": "v.txt", "content": "by carol"} if tool == "write_file" else {"command": "echo hi > v.txt"}
    assert (await env.api.put("/api/v1/workspaces/1", {"hostTools": ["shell"]}, token="alice")).status == 200
    bound = await env.api.put(f"/api/v1/agents/{env.agent_id}/tools",
                              {"toolNames": ["read_file", "write_file", "shell_exec"]}, token="alice")
    assert bound.status == 200, bound.body
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall(tool, args)]), Script(text="ok"))
    events = await env.stream("write it", token="carol", conversation_id="v1")
    offered = [t["function"]["name"] for t in env.llm.requests[0].get("tools", [])]
    assert tool not in offered and "read_file" in offered
    assert "tool_approval_requested" not in names(events)
    completed = next(e for e in events if e.event == "tool_call_completed").data
    assert completed["success"] is False and "member" in completed["result"]
    assert not workspace_file(server, env.agent_id, "v.txt").exists()


async def test_a_member_demoted_to_viewer_cannot_approve_her_earlier_call(
        env: ChatEnv, server: RunningServer) -> None:
    env.llm.enqueue(write_call("b.txt", "by bob"), Script(text="ok"))
    events = await env.stream("write it", token="bob", conversation_id="b1")
    assert events[-1].data["status"] == "awaiting_approval"
    r = await env.api.put(f"/api/v1/workspaces/1/members/{env.people['bob']['id']}", {"role": "viewer"}, token="alice")
    assert r.status == 200, r.body
    resumed = await env.stream("/approve", token="bob", conversation_id="b1")
    completed = next(e for e in resumed if e.event == "tool_call_completed").data
    assert completed["success"] is False and "member" in completed["result"]
    assert not workspace_file(server, env.agent_id, "b.txt").exists()


W = "/api/v1/workflows"


async def paused_tool_run(env: ChatEnv, token: str) -> dict[str, Any]:
    graph = {"nodes": [{"id": "start", "type": "start", "config": {}},
                       {"id": "w", "type": "agent", "config": {"agentId": env.agent_id, "message": "write it"}},
                       {"id": "end", "type": "end", "config": {}}],
             "edges": [{"from": "start", "to": "w"}, {"from": "w", "to": "end"}]}
    wid = (await env.api.post(W, {"name": "Flow"}, token="alice")).data["id"]
    assert (await env.api.put(f"{W}/{wid}/draft", {"graph": graph}, token="alice")).status == 200
    assert (await env.api.post(f"{W}/{wid}/publish", token="alice")).status == 200
    env.llm.enqueue(write_call("wf.txt", "from the flow"), Script(text="Written."))
    r = await env.api.post(f"{W}/{wid}/runs", {"input": {}}, token=token)
    assert r.status == 200, r.body

    async def paused() -> Any:
        run = (await env.api.get(f"{W}/runs/{r.data['id']}", token="alice")).data
        return run["status"] != "running" and run

    return await eventually(paused, what="the run paused")


async def test_only_the_starter_or_an_admin_resumes_a_run_paused_at_a_tool_approval(
        env: ChatEnv, server: RunningServer) -> None:
    run = await paused_tool_run(env, "alice")
    assert run["status"] == "paused", run
    path = f"{W}/runs/{run['id']}"
    assert (await env.api.get(path, token="carol")).data["pauseToken"] is None
    assert (await env.api.get(path, token="bob")).data["pauseToken"] is None
    assert all(p["pauseToken"] is None for p in (await env.api.get(f"{W}/runs/paused", token="bob")).data)
    token = (await env.api.get(path, token="alice")).data["pauseToken"]
    assert token
    forbidden = await env.api.post(f"{path}/resume", {"outcome": "approved", "pauseToken": token}, token="bob")
    assert forbidden.status == 403, forbidden.body
    missing = await env.api.post(f"{path}/resume", {"outcome": "approved"}, token="alice")
    assert missing.status == 409, missing.body  # no token is not the current pause's (the document's field is optional)
    assert not workspace_file(server, env.agent_id, "wf.txt").exists()
    ok = await env.api.post(f"{path}/resume", {"outcome": "approved", "pauseToken": token}, token="alice")
    assert ok.status == 200, ok.body


async def test_the_starter_sees_the_pause_token_of_her_own_run_and_resumes_it(
        env: ChatEnv, server: RunningServer) -> None:
    run = await paused_tool_run(env, "bob")
    path = f"{W}/runs/{run['id']}"
    token = (await env.api.get(path, token="bob")).data["pauseToken"]
    assert token
    ok = await env.api.post(f"{path}/resume", {"outcome": "approved", "pauseToken": token}, token="bob")
    assert ok.status == 200, ok.body


async def test_approver_ids_must_be_a_list_of_sender_ids(env: ChatEnv) -> None:
    body = {"name": "bad", "channelType": "im_a", "agentId": env.agent_id, "replyUrl": "https://example.invalid/r",
            "settings": {"approverIds": "boss@im"}}
    r = await env.api.post("/api/v1/channels", body, token="alice")
    assert r.status == 400 and "approverIds" in r.body["msg"], r.body


async def test_an_event_whose_text_says_approve_in_the_owners_conversation_approves_nothing(
        env: ChatEnv, server: RunningServer) -> None:
    env.llm.enqueue(write_call())
    events = await env.stream("save a note", conversation_id="ops")
    assert events[-1].data["status"] == "awaiting_approval"
    r = await env.api.post("/api/v1/triggers", {
        "name": "Relay", "agentId": env.agent_id, "type": "event", "eventType": "chat.relay",
        "message": "{{event.text}}", "conversationMode": "fixed", "conversationId": "ops"}, token="alice")
    assert r.status == 200, r.body
    fired = await env.api.post("/api/v1/triggers/events", {"type": "chat.relay", "payload": {"text": "/approve"}},
                               token="alice")
    assert fired.status == 200 and fired.data[0]["fired"] is True, fired.body
    await scheduler(server).drain()
    assert not workspace_file(server, env.agent_id, "note.txt").exists()
    assert len((await env.api.get("/api/v1/chat/ops/pending-approvals", token="alice")).data) == 1
