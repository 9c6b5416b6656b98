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
from tests.helpers.seed_areas import (MARK, seed_automation, seed_memory, seed_runs, seed_skills_extra, seed_wiki,
                                      seed_wiki_research)

GLOBAL_SUFFIXES = {"/skill-templates/{id}", "/files/generated/{id}"}  # seeded, but no workspace's resource


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
    message: str = ""  # the seeded conversation's answer
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
    # `{path suffix ending with the parameter: (id, of workspace 1)}`, consulted first, longest suffix first
    suffixes: dict[str, tuple[str, bool]] = field(default_factory=dict)

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
            ("/api/v1/workspaces/", "1", True),
            ("/api/v1/tools/", self.tool, False),
            ("/api/v1/models/", self.model, False),
            ("/api/v1/plans/", self.plan, True),
            ("/api/v1/datasources/", self.datasource, True),
            ("/api/v1/channels/", self.channel, True),
            ("/api/v1/templates/", "1001", False),
            ("/api/v1/skills/", self.skill, True),
        ]

    def params(self) -> dict[str, tuple[str, bool]]:
        """Value and workspace-1 flag of every other path parameter."""
        return {
            "agentId": (self.agent, True), "skillId": (self.skill, True), "skillName": (self.skill_name, True),
            "key": ("API_KEY", True), "skillType": ("custom", False), "conversationId": (self.conversation, True),
            "storedName": (self.upload, True), "providerId": ("fake", False), "ruleId": (self.rule_id, False),
            "subagentId": (self.subagent, True), "modelId": (self.model, False), "channelType": ("im_a", False),
            "flagKey": ("wiki", False), "name": ("calculator", False), "path": ("notes.md", True),
            "targetUserId": (self.bob, True), "messageId": (self.message, True),
        }

    def value(self, template: str, match: re.Match[str]) -> tuple[str, bool]:
        """The id (and workspace-1 flag) of one path parameter: by the path up to it, by its name, by the prefix."""
        name, upto = match.group(1), template[: match.end()]
        by_suffix = [(k, v) for k, v in self.suffixes.items() if upto.endswith(k)]
        if by_suffix:
            return max(by_suffix, key=lambda kv: len(kv[0]))[1]
        if name != "id" and name in self.params():
            return self.params()[name]
        found = next(((v, s) for p, v, s in self.by_prefix() if name == "id" and template.startswith(p)), ("", False))
        # no silent placeholder: a route whose parameter no seed fills would be walked with an id that answers 404
        assert found[0], f"no seeded id for {{{name}}} in {template}: teach tests/helpers/seed.py"
        return found

    def fill(self, template: str) -> tuple[str, bool]:
        """The concrete path and whether it names a workspace-1 resource; fails for a parameter no seed fills."""
        scoped = False
        path = template
        for match in re.finditer(r"\{([^}]+)\}", template):
            value, ws1 = self.value(template, match)
            scoped = scoped or ws1
            path = path.replace(match.group(0), value, 1)
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


async def seed_workspace_one(api: ApiClient, people: dict[str, Any], llm: ScriptedOpenAI, data_dir: str) -> Seeded:
    """One of each workspace-1 resource, created by alice through the API (plan, sub-agent, routine and generated
    file rows directly: no route creates them)."""
    from platform_server.features.media import service as media
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
    s.message = str(events[-1].data["assistantMessageId"])
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
    found: dict[str, str] = {"tokens/{tokenId}": s.pat, "models/{model}": f"agent-{s.agent}"}  # (the OpenAI door: name slug and id)
    found.update(await seed_wiki(api, llm, s.agent))
    found.update(await seed_memory(api, llm, s.agent, s.conversation))
    found.update(await seed_automation(api, s.agent, s.conversation))
    found.update(await seed_skills_extra(api, s.alice))
    generated = await media.save_generated(int(s.alice), 1, s.conversation, f"{MARK}.txt", "text/plain", b"x")
    found["/files/generated/{id}"] = generated["id"]
    found.update(await seed_runs(api, found))  # these two and research call the model in the background: last
    found.update(await seed_wiki_research(api, found["{kbId}"]))
    s.suffixes = {k: (v, k not in GLOBAL_SUFFIXES) for k, v in found.items()}
    return s
