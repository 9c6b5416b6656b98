"""Sub-agents: active delegations of a conversation, spawn pause, interrupt (owner; admin override)."""

from __future__ import annotations

from platform_server.features.conversations import service as conversations
from platform_server.features.subagents import SUBAGENTS, lifecycle, service
from platform_server.features.subagents.schemas import SpawnPauseRequest
from platform_server.features.subagents.view_models import (
    SubagentInterruptView,
    SubagentRunView,
    SubagentSpawnPauseView,
)
from platform_server.features.tools.registry import ToolFactory
from platform_server.ids import CONVERSATION_ID_PATTERN
from platform_server.web.base import ApiHandler
from platform_server.web.context import GLOBAL_ADMIN
from platform_server.web.openapi_answers import list_of, one
from platform_server.web.routing import route

TAGS = ("Sub-agents",)


class ActiveHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(SubagentRunView)}
    tags = TAGS
    # the one conversationId rule (ids.CONVERSATION_ID_PATTERN), read as sent: conversations.validate_id checks it
    query_params = {
        "GET": [{"name": "conversationId", "in": "query", "required": True, "schema": {"type": "string", "pattern": CONVERSATION_ID_PATTERN}}]
    }

    def get(self) -> None:
        """Running sub-agents in a conversation's delegation tree (owner only)."""
        cid = conversations.validate_id(self.get_query_argument("conversationId", "", strip=False) or "")
        caller = self.require_caller()
        conversations.check_owner(caller.user_id, cid)
        self.ok(service.active(caller.user_id, cid))


class SpawnPauseHandler(ApiHandler):
    access = {"POST": "viewer"}
    answers = {"POST": one(SubagentSpawnPauseView)}
    body_models = {"POST": SpawnPauseRequest}
    tags = TAGS

    def post(self) -> None:
        """Pause (or allow again) spawning sub-agents in a conversation."""
        req = self.body(SpawnPauseRequest)
        caller = self.require_caller()
        conversations.check_owner(caller.user_id, req.conversationId)
        self.ok(service.set_paused(caller, req.conversationId, req.paused))


class InterruptHandler(ApiHandler):
    access = {"POST": "viewer"}
    answers = {"POST": one(SubagentInterruptView)}
    tags = TAGS

    def post(self, subagentId: str) -> None:
        """Interrupt a running sub-agent of one of the caller's conversations."""
        run = service.owned_run(self.require_caller().user_id, subagentId)
        self.ok({"subagentId": run.subagent_id, "interrupted": self.platform.runtime(SUBAGENTS).interrupt(subagentId)})


class AdminInterruptHandler(ApiHandler):
    access = {"POST": GLOBAL_ADMIN}
    answers = {"POST": one(SubagentInterruptView)}
    tags = ("Admin runtime",)

    def post(self, subagentId: str) -> None:
        """Interrupt any sub-agent (global admin; no ownership check)."""
        run = service.owned_run(None, subagentId)
        self.ok({"subagentId": run.subagent_id, "interrupted": self.platform.runtime(SUBAGENTS).interrupt(subagentId)})


ROUTES = [
    route("/api/v1/subagents/active", ActiveHandler),
    route("/api/v1/subagents/spawn-pause", SpawnPauseHandler),
    route("/api/v1/subagents/{subagentId:str}/interrupt", InterruptHandler),
    route("/api/v1/admin/agent-runtime/subagents/{subagentId:str}/interrupt", AdminInterruptHandler),
]

AGENT_TOOLS: list[ToolFactory] = [lifecycle.agent_tools]
