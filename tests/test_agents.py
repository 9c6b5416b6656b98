"""Agents: CRUD scoped to the workspace, delete permissions, validation, bindings, preferences."""
from __future__ import annotations

from typing import Any

from platform_server.features.agents import service
from tests.helpers.client import ApiClient
from tests.helpers.openapi_inputs import conforms
from tests.helpers.server import RunningServer

AGENTS = "/api/v1/agents"



def tool_names(rows: list[dict]) -> list[str]:
    return [r["toolName"] for r in rows]


def skill_ids(rows: list[dict]) -> list[str]:
    return [r["skillId"] for r in rows]

async def make_agent(api: ApiClient, token: str = "bob", **fields: Any) -> dict[str, Any]:
    body = {"name": "Helper", **fields}
    r = await api.post(AGENTS, body, token=token)
    assert r.status == 200, r.body
    return r.data


async def test_create_injects_workspace_and_creator_and_returns_the_full_entity(api: ApiClient, people: dict) -> None:
    r = await api.post(
        AGENTS,
        {
            "id": "42", "name": "  Coder ", "workspaceId": "999", "creatorUserId": people["alice"]["id"],
            "agentType": "plan_execute", "systemPrompt": "Be brief.", "modelName": "openai/gpt-4o",
            "modelProvider": "openai", "maxIterations": 25, "icon": "🤖", "tags": "code, dev ,,",
            "defaultThinkingLevel": "high", "primaryKbId": "123", "skillsDisabled": True,
        },
        token="bob",
    )
    assert r.status == 200, r.body
    a = r.data
    assert a["id"] != "42" and a["id"].isdigit()
    assert a["workspaceId"] == "1" and a["creatorUserId"] == people["bob"]["id"]
    assert a["name"] == "Coder" and a["agentType"] == "plan_execute" and a["maxIterations"] == 25
    assert a["tags"] == "code,dev" and a["icon"] == "🤖" and a["defaultThinkingLevel"] == "high"
    assert a["primaryKbId"] == "123" and a["skillsDisabled"] is True and a["toolsDisabled"] is False
    assert a["enabled"] is True and a["modelName"] == "openai/gpt-4o" and a["modelProvider"] == "openai"
    assert a["createTime"].endswith("Z") and a["updateTime"].endswith("Z")
    got = await api.get(f"{AGENTS}/{a['id']}", token="carol")
    assert got.data == a


async def test_defaults_are_react_ten_iterations_and_the_global_default_model(api: ApiClient, people: dict) -> None:
    a = await make_agent(api)
    assert (a["agentType"], a["maxIterations"], a["modelName"], a["defaultThinkingLevel"]) == ("react", 10, "", None)


async def test_list_is_scoped_to_the_workspace_and_filters_by_enabled(api: ApiClient, people: dict) -> None:
    on = await make_agent(api, name="On")
    off = await make_agent(api, name="Off", enabled=False)
    r = await api.get(AGENTS, token="carol")
    assert {a["id"] for a in r.data} == {on["id"], off["id"]}
    r = await api.get(AGENTS, token="carol", params={"enabled": "true"})
    assert [a["id"] for a in r.data] == [on["id"]]
    r = await api.get(AGENTS, token="carol", params={"enabled": "false"})
    assert [a["id"] for a in r.data] == [off["id"]]
    r = await api.get(AGENTS, token="carol", params={"enabled": "maybe"})
    assert r.status == 400
    r = await api.get(AGENTS, token="dave", workspace=people["dave"]["workspace"])
    assert r.status == 200 and r.data == []


async def test_another_workspace_sees_404_for_reads_and_writes(api: ApiClient, people: dict) -> None:
    a = await make_agent(api)
    ws = people["dave"]["workspace"]
    for method, path, body in [
        ("GET", f"{AGENTS}/{a['id']}", None),
        ("PUT", f"{AGENTS}/{a['id']}", {"name": "x"}),
        ("DELETE", f"{AGENTS}/{a['id']}", None),
        ("GET", f"{AGENTS}/{a['id']}/tools", None),
        ("PUT", f"{AGENTS}/{a['id']}/tools", {"toolNames": []}),
        ("GET", f"{AGENTS}/{a['id']}/capabilities", None),
        ("GET", f"{AGENTS}/{a['id']}/workspace/files", None),
    ]:
        r = await api.request(method, path, body, token="dave", workspace=ws)
        assert r.status == 404, (method, path, r.body)
    # dave's own workspace header does not let him reach workspace 1 either
    r = await api.get(f"{AGENTS}/{a['id']}", token="dave", workspace=1)
    assert r.status == 403
    # alice (global admin) acting in dave's workspace does not see workspace 1's agent
    r = await api.get(f"{AGENTS}/{a['id']}", token="alice", workspace=ws)
    assert r.status == 404


async def test_viewer_reads_but_cannot_write(api: ApiClient, people: dict) -> None:
    a = await make_agent(api)
    assert (await api.get(f"{AGENTS}/{a['id']}", token="carol")).status == 200
    assert (await api.post(AGENTS, {"name": "x"}, token="carol")).status == 403
    assert (await api.put(f"{AGENTS}/{a['id']}", {"name": "x"}, token="carol")).status == 403
    assert (await api.delete(f"{AGENTS}/{a['id']}", token="carol")).status == 403
    assert (await api.put(f"{AGENTS}/{a['id']}/tools", {"toolNames": ["read_file"]}, token="carol")).status == 403


async def test_sparse_update_changes_only_the_given_fields(api: ApiClient, people: dict) -> None:
    a = await make_agent(api, description="old", defaultThinkingLevel="low", modelProvider="openai", modelName="gpt-4o")
    r = await api.put(f"{AGENTS}/{a['id']}", {"description": "new", "name": None, "enabled": False}, token="bob")
    assert r.status == 200, r.body
    assert r.data["description"] == "new" and r.data["name"] == "Helper" and r.data["enabled"] is False
    assert r.data["defaultThinkingLevel"] == "low" and r.data["workspaceId"] == "1"
    r = await api.put(f"{AGENTS}/{a['id']}", {"defaultThinkingLevel": None, "modelProvider": None, "workspaceId": "7"}, token="bob")
    assert r.data["defaultThinkingLevel"] is None and r.data["modelProvider"] is None
    assert r.data["workspaceId"] == "1" and r.data["modelName"] == "gpt-4o"


async def test_validation_errors_name_the_field(api: ApiClient, people: dict) -> None:
    a = await make_agent(api)
    cases = [
        ({}, "name: "),
        ({"name": "   "}, "name: must not be blank"),
        ({"name": "x", "agentType": "chain"}, "agentType: "),
        ({"name": "x", "maxIterations": 0}, "maxIterations: "),
        ({"name": "x", "maxIterations": 101}, "maxIterations: "),
        ({"name": "x", "defaultThinkingLevel": "extreme"}, "defaultThinkingLevel: "),
        ({"name": "x", "icon": "javascript:alert(1)"}, "icon: "),
        ({"name": "x", "primaryKbId": "abc"}, "primaryKbId: "),
        ({"name": "x", "modelProvider": "Open AI"}, "modelProvider: "),
        ({"name": "x" * 101}, "name: "),
    ]
    for body, prefix in cases:
        r = await api.post(AGENTS, body, token="bob")
        assert r.status == 400 and r.body["msg"].startswith(prefix), (body, r.body)
    r = await api.put(f"{AGENTS}/{a['id']}", {"maxIterations": 500}, token="bob")
    assert r.status == 400 and r.body["msg"].startswith("maxIterations: ")
    r = await api.put(f"{AGENTS}/{a['id']}", [1, 2], token="bob")
    assert r.status == 400
    r = await api.post(AGENTS, {"name": "x", "icon": "https://example.com/i.png"}, token="bob")
    assert r.status == 200 and r.data["icon"] == "https://example.com/i.png"


async def test_the_creator_and_admins_delete_but_another_member_gets_403(api: ApiClient, people: dict) -> None:
    r = await api.post("/api/v1/auth/users", {"username": "erin", "password": "password-123"}, token="alice")
    erin = r.data["id"]
    from tests.helpers.server import login

    await login(api, "erin")
    by_bob = await make_agent(api, token="bob")
    r = await api.delete(f"{AGENTS}/{by_bob['id']}", token="erin")
    assert r.status == 403 and r.body == {"code": 403, "msg": r.body["msg"], "data": None}
    assert (await api.delete(f"{AGENTS}/{by_bob['id']}", token="bob")).status == 200
    assert (await api.get(f"{AGENTS}/{by_bob['id']}", token="bob")).status == 404
    # a workspace admin (not global admin) deletes another member's agent
    r = await api.put(f"/api/v1/workspaces/1/members/{erin}", {"role": "admin"}, token="alice")
    assert r.status == 200
    other = await make_agent(api, token="bob")
    assert (await api.delete(f"{AGENTS}/{other['id']}", token="erin")).status == 200
    third = await make_agent(api, token="bob")
    assert (await api.delete(f"{AGENTS}/{third['id']}", token="alice")).status == 200
    assert (await api.delete(f"{AGENTS}/{third['id']}", token="alice")).status == 404


async def test_every_change_is_audited(api: ApiClient, people: dict) -> None:
    a = await make_agent(api)
    await api.put(f"{AGENTS}/{a['id']}", {"name": "Renamed"}, token="bob")
    await api.put(f"{AGENTS}/{a['id']}/tools", {"toolNames": ["read_file"]}, token="bob")
    await api.delete(f"{AGENTS}/{a['id']}", token="bob")
    r = await api.get("/api/v1/audit/events", token="alice", params={"resourceType": "AGENT", "size": "50"})
    actions = sorted(e["action"] for e in r.data["records"] if e["resourceId"] == a["id"])
    assert actions == ["CREATE", "DELETE", "UPDATE"]
    r = await api.get("/api/v1/audit/events", token="alice", params={"resourceType": "AGENT_TOOL"})
    assert [e["resourceId"] for e in r.data["records"]] == [a["id"]]


async def test_tool_bindings_keep_order_and_refuse_bad_names(api: ApiClient, server: RunningServer, people: dict) -> None:
    a = await make_agent(api)
    path = f"{AGENTS}/{a['id']}/tools"
    r = await api.put(path, {"toolNames": ["web_fetch", "read_file", "mcp:github.search", "read_file"]}, token="bob")
    assert r.status == 200 and tool_names(r.data) == ["web_fetch", "read_file", "mcp:github.search"]
    assert tool_names((await api.get(path, token="carol")).data) == ["web_fetch", "read_file", "mcp:github.search"]
    assert service.bound_tools(int(a["id"])) == ["web_fetch", "read_file", "mcp:github.search"]
    for bad in (["../x"], ["a b"], ["x" * 129], [""]):
        r = await api.put(path, {"toolNames": bad}, token="bob")
        assert r.status == 400 and r.body["msg"].startswith("toolNames: "), r.body
    assert (await api.put(path, {}, token="bob")).status == 400
    r = await api.put(path, {"toolNames": []}, token="bob")
    assert r.data == []


async def test_skill_bindings_bind_unbind_and_replace(api: ApiClient, people: dict) -> None:
    a = await make_agent(api)
    base = f"{AGENTS}/{a['id']}/skills"
    r = await api.post(f"{base}/11", token="bob")
    assert r.status == 200 and skill_ids(r.data) == ["11"]
    await api.post(f"{base}/11", token="bob")
    await api.post(f"{base}/12", token="bob")
    assert (await api.get(base, token="carol")).data == [{"agentId": a["id"], "skillId": s, "enabled": True} for s in ("11", "12")]
    assert skill_ids((await api.delete(f"{base}/11", token="bob")).data) == ["12"]
    assert (await api.delete(f"{base}/11", token="bob")).status == 404
    r = await api.put(base, {"skillIds": ["5", 6, "5"]}, token="bob")
    assert r.status == 200 and skill_ids(r.data) == ["5", "6"]
    assert (await api.put(base, {"skillIds": ["x"]}, token="bob")).status == 400
    assert (await api.put(base, {"skillIds": [-1]}, token="bob")).status == 400
    assert (await api.post(f"{base}/abc", token="bob")).status == 400


async def test_provider_preferences_round_trip_in_order(api: ApiClient, people: dict) -> None:
    a = await make_agent(api)
    path = f"{AGENTS}/{a['id']}/provider-preferences"
    assert (await api.get(path, token="carol")).data == []
    r = await api.put(path, {"providerIds": ["ollama", "openai", "my-vllm.2"]}, token="bob")
    assert r.status == 200 and [p["providerId"] for p in r.data] == ["ollama", "openai", "my-vllm.2"]
    rows = (await api.get(path, token="bob")).data
    assert [(p["providerId"], p["modelId"], p["sortOrder"]) for p in rows] == [("ollama", None, 0), ("openai", None, 1), ("my-vllm.2", None, 2)]
    assert service.provider_preferences(int(a["id"])) == ["ollama", "openai", "my-vllm.2"]
    for bad in (["OpenAI"], ["-x"], ["a/b"]):
        r = await api.put(path, {"providerIds": bad}, token="bob")
        assert r.status == 400 and r.body["msg"].startswith("providerIds: ")


async def test_capabilities_report_text_and_the_sidecar_config(api: ApiClient, people: dict) -> None:
    a = await make_agent(api)
    r = await api.get(f"{AGENTS}/{a['id']}/capabilities", token="carol")
    assert r.status == 200
    assert "text" in r.data["modalities"] and r.data["agentId"] == a["id"]
    assert r.data["sidecar"] == {"enabled": False, "provider": None, "modelName": None}


async def test_capabilities_follow_the_agents_model_modalities(api: ApiClient, people: dict) -> None:
    r = await api.post(
        "/api/v1/models/custom-providers", {"providerId": "lan", "name": "LAN", "baseUrl": "http://127.0.0.1:9/v1"}, token="alice"
    )
    assert r.status == 200, r.body
    r = await api.post("/api/v1/models/lan/models", {"modelName": "seer", "modalities": "text,image"}, token="alice")
    assert r.status == 200, r.body
    await api.post("/api/v1/models/lan/models", {"modelName": "plain"}, token="alice")
    seer = await make_agent(api, modelProvider="lan", modelName="seer")
    r = await api.get(f"{AGENTS}/{seer['id']}/capabilities", token="carol")
    assert r.data["modalities"] == ["text", "image"] and r.data["vision"] is True
    assert r.data["model"] == {"provider": "lan", "modelName": "seer", "resolved": True}
    plain = await make_agent(api, modelName="lan/plain")
    r = await api.get(f"{AGENTS}/{plain['id']}/capabilities", token="carol")
    assert r.data["modalities"] == ["text"] and r.data["vision"] is False
    r = await api.put("/api/v1/settings/sidecar", {"enabled": True, "provider": "lan", "modelName": "seer"}, token="alice")
    assert r.status == 200, r.body
    r = await api.get(f"{AGENTS}/{plain['id']}/capabilities", token="carol")
    assert r.data["sidecar"] == {"enabled": True, "provider": "lan", "modelName": "seer"}


async def test_the_agent_body_rules_are_the_documents_patterns_and_the_server_takes_exactly_them(api: ApiClient, people: dict) -> None:
    """icon, modelName and modelProvider carry their pattern in the document and defaultThinkingLevel lists "" (it
    clears the level, as null does); the server takes what the pattern allows and refuses the rest."""
    import re

    schema = (await api.get("/v3/api-docs")).body["components"]["schemas"]["AgentCreate"]["properties"]
    assert "" in schema["defaultThinkingLevel"]["enum"] and None in schema["defaultThinkingLevel"]["enum"]
    icon, provider, model = (re.compile(schema[f]["pattern"]) for f in ("icon", "modelProvider", "modelName"))
    for value, ok in (("🤖", True), ("", True), ("/static/i.png", True), ("HTTPS://x/i.png", True), ("x" * 16, True),
                      (" 🤖", False), ("x" * 17, False), ("//evil/i.png", False), ("a:b", False), ("\x07", False),
                      ("http://[", False), ("https://", False)):
        assert bool(icon.search(value)) is ok, value
        r = await api.post(AGENTS, {"name": "i", "icon": value}, token="bob")
        assert (r.status == 200) is ok and (ok or r.msg.startswith("icon: ")), (value, r.body)
    for value, ok in (("", True), ("openai", True), (" openai", False), ("Open", False)):
        assert bool(provider.search(value)) is ok, value
        r = await api.post(AGENTS, {"name": "p", "modelProvider": value}, token="bob")
        assert (r.status == 200) is ok, (value, r.body)
    assert not model.search("gpt\t4") and model.search("gpt 4")
    r = await api.post(AGENTS, {"name": "t", "defaultThinkingLevel": ""}, token="bob")
    assert r.status == 200 and r.data["defaultThinkingLevel"] is None, r.body
    a = await make_agent(api)
    r = await api.put(f"{AGENTS}/{a['id']}", {"icon": "x" * 17}, token="bob")
    assert r.status == 400 and r.msg.startswith("icon: ")


async def test_an_agents_name_and_primary_kb_state_the_rules_the_server_checks(api: ApiClient, people: dict) -> None:
    """Seed 101: a primaryKbId of -9223372036854775807 (an int64 the document allowed) was refused as no Long id, and a
    blank name was a 400 the document did not state. Both rules are in the document now, and nothing else changed."""
    doc = (await api.get("/v3/api-docs")).body
    agent = (await api.post("/api/v1/agents", {"name": " Kept ", "primaryKbId": 0}, token="alice")).data
    assert agent["name"] == "Kept" and conforms(doc, "AgentCreate", {"name": " Kept ", "primaryKbId": 0}), agent
    for body in ({"name": "x", "primaryKbId": -9223372036854775807}, {"name": "\u3000 "}):
        r = await api.post("/api/v1/agents", body, token="alice")
        assert r.status == 400 and not conforms(doc, "AgentCreate", body), (body, r.body)
    for body in ({"primaryKbId": -1}, {"name": "\t"}):
        r = await api.put(f"/api/v1/agents/{agent['id']}", body, token="alice")
        assert r.status == 400 and not conforms(doc, "AgentUpdate", body), (body, r.body)


async def test_a_binding_body_is_stated_as_the_object_or_the_bare_list_the_console_sends(api: ApiClient, people: dict) -> None:
    """The three binding bodies take `{skillIds}` or the bare array (the original console's): the document said object
    only, so a bare array was invalid input the server took. It states both; anything else stays a 400."""
    doc = (await api.get("/v3/api-docs")).body
    agent = (await api.post("/api/v1/agents", {"name": "Binder"}, token="alice")).data["id"]
    for path, schema, field in (("skills", "SkillBindings", "skillIds"), ("tools", "ToolBindings", "toolNames"),
                                ("provider-preferences", "ProviderPreferences", "providerIds")):
        for body in ([], {field: []}):
            r = await api.put(f"/api/v1/agents/{agent}/{path}", body, token="alice")
            assert r.status == 200 and conforms(doc, schema, body), (path, body, r.body)
        for body in ("x", 5, {"other": []}):
            r = await api.put(f"/api/v1/agents/{agent}/{path}", body, token="alice")
            assert r.status == 400 and not conforms(doc, schema, body), (path, body, r.body)
        # seed 505: the bare-list branch made the body look optional ({} fits no branch, no body is a 400)
        assert doc["paths"][f"/api/v1/agents/{{agentId}}/{path}"]["put"]["requestBody"]["required"] is True, path
        assert (await api.request("PUT", f"/api/v1/agents/{agent}/{path}", token="alice")).status == 400
