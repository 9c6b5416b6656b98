"""Delegation to another agent through `delegate_to_agent`: result, guard, active list, interrupt, pause."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.helpers.chat import ChatEnv, chat_env, make_agent, names, text_of
from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script, ScriptedOpenAI, ScriptedToolCall


@pytest.fixture
async def env(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> ChatEnv:
    e = await chat_env(api, people, llm, name="Lead")
    r = await api.put(f"/api/v1/agents/{e.agent_id}/tools", {"toolNames": ["delegate_to_agent"]}, token="alice")
    assert r.status == 200, r.body
    await make_agent(api, name="Researcher", systemPrompt="You research.")
    return e


def delegate(task: str = "find the answer") -> Script:
    return Script(tool_calls=[ScriptedToolCall("delegate_to_agent", {"agentName": "Researcher", "task": task})])


async def test_a_delegated_task_returns_the_other_agents_answer(env: ChatEnv) -> None:
    env.llm.enqueue(delegate(), Script(text="42, says the researcher"), Script(text="The answer is 42."))
    events = await env.stream("what is the answer?")
    completed = next(e for e in events if e.event == "tool_call_completed").data
    assert completed["success"] is True and completed["result"] == "42, says the researcher"
    phases = [e.data for e in events if e.event == "phase" and e.data.get("phase") == "subagent"]
    assert [p["status"] for p in phases] == ["started", "completed"] and phases[0]["agentName"] == "Researcher"
    assert text_of(events) == "The answer is 42."
    sub_request = env.llm.requests[1]["messages"]
    assert sub_request[0]["content"] == "You research." and sub_request[-1]["content"] == "find the answer"


async def running_subagents(env: ChatEnv) -> Any:
    active = await env.api.get("/api/v1/subagents/active", params={"conversationId": "c1"}, token="alice")
    return active.data and active


async def test_a_running_sub_agent_is_listed_and_can_be_interrupted_by_the_owner_only(env: ChatEnv) -> None:
    env.llm.enqueue(delegate(), Script(hang=True), Script(text="carried on"))
    stream = asyncio.ensure_future(env.stream("go"))
    active = await eventually(lambda: running_subagents(env), what="a running sub-agent")
    assert active.data[0]["agentName"] == "Researcher" and active.data[0]["status"] == "running"
    sid = active.data[0]["subagentId"]
    assert (await env.api.get("/api/v1/subagents/active", params={"conversationId": "c1"}, token="bob")).status == 403
    assert (await env.api.post(f"/api/v1/subagents/{sid}/interrupt", token="bob")).status == 403
    r = await env.api.post(f"/api/v1/subagents/{sid}/interrupt", token="alice")
    assert r.data == {"subagentId": sid, "interrupted": True}
    events = await stream
    completed = next(e for e in events if e.event == "tool_call_completed").data
    assert completed["success"] is False and "interrupted" in completed["result"]
    assert text_of(events) == "carried on"


async def test_spawn_pause_refuses_new_delegations(env: ChatEnv) -> None:
    r = await env.api.post("/api/v1/subagents/spawn-pause", {"conversationId": "c1", "paused": True}, token="alice")
    assert r.data == {"conversationId": "c1", "paused": True}
    audit = await env.api.get("/api/v1/audit/events?resourceType=SUBAGENT_SPAWN_PAUSE", token="alice")
    assert [(e["resourceId"], e["detail"]) for e in audit.data["records"]] == [("c1", "paused=True")]
    env.llm.enqueue(delegate(), Script(text="ok"))
    events = await env.stream("go")
    completed = next(e for e in events if e.event == "tool_call_completed").data
    assert completed["success"] is False and "paused" in completed["result"]


async def test_a_sub_agent_cannot_run_a_tool_that_needs_approval(env: ChatEnv, api: ApiClient) -> None:
    env.llm.enqueue(delegate("write a file"),
                    Script(tool_calls=[ScriptedToolCall("write_file", {"path": "x.txt", "content": "x"})]),
                    Script(text="could not write"), Script(text="done"))
    events = await env.stream("go")
    assert "tool_approval_requested" not in names(events)
    sub_tool_result = env.llm.requests[2]["messages"][-1]
    assert sub_tool_result["role"] == "tool" and "approval" in sub_tool_result["content"]


async def test_admins_can_interrupt_any_sub_agent(env: ChatEnv) -> None:
    env.llm.enqueue(delegate(), Script(hang=True), Script(text="after"))
    stream = asyncio.ensure_future(env.stream("go", token="alice"))
    active = await eventually(lambda: running_subagents(env), what="a running sub-agent")
    sid = active.data[0]["subagentId"]
    assert (await env.api.post(f"/api/v1/admin/agent-runtime/subagents/{sid}/interrupt", token="bob")).status == 403
    r = await env.api.post(f"/api/v1/admin/agent-runtime/subagents/{sid}/interrupt", token="alice")
    assert r.data["interrupted"] is True
    await stream


async def test_the_active_list_states_the_conversation_id_rule_it_checks(env: ChatEnv) -> None:
    """`conversationId` was any string, then a blank one (or one with spaces around, read stripped) a 400 or another
    conversation's list: it states the one conversationId pattern and is checked as sent."""
    doc = (await env.api.get("/v3/api-docs")).body
    param = doc["paths"]["/api/v1/subagents/active"]["get"]["parameters"][0]
    assert param["name"] == "conversationId" and "pattern" in param["schema"]
    for value in (" c1", "c1 ", "a@b", " "):
        r = await env.api.get("/api/v1/subagents/active", params={"conversationId": value}, token="alice")
        assert r.status == 400 and r.msg.startswith("conversationId: "), (value, r.body)
