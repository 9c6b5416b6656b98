"""What schemathesis found and the server or the document now says (tests/test_fuzz_openapi.py runs it whole)."""

from __future__ import annotations

from typing import Any

from tests.helpers.client import ApiClient
from tests.helpers.wiki import KB, make_kb


async def test_a_boolean_field_takes_true_or_false_only(api: ApiClient, people: dict) -> None:
    """pydantic's lax mode read 0 as false: `{"enabled": 0}` was saved although the document says boolean."""
    for path, body in (
        ("/api/v1/settings/proxy", {"enabled": 0, "url": "", "nonProxyHosts": ""}),
        ("/api/v1/settings/sidecar", {"enabled": "yes"}),
        ("/api/v1/security/guard/config", {"enabled": 1}),
    ):
        res = await api.put(path, body, token="alice")
        assert res.status == 400 and res.msg == "enabled: must be true or false", (path, res.body)
    ok = await api.put("/api/v1/settings/proxy", {"enabled": False, "url": "", "nonProxyHosts": ""}, token="alice")
    assert ok.status == 200, ok.body


async def test_a_body_an_empty_request_satisfies_is_optional_in_the_document(api: ApiClient, people: dict) -> None:
    """An empty body reads as {}; the proxy and sidecar bodies' anyOf has a branch {} matches (disabled), so the
    document said `required` for a request the server takes (schemathesis sent none and got a 200)."""
    doc: dict[str, Any] = (await api.get("/v3/api-docs")).body
    for path in ("/api/v1/settings/proxy", "/api/v1/settings/sidecar"):
        assert doc["paths"][path]["put"]["requestBody"]["required"] is False, path
        res = await api.request("PUT", path, token="alice")
        assert res.status == 200 and res.data["enabled"] is False, res.body
    # "exactly one of" (every branch requires a field) stays required: {} fails it
    assert doc["paths"]["/api/v1/datasources"]["post"]["requestBody"]["required"] is True


async def test_a_malformed_query_toggle_is_refused_even_with_a_body(api: ApiClient, people: dict) -> None:
    """`?activate=` stands in for an empty body; a malformed one was ignored whenever a body came too."""
    res = await api.post("/api/v1/skills/curator/activate?activate=maybe", {"active": False}, token="alice")
    assert res.status == 400 and "activate" in res.msg, res.body
    res = await api.post("/api/v1/skills/curator/activate?activate=true", {"active": False}, token="alice")
    assert res.status == 200 and res.data["active"] is False


async def test_the_document_states_what_the_server_checks(api: ApiClient, people: dict) -> None:
    doc: dict[str, Any] = (await api.get("/v3/api-docs")).body
    paths = doc["paths"]
    # an empty body reads as {}: a body whose fields are all optional is optional, one with required fields is not
    assert paths["/api/v1/settings"]["put"]["requestBody"]["required"] is False
    assert paths["/api/v1/agents"]["post"]["requestBody"]["required"] is True
    # path parameters the handler checks against a list
    (channel_type,) = paths["/api/v1/channels/type/{channelType}"]["get"]["parameters"]
    assert "webchat" in channel_type["schema"]["enum"] and "im_a" in channel_type["schema"]["enum"]
    (skill_type,) = paths["/api/v1/skills/type/{skillType}"]["get"]["parameters"]
    assert skill_type["schema"]["enum"] == ["builtin", "custom", "installed", "synthesized", "template"]
    # the skills list is paged from 1 (it also takes skillType); resolutions take a Long grantId
    skills = {p["name"]: p["schema"] for p in paths["/api/v1/skills"]["get"]["parameters"]}
    assert skills["page"]["minimum"] == 1 and "skillType" in skills
    grant = {p["name"]: p["schema"] for p in paths["/api/v1/approval/resolutions"]["get"]["parameters"]}["grantId"]
    assert grant["pattern"] == "^[0-9]{0,18}$"
    # binding lists state their items' limits
    tools = doc["components"]["schemas"]["ToolBindings"]["properties"]["toolNames"]["items"]
    assert tools["pattern"] == "^[A-Za-z0-9_.:-]{1,128}$"
    skills_items = doc["components"]["schemas"]["SkillBindings"]["properties"]["skillIds"]["items"]
    assert skills_items["minimum"] == 1


async def test_path_enums_match_what_the_server_refuses(api: ApiClient, people: dict) -> None:
    res = await api.get("/api/v1/channels/type/telex", token="alice")
    assert res.status == 400
    res = await api.get("/api/v1/skills/type/plugin", token="alice")
    assert res.status == 400


async def test_nullable_enums_list_null(api: ApiClient, people: dict) -> None:
    """OpenAPI 3.0.3: a nullable enum without null in its list refuses null, which the server takes."""
    doc: dict[str, Any] = (await api.get("/v3/api-docs")).body
    level = doc["components"]["schemas"]["AgentCreate"]["properties"]["defaultThinkingLevel"]
    assert level["nullable"] is True and None in level["enum"]


async def test_list_items_and_roles_state_their_values(api: ApiClient, people: dict) -> None:
    from platform_server.features.teams.console import ROLES
    from platform_server.features.workspaces.service import HOST_TOOLS

    schemas = (await api.get("/v3/api-docs")).body["components"]["schemas"]
    assert schemas["WorkspaceUpdate"]["properties"]["hostTools"]["items"]["enum"] == list(HOST_TOOLS)
    assert schemas["MemberAdd"]["properties"]["role"]["enum"] == list(ROLES)
    # and the server checks the same list where it reads the body (an empty string is not a host tool)
    r = await api.put("/api/v1/workspaces/1", {"hostTools": [""]}, token="alice")
    assert r.status == 400 and r.msg.startswith("hostTools.0"), r.body


async def test_a_page_number_past_what_sqlite_can_offset_is_an_empty_page(api: ApiClient, people: dict) -> None:
    """page * size past 64 bits reached SQLite's OFFSET and was refused as out of range; the document allows any page."""
    kb = await make_kb(api)
    res = await api.get(f"{KB}/{kb}/pages", token="bob", params={"page": "502807828393269952", "size": "1000"})
    assert res.status == 200 and res.data["records"] == [] and res.data["current"] == 502807828393269952, res.body


async def test_wiki_body_ids_are_stated_and_checked_as_64_bit_integers(api: ApiClient, people: dict) -> None:
    """A larger id reached SQLite and was refused as out of range although the document allowed any integer."""
    kb = await make_kb(api)
    res = await api.delete(f"{KB}/{kb}/pages/batch", {"ids": [18805093808247984480520765440]}, token="bob")
    assert res.status == 400 and res.msg.startswith("ids.0: "), res.body
    schemas = (await api.get("/v3/api-docs")).body["components"]["schemas"]
    for model, field in (("BatchDelete", "ids"), ("KbCreate", "agentIds")):
        items = schemas[model]["properties"][field]
        items = items.get("items") or items["anyOf"][0]["items"]
        assert items["format"] == "int64" and items["maximum"] == 2**63 - 1, (model, items)


async def test_a_message_page_cursor_and_a_texts_nul_are_rules_the_document_states(api: ApiClient, people: dict) -> None:
    """Seed 11 sent a beforeId of any characters (the server reads a Long) and a text with a NUL (the server reads it
    as a binary file): the document now says both, and the server refuses them the same way."""
    doc: dict[str, Any] = (await api.get("/v3/api-docs")).body
    params = doc["paths"]["/api/v1/conversations/{conversationId}/messages"]["get"]["parameters"]
    assert next(p for p in params if p["name"] == "beforeId")["schema"]["pattern"] == "^[0-9]{1,18}$"
    assert doc["components"]["schemas"]["RawText"]["properties"]["text"]["pattern"] == "^[^\\x00]+$"
    kb = await make_kb(api)
    r = await api.post(f"/api/v1/wiki/knowledge-bases/{kb}/raw/text", {"title": "t", "text": "a\u0000b"}, token="alice")
    assert r.status == 400 and r.msg.startswith("text:"), r.body


async def test_an_empty_query_value_is_absent_only_where_the_documented_schema_takes_one(api: ApiClient, people: dict) -> None:
    """Seed 7 sent `days=` (documented integer) and got a 200: the server read empty as absent. Now the documented
    schema decides (web.base.query_long): an integer's empty value is a 400, an optional Long's `^[0-9]{0,18}$` takes it."""
    kb = await make_kb(api, token="alice")
    wid = (await api.post("/api/v1/workflows", {"name": "Flow"}, token="alice")).data["id"]
    for path, params in (
        ("/api/v1/security/audit/stats", {"days": ""}),
        ("/api/v1/dashboard/trend", {"days": ""}),
        (f"/api/v1/workflows/{wid}/runs", {"limit": ""}),
        (f"/api/v1/workflows/{wid}/runs", {"limit": "²"}),  # isdigit() took it, int() did not: a 500 before
        (f"/api/v1/wiki/kb/{kb}/jobs", {"limit": ""}),
        (f"/api/v1/wiki/kb/{kb}/jobs", {"limit": "0"}),  # `or 50` read 0 as the default
    ):
        r = await api.get(path, params=params, token="alice")
        assert r.status == 400, (path, params, r.body)
    for path, params in ((f"/api/v1/wiki/kb/{kb}/jobs", {"rawId": ""}), ("/api/v1/wiki/transformations", {"kbId": ""})):
        r = await api.get(path, params=params, token="alice")
        assert r.status == 200, (path, params, r.body)
    doc: dict[str, Any] = (await api.get("/v3/api-docs")).body
    (limit,) = [p for p in doc["paths"]["/api/v1/wiki/kb/{kbId}/jobs"]["get"]["parameters"] if p["name"] == "limit"]
    assert limit["schema"] == {"type": "integer", "minimum": 1, "maximum": 200}  # seed 7: 69904 was a refused "valid" one


async def test_every_body_integer_is_a_stated_and_checked_64_bit_one(api: ApiClient, people: dict) -> None:
    """Seed 7 sent a context window's `modelId` of 34 digits (documented: any integer) and the database refused it.
    Every request body's integer is now stated as an int64 (web.openapi.int64_bounds) and checked so on the way in."""
    r = await api.put("/api/v1/models/openai/models/context-window", {"modelId": 2**63, "maxInputTokens": 1000}, token="alice")
    assert r.status == 400 and r.msg == "modelId: must be a 64-bit integer", r.body
    r = await api.put("/api/v1/models/openai/models/context-window", {"modelId": 1, "maxInputTokens": -(2**63) - 1}, token="alice")
    assert r.status == 400 and r.msg == "maxInputTokens: must be a 64-bit integer", r.body
    doc: dict[str, Any] = (await api.get("/v3/api-docs")).body
    schemas = doc["components"]["schemas"]
    model_id = schemas["ContextWindow"]["properties"]["modelId"]
    assert (model_id["format"], model_id["minimum"], model_id["maximum"]) == ("int64", -(2**63), 2**63 - 1)
    bodies = {
        media["schema"]["$ref"].rsplit("/", 1)[-1]
        for ops in doc["paths"].values() for op in ops.values()
        for media in (op.get("requestBody") or {}).get("content", {}).values() if "$ref" in media.get("schema", {})
    }
    unbounded = [
        (name, key) for name in sorted(bodies) for key, field in (schemas[name].get("properties") or {}).items()
        if field.get("type") == "integer" and "maximum" not in field
    ]
    assert len(bodies) > 100 and not unbounded, unbounded


async def test_every_toggle_takes_no_body_as_a_flip_and_checks_its_enabled_query(api: ApiClient, people: dict) -> None:
    """Seed 99: `PUT /tools/{id}/toggle` without a body (documented optional, as for every `{enabled}` body) was a 400,
    and a feature flag's `?enabled=<junk>` (documented boolean) was ignored with a 200."""
    tool = (await api.get("/api/v1/tools", token="alice")).data[0]
    endpoint = (await api.get("/api/v1/acp/endpoints", token="alice")).data[0]
    flag = next(f for f in (await api.get("/api/v1/feature-flags", token="alice")).data if f["key"] == "skills_curator")
    for path, before in (
        (f"/api/v1/tools/{tool['id']}/toggle", tool["enabled"]),
        (f"/api/v1/acp/endpoints/{endpoint['id']}/toggle", endpoint["enabled"]),
        ("/api/v1/feature-flags/skills_curator", flag["enabled"]),
    ):
        r = await api.request("PUT", path, token="alice")
        assert r.status == 200 and r.data["enabled"] is (not before), (path, r.body)
        r = await api.put(path, {"enabled": True}, params={"enabled": "junk"}, token="alice")
        assert r.status == 400 and r.msg == "Invalid value for parameter 'enabled': expected Boolean", (path, r.body)


async def test_seed_5150_a_feed_kind_a_kb_id_and_an_imported_rule_id_follow_the_document(api: ApiClient, people: dict) -> None:
    """The activity feed ignored `source` (documented enum) when `kind` was given; an agent's primaryKbId was stated as
    any int64 though the server takes no negative one; a guard rule import skipped the int64 check of its ids."""
    for params in ({"kind": "approval", "source": "junk"}, {"kind": ""}, {"source": "nope"}):
        r = await api.get("/api/v1/activity/feed", params=params, token="alice")
        assert r.status == 400, (params, r.body)
    assert (await api.get("/api/v1/activity/feed", params={"source": "approval"}, token="alice")).status == 200
    doc: dict[str, Any] = (await api.get("/v3/api-docs")).body
    for model in ("AgentCreate", "AgentUpdate"):
        assert doc["components"]["schemas"][model]["properties"]["primaryKbId"]["minimum"] == 0, model
    r = await api.post("/api/v1/agents", {"name": "Neg", "primaryKbId": -5}, token="alice")
    assert r.status == 400 and r.msg == "primaryKbId: must be a Long id", r.body
    rule = {"ruleId": "big-id", "name": "Big", "toolName": "*", "severity": "low", "id": 2**63}
    r = await api.post("/api/v1/security/guard/rules/import", {"rules": [rule]}, params={"dryRun": "true"}, token="alice")
    assert r.status == 400 and r.msg == "rules.0.id: must be a 64-bit integer", r.body
