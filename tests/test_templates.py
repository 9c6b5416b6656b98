"""Agent templates: the seeded presets and creating an agent from one."""
from __future__ import annotations

from pathlib import Path

from platform_server.features.agents import service as agents
from platform_server.features.templates import service as templates
from tests.helpers.client import ApiClient
from tests.helpers.server import RunningServer


async def test_templates_are_seeded_and_listed_for_viewers(api: ApiClient, people: dict) -> None:
    r = await api.get("/api/v1/templates", token="carol")
    assert r.status == 200
    names = [t["name"] for t in r.data]
    assert names == ["General assistant", "Coder", "Researcher", "Writer", "Planner"]
    planner = next(t for t in r.data if t["name"] == "Planner")
    assert planner["agentType"] == "plan_execute" and planner["id"] == "1005"
    assert all(t["id"].isdigit() and t["systemPrompt"] for t in r.data)
    templates.seed()  # idempotent
    assert len((await api.get("/api/v1/templates", token="carol")).data) == 5


async def test_apply_creates_an_agent_in_the_callers_workspace(api: ApiClient, server: RunningServer, people: dict) -> None:
    r = await api.post("/api/v1/templates/1002/apply", token="bob")
    assert r.status == 200, r.body
    a = r.data
    assert a["name"] == "Coder" and a["workspaceId"] == "1" and a["creatorUserId"] == people["bob"]["id"]
    assert a["templateId"] == "1002" and a["maxIterations"] == 25 and a["defaultThinkingLevel"] == "medium"
    tools = await api.get(f"/api/v1/agents/{a['id']}/tools", token="bob")
    assert [t["toolName"] for t in tools.data] == ["list_files", "read_file", "write_file", "shell_exec"]
    prompt_files = await api.get(f"/api/v1/agents/{a['id']}/workspace/prompt-files", token="bob")
    assert prompt_files.data["files"] == ["AGENTS.md"]
    md = await api.get(f"/api/v1/agents/{a['id']}/workspace/files/AGENTS.md", token="bob")
    assert md.status == 200 and b"Working agreement" in md.raw
    row = agents.get_agent(agents_caller(a), int(a["id"]))
    assert "Working agreement" in agents.system_prompt(server.config, row)
    ws = people["dave"]["workspace"]
    r = await api.post("/api/v1/templates/1005/apply", {"name": "  My plan  "}, token="dave", workspace=ws)
    assert r.status == 200 and r.data["name"] == "My plan" and r.data["workspaceId"] == ws
    assert r.data["agentType"] == "plan_execute"
    assert [x["id"] for x in (await api.get("/api/v1/agents", token="dave", workspace=ws)).data] == [r.data["id"]]
    assert Path(server.config.data_dir, "agents", r.data["id"], "workspace").is_dir()


def agents_caller(agent: dict):  # type: ignore[no-untyped-def]
    from platform_server.web.context import Caller, Principal

    return Caller(Principal(int(agent["creatorUserId"]), "x", "user", "jwt"), int(agent["workspaceId"]), "member")


async def test_apply_needs_member_and_an_existing_template(api: ApiClient, people: dict) -> None:
    assert (await api.post("/api/v1/templates/1001/apply", token="carol")).status == 403
    r = await api.post("/api/v1/templates/999/apply", token="bob")
    assert r.status == 404 and r.body["msg"] == "Template not found"
    assert (await api.post("/api/v1/templates/abc/apply", token="bob")).status == 400
    r = await api.post("/api/v1/templates/1001/apply", {"name": "x" * 101}, token="bob")
    assert r.status == 400 and r.body["msg"].startswith("name: ")
    r = await api.post("/api/v1/templates/1001/apply", {"name": ""}, token="bob")
    assert r.status == 200 and r.data["name"] == "General assistant"
    events = await api.get("/api/v1/audit/events", token="alice", params={"resourceType": "AGENT", "action": "CREATE"})
    created = [e["resourceId"] for e in events.data["records"]]
    assert created.count(r.data["id"]) == 1 and len(created) == 2  # the apply's, beside setup's first agent
