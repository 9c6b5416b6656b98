"""The original platform's web console as a client: its requests (method, path, body as its API
modules build them) replayed, and the fields its code reads asserted. One test per console API module."""
from __future__ import annotations

import asyncio
import json

from tests.helpers.chat import ChatEnv, names, text_of
from tests.helpers.eventually import eventually
from tests.helpers.llm_script import Script, ScriptedToolCall
from tests.helpers.memory import fact, summarize

ALL_CAPABILITIES = {"chat", "view:wiki", "view:memory", "view:dashboard", "manage:wiki", "manage:agents",
                    "manage:skills", "manage:channels", "manage:models", "manage:security", "manage:settings"}


async def test_workspace_store_gets_capabilities_and_the_global_admin_flag_its_router_guard_needs(env: ChatEnv) -> None:
    api = env.api
    spaces = (await api.get("/api/v1/workspaces", token="alice")).data
    assert spaces[0]["isGlobalAdmin"] is True and spaces[0]["effectiveRole"] == "owner"
    assert (await api.get("/api/v1/workspaces", token="bob")).data[0]["isGlobalAdmin"] is False
    caps = {name: set((await api.get("/api/v1/workspaces/1/access", token=name)).data["capabilities"])
            for name in ("alice", "bob", "carol")}
    assert caps["alice"] == ALL_CAPABILITIES
    assert caps["bob"] == {"chat", "view:wiki", "view:memory", "view:dashboard", "manage:wiki", "manage:agents"}
    assert caps["carol"] == {"chat", "view:wiki"}
    access = (await api.get("/api/v1/workspaces/1/access", token="dave")).data
    assert access["capabilities"] == [] and access["canRead"] is False


async def test_model_api_answers_the_names_the_model_pages_and_chat_selector_read(env: ChatEnv) -> None:
    api = env.api
    active = (await api.get("/api/v1/models/active", token="carol")).data["activeLlm"]
    assert active == {"provider": "fake", "modelName": "scripted", "providerId": "fake", "model": "scripted"}
    fake = next(p for p in (await api.get("/api/v1/models", token="alice")).data if p["id"] == "fake")
    assert fake["liveness"] == "LIVE" and fake["available"] is True and fake["isLocal"] is False
    assert fake["extraModels"] == [] and fake["models"][0]["name"] == "scripted"
    model_id = fake["models"][0]["id"]
    assert (await api.get("/api/v1/models/options", token="carol")).data == [
        {"id": p["id"], "name": p["name"]} for p in (await api.get("/api/v1/models", token="alice")).data]
    enabled = [m for m in (await api.get("/api/v1/models/enabled", token="carol")).data if m["provider"] == "fake"]
    assert enabled[0]["providerId"] == "fake" and enabled[0]["name"] == "scripted"
    by_type = await api.get("/api/v1/models/by-type", params={"modelType": "chat", "modality": "vision"}, token="carol")
    assert by_type.status == 200 and by_type.data == []
    video = await api.get("/api/v1/models/by-type", params={"modelType": "chat", "modality": "video"}, token="carol")
    assert video.status == 200 and video.data == []
    # each parameter is its documented enum: an empty or unknown value is a 400, also when `type` would decide
    for params in ({"modality": ""}, {"modality": "smell"}, {"type": ""}, {"type": "chat", "modelType": "sound"}):
        assert (await api.get("/api/v1/models/by-type", params=params, token="carol")).status == 400, params
    # setActive sends {providerId, model: <the model's id>}
    r = await api.post("/api/v1/models/fake/models", {"modelName": "second"}, token="alice")
    r = await api.put("/api/v1/models/active", {"providerId": "fake", "model": r.data["id"]}, token="alice")
    assert r.status == 200 and r.data["activeLlm"]["model"] == "second"
    # removeProviderModel sends ?modelId=<the model's id>
    r = await api.delete("/api/v1/models/fake/models", params={"modelId": model_id}, token="alice")
    assert r.status == 200
    left = (await api.get("/api/v1/models/enabled", token="alice")).data
    assert [m["modelName"] for m in left if m["providerId"] == "fake"] == ["second"]


async def test_model_discovery_applies_the_console_model_ids_list(env: ChatEnv) -> None:
    env.llm.models = ["scripted", "found-one", "found-two"]
    # useProviderDiscovery reads newCount and selects newModels[].id
    found = (await env.api.post("/api/v1/models/fake/discover", token="alice")).data
    assert found["newCount"] == 2 and [m["id"] for m in found["newModels"]] == ["found-one", "found-two"]
    assert found["totalDiscovered"] == 3 and {m["id"] for m in found["discoveredModels"]} == set(env.llm.models)
    r = await env.api.post("/api/v1/models/fake/discover/apply", {"modelIds": ["found-two"]}, token="alice")
    assert r.status == 200, r.body
    names_now = {m["modelName"] for m in (await env.api.get("/api/v1/models/enabled", token="alice")).data}
    assert "found-two" in names_now and "found-one" not in names_now


async def test_chat_stream_takes_message_and_content_parts_together_and_the_parts_win(env: ChatEnv) -> None:
    body = {"agentId": env.agent_id, "message": "from message", "conversationId": "conv_1_ab",
            "contentParts": [{"type": "text", "text": "from parts"}], "thinkingLevel": "high",
            "modelProvider": "fake", "modelName": "scripted"}
    events = await env.api.sse("POST", "/api/v1/chat/stream", body, token="alice")
    assert names(events)[-1] == "done" and events[-1].data["status"] == "completed"
    assert "from parts" in text_of(events) and "from message" not in text_of(events)
    status = await env.api.get("/api/v1/conversations/conv_1_ab/status", token="alice")
    assert status.data["streamStatus"] != "running"
    context = await env.api.get("/api/v1/conversations/conv_1_ab/team-worker-context", token="alice")
    assert context.status == 200 and context.data is None
    assert (await env.api.get("/api/v1/conversations/conv_1_ab/team-worker-context", token="bob")).status == 403


async def test_settings_api_reads_flat_keys_and_saves_the_system_page_payload(env: ChatEnv) -> None:
    api = env.api
    assert (await api.get("/api/v1/settings/language")).data == "en-US"
    # Before login the console's settings store asks GET /settings and keeps its cached defaults on a
    # failure (it asks again after login); the language comes from the public route. The 401 stays.
    anonymous = await api.get("/api/v1/settings")
    assert anonymous.status == 401 and anonymous.body == {"code": 401, "msg": "Token expired or invalid", "data": None}
    settings = (await api.get("/api/v1/settings", token="bob")).data
    assert settings["streamEnabled"] is True and settings["searchEnabled"] is False and settings["ttsEnabled"] is False
    payload = {**settings, "streamEnabled": False, "searchProvider": "serper", "serperBaseUrl": "https://x",
               "serperApiKey": "k", "ttsDefaultVoice": "nova", "workspaceStorageRoot": ""}
    r = await api.put("/api/v1/settings", payload, token="alice")
    assert r.status == 200, r.body
    after = (await api.get("/api/v1/settings", token="bob")).data
    assert after["streamEnabled"] is False and after["speech"]["voice"] == "nova" and after["ttsDefaultVoice"] == "nova"
    assert after["searchProvider"] is None and "serperApiKey" not in after
    assert (await api.put("/api/v1/settings", {"noSuchSetting": 1}, token="alice")).status == 400
    assert (await api.put("/api/v1/settings", {"debugMode": "yes"}, token="alice")).status == 400
    r = await api.put("/api/v1/settings", {"language": "zh-CN"}, token="alice")
    assert (await api.get("/api/v1/settings/language")).data == "zh-CN"
    providers = (await api.get("/api/v1/settings/search-providers", token="alice")).data
    assert providers == {"providers": [], "resolvedId": None, "resolvedSource": None}
    proxy = (await api.get("/api/v1/settings/proxy", token="alice")).data
    assert proxy["enabled"] is False and proxy["url"] == ""
    # Settings -> Proxy saves the form as it sends it (its effect: tests/test_outbound_proxy.py)
    r = await api.put("/api/v1/settings/proxy", {"enabled": True, "url": "http://p:1", "nonProxyHosts": "localhost|127.*"}, token="alice")
    assert r.status == 200 and r.data == {"enabled": True, "url": "http://p:1", "nonProxyHosts": "localhost|127.*"}
    r = await api.put("/api/v1/settings/proxy", {"enabled": True, "url": "socks5://p:1"}, token="alice")
    assert r.status == 400 and "SOCKS" in r.msg


async def test_setup_api_onboarding_status_says_whether_a_default_model_exists_and_ollama_answers(env: ChatEnv) -> None:
    api = env.api
    status = (await api.get("/api/v1/setup/onboarding-status", token="alice")).data
    assert status["hasDefaultModel"] is True and status["ollamaOnline"] is False
    # point the Ollama provider at a server that answers its model list
    r = await api.put("/api/v1/models/ollama/config", {"baseUrl": env.llm.url}, token="alice")
    assert r.status == 200, r.body
    assert (await api.get("/api/v1/setup/onboarding-status", token="alice")).data["ollamaOnline"] is True
    r = await api.delete("/api/v1/models/custom-providers/fake", token="alice")
    default = (await api.get("/api/v1/models/default", token="bob")).data  # the embedded model, when installed
    status = (await api.get("/api/v1/setup/onboarding-status", token="bob")).data
    assert status["hasDefaultModel"] is (default is not None)


async def test_agent_binding_api_sends_bare_arrays_and_agent_api_generates_a_draft(env: ChatEnv) -> None:
    api = env.api
    r = await api.put(f"/api/v1/agents/{env.agent_id}/tools", ["web_fetch"], token="bob")
    assert r.status == 200, r.body
    tools = (await api.get(f"/api/v1/agents/{env.agent_id}/tools", token="bob")).data
    assert [(t["toolName"], t["enabled"]) for t in tools] == [("web_fetch", True)]
    prefs = [{"providerId": "fake", "modelId": None}]
    r = await api.put(f"/api/v1/agents/{env.agent_id}/provider-preferences", prefs, token="bob")
    assert r.status == 200 and [(p["providerId"], p["enabled"]) for p in r.data] == [("fake", True)]
    prefs = [{"providerId": "fake", "modelId": "123"}]
    assert (await api.put(f"/api/v1/agents/{env.agent_id}/provider-preferences", prefs, token="bob")).status == 400
    assert (await api.put(f"/api/v1/agents/{env.agent_id}/skills", [], token="bob")).status == 200
    assert (await api.put(f"/api/v1/agents/{env.agent_id}/skills", ["x"], token="bob")).status == 400
    draft = {"name": "Invoice clerk", "icon": "🧾", "description": "Files invoices.", "agentType": "react",
             "systemPrompt": "You file invoices.", "role": "clerk", "goal": "tidy books", "tags": ["finance"],
             "recommendedQuestions": ["What is due?"]}
    env.llm.enqueue(Script(text="Here it is:\n```json\n" + json.dumps(draft) + "\n```"))
    r = await api.post("/api/v1/agents/generate", {"requirement": "someone to file invoices"}, token="bob")
    assert r.status == 200, r.body
    assert r.data["name"] == "Invoice clerk" and r.data["systemPrompt"] == "You file invoices."
    assert r.data["tags"] == ["finance"] and r.data["runtimeType"] == "native"
    assert len((await api.get("/api/v1/agents", token="bob")).data) == 1  # nothing saved
    assert (await api.post("/api/v1/agents/generate", {"requirement": ""}, token="bob")).status == 400
    assert (await api.post("/api/v1/agents/generate", {"requirement": "x"}, token="carol")).status == 403


async def test_skill_api_curator_status_has_config_control_counts_and_routines_take_observing(env: ChatEnv) -> None:
    api = env.api
    status = (await api.get("/api/v1/skills/curator/status", token="alice")).data
    assert status["config"]["enabled"] is False and status["control"]["activated"] is False
    assert status["control"]["paused"] is False and status["lastReport"] is None
    assert {"active", "archived", "pinned", "managed"} <= set(status["counts"])
    r = await api.get("/api/v1/skills/routines", params={"status": "observing"}, token="alice")
    assert r.status == 200 and r.data == []


async def test_agent_context_api_lists_the_callers_own_private_memory_files_and_nobody_elses(env: ChatEnv) -> None:
    api, agent = env.api, env.agent_id
    base = f"/api/v1/agents/{agent}/workspace"
    assert (await api.get(f"{base}/memory/personal-files", token="alice")).data == []
    r = await summarize(env, [fact("tea", "Alice likes green tea.")])
    assert r.status == 200, r.body
    uid = env.people["alice"]["id"]
    files = (await api.get(f"{base}/memory/personal-files", token="alice")).data
    assert {f["ownerKey"] for f in files} == {f"user:{uid}"} and "MEMORY.md" in [f["filename"] for f in files]
    assert {"filename", "fileSize", "updateTime", "path"} <= set(files[0])
    one = await api.get(f"{base}/memory/personal-file", params={"filename": "MEMORY.md", "ownerKey": f"user:{uid}"},
                        token="alice")
    assert one.status == 200 and "Alice likes green tea." in one.data["content"]
    bad = await api.get(f"{base}/memory/personal-file", params={"filename": "../../x", "ownerKey": f"user:{uid}"},
                        token="alice")
    assert bad.status in (400, 403)
    assert (await api.get(f"{base}/memory/personal-files", token="bob")).data == []
    other = await api.get(f"{base}/memory/personal-file", params={"filename": "MEMORY.md", "ownerKey": f"user:{uid}"},
                          token="bob")
    assert other.status == 403 and b"green tea" not in other.raw


async def test_routes_without_a_feature_here_answer_honestly_empty(env: ChatEnv) -> None:
    api = env.api
    assert (await api.get("/api/v1/auth/sso/providers")).data == []
    docs = (await api.get("/api/v1/docs", params={"lang": "en"}, token="carol")).data
    assert {"slug": "readme", "title": "Agent platform server", "group": "Docs"} in docs
    content = await api.get("/api/v1/docs/content", params={"lang": "en", "slug": "readme"}, token="carol")
    assert "# Agent platform server" in content.data["content"]
    assert (await api.get("/api/v1/docs/content", params={"slug": "../setup.py"}, token="carol")).status == 404
    page = (await api.get("/api/v1/content-items", params={"page": 1, "size": 20}, token="carol")).data
    assert page["records"] == [] and page["total"] == 0
    assert (await api.get("/api/v1/content-items/summary", token="carol")).data["published"] == 0
    dsh = (await api.get("/api/v1/admin/dsh/status", token="alice")).data
    assert dsh["installed"] is False and dsh["enabled"] is False
    assert (await api.get("/api/v1/admin/dsh/status", token="bob")).status == 403
    diag = (await api.get("/api/v1/admin/agent-runtime/dsh/diagnostics", token="bob")).data
    assert diag["executableAvailable"] is False and diag["cordisConfigAvailable"] is False


async def test_cron_job_api_creates_with_trigger_message_and_reads_task_type_and_run_times(env: ChatEnv) -> None:
    api = env.api
    body = {"name": "daily", "cronExpression": "0 9 * * *", "timezone": "UTC", "agentId": env.agent_id,
            "taskType": "text", "triggerMessage": "good morning", "enabled": True}
    r = await api.post("/api/v1/cron-jobs", body, token="alice")
    assert r.status == 200, r.body
    job = (await api.get("/api/v1/cron-jobs", token="alice")).data
    job = job[0] if isinstance(job, list) else job["records"][0]
    assert job["taskType"] == "text" and job["triggerMessage"] == "good morning" and job["message"] == "good morning"
    assert job["nextRunTime"] == job["nextFireTime"] and job["nextRunTime"] and job["lastRunTime"] is None
    r = await api.put(f"/api/v1/cron-jobs/{job['id']}", {"triggerMessage": "good evening"}, token="alice")
    assert r.status == 200 and r.data["message"] == "good evening"
    reminder = {**body, "name": "remind", "taskType": "reminder"}
    r = await api.post("/api/v1/cron-jobs", reminder, token="alice")
    assert r.status == 400 and r.msg.startswith("taskType")


async def test_feature_flag_skill_counts_runtime_status_and_token_usage_carry_the_console_names(env: ChatEnv) -> None:
    api = env.api
    flags = (await api.get("/api/v1/feature-flags", token="carol")).data
    assert all(f["flagKey"] == f["key"] for f in flags) and flags
    counts = (await api.get("/api/v1/skills/counts", token="carol")).data
    assert counts["all"] == counts["total"] and counts["builtin"] == counts["byType"]["builtin"]
    for status in (await api.get("/api/v1/skills/runtime/status", token="carol")).data:
        assert status["runtimeAvailable"] is (status["status"] == "ready")
    events = await env.stream("count my tokens")
    assert events[-1].data["status"] == "completed"
    usage = await api.get("/api/v1/token-usage", params={"startDate": "2000-01-01", "endDate": "2999-12-31"},
                          token="carol")
    assert usage.status == 200, usage.body
    data = usage.data
    assert data["totalMessages"] == 1 and data["totalPromptTokens"] == data["total"]["promptTokens"]
    assert data["byModel"][0]["runtimeModel"] == "scripted" and data["byModel"][0]["messageCount"] == 1
    assert len(data["byDate"]) == 1 and data["byDate"][0]["promptTokens"] == data["totalPromptTokens"]
    today = (await api.get("/api/v1/dashboard/overview", token="carol")).data["today"]
    assert today["conversations"] == 1 and today["messages"] == 2 and today["toolCalls"] == 0
    empty = await api.get("/api/v1/token-usage", params={"startDate": "2000-01-01", "endDate": "2000-01-02"},
                          token="carol")
    assert empty.data["totalMessages"] == 0 and empty.data["byModel"] == []
    assert (await api.get("/api/v1/token-usage", params={"startDate": "yesterday"}, token="carol")).status == 400
    # `format: date`: a real day, exactly YYYY-MM-DD (month 00 and an empty value were read as days or as absent)
    for day in ("3595-00-31", "2026-02-30", "", "2026-01-01T00:00:00"):
        assert (await api.get("/api/v1/token-usage", params={"endDate": day}, token="carol")).status == 400, day


async def test_security_api_pages_rules_and_reads_and_writes_the_file_guard_by_its_names(env: ChatEnv) -> None:
    api = env.api
    plain = (await api.get("/api/v1/security/guard/rules", token="alice")).data
    page = (await api.get("/api/v1/security/guard/rules", params={"page": 1, "size": 200}, token="alice")).data
    assert page["records"] == plain and page["total"] == len(plain)
    guard = (await api.get("/api/v1/security/guard/config/file-guard", token="alice")).data
    assert guard["fileGuardEnabled"] is True and guard["sensitivePaths"] == guard["patterns"]
    body = {"fileGuardEnabled": False, "sensitivePathsJson": json.dumps(["**/*.pem"])}
    r = await api.put("/api/v1/security/guard/config/file-guard", body, token="alice")
    assert r.status == 200, r.body
    assert r.data["enabled"] is False and r.data["sensitivePaths"] == ["**/*.pem"]
    bad = {"sensitivePathsJson": "not json"}
    assert (await api.put("/api/v1/security/guard/config/file-guard", bad, token="alice")).status == 400


async def test_model_forms_create_providers_and_models_with_the_console_field_names(env: ChatEnv) -> None:
    api = env.api
    body = {"id": "vllm-box", "name": "vLLM box", "defaultBaseUrl": env.llm.url, "apiKeyPrefix": "",
            "protocol": "openai-compatible", "chatModel": "OpenAIChatModel", "requireApiKey": False, "models": []}
    r = await api.post("/api/v1/models/custom-providers", body, token="alice")
    assert r.status == 200, r.body
    assert r.data["id"] == "vllm-box" and r.data["protocol"] == "openai" and r.data["baseUrl"] == env.llm.url
    r = await api.post("/api/v1/models/vllm-box/models", {"id": "served-model", "name": "Served"}, token="alice")
    assert r.status == 200 and r.data["modelName"] == "served-model" and r.data["displayName"] == "Served"
    bad = {"id": "other", "name": "x", "defaultBaseUrl": env.llm.url, "protocol": "gemini-native"}
    assert (await api.post("/api/v1/models/custom-providers", bad, token="alice")).status == 400


async def test_agent_context_reads_a_file_as_json_when_json_is_asked_for_first(env: ChatEnv) -> None:
    api, base = env.api, f"/api/v1/agents/{env.agent_id}/workspace/files"
    assert (await api.put(f"{base}/NOTES.md", {"content": "# notes"}, token="alice")).status == 200
    as_json = await api.get(f"{base}/NOTES.md", token="alice", headers={"Accept": "application/json, text/plain, */*"})
    assert as_json.data == {"filename": "NOTES.md", "content": "# notes", "fileSize": 7}
    assert (await api.get(f"{base}/NOTES.md", token="alice")).raw == b"# notes"


async def test_activity_feed_items_are_flat_and_source_filters(env: ChatEnv) -> None:
    page = (await env.api.get("/api/v1/activity/feed", params={"source": "audit", "page": 1, "size": 20},
                              token="alice")).data
    assert page["records"] and all(e["source"] == "audit" for e in page["records"])
    created = next(e for e in page["records"] if e["resourceType"] == "AGENT")
    assert created["action"] == "CREATE" and created["resourceId"] == env.agent_id
    assert created["username"] == "alice" and created["detail"]["id"] == created["id"] and created["createTime"]
    bad = await env.api.get("/api/v1/activity/feed", params={"source": "nope"}, token="alice")
    assert bad.status == 400


async def test_agent_binding_api_reads_and_replaces_an_agents_knowledge_bases(env: ChatEnv) -> None:
    api, path = env.api, f"/api/v1/agents/{env.agent_id}/kbs"
    assert (await api.get(path, token="carol")).data == []
    kb = await api.post("/api/v1/wiki/knowledge-bases", {"name": "Handbook"}, token="alice")
    assert kb.status == 200, kb.body
    r = await api.put(path, [kb.data["id"]], token="bob")
    assert r.status == 200 and r.data == [{"agentId": env.agent_id, "kbId": kb.data["id"], "enabled": True}]
    assert (await api.get(path, token="carol")).data == r.data
    assert (await api.put(path, ["999"], token="bob")).status == 404
    assert (await api.put(path, ["x"], token="bob")).status == 400
    for body in ([int(kb.data["id"])], [" " + kb.data["id"]], ["-1"]):  # the document's items: strings of 1-18 digits
        assert (await api.put(path, body, token="bob")).status == 400, body
    assert (await api.put(path, {"kbIds": []}, token="bob")).status == 400
    assert (await api.put(path, [], token="carol")).status == 403
    assert (await api.put(path, [], token="bob")).data == []


async def test_curator_switches_take_the_console_query_parameters(env: ChatEnv) -> None:
    api = env.api
    r = await api.post("/api/v1/skills/curator/activate", params={"activate": "true"}, token="alice")
    assert r.status == 200 and r.data["control"]["activated"] is True
    r = await api.post("/api/v1/skills/curator/consolidate", params={"enabled": "true"}, token="alice")
    assert r.status == 200 and r.data["control"]["consolidate"] is True
    r = await api.post("/api/v1/skills/curator/activate", params={"activate": "maybe"}, token="alice")
    assert r.status == 400


async def test_toggles_take_the_enabled_query_parameter_the_console_sends_without_a_body(env: ChatEnv) -> None:
    api = env.api
    tools = (await api.get("/api/v1/tools", token="alice")).data
    tool = next(t for t in tools if t["name"] == "web_fetch")
    for value, expected in (("false", False), ("false", False), ("true", True)):
        r = await api.put(f"/api/v1/tools/{tool['id']}/toggle", params={"enabled": value}, token="alice")
        assert r.status == 200, r.body
        again = next(t for t in (await api.get("/api/v1/tools", token="alice")).data if t["id"] == tool["id"])
        assert again["enabled"] is expected
    rule = (await api.get("/api/v1/security/guard/rules", token="alice")).data[0]
    path = f"/api/v1/security/guard/rules/{rule['ruleId']}/toggle"
    for _ in range(2):  # the same value twice stays put (an empty body alone would flip it)
        assert (await api.put(path, params={"enabled": "false"}, token="alice")).status == 200
    assert next(r for r in (await api.get("/api/v1/security/guard/rules", token="alice")).data
                if r["ruleId"] == rule["ruleId"])["enabled"] is False
    assert (await api.put(path, params={"enabled": "maybe"}, token="alice")).status == 400


# ---- journeys replayed against seeded data (issue 29) ------------------------------------------------

async def test_wiki_journey_lists_pages_whole_reads_content_edits_by_content_and_lints_in_console_names(env: ChatEnv) -> None:
    from tests.helpers.wiki import KB, add_text, make_kb, page, pages_answer, wait_idle
    api = env.api
    kb = await make_kb(api)
    env.llm.enqueue(Script(text=pages_answer(
        page("photosynthesis", "Photosynthesis", "# Photosynthesis\n\nSee [[Chlorophyll]] and [[Nowhere]].", ["c1"]),
        page("chlorophyll", "Chlorophyll", "# Chlorophyll\n\nGreen, used in [[photosynthesis]].", ["c1"], "entity"))))
    raw = await add_text(api, kb, "Plant biology", "Plants turn light into sugar with chlorophyll.")
    await wait_idle(api, kb)
    # useWikiStore.fetchRawMaterials: rows carry processingStatus (the status badge's i18n key)
    raws = (await api.get(f"{KB}/{kb}/raw", token="carol")).data
    assert [(r["id"], r["processingStatus"]) for r in raws] == [(raw["id"], "completed")]
    # fetchPages: no page/size -> the whole list, iterable, each row with outgoingLinks (graph edges)
    listed = (await api.get(f"{KB}/{kb}/pages", token="carol")).data
    assert isinstance(listed, list) and [p["slug"] for p in listed] == ["chlorophyll", "photosynthesis"]
    assert json.loads(listed[1]["outgoingLinks"]) == ["Chlorophyll", "Nowhere"] and listed[0]["lastUpdatedBy"] == "ai"
    assert (await api.get(f"{KB}/{kb}/pages", params={"rawId": raw["id"]}, token="carol")).data == listed
    paged = (await api.get(f"{KB}/{kb}/pages", params={"page": "1"}, token="carol")).data
    assert paged["total"] == 2  # the spec's paged form stays when a page is asked for
    # getPage: the viewer renders `content`; the header counts sourceRawIds (JSON text)
    p = (await api.get(f"{KB}/{kb}/pages/photosynthesis", token="carol")).data
    assert p["content"] == p["markdown"] and "[[Chlorophyll]]" in p["content"]
    assert json.loads(p["sourceRawIds"]) == [raw["id"]]
    # updatePage sends {content}: the page keeps its text and becomes manual
    r = await api.put(f"{KB}/{kb}/pages/photosynthesis", {"content": "# Photosynthesis\n\nEdited, see [[Chlorophyll]]."}, token="bob")
    assert r.status == 200, r.body
    p = (await api.get(f"{KB}/{kb}/pages/photosynthesis", token="carol")).data
    assert p["content"].endswith("Edited, see [[Chlorophyll]].") and p["lastUpdatedBy"] == "manual"
    assert (await api.put(f"{KB}/{kb}/pages/photosynthesis", {}, token="bob")).status == 400
    # broken-link banner: before a scan no completedAt; after one the console's counters
    assert (await api.get(f"{KB}/{kb}/lint/broken-links", token="carol")).data["completedAt"] is None
    env.llm.enqueue(Script(text=pages_answer(page("x", "X", "# X\n\n[[Gone]]", ["c1"]))))
    await add_text(api, kb, "More", "Another material that links to nothing.")
    await wait_idle(api, kb)
    job = (await api.post(f"{KB}/{kb}/lint/broken-links", token="bob")).data
    assert job["jobId"] and job["startedAt"]
    for _ in range(100):
        report = (await api.get(f"{KB}/{kb}/lint/broken-links", token="carol")).data
        if report["completedAt"]:
            break
        await asyncio.sleep(0.05)
    assert report["completedAt"] >= job["startedAt"] and report["totalPages"] == 3
    assert report["totalBrokenRefs"] == 1 and report["pagesWithBrokenLinks"] == 1
    assert report["pages"] == [{"slug": "x", "title": "X", "brokenRefs": ["Gone"]}]


async def test_teams_journey_reads_team_and_members_adds_and_removes_members_and_reads_the_board(env: ChatEnv) -> None:
    from tests.helpers.chat import make_agent
    api = env.api
    lead = (await api.get(f"/api/v1/agents/{env.agent_id}", token="alice")).data["name"]
    helper = await make_agent(api, name="Helper")
    critic = await make_agent(api, name="Critic")
    # the console's create dialog sends {name, description, leadAgentId, memberAgentIds}
    r = await api.post("/api/v1/teams", {"name": "Desk", "description": "d", "leadAgentId": env.agent_id,
                                        "memberAgentIds": [helper]}, token="bob")
    assert r.status == 200, r.body
    team_id = r.data["id"]
    rows = (await api.get("/api/v1/teams", token="carol")).data
    assert rows[0]["team"]["id"] == team_id and rows[0]["team"]["name"] == "Desk" and rows[0]["memberCount"] == 2
    assert rows[0]["leadName"] == lead and rows[0]["name"] == "Desk"  # flat fields stay
    # openTeam: currentTeam = data.team (a list row), members = data.members; the detail reads team.team.id
    one = (await api.get(f"/api/v1/teams/{team_id}", token="carol")).data
    assert one["team"]["team"]["id"] == team_id and one["team"]["team"]["leadAgentId"] == env.agent_id
    assert one["team"]["leadName"] == lead and one["team"]["memberCount"] == 2
    assert [(m["agentId"], m["name"], m["role"]) for m in one["members"]] == [
        (env.agent_id, lead, "lead"), (helper, "Helper", "member")]
    r = await api.post(f"/api/v1/teams/{team_id}/members", {"agentId": critic, "role": "member"}, token="bob")
    assert r.status == 200, r.body
    assert [m["name"] for m in r.data["members"]] == [lead, "Helper", "Critic"]
    assert (await api.post(f"/api/v1/teams/{team_id}/members", {"agentId": critic, "role": "boss"}, token="bob")).status == 400
    assert (await api.post(f"/api/v1/teams/{team_id}/members", {"agentId": critic}, token="carol")).status == 403
    r = await api.delete(f"/api/v1/teams/{team_id}/members/{helper}", token="bob")
    assert r.status == 200 and [m["name"] for m in r.data["members"]] == [lead, "Critic"]
    assert (await api.delete(f"/api/v1/teams/{team_id}/members/{env.agent_id}", token="bob")).status == 409  # the lead
    assert (await api.delete(f"/api/v1/teams/{team_id}/members/{helper}", token="bob")).status == 404
    # the board: tasks of the team's runs, by status, and the counts
    env.llm.enqueue(Script(text=json.dumps({"tasks": [{"agent": "Critic", "task": "Review the draft"}]})))
    env.llm.enqueue(Script(text="Looks fine."))
    env.llm.enqueue(Script(text="Done: reviewed."))
    run = (await api.post(f"/api/v1/teams/{team_id}/runs", {"goal": "Review"}, token="bob")).data
    for _ in range(200):
        if (await api.get(f"/api/v1/team-runs/{run['id']}", token="bob")).data["status"] in ("completed", "partial", "failed"):
            break
        await asyncio.sleep(0.05)
    tasks = (await api.get(f"/api/v1/teams/{team_id}/tasks", params={"status": "completed"}, token="carol")).data
    assert [(t["subject"], t["assigneeAgentId"], t["runId"]) for t in tasks] == [("Review the draft", critic, run["id"])]
    assert (await api.get(f"/api/v1/teams/{team_id}/tasks/stats", token="carol")).data == {"completed": 1}
    assert (await api.get(f"/api/v1/teams/{team_id}/tasks", params={"status": "pending"}, token="carol")).data == []


async def test_models_journey_offers_chat_models_by_name_shows_discover_and_marks_the_default_active(env: ChatEnv) -> None:
    api = env.api
    r = await api.post("/api/v1/models/fake/models", {"modelName": "embed-1", "modelType": "embedding"}, token="alice")
    assert r.status == 200, r.body
    r = await api.post("/api/v1/models/fake/models", {"modelName": "scripted-two", "displayName": "Scripted Two"}, token="alice")
    fake = next(p for p in (await api.get("/api/v1/models", token="alice")).data if p["id"] == "fake")
    # ManageModelsModal shows Discover by supportModelDiscovery; the selector lists chat models only, by name
    assert fake["supportModelDiscovery"] is True and fake["supportConnectionCheck"] is True
    assert [(m["id"], m["name"]) for m in fake["models"]] == [("scripted", "scripted"), ("scripted-two", "Scripted Two")]
    assert fake["models"][1]["configId"] == r.data["id"]  # the stored id stays beside the name
    # isActiveModel: activeLlm.providerId == provider.id and activeLlm.model == model.id
    active = (await api.get("/api/v1/models/active", token="alice")).data["activeLlm"]
    assert [m["id"] for m in fake["models"] if active["providerId"] == "fake" and active["model"] == m["id"]] == ["scripted"]
    # setActiveModel sends {providerId, model: model.id} (the name now); the mark moves
    r = await api.put("/api/v1/models/active", {"providerId": "fake", "model": "scripted-two"}, token="alice")
    assert r.status == 200 and r.data["activeLlm"]["model"] == "scripted-two"
    # the chat sends the selected model's id as modelName: the conversation's model is the name
    env.llm.enqueue(Script(text="hello"))
    events = await env.api.sse("POST", "/api/v1/chat/stream", {"agentId": env.agent_id, "conversationId": "c-model", "message": "hi",
                                                                "modelProvider": "fake", "modelName": "scripted-two"}, token="alice")
    assert events[-1].data["runtimeModel"] == "scripted-two"


async def test_dashboard_compares_three_periods_and_lists_recent_cron_runs_for_the_scheduler(env: ChatEnv) -> None:
    api = env.api
    env.llm.enqueue(Script(text="hi there"))
    await env.stream("hello", conversation_id="c-dash")
    # Dashboard.vue draws one comparison card per key of /dashboard/overview: exactly the three periods
    overview = (await api.get("/api/v1/dashboard/overview", token="carol")).data
    assert list(overview) == ["today", "thisWeek", "thisMonth"]
    for period in overview.values():
        assert period["conversations"] == 1 and period["messages"] == 2 and period["totalTokens"] > 0 and period["toolCalls"] == 0
    stats = (await api.get("/api/v1/dashboard/stats", token="carol")).data
    assert stats["conversations"] == 1 and stats["agents"] == 1 and stats["total"]["messages"] == 2
    # Scheduler: create, run now, then the run history (recentRuns(50)) and the job's runs (limit=20) are lists
    body = {"name": "brief", "cronExpression": "0 9 * * *", "timezone": "UTC", "agentId": env.agent_id,
            "taskType": "text", "triggerMessage": "brief me", "enabled": True}
    job = (await api.post("/api/v1/cron-jobs", body, token="alice")).data
    env.llm.enqueue(Script(text="Your brief.", prompt_tokens=7, completion_tokens=3))
    assert (await api.post(f"/api/v1/cron-jobs/{job['id']}/run", token="alice")).status == 200
    for _ in range(100):
        runs = (await api.get("/api/v1/dashboard/cron-runs", params={"limit": "50"}, token="carol")).data
        if runs and runs[0]["status"] != "running":
            break
        await asyncio.sleep(0.05)
    assert isinstance(runs, list) and len(runs) == 1
    run = runs[0]
    assert run["cronJobId"] == job["id"] and run["status"] == "succeeded" and run["triggerType"] == "manual"
    assert run["startedAt"] and run["finishedAt"] and run["tokenUsage"] == 10 and run["errorMessage"] is None
    assert (await api.get(f"/api/v1/dashboard/cron-runs/{job['id']}", params={"limit": "20"}, token="carol")).data == runs
    assert (await api.get("/api/v1/dashboard/cron-runs", token="carol")).data["total"] == 1  # paged without limit
    assert (await api.get("/api/v1/dashboard/cron-runs", params={"limit": "0"}, token="carol")).status == 400


async def test_audit_tiles_channel_health_live_view_and_sessions_read_the_console_names(env: ChatEnv) -> None:
    api = env.api
    env.llm.enqueue(Script(text="hi"))
    await env.stream("hello", conversation_id="c-sess")
    # AuditLogs tiles: blocked / needsApproval / allowed beside byDecision
    stats = (await api.get("/api/v1/security/audit/stats", token="alice")).data
    assert (stats["blocked"], stats["needsApproval"], stats["allowed"]) == (
        stats["byDecision"]["deny"], stats["byDecision"]["ask"], stats["byDecision"]["allow"])
    # Channels: healthAll rows carry status UP (shown as connected) and detail
    ch = (await api.post("/api/v1/channels", {"name": "Site chat", "channelType": "webchat", "agentId": env.agent_id},
                         token="alice")).data
    health = (await api.get("/api/v1/channels/health", token="carol")).data
    assert [(h["channelId"], h["status"], h["detail"]) for h in health] == [(ch["id"], "UP", "webchat is served by this server")]
    # Agents -> Live: an object {summary, runs, subagents, timestamp}
    live = (await api.get("/api/v1/admin/agent-runtime/snapshot", token="alice")).data
    assert set(live) == {"summary", "runs", "turns", "subagents", "timestamp"} and live["summary"]["running"] == 0
    assert live["runs"] == [] and live["turns"][0]["conversationId"] == "c-sess" and live["turns"][0]["done"] is True
    # Sessions: "Last active" reads updateTime
    rows = (await api.get("/api/v1/conversations/page", token="alice")).data["records"]
    assert rows[0]["conversationId"] == "c-sess" and rows[0]["updateTime"] == rows[0]["lastActiveTime"] is not None


async def test_triggers_journey_creates_a_workflow_trigger_lists_its_target_and_an_event_starts_the_workflow(env: ChatEnv) -> None:
    from tests.test_workflows import APPROVAL_GRAPH, W, published
    api = env.api
    wid = await published(api, APPROVAL_GRAPH)
    # TriggersPanel's form: {workspaceId, name, patternType, patternJson, targetType: workflow, targetId, ...}
    form = {"workspaceId": "1", "name": "On hook", "patternType": "webhook", "patternJson": "{}", "targetType": "workflow",
            "targetId": wid, "rateLimitPerMin": 60, "dedupWindowSecs": 60, "botSelfFilter": True, "enabled": True,
            "maxFires": 0, "payloadTemplate": ""}
    r = await api.post("/api/v1/triggers", form, token="bob")
    assert r.status == 200, r.body
    cron = {**form, "name": "Hourly", "patternType": "cron", "patternJson": '{"cron":"0 0 * * * *","timezone":"UTC"}'}
    r = await api.post("/api/v1/triggers", cron, token="bob")
    assert r.status == 200 and r.data["cronExpression"] == "0 * * * *" and r.data["nextFireTime"], r.body
    # the form starts as a cron pattern: switched to webhook, it still sends the cron fields, which mean nothing there
    switched = {**form, "name": "Switched", "patternJson": '{"cron":"0 0 * * * *","timezone":"UTC"}'}
    r = await api.post("/api/v1/triggers", switched, token="bob")
    assert r.status == 200 and r.data["patternType"] == "webhook" and r.data["patternJson"] == "{}", r.body
    await api.delete(f"/api/v1/triggers/{r.data['id']}", token="bob")
    rows = {t["name"]: t for t in (await api.get("/api/v1/triggers", params={"workspaceId": "1"}, token="carol")).data}
    hook = rows["On hook"]
    assert (hook["targetType"], hook["targetId"], hook["patternType"], hook["agentId"]) == ("workflow", wid, "webhook", None)
    assert rows["Hourly"]["patternJson"] == '{"cron": "0 0 * * * *", "timezone": "UTC"}'
    # bad forms answer 400 with the field
    for bad, field in (({**form, "targetId": "0"}, "targetId"), ({**form, "patternType": "content_match"}, "patternType"),
                       ({**cron, "patternJson": '{"cron":"30 0 * * * *"}'}, "patternJson"),
                       ({**form, "patternType": "channel_message", "patternJson": '{"contentContains":"x"}'}, "patternJson")):
        r = await api.post("/api/v1/triggers", bad, token="bob")
        assert r.status == 400 and r.msg.startswith(field), r.body
    # toggling sends the whole row back with enabled flipped
    r = await api.put(f"/api/v1/triggers/{hook['id']}", {**hook, "enabled": False}, token="bob")
    assert r.status == 200 and r.data["enabled"] is False and r.data["targetId"] == wid
    await api.put(f"/api/v1/triggers/{hook['id']}", {**hook, "enabled": True}, token="bob")
    # ingestEvent: {workspaceId, patternType, eventId, senderId, data} starts a run of the workflow with the event
    fired = await api.post("/api/v1/triggers/events", {"workspaceId": "1", "patternType": "webhook", "eventId": "e1",
                                                       "senderId": "u7", "data": {"what": "v2"}}, token="bob")
    assert fired.status == 200 and [(f["triggerName"], f["fired"]) for f in fired.data] == [("On hook", True)], fired.body
    for _ in range(100):
        runs = (await api.get(f"{W}/{wid}/runs", token="carol")).data
        if runs:
            break
        await asyncio.sleep(0.05)
    assert runs and runs[0]["input"] == {"what": "v2", "senderId": "u7"}
    history = (await api.get(f"/api/v1/dashboard/cron-runs/{hook['id']}", params={"limit": "5"}, token="carol")).data
    assert history[0]["status"] == "succeeded" and history[0]["triggerType"] == "event"


CONSOLE = {"X-Original-Console": "1"}  # what the proxy serving the original console adds (README)


async def test_a_reload_mid_answer_reads_the_running_answer_as_generating_only_through_the_consoles_proxy(env: ChatEnv) -> None:
    api = env.api
    env.llm.enqueue(Script(text=[f"word{i} " for i in range(40)], delay_s=0.1))
    turn = asyncio.create_task(env.stream("Count slowly", conversation_id="c-reload"))
    url = "/api/v1/conversations/c-reload/messages"

    async def running() -> dict[str, object]:
        rows = (await api.get(url, token="alice")).data
        assert rows and rows[-1]["role"] == "assistant" and rows[-1]["content"], rows
        return rows[-1]

    spec_row = await eventually(running, what="the partial answer is stored")
    assert spec_row["status"] == "streaming"  # the spec's value for every other client
    # the console reattaches the stream to the bubble marked `generating`, so one bubble shows, not two
    console_rows = (await api.get(url, headers=CONSOLE, token="alice")).data
    assert console_rows[-1]["id"] == spec_row["id"] and console_rows[-1]["status"] == "generating"
    paged = (await api.get(url, params={"limit": 5}, headers=CONSOLE, token="alice")).data
    assert paged["messages"][-1]["status"] == "generating"
    await turn
    assert (await api.get(url, headers=CONSOLE, token="alice")).data[-1]["status"] == "completed"


async def test_tool_guard_and_audit_logs_read_upper_case_severities_and_decisions_through_the_consoles_proxy(env: ChatEnv) -> None:
    api = env.api
    await api.put("/api/v1/agents/" + env.agent_id + "/tools", ["get_current_time"], token="alice")
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("get_current_time", {})]), Script(text="noon"))
    await env.stream("time?", conversation_id="c-guard")
    spec_rules = (await api.get("/api/v1/security/guard/rules", params={"page": 1, "size": 200}, token="alice")).data["records"]
    console_rules = (await api.get("/api/v1/security/guard/rules", params={"page": 1, "size": 200}, headers=CONSOLE,
                                   token="alice")).data["records"]
    assert {r["severity"] for r in spec_rules} <= {"low", "medium", "high", "critical"}
    assert [(r["ruleId"], r["severity"], r["decision"]) for r in console_rules] == [
        (r["ruleId"], r["severity"].upper(), {"allow": "ALLOW", "ask": "NEEDS_APPROVAL", "deny": "BLOCK"}[r["decision"]])
        for r in spec_rules]
    builtin = (await api.get("/api/v1/security/guard/rules/builtin", headers=CONSOLE, token="alice")).data
    assert {r["decision"] for r in builtin} <= {"ALLOW", "NEEDS_APPROVAL", "BLOCK"} and builtin
    spec_log = (await api.get("/api/v1/security/audit/logs", params={"page": 1, "size": 20}, token="alice")).data["records"][0]
    log = (await api.get("/api/v1/security/audit/logs", params={"page": 1, "size": 20}, headers=CONSOLE,
                         token="alice")).data["records"][0]
    assert (spec_log["toolName"], spec_log["decision"]) == ("get_current_time", "allow")
    assert log["decision"] == "ALLOW" and log["id"] == spec_log["id"]
    # the console's decision filter uses its own names
    asked = await api.get("/api/v1/security/audit/logs", params={"page": 1, "size": 20, "decision": "ALLOW"}, token="alice")
    assert [r["id"] for r in asked.data["records"]] == [spec_log["id"]]
    none = await api.get("/api/v1/security/audit/logs", params={"page": 1, "size": 20, "decision": "NEEDS_APPROVAL"}, token="alice")
    assert none.data["records"] == []


async def test_the_team_board_streams_run_and_task_events_the_console_reads_live(env: ChatEnv) -> None:
    from tests.helpers.chat import make_agent
    from tests.helpers.client import iter_sse
    api = env.api
    helper = await make_agent(api, name="Helper")
    team_id = (await api.post("/api/v1/teams", {"name": "Desk", "leadAgentId": env.agent_id, "memberAgentIds": [helper]},
                              token="bob")).data["id"]
    outsider = await api.get(f"/api/v1/teams/{team_id}/events", token="dave", workspace=env.people["dave"]["workspace"])
    assert b'"code":404' in outsider.raw  # another workspace's team: an SSE error frame
    url = api.base_url + f"/api/v1/teams/{team_id}/events"
    # useTeamEvents: fetch with Accept: text/event-stream and the bearer token; read frames as they come
    board = await api.session.get(url, headers={"Accept": "text/event-stream", "Authorization": "Bearer " + api.tokens["carol"]})
    assert board.status == 200 and board.headers["Content-Type"].startswith("text/event-stream")
    frames = iter_sse(board)
    env.llm.enqueue(Script(text=json.dumps({"tasks": [{"agent": "Helper", "task": "Check the numbers"}]})))
    env.llm.enqueue(Script(text="They add up."), Script(text="Checked."))
    run = (await api.post(f"/api/v1/teams/{team_id}/runs", {"goal": "Check"}, token="bob")).data
    seen: list[tuple[str, dict[str, object]]] = []
    async for event in frames:
        if event.event == "heartbeat":
            continue
        seen.append((event.event, event.data))
        if event.event in ("team_run_completed", "team_run_partial", "team_run_failed"):
            break
    board.close()
    assert {data["runId"] for _, data in seen} == {run["id"]} and {data["teamId"] for _, data in seen} == {team_id}
    names_seen = [name for name, _ in seen]
    assert names_seen[0] == "team_run_planning" and names_seen[-1] == "team_run_completed", names_seen
    assert [n for n in names_seen if n.startswith("team_task_")] == ["team_task_created", "team_task_dispatched", "team_task_completed"]
    task = next(data for name, data in seen if name == "team_task_completed")
    # Teams.vue: the feed line "#<taskNumber> <subject> · <type>"; the board refresh; run progress for the chat's run card
    assert (task["taskId"], task["taskNumber"], task["subject"], task["status"]) == (f"{run['id']}-0", 1, "Check the numbers", "completed")
    assert task["assigneeAgentId"] == helper and task["progress"]["done"] == 1 and task["progress"]["total"] == 1
    assert len({data["eventId"] for _, data in seen}) == len(seen)  # the console de-duplicates by eventId
    board_tasks = (await api.get(f"/api/v1/teams/{team_id}/tasks", token="carol")).data
    assert [t["id"] for t in board_tasks] == [task["taskId"]]


# ---- the walk's browser journeys (scripts/console_walk), their requests replayed as the console sent them ----------

async def test_conversation_journey_renames_pins_and_deletes_through_the_sidebar_menu(env: ChatEnv) -> None:
    api = env.api
    env.llm.enqueue(Script(text="ok"))
    await env.stream("Draft a reply to the landlord", conversation_id="c-mail")
    assert (await api.put("/api/v1/conversations/c-mail/title", {"title": "Landlord reply"}, token="alice")).status == 200
    assert (await api.put("/api/v1/conversations/c-mail/pin", {"pinned": True}, token="alice")).status == 200
    row = next(c for c in (await api.get("/api/v1/conversations", token="alice")).data if c["conversationId"] == "c-mail")
    assert row["title"] == "Landlord reply" and row["pinned"]  # the sidebar's Pinned group reads `pinned`
    assert (await api.put("/api/v1/conversations/c-mail/title", {"title": "x"}, token="bob")).status == 403
    assert (await api.delete("/api/v1/conversations/c-mail", token="alice")).status == 200
    assert "c-mail" not in {c["conversationId"] for c in (await api.get("/api/v1/conversations", token="alice")).data}


async def test_agent_journey_creates_from_the_blank_form_and_saves_the_edit_form_whole(env: ChatEnv) -> None:
    api = env.api
    # Agents -> Hire Employee -> skip templates -> the blank form, as saveAgent posts it
    form = {"name": "Walker", "description": "", "agentType": "react", "runtimeType": "native", "runtimeConfig": None,
            "systemPrompt": "", "modelName": "", "maxIterations": 10, "icon": "", "tags": "", "enabled": True,
            "defaultThinkingLevel": None, "primaryKbId": None, "skillsDisabled": False, "toolsDisabled": False,
            "wikiDisabled": False}
    r = await api.post("/api/v1/agents", form, token="bob")
    assert r.status == 200, r.body
    agent_id = r.data["id"]
    r = await api.put(f"/api/v1/agents/{agent_id}", {**form, "description": "Walks the console"}, token="bob")
    assert r.status == 200, r.body
    agent = (await api.get(f"/api/v1/agents/{agent_id}", token="carol")).data
    assert (agent["name"], agent["description"], agent["enabled"]) == ("Walker", "Walks the console", True)
    assert (await api.put(f"/api/v1/agents/{agent_id}", {**form, "name": "x"}, token="carol")).status == 403


async def test_provider_journey_creates_a_custom_provider_configures_discovers_and_sets_the_default(env: ChatEnv) -> None:
    api = env.api
    base = env.llm.url
    env.llm.models = ["walk-model"]
    # ProviderConfigModal's save: create, then the config (an empty apiKey keeps none)
    r = await api.post("/api/v1/models/custom-providers", {
        "id": "walk-llm", "name": "Walk LLM", "defaultBaseUrl": base, "apiKeyPrefix": "sk-", "protocol": "openai-compatible",
        "chatModel": "OpenAIChatModel", "requireApiKey": True, "models": []}, token="alice")
    assert r.status == 200, r.body
    r = await api.put("/api/v1/models/walk-llm/config", {
        "apiKey": "", "baseUrl": base, "protocol": "openai-compatible", "chatModel": "OpenAIChatModel", "requireApiKey": True,
        "generateKwargs": {}, "fallbackPriority": 0}, token="alice")
    assert r.status == 200, r.body
    card = next(p for p in (await api.get("/api/v1/models", token="alice")).data if p["id"] == "walk-llm")
    assert card["supportModelDiscovery"] is True and card["configured"] is True  # the Discover button is enabled
    found = (await api.post("/api/v1/models/walk-llm/discover", token="alice")).data
    assert [m["id"] for m in found["newModels"]] == ["walk-model"]
    assert (await api.post("/api/v1/models/walk-llm/discover/apply", {"modelIds": ["walk-model"]}, token="alice")).status == 200
    r = await api.put("/api/v1/models/active", {"providerId": "walk-llm", "model": "walk-model"}, token="alice")
    assert r.status == 200, r.body
    active = (await api.get("/api/v1/models/active", token="carol")).data["activeLlm"]
    assert (active["providerId"], active["model"]) == ("walk-llm", "walk-model")
    card = next(p for p in (await api.get("/api/v1/models", token="alice")).data if p["id"] == "walk-llm")
    assert [m["id"] for m in card["models"]] == ["walk-model"]  # ManageModelsModal marks it Active by this id


async def test_cron_journey_saves_the_console_form_runs_it_and_lists_the_run_in_history(env: ChatEnv) -> None:
    api = env.api
    form = {"name": "Walk digest", "cronExpression": "0 9 * * *", "timezone": "Asia/Shanghai", "agentId": env.agent_id,
            "taskType": "text", "triggerMessage": "Summarise the day", "requestBody": "", "enabled": True, "channelId": None,
            "deliveryConfig": None}
    r = await api.post("/api/v1/cron-jobs", form, token="alice")
    assert r.status == 200, r.body
    job = r.data
    env.llm.enqueue(Script(text="Today was quiet."))
    assert (await api.post(f"/api/v1/cron-jobs/{job['id']}/run", token="alice")).status == 200

    async def finished() -> dict[str, object]:
        runs = (await api.get("/api/v1/dashboard/cron-runs", params={"limit": "20"}, token="alice")).data
        assert runs and runs[0]["status"] != "running", runs
        return runs[0]

    run = await eventually(finished, what="the run finished")
    # RunHistoryPanel: jobName(run.cronJobId), triggerType pill, status badge, startedAt/finishedAt, tokenUsage
    assert (run["cronJobId"], run["triggerType"], run["status"]) == (job["id"], "manual", "succeeded"), run
    assert run["startedAt"] and run["finishedAt"]


async def test_knowledge_base_journey_creates_uploads_a_file_and_edits_the_page_it_made(env: ChatEnv) -> None:
    import aiohttp

    from tests.helpers.wiki import KB, page, pages_answer, wait_idle
    api = env.api
    r = await api.post(KB, {"name": "Walk notes", "description": ""}, token="bob")
    assert r.status == 200, r.body
    kb = r.data["id"]
    env.llm.enqueue(Script(text=pages_answer(page("walking", "Walking", "# Walking\n\nThe walk opens every screen.", ["c1"]))))
    form = aiohttp.FormData()  # RawMaterialPanel's upload: the file alone
    form.add_field("file", b"# Walking\n\nThe console walk opens every screen.\n", filename="walking.md", content_type="text/markdown")
    r = await api.post(f"{KB}/{kb}/raw/upload", data=form, token="bob")
    assert r.status == 200, r.body
    await wait_idle(api, kb, token="bob")
    listed = (await api.get(f"{KB}/{kb}/pages", token="carol")).data
    assert [p["slug"] for p in listed] == ["walking"]
    r = await api.put(f"{KB}/{kb}/pages/walking", {"content": "# Walking\n\nEdited in the original console."}, token="bob")
    assert r.status == 200, r.body
    read = (await api.get(f"{KB}/{kb}/pages/walking", token="carol")).data
    assert read["content"] == read["markdown"] == "# Walking\n\nEdited in the original console." and read["lastUpdatedBy"] == "manual"
