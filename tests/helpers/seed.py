"""Workspace-1 resources of alice (one of each kind), and paths that name them, for the route walks."""
from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.models import use_fake_openai

MARK = "WS1MARK"  # every workspace-1 resource carries it; no answer to an outsider may
UNKNOWN_ID = "123456789"  # for params no seed covers (areas that land later)


@dataclass
class Seeded:
    """Ids of alice's workspace-1 resources (and of global resources) by the path parameter they fill."""

    agent: str = ""
    conversation: str = "alice-conv-1"
    upload: str = ""
    plan: str = ""
    subagent: str = "sub0000000000001"
    datasource: str = ""
    channel: str = ""
    grant: str = ""
    pat: str = ""
    pat_token: str = ""
    mcp: str = ""
    acp: str = ""
    rule_pk: str = ""
    rule_id: str = "custom-rule"
    tool: str = ""
    model: str = ""
    skill: str = ""
    skill_name: str = "walk-skill"
    bob: str = ""
    alice: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    # `{id}` by route prefix (longest first); True when the resource belongs to workspace 1
    def by_prefix(self) -> list[tuple[str, str, bool]]:
        return [
            ("/api/v1/security/guard/rules/by-id/", self.rule_pk, False),
            ("/api/v1/agents/", self.agent, True),
            ("/api/v1/auth/tokens/", self.pat, True),
            ("/api/v1/auth/users/", self.alice, True),
            ("/api/v1/mcp/servers/", self.mcp, False),
            ("/api/v1/acp/endpoints/", self.acp, False),
            ("/api/v1/approval/grants/", self.grant, True),
            ("/api/v1/files/generated/", UNKNOWN_ID, False),
            ("/api/v1/workspaces/", "1", True),
            ("/api/v1/tools/", self.tool, False),
            ("/api/v1/models/", self.model, False),
            ("/api/v1/plans/", self.plan, True),
            ("/api/v1/datasources/", self.datasource, True),
            ("/api/v1/channels/", self.channel, True),
            ("/api/v1/templates/", "1001", False),
            ("/api/v1/skills/", self.skill, True),
            ("/api/v1/skill-templates/", UNKNOWN_ID, False),
        ]

    def params(self) -> dict[str, tuple[str, bool]]:
        """Value and workspace-1 flag of every other path parameter."""
        return {
            "agentId": (self.agent, True), "skillId": (self.skill, True), "skillName": (self.skill_name, True),
            "key": ("API_KEY", True), "skillType": ("custom", False), "conversationId": (self.conversation, True),
            "storedName": (self.upload, True), "providerId": ("fake", False), "ruleId": (self.rule_id, False),
            "subagentId": (self.subagent, True), "modelId": (self.model, False), "channelType": ("im_a", False),
            "flagKey": ("wiki", False), "name": ("calculator", False), "path": ("notes.md", True),
            "targetUserId": (self.bob, True),
        }

    def fill(self, template: str) -> tuple[str, bool]:
        """The concrete path and whether it names a workspace-1 resource."""
        scoped = False
        path = template
        for name in re.findall(r"\{([^}]+)\}", template):
            if name == "id":
                value, ws1 = next(((v, s) for p, v, s in self.by_prefix() if template.startswith(p)), (UNKNOWN_ID, False))
            else:
                value, ws1 = self.params().get(name, (UNKNOWN_ID, False))
            scoped = scoped or ws1
            path = path.replace("{" + name + "}", value, 1)
        return path, scoped


def memory_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("MEMORY.md", "imported")
    return buf.getvalue()


def upload_form(conversation_id: str, content: bytes = b"upload") -> aiohttp.FormData:
    form = aiohttp.FormData()
    form.add_field("conversationId", conversation_id)
    form.add_field("file", content, filename="a.txt", content_type="text/plain")
    return form


async def seed_workspace_one(api: ApiClient, people: dict[str, Any], llm: ScriptedOpenAI) -> Seeded:
    """One of each workspace-1 resource, created by alice through the API (plan and sub-agent rows directly)."""
    from platform_server.features.plans import service as plans
    from platform_server.features.subagents.models import SubagentRun

    s = Seeded(bob=people["bob"]["id"], alice=people["alice"]["id"])

    async def ok(res: Any) -> Any:
        assert res.status == 200, res.body
        return res.data

    await ok(await api.put("/api/v1/workspaces/1", {"name": f"Default {MARK}"}, token="alice"))
    await use_fake_openai(api, llm.url)
    models = await ok(await api.get("/api/v1/models/enabled", token="alice"))
    s.model = models[0]["id"]
    agent = await ok(await api.post("/api/v1/agents", {"name": f"agent-{MARK}", "systemPrompt": MARK}, token="alice"))
    s.agent = agent["id"]
    await ok(await api.put(f"/api/v1/agents/{s.agent}/workspace/files/notes.md", {"content": f"notes {MARK}"}, token="alice"))
    events = await api.sse("POST", "/api/v1/chat/stream", {"agentId": s.agent, "conversationId": s.conversation,
                                                          "message": f"hello {MARK}"}, token="alice")
    assert events[-1].event == "done", events
    s.upload = (await ok(await api.post("/api/v1/chat/upload", token="alice",
                                        data=upload_form(s.conversation, MARK.encode()))))["storedName"]
    s.datasource = (await ok(await api.post("/api/v1/datasources", {
        "name": f"ds-{MARK}", "type": "http", "config": {"baseUrl": "https://example.com", "headers": {}}}, token="alice")))["id"]
    s.channel = (await ok(await api.post("/api/v1/channels", {
        "name": f"ch-{MARK}", "channelType": "im_a", "agentId": s.agent, "replyUrl": "https://example.com/reply",
        "settings": {"appKey": "ding-seed"}},
        token="alice")))["id"]
    s.grant = (await ok(await api.post("/api/v1/approval/grants", {
        "scopeType": "AGENT", "scopeId": s.agent, "maxSeverity": "high", "grantKind": "ALWAYS", "note": MARK},
        token="alice")))["id"]
    pat = await ok(await api.post("/api/v1/auth/tokens", {"name": f"pat-{MARK}"}, token="alice"))
    s.pat, s.pat_token = pat["id"], pat["token"]
    s.mcp = (await ok(await api.post("/api/v1/mcp/servers", {
        "name": "walk", "transport": "streamable_http", "url": "http://127.0.0.1:9/mcp", "enabled": False},
        token="alice")))["id"]
    s.acp = (await ok(await api.post("/api/v1/acp/endpoints", {"name": "walk-acp", "command": "true", "enabled": False},
                                     token="alice")))["id"]
    rule = await ok(await api.post("/api/v1/security/guard/rules", {
        "ruleId": s.rule_id, "name": "Custom", "toolName": "web_fetch", "severity": "medium", "decision": "ask"},
        token="alice"))
    s.rule_pk = rule["id"]
    s.skill = (await ok(await api.post("/api/v1/skills", {
        "name": s.skill_name, "description": f"skill {MARK}", "content": f"---\nname: {s.skill_name}\n---\n{MARK}"},
        token="alice")))["id"]
    await ok(await api.post(f"/api/v1/skills/{s.skill}/secrets", {"key": "API_KEY", "value": f"key-{MARK}"},
                            token="alice"))
    tools = await ok(await api.get("/api/v1/tools", token="alice"))
    s.tool = next(t["id"] for t in tools if t["name"] == "get_current_time")
    plan = plans.create(int(s.agent), 1, int(s.alice), s.conversation, f"goal {MARK}", [f"step {MARK}"])
    s.plan = str(plan.id)
    SubagentRun.create(subagent_id=s.subagent, workspace_id=1, user_id=int(s.alice), conversation_id=s.conversation,
                       parent_agent_id=int(s.agent), agent_id=int(s.agent), agent_name=f"agent-{MARK}",
                       task=f"task {MARK}")
    return s
