"""A small realistic platform for console walks and screenshots: people, agents, answers, a pending approval."""
from __future__ import annotations

from typing import Any

from tests.helpers.chat import make_agent
from tests.helpers.fake_openai import Script, ScriptedOpenAI, ScriptedToolCall
from tests.helpers.models import use_fake_openai
from tests.helpers.server import RunningServer, drop_first_agent

PASSWORD = "password-123"


async def seed_console(server: RunningServer, llm: ScriptedOpenAI) -> dict[str, Any]:
    """Admin "ada" (token under "ada"), member bob, viewer carol, workspace Lab, two agents, three answered
    conversations, one write_file call waiting for approval, a custom guard rule and a grant."""
    client = server.client
    r = await client.post("/api/v1/setup/init", {"username": "ada", "password": PASSWORD, "nickname": "Ada"})
    assert r.status == 200, r.body
    login = r.data
    client.tokens["ada"] = login["token"]
    await drop_first_agent(client, "ada")  # the seed makes its own "Assistant"
    people = {}
    for name, role in (("bob", "member"), ("carol", "viewer")):
        u = (await client.post("/api/v1/auth/users", {"username": name, "password": PASSWORD, "nickname": name.title()}, token="ada")).data
        await client.put(f"/api/v1/workspaces/1/members/{u['id']}", {"role": role}, token="ada")
        people[name] = u
    await client.post("/api/v1/workspaces", {"name": "Lab", "description": "Experiments"}, token="ada")
    await use_fake_openai(client, llm.url, token="ada", provider_id="lan-llm", model="qwen2.5-7b-instruct")
    assistant = await make_agent(client, token="ada", name="Assistant", icon="🦉")
    researcher = await make_agent(client, token="ada", name="Researcher", icon="🔬")
    for agent, cid, text in ((assistant, "c-trip", "Plan a weekend in Lisbon"), (researcher, "c-sql", "Explain this SQL query"),
                             (assistant, "c-mail", "Draft a reply to the landlord")):
        llm.enqueue(Script(text="Sure, here is a first draft with the main points and a short summary at the end."))
        await client.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": cid, "message": text}, token="ada")
    llm.enqueue(Script(tool_calls=[ScriptedToolCall("write_file", {"path": "notes/meeting.md", "content": "# Meeting\n- budget"})]))
    await client.sse("POST", "/api/v1/chat/stream", {"agentId": assistant, "conversationId": "c-notes",
                                                     "message": "Save the meeting notes"}, token="ada")
    await client.post("/api/v1/security/guard/rules", {"name": "Block rm -rf", "toolName": "shell_exec",
                                                       "argumentPatterns": {"command": r"rm\s+-rf"}, "severity": "critical",
                                                       "decision": "deny"}, token="ada")
    await client.post("/api/v1/approval/grants", {"scopeType": "AGENT", "scopeId": researcher, "toolName": "web_fetch",
                                                  "maxSeverity": "medium", "grantKind": "ALWAYS", "note": "docs lookups"}, token="ada")
    return {"login": login, "people": people, "agents": [assistant, researcher]}
