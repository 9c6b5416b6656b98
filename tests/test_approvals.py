"""Approval in chat: a guarded tool call pauses the turn; `/approve` and `/deny` resume it."""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import aiohttp

from tests.helpers.chat import ChatEnv, make_agent, names, text_of
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script, ScriptedOpenAI, ScriptedToolCall
from tests.helpers.models import use_fake_openai
from tests.helpers.process import ServerProcess


def workspace_file(server: Any, agent_id: str, name: str) -> Path:
    return Path(server.config.data_dir) / "agents" / agent_id / "workspace" / name


def write_call(name: str = "note.txt", content: str = "hello") -> Script:
    return Script(tool_calls=[ScriptedToolCall("write_file", {"path": name, "content": content})])


async def test_write_file_asks_for_approval_and_approve_runs_it(env: ChatEnv, server: Any) -> None:
    env.llm.enqueue(write_call(), Script(text="Saved it."))
    events = await env.stream("save a note")
    assert names(events)[-3:] == ["tool_approval_requested", "message_complete", "done"]
    asked = next(e for e in events if e.event == "tool_approval_requested").data
    assert asked["toolName"] == "write_file" and asked["maxSeverity"] == "high" and asked["pendingId"]
    assert events[-1].data["status"] == "awaiting_approval"
    assert not workspace_file(server, env.agent_id, "note.txt").exists()
    pending = await env.api.get("/api/v1/chat/c1/pending-approvals", token="alice")
    if pending.status == 200:
        assert [p["pendingId"] for p in pending.data] == [asked["pendingId"]]
    resumed = await env.stream("/approve")
    seq = [n for n in names(resumed) if n != "phase"]
    assert seq[:3] == ["meta", "message_start", "tool_approval_resolved"]
    resolved = next(e for e in resumed if e.event == "tool_approval_resolved").data
    assert resolved == {"pendingId": asked["pendingId"], "toolName": "write_file", "decision": "approved"}
    completed = next(e for e in resumed if e.event == "tool_call_completed").data
    assert completed["success"] is True
    assert text_of(resumed) == "Saved it." and resumed[-1].data["status"] == "completed"
    assert workspace_file(server, env.agent_id, "note.txt").read_text() == "hello"
    history = env.llm.requests[-1]["messages"]
    assert [m["role"] for m in history][-3:] == ["user", "assistant", "tool"]
    assert all(m.get("content") != "/approve" for m in history)


async def test_an_approval_is_kept_on_its_stored_tool_call_pending_then_resolved(env: ChatEnv) -> None:
    env.llm.enqueue(write_call(), Script(text="Understood."), write_call("b.txt"), Script(text="Saved."))
    asked = next(e for e in await env.stream("save a note") if e.event == "tool_approval_requested").data
    call = (await env.messages())[1]["metadata"]["toolCalls"][0]
    assert call["approval"] == {"pendingId": asked["pendingId"], "reason": asked["reason"], "maxSeverity": "high", "decision": "pending"}
    await env.stream("/deny")
    msgs = await env.messages()
    assert msgs[1]["metadata"]["toolCalls"][0]["approval"]["decision"] == "denied"  # the history shows the card resolved
    assert msgs[2]["metadata"]["command"] == "denied"  # the command message is marked (the console shows no bubble)
    second = next(e for e in await env.stream("another") if e.event == "tool_approval_requested").data
    await env.stream("/approve")
    calls = [c for m in await env.messages() if m["role"] == "assistant" for c in (m["metadata"] or {}).get("toolCalls", [])]
    assert [(c["approval"]["pendingId"], c["approval"]["decision"]) for c in calls] == [
        (asked["pendingId"], "denied"),
        (second["pendingId"], "approved"),
    ]


async def test_deny_leaves_no_file_and_the_model_hears_it(env: ChatEnv, server: Any) -> None:
    env.llm.enqueue(write_call(), Script(text="Understood."))
    await env.stream("save a note")
    resumed = await env.stream("/deny")
    resolved = next(e for e in resumed if e.event == "tool_approval_resolved").data
    assert resolved["decision"] == "denied"
    completed = next(e for e in resumed if e.event == "tool_call_completed").data
    assert completed["success"] is False and "denied" in completed["result"]
    assert not workspace_file(server, env.agent_id, "note.txt").exists()
    assert resumed[-1].data["status"] == "completed"


async def test_approve_with_nothing_pending_says_so_without_calling_the_model(env: ChatEnv) -> None:
    events = await env.stream("/approve")
    assert "no tool call waiting" in text_of(events)
    assert env.llm.requests == []


async def test_another_users_approve_resolves_nothing(env: ChatEnv, server: Any) -> None:
    env.llm.enqueue(write_call())
    await env.stream("save a note")
    events = await env.stream("/approve", token="bob")
    assert names(events) == ["error"]
    assert not workspace_file(server, env.agent_id, "note.txt").exists()


async def test_stop_denies_what_is_pending(env: ChatEnv, server: Any) -> None:
    env.llm.enqueue(write_call(), Script(text="ok"))
    await env.stream("save a note")
    r = await env.api.post("/api/v1/chat/c1/stop", token="alice")
    assert r.data["stopped"] is True and r.data["deniedApprovals"] == 1
    events = await env.stream("/approve")
    assert "no tool call waiting" in text_of(events)
    assert not workspace_file(server, env.agent_id, "note.txt").exists()


async def test_a_new_message_supersedes_a_pending_call(env: ChatEnv, server: Any) -> None:
    env.llm.enqueue(write_call(), Script(text="fine, no file"))
    await env.stream("save a note")
    events = await env.stream("never mind")
    assert events[-1].data["status"] == "completed"
    sent = env.llm.requests[-1]["messages"]
    roles = [m["role"] for m in sent]
    assert roles[-4:] == ["user", "assistant", "tool", "user"]
    assert not workspace_file(server, env.agent_id, "note.txt").exists()


async def test_synchronous_chat_pauses_too(env: ChatEnv, server: Any) -> None:
    env.llm.enqueue(write_call())
    r = await env.api.post("/api/v1/chat", {"agentId": env.agent_id, "message": "save", "conversationId": "s1"},
                           token="alice")
    assert r.data["status"] == "awaiting_approval"
    assert not workspace_file(server, env.agent_id, "note.txt").exists()


async def test_a_pending_approval_survives_a_restart_and_can_still_be_approved(tmp_path: Any, llm: ScriptedOpenAI) -> None:
    data_dir = str(tmp_path / "data")
    session = aiohttp.ClientSession()
    first = ServerProcess(data_dir)
    await first.start()
    try:
        api = ApiClient(first.url, session)
        r = await api.post("/api/v1/auth/login", {"username": "admin", "password": "admin-pass-123"})
        api.tokens["alice"] = r.data["token"]
        await use_fake_openai(api, llm.url)
        agent = await make_agent(api)
        llm.enqueue(write_call("kept.txt", "survived"), Script(text="Done after restart."))
        events = await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "r1",
                                                                "message": "write it"}, token="alice")
        assert events[-1].data["status"] == "awaiting_approval"
        first.terminate()
        second = ServerProcess(data_dir)
        await second.start()
        try:
            api = ApiClient(second.url, session)
            r = await api.post("/api/v1/auth/login", {"username": "admin", "password": "admin-pass-123"})
            api.tokens["alice"] = r.data["token"]
            events = await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "r1",
                                                                    "message": "/approve"}, token="alice")
            assert text_of(events) == "Done after restart."
            assert (Path(data_dir) / "agents" / agent / "workspace" / "kept.txt").read_text() == "survived"
        finally:
            second.terminate()
    finally:
        first.kill()
        await session.close()


async def test_deleting_a_conversation_denies_its_pending_call(env: ChatEnv, server: Any) -> None:
    env.llm.enqueue(write_call())
    await env.stream("save a note")
    assert (await env.api.delete("/api/v1/conversations/c1", token="alice")).status == 200
    env.llm.enqueue(Script(text="fresh start"))
    events = await env.stream("/approve")
    assert "no tool call waiting" in text_of(events)


async def _grant(env: ChatEnv, **fields: Any) -> dict[str, Any]:
    body = {"scopeType": "CONVERSATION", "scopeId": "c1", "toolName": "write_file", "maxSeverity": "high",
            "grantKind": "ALWAYS", **fields}
    r = await env.api.post("/api/v1/approval/grants", body, token="alice")
    assert r.status == 200, r.body
    return r.data


async def test_a_grant_for_the_tool_in_the_conversation_lets_the_next_call_through(env: ChatEnv, server: Any) -> None:
    await env.stream("hello")  # the conversation exists before its grant
    grant = await _grant(env)
    env.llm.enqueue(write_call("granted.txt"), Script(text="Written."))
    events = await env.stream("save it")
    assert "tool_approval_requested" not in names(events) and events[-1].data["status"] == "completed"
    assert workspace_file(server, env.agent_id, "granted.txt").exists()
    log = await env.api.get("/api/v1/approval/resolutions", params={"grantId": grant["id"]}, token="alice")
    assert log.data["total"] == 1 and log.data["records"][0]["decision"] == "approved"
    env.llm.enqueue(write_call("other.txt"))
    events = await env.stream("save it", conversation_id="c2")
    assert "tool_approval_requested" in names(events)  # exact scope: another conversation still asks


async def test_a_revoked_or_expired_grant_asks_again(env: ChatEnv) -> None:
    await env.stream("hello")
    grant = await _grant(env)
    assert (await env.api.delete(f"/api/v1/approval/grants/{grant['id']}", token="alice")).status == 200
    env.llm.enqueue(write_call())
    assert "tool_approval_requested" in names(await env.stream("save it"))
    await env.stream("/deny")
    later = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=5)).isoformat()
    grant = await _grant(env, grantKind="UNTIL_TIMESTAMP", expireAt=later)
    from platform_server.features.guard.models import ApprovalGrant
    past = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) - dt.timedelta(seconds=1)
    ApprovalGrant.update(expire_at=past).where(ApprovalGrant.id == int(grant["id"])).execute()  # no sleeping
    env.llm.enqueue(write_call())
    assert "tool_approval_requested" in names(await env.stream("save it again"))


async def test_a_critical_rule_always_asks_even_with_a_grant(env: ChatEnv) -> None:
    r = await env.api.post("/api/v1/security/guard/rules", {
        "ruleId": "time-critical", "name": "time is critical", "toolName": "get_current_time",
        "severity": "critical", "decision": "ask"}, token="alice")
    assert r.status == 200, r.body
    await env.stream("hello")
    await _grant(env, toolName="get_current_time")
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("get_current_time", {})]))
    events = await env.stream("what time?")
    asked = next(e for e in events if e.event == "tool_approval_requested").data
    assert asked["maxSeverity"] == "critical"


async def test_a_custom_deny_rule_blocks_the_tool_on_the_synchronous_route_too(env: ChatEnv) -> None:
    r = await env.api.post("/api/v1/security/guard/rules", {
        "ruleId": "no-time", "name": "no clocks", "toolName": "get_current_time", "severity": "medium",
        "decision": "deny"}, token="alice")
    assert r.status == 200, r.body
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("get_current_time", {})]), Script(text="I may not."))
    r = await env.api.post("/api/v1/chat", {"agentId": env.agent_id, "message": "time?", "conversationId": "s1"},
                           token="alice")
    assert r.data["status"] == "completed"
    (call,) = r.data["toolCalls"]
    assert call["success"] is False and "Denied by the tool guard" in call["result"]
    logs = await env.api.get("/api/v1/security/audit/logs", params={"toolName": "get_current_time"}, token="alice")
    assert logs.data["records"][0]["decision"] == "deny"


async def test_the_inbox_route_lists_the_callers_pending_calls_across_conversations_and_nobody_elses(env: ChatEnv) -> None:
    env.llm.enqueue(write_call("a.txt"), write_call("b.txt"))
    await env.stream("save a", conversation_id="c-a")
    await env.stream("save b", conversation_id="c-b")
    r = await env.api.get("/api/v1/approval/pending", token="alice")
    assert r.status == 200, r.body
    assert [(p["conversationId"], p["toolName"], p["status"]) for p in r.data] == [
        ("c-a", "write_file", "pending"), ("c-b", "write_file", "pending")]
    assert r.data[0]["conversationTitle"] == "save a" and r.data[0]["source"] == "web"
    assert '"a.txt"' in r.data[0]["arguments"]
    assert (await env.api.get("/api/v1/approval/pending", token="bob")).data == []
    await env.stream("/approve", conversation_id="c-a")
    r = await env.api.get("/api/v1/approval/pending", token="alice")
    assert [p["conversationId"] for p in r.data] == ["c-b"]
    other = await env.api.get("/api/v1/approval/pending", token="dave", workspace=env.people["dave"]["workspace"])
    assert other.status == 200 and other.data == []
