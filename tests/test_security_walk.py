"""Route walks: outsiders and viewers change nothing of workspace 1 and see none of it; no answer leaks a secret."""
from __future__ import annotations

import json
from typing import Any, AsyncIterator

import aiohttp
import pytest
import pytest_asyncio

from platform_server.web.context import LOGIN, OPTIONAL, PUBLIC
from tests.helpers.client import ApiClient, Response
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.seed import MARK, Seeded, memory_zip, seed_workspace_one, upload_form
from tests.helpers.seed_areas import area_bodies
from tests.helpers.fake_oauth import FakeOAuthServer
from tests.helpers.server import RunningServer, create_personas, free_port, start_server

WRITES = ("POST", "PUT", "PATCH", "DELETE")

# Writes whose target is the caller's own data, not a workspace-1 resource: never walked.
OWN_DATA = {
    ("POST", "/api/v1/workspaces"),  # creates a workspace owned by the caller
    ("POST", "/api/v1/auth/tokens"),  # the caller's own PAT
    ("PUT", "/api/v1/auth/users/{id}/password"),  # {id} is informational: it always changes the caller's password
    ("POST", "/api/v1/stt/transcribe"),  # stateless: transcribes the caller's upload
    ("POST", "/api/v1/tts/synthesize"),  # stateless: speaks the caller's text
}
# Creates in the request's workspace: an owner of another workspace may create there (checked with X-Workspace-Id 1).
# Writes without path parameters (and no body naming a workspace-1 resource) likewise act on the caller's workspace.
CREATE_IN_OWN_WORKSPACE = {("POST", "/api/v1/templates/{id}/apply"), ("POST", "/api/v1/skill-templates/{id}/instantiate")}
# Reads that describe the caller, not the workspace: `access` answers the caller's own (empty) capability.
OWN_READS = {"/api/v1/workspaces/{id}/access"}
# Writes that name a workspace-1 resource in the body: refused with 400 (not in this workspace) as well as 403/404.
# Workspace 1 itself can never be deleted: that 400 comes before the role check.
BODY_SCOPED = {("POST", "/api/v1/channels"), ("POST", "/api/v1/channels/preflight"), ("POST", "/api/v1/approval/grants"),
               ("DELETE", "/api/v1/workspaces/{id}")}
# What a viewer of workspace 1 may read of alice's resources: the workspace's shared ones (her conversations,
# memory, goals, plans, tokens and secrets stay hers).
SHARED_AREAS = ("/api/v1/wiki/", "/api/v1/workflows/", "/api/v1/teams/", "/api/v1/team-runs/", "/api/v1/cron-jobs/",
                "/api/v1/triggers/", "/api/v1/datasources/", "/api/v1/channels/", "/api/v1/workspaces/")
SHARED_READS = {"/api/v1/agents/{id}", "/api/v1/agents/{agentId}/workspace/files/{path}", "/api/v1/skills/{id}",
                "/api/v1/openai/v1/models/{model}"}  # (an agent as the OpenAI door lists it)
# Calls that only read or check (a search preview, a validation), open to a viewer of the workspace.
VIEWER_CALLS = {("POST", "/api/v1/wiki/kb/{kbId}/search-preview"),
                ("POST", "/api/v1/wiki/knowledge-bases/{id}/page-type-profile/validate"),
                ("POST", "/api/v1/wiki/knowledge-bases/{kbId}/pipelines/validate")}
GET_PARAMS = {
    "/api/v1/plans": lambda s: {"agentId": s.agent},
    "/api/v1/subagents/active": lambda s: {"conversationId": s.conversation},
    "/api/v1/approval/resolutions": lambda s: {"conversationId": s.conversation},
    "/api/v1/agents/{id}/chat/stream": lambda s: {"message": "hi", "conversationId": s.conversation},
    "/api/v1/skills/prompt-preview": lambda s: {"agentId": s.agent},
}


def bodies(s: Seeded, people: dict[str, Any]) -> dict[tuple[str, str], Any]:
    """Valid bodies, so a refusal comes from the workspace or owner check and not from validation."""
    chat = {"agentId": s.agent, "message": "hi", "conversationId": s.conversation}
    channel = {"name": "x", "channelType": "im_a", "agentId": s.agent, "replyUrl": "https://example.com/r", "settings": {"appKey": "k"}}
    return {
        ("PUT", "/api/v1/agents/{id}"): {"name": "hacked"},
        ("PUT", "/api/v1/agents/{agentId}/skills"): {"skillIds": [int(s.skill)]},
        ("PUT", "/api/v1/skills/{id}"): {"description": "hacked"},
        ("PUT", "/api/v1/skills/{id}/toggle"): {"enabled": False},
        ("POST", "/api/v1/skills/{id}/pin"): {"pinned": True},
        ("POST", "/api/v1/skills/{id}/archive"): {"force": True},
        ("POST", "/api/v1/skills/{id}/export-workspace"): {"agentId": s.agent},
        ("POST", "/api/v1/skills/{skillId}/secrets"): {"key": "API_KEY", "value": "hacked"},
        ("POST", "/api/v1/skills/synthesize-from-conversation"): {"conversationId": s.conversation},
        ("PUT", "/api/v1/agents/{agentId}/tools"): {"toolNames": ["get_current_time"]},
        ("PUT", "/api/v1/agents/{agentId}/provider-preferences"): {"providerIds": ["fake"]},
        ("PUT", "/api/v1/agents/{agentId}/workspace/prompt-files"): {"files": ["notes.md"]},
        ("PUT", "/api/v1/agents/{agentId}/workspace/files/{path}"): {"content": "hacked"},
        ("POST", "/api/v1/agents/{id}/chat"): {"message": "hi", "conversationId": s.conversation},
        ("POST", "/api/v1/agents/{id}/execute"): {"task": "hi", "conversationId": s.conversation},
        ("POST", "/api/v1/chat"): chat,
        ("POST", "/api/v1/chat/stream"): chat,
        ("POST", "/api/v1/chat/{conversationId}/interrupt"): {"message": "hi"},
        ("POST", "/api/v1/conversations/batch-delete"): {"conversationIds": [s.conversation]},
        ("PUT", "/api/v1/conversations/{conversationId}/title"): {"title": "hacked"},
        ("PUT", "/api/v1/conversations/{conversationId}/pin"): {"pinned": True},
        ("PUT", "/api/v1/conversations/{conversationId}/model"): {"modelProvider": "fake", "modelName": "scripted"},
        ("POST", "/api/v1/subagents/spawn-pause"): {"conversationId": s.conversation, "paused": True},
        ("POST", "/api/v1/approval/grants"): {"scopeType": "AGENT", "scopeId": s.agent, "maxSeverity": "high",
                                              "grantKind": "ALWAYS"},
        ("PUT", "/api/v1/datasources/{id}"): {"description": "hacked"},
        ("PUT", "/api/v1/datasources/{id}/toggle"): {"enabled": False},
        ("POST", "/api/v1/channels"): channel,
        ("POST", "/api/v1/channels/preflight"): channel,
        ("PUT", "/api/v1/channels/{id}"): {"name": "hacked"},
        ("PUT", "/api/v1/channels/{id}/toggle"): {"enabled": False},
        ("PUT", "/api/v1/workspaces/{id}"): {"name": "hacked"},
        ("POST", "/api/v1/workspaces/{id}/members"): {"userId": people["dave"]["id"], "role": "owner"},
        ("PUT", "/api/v1/workspaces/{id}/members/{targetUserId}"): {"role": "viewer"},
        ("POST", "/api/v1/channels/qrcode/{channelType}/begin"): {"channelId": s.channel},
        **area_bodies({k: v for k, (v, _) in s.suffixes.items()}),
    }


async def call(api: ApiClient, method: str, template: str, path: str, s: Seeded, known: dict[tuple[str, str], Any],
               token: str, workspace: Any) -> Response:
    if (method, template) == ("POST", "/api/v1/chat/upload"):
        return await api.request(method, path, token=token, workspace=workspace, data=upload_form(s.conversation))
    if template.endswith("/workspace/memory/import") or template.endswith("/workspace/memory/import/preview"):
        return await api.request(method, path, token=token, workspace=workspace, data=memory_zip(),
                                 headers={"Content-Type": "application/zip"})
    return await api.request(method, path, known.get((method, template)), token=token, workspace=workspace)


async def test_outsiders_and_viewers_cannot_change_or_read_workspace_one_through_any_route(
    server: RunningServer, api: ApiClient, people: dict, llm: ScriptedOpenAI
) -> None:
    s = await seed_workspace_one(api, people, llm, server.config.data_dir)
    known = bodies(s, people)
    dave_ws = people["dave"]["workspace"]
    callers = (("dave", dave_ws), ("dave", 1), ("carol", 1))
    checked = 0
    for r in server.platform.routes:
        handler = r.handler
        for method in handler.implemented_methods():
            level = handler.access.get(method)
            if level in (PUBLIC, OPTIONAL) or (method, r.template) in OWN_DATA:
                continue
            path, scoped = s.fill(r.template)
            sse = method in handler.sse_methods
            for token, workspace in callers:
                if method == "GET":
                    if token != "dave":  # a viewer of workspace 1 reads what the workspace shares, not alice's own
                        if scoped and not sse:
                            res = await api.request(method, path, token=token, workspace=workspace,
                                                    params=GET_PARAMS.get(r.template, lambda _: None)(s))
                            shared = r.template in SHARED_READS or r.template.startswith(SHARED_AREAS)
                            assert shared or MARK.encode() not in res.raw, (token, method, path, res.raw[:300])
                            checked += 1
                        continue
                    res = await api.request(method, path, token=token, workspace=workspace,
                                            params=GET_PARAMS.get(r.template, lambda _: None)(s))
                    assert MARK.encode() not in res.raw, (token, workspace, method, path, res.raw[:300])
                    if sse:
                        assert b"event: error" in res.raw, (method, path, res.raw[:300])
                    elif scoped and r.template not in OWN_READS:
                        assert res.status >= 400, (token, workspace, method, path, res.body)
                    checked += 1
                    continue
                if token == "carol" and (method, r.template) in VIEWER_CALLS:
                    continue  # a viewer of workspace 1 may call it: it reads, it writes nothing
                if workspace == dave_ws and ((method, r.template) in CREATE_IN_OWN_WORKSPACE or (
                        "{" not in r.template and (method, r.template) not in known)):
                    continue  # creates in, or acts on, the caller's own workspace: nothing of workspace 1 is named
                if not r.template.count("{") and (method, r.template) not in known and level in ("viewer", LOGIN) \
                        and r.template != "/api/v1/chat/upload":
                    continue  # a create in the caller's own space (an area that landed after this walk)
                res = await call(api, method, r.template, path, s, known, token, workspace)
                where = (token, workspace, method, path, res.status, res.raw[:300])
                assert MARK.encode() not in res.raw, where
                if sse:
                    assert res.status == 200 and b"event: error" in res.raw, where
                    checked += 1
                    continue
                assert res.status >= 400, where
                strict = (method, r.template) in known or method not in handler.body_models
                allowed = {401, 403, 404, 1001} | ({400} if (method, r.template) in BODY_SCOPED else set())
                if strict:
                    assert res.code in allowed, where
                checked += 1
    assert checked > 300
    await assert_workspace_one_intact(api, s, people)


def test_a_route_whose_parameter_no_seed_fills_fails_the_walk() -> None:
    with pytest.raises(AssertionError, match=r"no seeded id for \{widgetId\} in /api/v1/widgets/\{widgetId\}"):
        Seeded().fill("/api/v1/widgets/{widgetId}")
    with pytest.raises(AssertionError, match="no seeded id for {id}"):
        Seeded().fill("/api/v1/agents/{id}")  # a known area whose resource was not created


async def assert_workspace_one_intact(api: ApiClient, s: Seeded, people: dict) -> None:
    async def data(path: str) -> Any:
        res = await api.get(path, token="alice")
        assert res.status == 200, (path, res.body)
        return res.data

    assert (await data("/api/v1/workspaces/1"))["name"] == f"Default {MARK}"
    members = {m["userId"]: m["role"] for m in await data("/api/v1/workspaces/1/members")}
    assert people["dave"]["id"] not in members and members[people["bob"]["id"]] == "member"
    agent = await data(f"/api/v1/agents/{s.agent}")
    assert agent["name"] == f"agent-{MARK}" and agent["enabled"] is True
    assert await data(f"/api/v1/agents/{s.agent}/tools") == []
    assert (await api.get(f"/api/v1/agents/{s.agent}/workspace/files/notes.md", token="alice")).raw == f"notes {MARK}".encode()
    assert [m["role"] for m in await data(f"/api/v1/conversations/{s.conversation}/messages")] == ["user", "assistant"]
    conv = next(c for c in await data("/api/v1/conversations") if c["conversationId"] == s.conversation)
    assert conv["pinned"] == 0 and conv["title"].startswith("hello")
    assert (await data(f"/api/v1/datasources/{s.datasource}"))["enabled"] is True
    channel = await data(f"/api/v1/channels/{s.channel}")
    assert channel["name"] == f"ch-{MARK}" and channel["enabled"] is True
    grants = (await data("/api/v1/approval/grants"))["records"]
    assert [g["revoked"] for g in grants] == [False]
    assert (await api.get("/api/v1/auth/tokens", token=s.pat_token)).status == 200
    skill = await data(f"/api/v1/skills/{s.skill}")
    assert skill["description"] == f"skill {MARK}" and skill["enabled"] is True and not skill["archived"]
    assert [x["key"] for x in await data(f"/api/v1/skills/{s.skill}/secrets")] == ["API_KEY"]
    assert await data(f"/api/v1/agents/{s.agent}/skills") == []
    for template in ("/api/v1/wiki/knowledge-bases/{id}", "/api/v1/wiki/knowledge-bases/{kbId}/pages/{slug}",
                     "/api/v1/wiki/transformations/{id}", "/api/v1/cron-jobs/{id}", "/api/v1/triggers/{id}",
                     "/api/v1/goals/{id}", "/api/v1/teams/{teamId}", "/api/v1/workflows/{id}"):
        assert MARK in json.dumps(await data(s.fill(template)[0])), template  # not deleted, not renamed
    assert (await data(s.fill("/api/v1/wiki/knowledge-bases/{kbId}/pages/{slug}")[0]))["archived"] == 0
    actors = {e["actorUsername"] for e in (await data("/api/v1/audit/events?size=100"))["records"]}
    assert not actors & {"dave", "carol"}, actors


# ---- secrets ------------------------------------------------------------------------------------

# Answers the spec lets carry a secret: ProviderInfoDTO (GET /api/v1/models, /catalog) includes API keys for
# global admins, and an OAuth access token is the vendor provider's API key.
KEY_ROUTES = {"/api/v1/models", "/api/v1/models/catalog"}


@pytest_asyncio.fixture
async def idp() -> AsyncIterator[FakeOAuthServer]:
    srv = FakeOAuthServer(client_id="platform-client")
    await srv.start()
    yield srv
    await srv.stop()


@pytest_asyncio.fixture
async def oauth_server(idp: FakeOAuthServer, tmp_path: Any) -> AsyncIterator[RunningServer]:
    running = await start_server(
        str(tmp_path / "data"), oauth_vendor_b_mode="MANUAL_PASTE",
        oauth_vendor_b_authorize_url=idp.url + "/authorize", oauth_vendor_b_token_url=idp.url + "/token",
        oauth_vendor_b_client_id="platform-client", oauth_vendor_b_callback_port=free_port())
    try:
        yield running
    finally:
        await running.stop()


async def sign_in_vendor_b(api: ApiClient) -> None:
    r = await api.get("/api/v1/oauth/vendor_b/authorize", token="alice")
    async with aiohttp.ClientSession() as browser:
        async with browser.get(r.data["authorizeUrl"], allow_redirects=False) as resp:
            callback = resp.headers["Location"]
    r = await api.post("/api/v1/oauth/vendor_b/callback-paste", {"callbackUrl": callback}, token="alice")
    assert r.status == 200 and r.data["connected"] is True, r.body


async def test_no_read_route_answers_a_secret_after_its_one_time_creation_answer(
    oauth_server: RunningServer, idp: FakeOAuthServer, llm: ScriptedOpenAI, tmp_path: Any
) -> None:
    api = oauth_server.client
    people = await create_personas(api)
    s = await seed_workspace_one(api, people, llm, oauth_server.config.data_dir)
    secrets: dict[str, str] = {}

    async def created(res: Response, *hidden: str) -> Any:
        assert res.status == 200, res.body
        for value in hidden:
            assert value not in res.raw.decode(), (value, res.body)
        return res.data

    secrets["api key"] = "SECRET-APIKEY-7f3a"
    await created(await api.post("/api/v1/models/custom-providers", {
        "providerId": "keyed", "name": "keyed", "baseUrl": "https://llm.example.com/v1", "apiKey": secrets["api key"]},
        token="alice"))
    secrets["password"] = "SECRET-PASSWORD-9b1c"
    await created(await api.post("/api/v1/auth/users", {"username": "erin", "password": secrets["password"]},
                                 token="alice"), secrets["password"])
    pat = await created(await api.post("/api/v1/auth/tokens", {"name": "ci"}, token="alice"))
    secrets["pat"] = pat["token"]
    secrets["channel secret"] = "SECRET-CHANNEL-4d2e-0123456789"
    secrets["platform bot token"] = "xoxb-SECRET-BOTTOKEN-7f8e"
    await created(await api.post("/api/v1/channels", {
        "name": "signed", "channelType": "im_d", "agentId": s.agent, "settings": {"botToken": secrets["platform bot token"]},
        "secret": secrets["channel secret"]}, token="alice"), secrets["channel secret"], secrets["platform bot token"])
    secrets["platform app secret"] = "SECRET-LARKAPP-7f8a"
    generated = await created(await api.post("/api/v1/channels", {
        "name": "generated", "channelType": "im_c", "agentId": s.agent, "settings": {
            "appId": "cli_walk", "appSecret": secrets["platform app secret"], "verificationToken": "vt-walk"}},
        token="alice"), secrets["platform app secret"])
    secrets["generated channel secret"] = generated["secret"]
    secrets["mcp header"] = "SECRET-MCPHEADER-5e6f"
    mcp = await created(await api.post("/api/v1/mcp/servers", {
        "name": "headered", "transport": "streamable_http", "url": "http://127.0.0.1:9/mcp", "enabled": False,
        "headers": {"Authorization": "Bearer " + secrets["mcp header"]}}, token="alice"), secrets["mcp header"])
    await created(await api.put(f"/api/v1/mcp/servers/{mcp['id']}", {"headers": {"Authorization": "******"}},
                                token="alice"), secrets["mcp header"])
    secrets["mcp env"] = "SECRET-MCPENV-8a9b"
    await created(await api.post("/api/v1/mcp/servers", {
        "name": "envy", "transport": "stdio", "command": "true", "enabled": False, "env": {"TOKEN": secrets["mcp env"]}},
        token="alice"), secrets["mcp env"])
    secrets["acp env"] = "SECRET-ACPENV-1c2d"
    await created(await api.post("/api/v1/acp/endpoints", {
        "name": "envy-acp", "command": "true", "enabled": False, "env": {"KEY": secrets["acp env"]}}, token="alice"),
        secrets["acp env"])
    secrets["datasource header"] = "SECRET-DSHEADER-3e4f"
    await created(await api.post("/api/v1/datasources", {
        "name": "api", "type": "http",
        "config": {"baseUrl": "https://example.com", "headers": {"X-Api-Key": secrets["datasource header"]}}},
        token="alice"), secrets["datasource header"])
    secrets["skill secret"] = "SECRET-SKILL-6a7b-zzzz"
    await created(await api.post(f"/api/v1/skills/{s.skill}/secrets", {"key": "TOKEN", "value": secrets["skill secret"]},
                                 token="alice"), secrets["skill secret"])
    await sign_in_vendor_b(api)
    (secrets["oauth access token"],) = idp.access_tokens
    (secrets["oauth refresh token"],) = idp.refresh_tokens
    secrets["jwt secret"] = (tmp_path / "data" / "jwt_secret").read_text().strip()
    allowed_in_key_routes = {"api key", "oauth access token"}

    checked = 0
    for r in oauth_server.platform.routes:
        if "GET" not in r.handler.implemented_methods() or "GET" in r.handler.sse_methods:
            continue  # the SSE chat GET runs a turn; its events carry no stored secret
        path, _ = s.fill(r.template)
        res = await api.get(path, token="alice", params=GET_PARAMS.get(r.template, lambda _: None)(s))
        text = res.raw.decode("utf-8", "replace")
        for name, value in secrets.items():
            if r.template in KEY_ROUTES and name in allowed_in_key_routes:
                continue
            assert value not in text, (name, path)
        assert "$2b$" not in text, path  # no bcrypt hash
        if r.template != "/v3/api-docs":  # the API description names the request fields
            assert "password_hash" not in text and '"password"' not in text, path
        checked += 1
    assert checked > 60
    catalog = (await api.get("/api/v1/models/catalog", token="alice")).raw.decode()
    assert secrets["api key"] in catalog and secrets["oauth access token"] in catalog  # the walk saw real values
