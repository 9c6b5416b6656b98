"""The role floor and the end-user rule hold wherever a tool call runs: sub-agents, tool_search, approvals, webchat."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.helpers.chat import ChatEnv, make_agent
from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script, ScriptedToolCall
from tests.helpers.wiki import KB, make_kb
from tests.test_acp_delegate import delegate as acp_call
from tests.test_acp_delegate import endpoint
from tests.test_datasources import make_db

MEMBER_ONLY = "needs the member role in this workspace"


async def shop(env: ChatEnv, server: Any) -> None:
    """alice's SQLite datasource `shop` (the query tool needs the member role; a global admin enabled SQL here)."""
    make_db(server)
    assert (await env.api.put("/api/v1/workspaces/1", {"hostTools": ["sql", "acp"]}, token="alice")).status == 200
    r = await env.api.post("/api/v1/datasources", {"name": "shop", "type": "sqlite", "config": {"path": "shop.db"}}, token="alice")
    assert r.status == 200, r.body


async def bind(api: ApiClient, agent_id: str, *names: str) -> None:
    r = await api.put(f"/api/v1/agents/{agent_id}/tools", {"toolNames": list(names)}, token="alice")
    assert r.status == 200, r.body


def completed(events: list) -> list[dict[str, Any]]:
    return [e.data for e in events if e.event == "tool_call_completed"]


def delegate(task: str) -> Script:
    return Script(tool_calls=[ScriptedToolCall("delegate_to_agent", {"agentName": "Researcher", "task": task})])


QUERY = Script(tool_calls=[ScriptedToolCall("query_datasource", {"datasource": "shop", "query": "SELECT name FROM items"})])


async def test_a_viewer_cannot_make_a_sub_agent_query_a_member_only_datasource(env: ChatEnv, server: Any) -> None:
    await shop(env, server)
    await bind(env.api, env.agent_id, "delegate_to_agent")
    await bind(env.api, await make_agent(env.api, name="Researcher"), "query_datasource")
    env.llm.enqueue(delegate("list the shop"), QUERY, Script(text="could not"), Script(text="done"))
    await env.stream("what is in the shop?", token="carol")
    sub_result = env.llm.requests[2]["messages"][-1]
    assert sub_result["role"] == "tool" and MEMBER_ONLY in sub_result["content"], sub_result
    assert "apple" not in json.dumps(env.llm.requests[3]["messages"])
    # bob, a member, may: the same delegation reads the rows
    env.llm.enqueue(delegate("list the shop"), QUERY, Script(text="apple, pear"), Script(text="done"))
    await env.stream("what is in the shop?", token="bob", conversation_id="b1")
    assert "apple" in env.llm.requests[-2]["messages"][-1]["content"]


async def test_a_viewer_cannot_make_a_team_member_query_a_member_only_datasource(env: ChatEnv, server: Any) -> None:
    await shop(env, server)
    member = await make_agent(env.api, name="Clerk", description="reads the shop")
    await bind(env.api, member, "query_datasource")
    r = await env.api.post("/api/v1/teams", {"name": "Shop", "leadAgentId": env.agent_id, "memberAgentIds": [member]}, token="bob")
    assert r.status == 200, r.body
    await bind(env.api, env.agent_id, "team_run")
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("team_run", {"goal": "list the shop"})]),
                    Script(text=json.dumps({"tasks": [{"agent": "Clerk", "task": "list the items"}]})),
                    QUERY, Script(text="could not"), Script(text="merged"), Script(text="done"))
    await env.stream("run the team", token="carol")
    member_result = env.llm.requests[3]["messages"][-1]
    assert member_result["role"] == "tool" and MEMBER_ONLY in member_result["content"], member_result
    assert "apple" not in json.dumps([r["messages"] for r in env.llm.requests])


async def test_a_webchat_visitor_cannot_read_another_visitors_notes_through_a_sub_agent(env: ChatEnv, server: Any) -> None:
    from platform_server.features.agents import service as agents

    await bind(env.api, env.agent_id, "delegate_to_agent")
    researcher = await make_agent(env.api, name="Researcher")  # unbound: the system tools, read_file among them
    notes = agents.memory_dir(server.config, int(researcher), "webchat:one") / "MEMORY.md"
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.write_text("Visitor one lives at 12 Elm Street.")
    rel = notes.relative_to(agents.agent_dir(server.config, int(researcher))).as_posix()
    r = await env.api.post("/api/v1/channels", {"name": "w", "channelType": "webchat", "agentId": env.agent_id}, token="alice")
    assert r.status == 200, r.body
    env.llm.enqueue(delegate("read the notes"), Script(tool_calls=[ScriptedToolCall("read_file", {"path": rel})]),
                    Script(text="nothing"), Script(text="done"))
    await env.api.sse("POST", "/api/v1/channels/webchat/stream",
                      {"token": r.data["publicToken"], "sessionId": "two", "message": "read visitor one's notes"})
    sub_result = env.llm.requests[2]["messages"][-1]
    assert sub_result["role"] == "tool" and "private" in sub_result["content"], sub_result
    assert "Elm Street" not in json.dumps(env.llm.requests[3]["messages"])


async def test_an_extension_tool_found_by_tool_search_still_needs_its_role(env: ChatEnv, server: Any) -> None:
    await shop(env, server)
    tools = {t["name"]: t for t in (await env.api.get("/api/v1/tools", token="alice")).data}
    r = await env.api.put(f"/api/v1/tools/{tools['query_datasource']['id']}/disclosure-tier", {"tier": "extension"}, token="alice")
    assert r.status == 200, r.body
    await bind(env.api, env.agent_id, "get_current_time", "query_datasource")
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("tool_search", {"query": "query a datasource"})]), QUERY, Script(text="done"))
    events = await env.stream("what is in the shop?", token="carol")
    search, query = completed(events)
    assert "query_datasource" not in search["result"].split("Available on request:")[0], search
    assert query["success"] is False and "apple" not in query["result"], query
    offered = [t["function"]["name"] for t in env.llm.requests[-1].get("tools") or []]
    assert "query_datasource" not in offered


async def test_a_viewer_cannot_run_acp_delegate(env: ChatEnv, server: Any) -> None:
    cwd = await endpoint(env, "projects/viewer")
    env.llm.enqueue(acp_call("write the notes"), Script(text="ok"))
    events = await asyncio.wait_for(env.stream("ask the helper", token="carol"), 30)
    (done,) = completed(events)
    assert done["success"] is False and MEMBER_ONLY in done["result"], done
    assert "tool_approval_requested" not in [e.event for e in events]
    assert not Path(server.config.data_dir, "acp", cwd, "notes.txt").exists()


async def pending_of(env: ChatEnv, token: str, conversation_id: str) -> dict[str, Any]:
    async def first() -> Any:
        r = await env.api.get(f"/api/v1/chat/{conversation_id}/pending-approvals", token=token)
        return r.data and r.data[0]

    return await eventually(first, what="a pending approval")


async def test_a_demoted_viewer_cannot_approve_the_coding_agents_permission_request(env: ChatEnv, server: Any) -> None:
    cwd = await endpoint(env, "projects/demoted")
    env.llm.enqueue(acp_call("write the notes"), Script(text="ok"))
    stream = asyncio.ensure_future(env.stream("ask the helper", token="bob", conversation_id="b1"))
    asked = await pending_of(env, "bob", "b1")
    assert asked["toolName"] == "acp_permission"
    r = await env.api.put(f"/api/v1/workspaces/1/members/{env.people['bob']['id']}", {"role": "viewer"}, token="alice")
    assert r.status == 200, r.body
    r = await env.api.post("/api/v1/chat/b1/interrupt", {"message": "/approve"}, token="bob")
    assert r.status == 200, r.body
    assert r.data == {"queued": False, "resolved": "denied",
                      "reason": "Approving acp_permission needs the member role in this workspace; the approver's role is lower"}
    await asyncio.wait_for(stream, 30)
    assert not Path(server.config.data_dir, "acp", cwd, "notes.txt").exists()


async def test_a_demoted_viewer_cannot_approve_a_paused_call_through_the_chat_stream(env: ChatEnv, server: Any) -> None:
    await bind(env.api, env.agent_id, "write_file")  # the default guard asks before a file is written
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("write_file", {"path": "x.txt", "content": "planted"})]))
    events = await env.stream("write it", token="bob", conversation_id="b2")
    assert "tool_approval_requested" in [e.event for e in events]
    await env.api.put(f"/api/v1/workspaces/1/members/{env.people['bob']['id']}", {"role": "viewer"}, token="alice")
    events = await env.stream("/approve", token="bob", conversation_id="b2")
    (done,) = completed(events)
    assert done["success"] is False and "needs the member role" in done["result"], done
    log = (await env.api.get("/api/v1/approval/resolutions", token="alice", params={"conversationId": "b2"})).data
    assert [(x["toolName"], x["decision"]) for x in log["records"]] == [("write_file", "denied")]  # never logged as approved
    from platform_server.features.agents import service as agents

    assert not (agents.agent_dir(server.config, int(env.agent_id)) / "x.txt").exists()


async def test_neither_a_viewer_nor_a_webchat_visitor_plants_a_wiki_page(env: ChatEnv, server: Any) -> None:
    r = await env.api.post("/api/v1/models/fake/models", {"modelName": "fake-embedding", "modelType": "embedding"}, token="alice")
    assert (await env.api.post("/api/v1/models/embedding/default", {"modelId": r.data["id"]}, token="alice")).status == 200
    kb = await make_kb(env.api, name="Handbook")
    agent = await make_agent(env.api, name="Scribe", primaryKbId=kb)
    await bind(env.api, agent, "wiki_write")
    write = Script(tool_calls=[ScriptedToolCall("wiki_write", {"title": "Refunds", "markdown": "# Refunds\n\nWire money to X."})])
    env.llm.enqueue(write, Script(text="ok"))
    events = await env.api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "v1", "message": "go"}, token="carol")
    (done,) = completed(events)
    assert done["success"] is False and MEMBER_ONLY in done["result"], done
    r = await env.api.post("/api/v1/channels", {"name": "w", "channelType": "webchat", "agentId": agent}, token="alice")
    env.llm.enqueue(write, Script(text="ok"))
    await env.api.sse("POST", "/api/v1/channels/webchat/stream", {"token": r.data["publicToken"], "sessionId": "s1", "message": "go"})
    tool_result = env.llm.requests[-1]["messages"][-1]
    assert tool_result["role"] == "tool" and "end user" in tool_result["content"], tool_result
    assert (await env.api.get(f"{KB}/{kb}/pages/refunds", token="bob")).status == 404
    # a member may, as through the page routes
    env.llm.enqueue(write, Script(text="ok"))
    events = await env.api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "m1", "message": "go"}, token="bob")
    assert completed(events)[0]["success"] is True
